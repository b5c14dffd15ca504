/// iTunes-style tags from 'ilst', under Vorbis comment names, its cover pictures, and the
/// gapless information of the iTunSMPB tag.
struct MP4Tags {
    var comments: [(name: String, value: String)] = []
    var pictures: [Picture] = []
    /// iTunSMPB: frames of encoder priming before the music, of padding after it, and of music.
    var gapless: (priming: Int, padding: Int, frames: Int)?

    /// The items whose text maps onto a Vorbis comment name.
    static let textNames: [BoxType: String] = [
        BoxType("©nam"): "TITLE", BoxType("©ART"): "ARTIST", BoxType("©alb"): "ALBUM",
        BoxType("aART"): "ALBUMARTIST", BoxType("©day"): "DATE", BoxType("©gen"): "GENRE",
        BoxType("©wrt"): "COMPOSER", BoxType("©cmt"): "COMMENT", BoxType("©lyr"): "LYRICS",
        BoxType("©grp"): "GROUPING", BoxType("©too"): "ENCODER", BoxType("cprt"): "COPYRIGHT",
        BoxType("desc"): "DESCRIPTION", BoxType("©wrk"): "WORK", BoxType("©mvn"): "MOVEMENTNAME",
        BoxType("sonm"): "TITLESORT", BoxType("soar"): "ARTISTSORT", BoxType("soal"): "ALBUMSORT",
        BoxType("soaa"): "ALBUMARTISTSORT", BoxType("soco"): "COMPOSERSORT",
    ]

    /// The order the items are listed in, whatever their order in 'ilst': MPD's (its reader,
    /// FFmpeg's, is asked one kind of tag at a time, the album artist last), so that MPD clients
    /// see one song's tags as they would from mpd. The other items follow in file order.
    static let listingOrder: [String: Int] = Dictionary(uniqueKeysWithValues: [
        "ARTIST", "ALBUM", "TITLE", "TRACKNUMBER", "GENRE", "DATE", "COMPOSER", "GROUPING", "COMMENT", "DISCNUMBER",
        "ALBUMARTIST",
    ].enumerated().map { ($1, $0) })

    /// The 'data' box's well-known types used here.
    enum DataType {
        static let utf8: UInt32 = 1, utf16: UInt32 = 2, jpeg: UInt32 = 13, png: UInt32 = 14, bmp: UInt32 = 27
    }

    /// One item of 'ilst'.
    mutating func read(item: MP4Box, demuxer: inout MP4Demuxer) throws(DecodeError) {
        let parts = try demuxer.children(of: item.body..<item.end)
        let data = parts.filter { $0.type == BoxType("data") }
        guard let first = data.first, first.bodySize >= 8 else { return }
        switch item.type {
        case BoxType("covr"):
            for box in data {
                try picture(box, front: pictures.isEmpty, demuxer: demuxer)
            }
        case BoxType("trkn"), BoxType("disk"):
            let b = try demuxer.body(first)
            guard b.count >= 14 else { return }
            let number = Int(b[10]) << 8 | Int(b[11])
            let total = Int(b[12]) << 8 | Int(b[13])
            guard number > 0 else { return }
            let value = total > 0 ? "\(number)/\(total)" : "\(number)"
            comments.append((item.type == BoxType("trkn") ? "TRACKNUMBER" : "DISCNUMBER", value))
        case BoxType("gnre"):
            let b = try demuxer.body(first)
            guard b.count >= 10 else { return }
            let index = (Int(b[8]) << 8 | Int(b[9])) - 1
            if Self.id3v1Genres.indices.contains(index) { comments.append(("GENRE", Self.id3v1Genres[index])) }
        case BoxType("tmpo"), BoxType("cpil"):
            let b = try demuxer.body(first)
            guard b.count > 8, b.count <= 16 else { return }
            let value = b[8...].reduce(0) { $0 << 8 | Int($1) }
            comments.append((item.type == BoxType("tmpo") ? "BPM" : "COMPILATION", "\(value)"))
        case BoxType("----"):
            guard let nameBox = parts.first(where: { $0.type == BoxType("name") }) else { return }
            let name = try demuxer.body(nameBox, skipping: 4)
            guard let value = try text(first, demuxer: demuxer) else { return }
            let key = String(decoding: name, as: UTF8.self).uppercased()
            if key == "ITUNSMPB" {
                gapless = Self.iTunSMPB(value)
            } else if !key.isEmpty {
                comments.append((key, value))
            }
        default:
            if let name = Self.textNames[item.type], let value = try text(first, demuxer: demuxer) {
                comments.append((name, value))
            }
        }
    }

    /// A 'data' box's text (UTF-8 or UTF-16), nil for other types.
    private func text(_ data: MP4Box, demuxer: MP4Demuxer) throws(DecodeError) -> String? {
        let b = try demuxer.body(data)
        guard b.count >= 8 else { return nil }
        let type = be32(b, 0) & 0xFF_FFFF
        switch type {
        case DataType.utf8:
            return String(decoding: b[8...], as: UTF8.self)
        case DataType.utf16:
            let units = stride(from: 8, to: b.count - 1, by: 2).map { UInt16(b[$0]) << 8 | UInt16(b[$0 + 1]) }
            return String(decoding: units, as: UTF16.self)
        default:
            return nil
        }
    }

    /// A cover: its bytes only when they are kept; its size from the image's own header.
    private mutating func picture(_ data: MP4Box, front: Bool, demuxer: MP4Demuxer) throws(DecodeError) {
        let head = try demuxer.bytes(at: data.body, count: 8)
        guard head.count == 8 else { return }
        let type = be32(head, 0) & 0xFF_FFFF
        let count = Int(data.bodySize - 8)
        // A cover too large to read is listed without its bytes rather than failing the file.
        let keep = demuxer.keepPictureData && data.bodySize <= MP4Demuxer.maxTableBytes
        let image = keep ? try demuxer.body(data, skipping: 8) : try demuxer.bytes(at: data.body + 8, count: min(count, 8192))
        let mime: String
        switch type {
        case DataType.jpeg: mime = "image/jpeg"
        case DataType.png: mime = "image/png"
        case DataType.bmp: mime = "image/bmp"
        default: mime = image.starts(with: [0x89, 0x50, 0x4E, 0x47]) ? "image/png" : image.starts(with: [0xFF, 0xD8]) ? "image/jpeg" : ""
        }
        let size = Self.imageSize(image)
        pictures.append(Picture(type: front ? Picture.frontCoverType : 0, mimeType: mime, description: "",
                                width: size.width, height: size.height, byteCount: count,
                                data: keep ? image : nil))
    }

    /// Width and height from a PNG's IHDR or a JPEG's first SOF marker in `b`; 0 × 0 if not there.
    static func imageSize(_ b: [UInt8]) -> (width: Int, height: Int) {
        if b.count >= 24, b.starts(with: [0x89, 0x50, 0x4E, 0x47]) {
            return (Int(be32(b, 16)), Int(be32(b, 20)))
        }
        guard b.count >= 4, b[0] == 0xFF, b[1] == 0xD8 else { return (0, 0) }
        var at = 2
        while at + 9 <= b.count, b[at] == 0xFF {
            let marker = b[at + 1]
            let length = Int(b[at + 2]) << 8 | Int(b[at + 3])
            // SOF0…SOF15, except DHT (C4), JPG (C8) and DAC (CC).
            if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
                return (Int(b[at + 7]) << 8 | Int(b[at + 8]), Int(b[at + 5]) << 8 | Int(b[at + 6]))
            }
            at += 2 + length
        }
        return (0, 0)
    }

    /// " 00000000 00000840 000001CA 00000000003F4E76 …": priming, padding and the music's length
    /// in frames, hexadecimal.
    static func iTunSMPB(_ text: String) -> (priming: Int, padding: Int, frames: Int)? {
        let fields = text.split(separator: " ").compactMap { UInt64($0, radix: 16) }
        guard fields.count >= 4, fields[1] < 1 << 20, fields[2] < 1 << 20, fields[3] < 1 << 48 else { return nil }
        return (Int(fields[1]), Int(fields[2]), Int(fields[3]))
    }

    /// ID3v1's genres, which 'gnre' numbers from 1.
    static let id3v1Genres = [
        "Blues", "Classic Rock", "Country", "Dance", "Disco", "Funk", "Grunge", "Hip-Hop", "Jazz", "Metal",
        "New Age", "Oldies", "Other", "Pop", "R&B", "Rap", "Reggae", "Rock", "Techno", "Industrial",
        "Alternative", "Ska", "Death Metal", "Pranks", "Soundtrack", "Euro-Techno", "Ambient", "Trip-Hop", "Vocal",
        "Jazz+Funk", "Fusion", "Trance", "Classical", "Instrumental", "Acid", "House", "Game", "Sound Clip",
        "Gospel", "Noise", "AlternRock", "Bass", "Soul", "Punk", "Space", "Meditative", "Instrumental Pop",
        "Instrumental Rock", "Ethnic", "Gothic", "Darkwave", "Techno-Industrial", "Electronic", "Pop-Folk",
        "Eurodance", "Dream", "Southern Rock", "Comedy", "Cult", "Gangsta", "Top 40", "Christian Rap",
        "Pop/Funk", "Jungle", "Native American", "Cabaret", "New Wave", "Psychadelic", "Rave", "Showtunes",
        "Trailer", "Lo-Fi", "Tribal", "Acid Punk", "Acid Jazz", "Polka", "Retro", "Musical", "Rock & Roll",
        "Hard Rock",
    ]
}
