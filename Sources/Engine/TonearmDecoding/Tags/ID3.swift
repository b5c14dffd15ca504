/// Tags as every format hands them to `TrackInfo`: comments under Vorbis comment names, in
/// file order, and pictures.
public struct EmbeddedTags: Sendable {
    public var comments: [(name: String, value: String)] = []
    public var pictures: [Picture] = []

    public init(comments: [(name: String, value: String)] = [], pictures: [Picture] = []) {
        self.comments = comments
        self.pictures = pictures
    }

    public func contains(_ name: String) -> Bool { comments.contains { $0.name == name } }

    /// Adds `other`'s comments whose names are not here yet, and its pictures when there are none.
    public mutating func fill(from other: EmbeddedTags) {
        let present = Set(comments.map(\.name))
        comments += other.comments.filter { !present.contains($0.name) }
        if pictures.isEmpty { pictures = other.pictures }
    }

    /// Puts the comments in the order `ranks` gives their names, those of one rank in file order;
    /// a name `ranks` lacks ranks `ranks.count`.
    mutating func order(by ranks: [String: Int]) { comments = Self.ordered(comments, by: ranks) }

    static func ordered(_ comments: [(name: String, value: String)], by ranks: [String: Int]) -> [(name: String, value: String)] {
        comments.enumerated()
            .sorted { (ranks[$0.element.name] ?? ranks.count, $0.offset) < (ranks[$1.element.name] ?? ranks.count, $1.offset) }
            .map(\.element)
    }
}

/// ID3v2.2, 2.3 and 2.4 tags, read from their bytes (pure Swift; MP3 files carry them in front,
/// WAV and AIFF in a chunk).
///
/// Frames are mapped onto Vorbis comment names (TIT2 → TITLE, TRCK → TRACKNUMBER, TXXX:desc →
/// DESC, …). A frame that is compressed or encrypted is skipped; a frame whose size runs past the
/// tag ends the walk, keeping the frames before it (broken writers are common, the audio is not
/// at stake). Only a tag header that cannot be right is an error.
public enum ID3v2 {
    public static let headerSize = 10

    /// The whole tag's size (header, body and footer) from its first 10 bytes; nil when they
    /// are not an ID3v2 header. Size bytes are read as syncsafe, their high bits ignored, as
    /// `Decoders.readHead` and libmpg123 read them.
    public static func tagSize(header: [UInt8]) -> Int? {
        guard header.count >= headerSize, header[0] == 0x49, header[1] == 0x44, header[2] == 0x33 else { return nil }
        return syncsafe(header, 6) + headerSize + (header[3] >= 4 && header[5] & 0x10 != 0 ? 10 : 0)
    }

    /// Parses a whole tag: `bytes` starts with the header and holds at least `tagSize` bytes.
    public static func read(_ bytes: [UInt8], name: String = "ID3v2 tag", keepPictureData: Bool) throws(DecodeError) -> EmbeddedTags {
        func bad(_ why: String) -> DecodeError { DecodeError(path: name, reason: .badMetadata(why)) }
        guard let size = tagSize(header: bytes) else { throw bad("no ID3v2 header") }
        guard size <= bytes.count else {
            throw bad("ID3v2 tag claims \(size) bytes, only \(bytes.count) there")
        }
        let version = Int(bytes[3])
        guard (2...4).contains(version) else { throw bad("ID3v2.\(version) is not a version there is") }
        let flags = bytes[5]
        var body = Array(bytes[headerSize..<(headerSize + syncsafe(bytes, 6))])
        let tagUnsync = flags & 0x80 != 0
        if version == 2 && flags & 0x40 != 0 { return EmbeddedTags() }  // v2.2 "compression": never defined
        // Before 2.4, unsynchronisation applies to the whole tag.
        if tagUnsync && version < 4 { body = removeUnsynchronisation(body) }
        var pos = 0
        if version >= 3 && flags & 0x40 != 0 {
            guard body.count >= 4 else { throw bad("extended header past the tag's end") }
            // 2.3: a plain size excluding its own 4 bytes; 2.4: syncsafe, including them.
            let extended = version == 3 ? bigEndian(body, 0, 4) + 4 : syncsafe(body, 0)
            guard extended >= 4, extended <= body.count else { throw bad("extended header of \(extended) bytes") }
            pos = extended
        }
        var frames = FrameMapper(keepPictureData: keepPictureData)
        let idLength = version == 2 ? 3 : 4
        let frameHeader = version == 2 ? 6 : 10
        while pos + frameHeader <= body.count {
            let id = body[pos..<(pos + idLength)]
            guard id.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }) else { break }  // padding
            var size: Int
            switch version {
            case 2: size = bigEndian(body, pos + 3, 3)
            case 3: size = bigEndian(body, pos + 4, 4)
            default: size = frameSize24(body, at: pos)
            }
            let start = pos + frameHeader
            guard size <= body.count - start else { break }
            var content = Array(body[start..<(start + size)])
            pos = start + size
            let idText = String(decoding: id, as: UTF8.self)
            if version >= 3 {
                let format = body[start - 1]
                if version == 3 {
                    if format & 0xC0 != 0 { continue }  // compressed or encrypted
                    if format & 0x20 != 0 { content = Array(content.dropFirst(1)) }  // group id
                } else {
                    if format & 0x0C != 0 { continue }  // compressed or encrypted
                    var skip = 0
                    if format & 0x40 != 0 { skip += 1 }  // group id
                    if format & 0x01 != 0 { skip += 4 }  // data length indicator
                    guard skip <= content.count else { continue }
                    content = Array(content.dropFirst(skip))
                    if format & 0x02 != 0 || tagUnsync { content = removeUnsynchronisation(content) }
                }
            }
            frames.add(id: version == 2 ? (v22Names[idText] ?? idText) : idText, content: content, isV22: version == 2)
        }
        return frames.finish()
    }

    /// Reads the rest of the tag whose first 10 bytes, `header`, were just read from `source`,
    /// leaving the source after the tag. A size beyond what the source holds is an error (the
    /// audio's start cannot be known); memory grows only with the bytes really read.
    public static func read(header: [UInt8], restOf source: ByteSource, keepPictureData: Bool) throws(DecodeError) -> (tags: EmbeddedTags, size: Int) {
        guard let size = tagSize(header: header) else {
            throw DecodeError(path: source.name, reason: .badMetadata("no ID3v2 header"))
        }
        let tagStart = source.offset - UInt64(min(UInt64(header.count), source.offset))
        if let length = source.length, UInt64(size) > length - min(length, tagStart) {
            throw DecodeError(path: source.name, reason: .badMetadata("ID3v2 tag claims \(size) bytes, more than the \(length - min(length, tagStart)) there"))
        }
        var bytes = header
        while bytes.count < size {
            let chunk = try source.readUpTo(min(size - bytes.count, 1 << 16))
            if chunk.isEmpty {
                throw DecodeError(path: source.name, reason: .badMetadata("ID3v2 tag claims \(size) bytes, the source ends after \(bytes.count)"))
            }
            bytes += chunk
        }
        return (try read(bytes, name: source.name, keepPictureData: keepPictureData), size)
    }

    /// The tag at the start of a seekable `source`, if there is one; the source is left after
    /// it, or at its start.
    public static func read(atStartOf source: ByteSource, keepPictureData: Bool) throws(DecodeError) -> (tags: EmbeddedTags, size: Int)? {
        try source.seek(to: 0)
        let header = try source.readUpTo(headerSize)
        guard tagSize(header: header) != nil else {
            try source.seek(to: 0)
            return nil
        }
        return try read(header: header, restOf: source, keepPictureData: keepPictureData)
    }

    /// The genre names of ID3v1 (0–79) and Winamp's extensions (80–191).
    public static let genres: [String] = [
        "Blues", "Classic Rock", "Country", "Dance", "Disco", "Funk", "Grunge", "Hip-Hop", "Jazz", "Metal",
        "New Age", "Oldies", "Other", "Pop", "R&B", "Rap", "Reggae", "Rock", "Techno", "Industrial",
        "Alternative", "Ska", "Death Metal", "Pranks", "Soundtrack", "Euro-Techno", "Ambient", "Trip-Hop", "Vocal", "Jazz+Funk",
        "Fusion", "Trance", "Classical", "Instrumental", "Acid", "House", "Game", "Sound Clip", "Gospel", "Noise",
        "AlternRock", "Bass", "Soul", "Punk", "Space", "Meditative", "Instrumental Pop", "Instrumental Rock", "Ethnic", "Gothic",
        "Darkwave", "Techno-Industrial", "Electronic", "Pop-Folk", "Eurodance", "Dream", "Southern Rock", "Comedy", "Cult", "Gangsta",
        "Top 40", "Christian Rap", "Pop/Funk", "Jungle", "Native American", "Cabaret", "New Wave", "Psychadelic", "Rave", "Showtunes",
        "Trailer", "Lo-Fi", "Tribal", "Acid Punk", "Acid Jazz", "Polka", "Retro", "Musical", "Rock & Roll", "Hard Rock",
        "Folk", "Folk-Rock", "National Folk", "Swing", "Fast Fusion", "Bebob", "Latin", "Revival", "Celtic", "Bluegrass",
        "Avantgarde", "Gothic Rock", "Progressive Rock", "Psychedelic Rock", "Symphonic Rock", "Slow Rock", "Big Band", "Chorus", "Easy Listening", "Acoustic",
        "Humour", "Speech", "Chanson", "Opera", "Chamber Music", "Sonata", "Symphony", "Booty Bass", "Primus", "Porn Groove",
        "Satire", "Slow Jam", "Club", "Tango", "Samba", "Folklore", "Ballad", "Power Ballad", "Rhythmic Soul", "Freestyle",
        "Duet", "Punk Rock", "Drum Solo", "A capella", "Euro-House", "Dance Hall", "Goa", "Drum & Bass", "Club-House", "Hardcore",
        "Terror", "Indie", "BritPop", "Negerpunk", "Polsk Punk", "Beat", "Christian Gangsta Rap", "Heavy Metal", "Black Metal", "Crossover",
        "Contemporary Christian", "Christian Rock", "Merengue", "Salsa", "Thrash Metal", "Anime", "JPop", "Synthpop", "Abstract", "Art Rock",
        "Baroque", "Bhangra", "Big Beat", "Breakbeat", "Chillout", "Downtempo", "Dub", "EBM", "Eclectic", "Electro",
        "Electroclash", "Emo", "Experimental", "Garage", "Global", "IDM", "Illbient", "Industro-Goth", "Jam Band", "Krautrock",
        "Leftfield", "Lounge", "Math Rock", "New Romantic", "Nu-Breakz", "Post-Punk", "Post-Rock", "Psytrance", "Shoegaze", "Space Rock",
        "Trop Rock", "World Music", "Neoclassical", "Audiobook", "Audio Theatre", "Neue Deutsche Welle", "Podcast", "Indie Rock", "G-Funk", "Dubstep",
        "Garage Rock", "Psybient",
    ]

    /// "(17)", "17", "(17)Rock" (the text refines the number), "(RX)", "(CR)": the genre's name.
    public static func genreName(_ value: String) -> String {
        var rest = Substring(value)
        var named: [String] = []
        while rest.hasPrefix("("), !rest.hasPrefix("(("), let close = rest.firstIndex(of: ")") {
            let code = rest[rest.index(after: rest.startIndex)..<close]
            if let n = Int(code), genres.indices.contains(n) {
                named.append(genres[n])
            } else if code == "RX" {
                named.append("Remix")
            } else if code == "CR" {
                named.append("Cover")
            } else {
                break
            }
            rest = rest[rest.index(after: close)...]
        }
        if rest.hasPrefix("((") { rest = rest.dropFirst() }
        if !rest.isEmpty { return Int(rest).flatMap { genres.indices.contains($0) ? genres[$0] : nil } ?? String(rest) }
        return named.first ?? value
    }

    // MARK: Bytes

    static func syncsafe(_ b: [UInt8], _ at: Int) -> Int {
        b[at..<(at + 4)].reduce(0) { ($0 << 7) | Int($1 & 0x7F) }
    }

    static func bigEndian(_ b: [UInt8], _ at: Int, _ count: Int) -> Int {
        b[at..<(at + count)].reduce(0) { ($0 << 8) | Int($1) }
    }

    /// A 2.4 frame's size is syncsafe, but iTunes wrote plain integers: when the syncsafe
    /// reading does not land on a frame, padding or the end and the plain one does, the plain
    /// one is meant.
    private static func frameSize24(_ body: [UInt8], at pos: Int) -> Int {
        let safe = syncsafe(body, pos + 4)
        let plain = bigEndian(body, pos + 4, 4)
        if plain == safe { return safe }
        if body[(pos + 4)..<(pos + 8)].contains(where: { $0 >= 0x80 }) { return plain }
        func landsWell(_ size: Int) -> Bool {
            let next = pos + 10 + size
            if next == body.count { return true }
            guard next < body.count else { return false }
            if body[next] == 0 { return true }
            guard next + 4 <= body.count else { return false }
            return body[next..<(next + 4)].allSatisfy { (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }
        }
        return !landsWell(safe) && landsWell(plain) ? plain : safe
    }

    /// Undoes unsynchronisation: every 0xFF 0x00 becomes 0xFF.
    static func removeUnsynchronisation(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var previousFF = false
        for b in bytes {
            if previousFF && b == 0 {
                previousFF = false
                continue
            }
            out.append(b)
            previousFF = b == 0xFF
        }
        return out
    }

    /// v2.2's three-letter frames under their v2.3 names.
    private static let v22Names: [String: String] = [
        "TT1": "TIT1", "TT2": "TIT2", "TT3": "TIT3", "TP1": "TPE1", "TP2": "TPE2", "TP3": "TPE3", "TP4": "TPE4",
        "TAL": "TALB", "TYE": "TYER", "TDA": "TDAT", "TCO": "TCON", "TRK": "TRCK", "TPA": "TPOS", "TCM": "TCOM",
        "TXT": "TEXT", "TXX": "TXXX", "COM": "COMM", "PIC": "APIC", "TBP": "TBPM", "TCR": "TCOP", "TPB": "TPUB",
        "TRC": "TSRC", "TEN": "TENC", "TSS": "TSSE", "TLA": "TLAN", "TOR": "TORY", "TMT": "TMED",
    ]

    /// Text frames and the Vorbis comment names they become (as MusicBrainz Picard maps them).
    private static let textNames: [String: String] = [
        "TIT1": "GROUPING", "TIT2": "TITLE", "TIT3": "SUBTITLE", "TPE1": "ARTIST", "TPE2": "ALBUMARTIST",
        "TPE3": "CONDUCTOR", "TPE4": "REMIXER", "TALB": "ALBUM", "TDRC": "DATE", "TCON": "GENRE",
        "TRCK": "TRACKNUMBER", "TPOS": "DISCNUMBER", "TCOM": "COMPOSER", "TEXT": "LYRICIST", "TBPM": "BPM",
        "TCOP": "COPYRIGHT", "TPUB": "LABEL", "TSRC": "ISRC", "TENC": "ENCODEDBY", "TSSE": "ENCODER",
        "TLAN": "LANGUAGE", "TMED": "MEDIA", "TDOR": "ORIGINALDATE", "TORY": "ORIGINALDATE",
        "TSOP": "ARTISTSORT", "TSOA": "ALBUMSORT", "TSOT": "TITLESORT", "TSO2": "ALBUMARTISTSORT",
        "TSOC": "COMPOSERSORT", "TCMP": "COMPILATION", "TDRL": "RELEASEDATE", "TMOO": "MOOD",
    ]

    /// The order the fields are listed in, whatever the order of the frames: MPD's (its ID3 reader
    /// asks for them one kind at a time), so that MPD clients see one song's tags as they would
    /// from mpd. The other text frames and TXXX follow in file order, MusicBrainz's UFID last.
    static let listingOrder: [String: Int] = {
        let names = ["ARTIST", "ALBUMARTIST", "ARTISTSORT", "ALBUMSORT", "ALBUMARTISTSORT", "TITLE", "ALBUM",
                     "TRACKNUMBER", "DATE", "ORIGINALDATE", "GENRE", "COMPOSER", "CONDUCTOR", "PERFORMER",
                     "GROUPING", "COMMENT", "DISCNUMBER", "LABEL"]
        var ranks = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
        ranks["MUSICBRAINZ_TRACKID"] = .max
        return ranks
    }()

    /// Gathers the mapped frames; TYER and TDAT are joined into DATE at the end.
    private struct FrameMapper {
        let keepPictureData: Bool
        var tags = EmbeddedTags()
        var year: String?
        var dayMonth: String?
        var dateIndex: Int?

        init(keepPictureData: Bool) { self.keepPictureData = keepPictureData }

        mutating func add(id: String, content: [UInt8], isV22: Bool) {
            guard let encoding = content.first else { return }
            let rest = Array(content.dropFirst())
            switch id {
            case "UFID":
                // An owner, then up to 64 bytes of id: MusicBrainz's is its recording's id in ASCII.
                guard let end = content.firstIndex(of: 0),
                      String(decoding: content[..<end], as: UTF8.self) == "http://musicbrainz.org" else { return }
                let id = content[(end + 1)...]
                guard !id.isEmpty, id.count <= 64, id.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return }
                tags.comments.append(("MUSICBRAINZ_TRACKID", String(decoding: id, as: UTF8.self)))
            case "TXXX":
                let (description, valueStart) = ID3Text.terminated(rest, encoding: encoding, from: 0)
                guard !description.isEmpty else { return }
                let name = description.uppercased()
                for value in ID3Text.values(Array(rest[valueStart...]), encoding: encoding) {
                    tags.comments.append((name, value))
                }
            case "COMM":
                guard rest.count >= 3 else { return }
                let (description, textStart) = ID3Text.terminated(rest, encoding: encoding, from: 3)
                // iTunes keeps its loudness and gapless data in described comments.
                if description.hasPrefix("iTun") { return }
                for value in ID3Text.values(Array(rest[textStart...]), encoding: encoding) {
                    tags.comments.append(("COMMENT", value))
                }
            case "APIC":
                addPicture(rest, encoding: encoding, isV22: isV22)
            case "TYER":
                year = ID3Text.values(rest, encoding: encoding).first
                if dateIndex == nil, let year {
                    dateIndex = tags.comments.count
                    tags.comments.append(("DATE", year))
                }
            case "TDAT":
                dayMonth = ID3Text.values(rest, encoding: encoding).first
            case "TCON":
                for value in ID3Text.values(rest, encoding: encoding) {
                    tags.comments.append(("GENRE", ID3v2.genreName(value)))
                }
            default:
                guard let name = textNames[id] else { return }
                if name == "DATE", let dateIndex {  // TDRC wins over TYER
                    tags.comments.remove(at: dateIndex)
                    self.dateIndex = nil
                    year = nil
                }
                for value in ID3Text.values(rest, encoding: encoding) { tags.comments.append((name, value)) }
            }
        }

        mutating func addPicture(_ rest: [UInt8], encoding: UInt8, isV22: Bool) {
            var mime: String
            var pos: Int
            if isV22 {
                guard rest.count >= 3 else { return }
                let format = String(decoding: rest[0..<3], as: UTF8.self).uppercased()
                mime = format == "PNG" ? "image/png" : format == "JPG" ? "image/jpeg" : "image/" + format.lowercased()
                pos = 3
            } else {
                let (text, end) = ID3Text.terminated(rest, encoding: 0, from: 0)
                mime = text.lowercased()
                pos = end
            }
            guard pos < rest.count else { return }
            let type = Int(rest[pos])
            let (description, dataStart) = ID3Text.terminated(rest, encoding: encoding, from: pos + 1)
            let data = rest[dataStart...]
            let size = ImageHeader.parse(data)
            if mime.isEmpty || mime == "image/jpg" || !mime.contains("/") { mime = size?.mimeType ?? (mime.isEmpty ? "" : "image/" + mime) }
            tags.pictures.append(Picture(type: type, mimeType: mime, description: description,
                                         width: size?.width ?? 0, height: size?.height ?? 0, byteCount: data.count,
                                         data: keepPictureData ? Array(data) : nil))
        }

        mutating func finish() -> EmbeddedTags {
            // TDAT is DDMM; with TYER it makes an ISO date.
            if let dateIndex, let year, let dayMonth, dayMonth.count == 4, dayMonth.allSatisfy(\.isNumber) {
                let d = Array(dayMonth)
                tags.comments[dateIndex].value = "\(year)-\(d[2])\(d[3])-\(d[0])\(d[1])"
            }
            tags.order(by: ID3v2.listingOrder)
            return tags
        }
    }
}

/// ID3's text encodings: 0 ISO-8859-1, 1 UTF-16 with a BOM, 2 UTF-16BE, 3 UTF-8.
enum ID3Text {
    /// The text from `from` to its terminator (one or two NULs by encoding) and where the
    /// next field begins.
    static func terminated(_ bytes: [UInt8], encoding: UInt8, from: Int) -> (String, Int) {
        let wide = encoding == 1 || encoding == 2
        var i = from
        while i < bytes.count {
            if wide {
                if i + 1 < bytes.count && bytes[i] == 0 && bytes[i + 1] == 0 {
                    return (decode(bytes[from..<i], encoding: encoding), i + 2)
                }
                i += 2
            } else {
                if bytes[i] == 0 { return (decode(bytes[from..<i], encoding: encoding), i + 1) }
                i += 1
            }
        }
        return (decode(bytes[min(from, bytes.count)...], encoding: encoding), bytes.count)
    }

    /// A field's values: split at NULs (2.4's multiple values), empty ones dropped.
    static func values(_ bytes: [UInt8], encoding: UInt8) -> [String] {
        var out: [String] = []
        var pos = 0
        while pos < bytes.count {
            let (text, next) = terminated(bytes, encoding: encoding, from: pos)
            if !text.isEmpty { out.append(text) }
            pos = next
        }
        return out
    }

    static func decode(_ bytes: ArraySlice<UInt8>, encoding: UInt8) -> String {
        switch encoding {
        case 1, 2:
            var b = bytes
            var littleEndian = encoding == 1  // no BOM: little-endian, as Windows writers meant
            if b.count >= 2 && encoding == 1 {
                if b[b.startIndex] == 0xFF && b[b.startIndex + 1] == 0xFE { b = b.dropFirst(2) }
                else if b[b.startIndex] == 0xFE && b[b.startIndex + 1] == 0xFF { b = b.dropFirst(2); littleEndian = false }
            }
            var units: [UInt16] = []
            units.reserveCapacity(b.count / 2)
            var i = b.startIndex
            while i + 1 < b.endIndex {
                units.append(littleEndian ? UInt16(b[i]) | UInt16(b[i + 1]) << 8 : UInt16(b[i]) << 8 | UInt16(b[i + 1]))
                i += 2
            }
            return String(decoding: units, as: UTF16.self)
        case 3:
            return String(decoding: bytes, as: UTF8.self)
        default:
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        }
    }
}

/// ID3v1 and v1.1: the last 128 bytes of a file, "TAG" and fixed fields in ISO-8859-1.
public enum ID3v1 {
    public static let size = 128

    /// The fields of a 128-byte tag; nil when the bytes are not one.
    public static func read(_ bytes: [UInt8]) -> EmbeddedTags? {
        guard bytes.count == size, bytes[0] == 0x54, bytes[1] == 0x41, bytes[2] == 0x47 else { return nil }
        func field(_ at: Int, _ count: Int) -> String {
            let raw = bytes[at..<(at + count)]
            let end = raw.firstIndex(of: 0) ?? raw.endIndex
            return ID3Text.decode(raw[..<end], encoding: 0).trimmingSpaces
        }
        var tags = EmbeddedTags()
        for (name, value) in [("TITLE", field(3, 30)), ("ARTIST", field(33, 30)), ("ALBUM", field(63, 30)), ("DATE", field(93, 4))]
        where !value.isEmpty {
            tags.comments.append((name, value))
        }
        // v1.1: a zero byte before the comment's last byte makes that byte the track number.
        let isV11 = bytes[125] == 0 && bytes[126] != 0
        let comment = field(97, isV11 ? 28 : 30)
        if !comment.isEmpty { tags.comments.append(("COMMENT", comment)) }
        if isV11 { tags.comments.append(("TRACKNUMBER", String(bytes[126]))) }
        if ID3v2.genres.indices.contains(Int(bytes[127])) { tags.comments.append(("GENRE", ID3v2.genres[Int(bytes[127])])) }
        tags.order(by: ID3v2.listingOrder)
        return tags
    }
}

/// Where the audio frames of a raw stream (MP3, AAC ADTS) lie between the tags around them:
/// an ID3v2 tag in front; an APEv2 tag, then an ID3v1 tag, at the end. ID3v1 counts only when
/// there is no ID3v2 tag; APE fields fill in names the ID3 tag lacks (mp3gain's ReplayGain).
public struct TaggedAudio {
    public var tags = EmbeddedTags()
    public var audioStart: UInt64 = 0
    public var audioEnd: UInt64

    /// Reads the tags of a seekable `source`; leaves it at `audioStart`.
    public static func read(_ source: ByteSource, keepPictureData: Bool) throws(DecodeError) -> TaggedAudio {
        let length = source.length ?? 0
        var layout = TaggedAudio(audioEnd: length)
        let front = try ID3v2.read(atStartOf: source, keepPictureData: keepPictureData)
        if let front {
            layout.tags = front.tags
            layout.audioStart = UInt64(front.size)
        }
        var v1: EmbeddedTags?
        if length >= UInt64(ID3v1.size) + layout.audioStart,
           let found = ID3v1.read(try source.peek(ID3v1.size, at: length - UInt64(ID3v1.size))) {
            layout.audioEnd -= UInt64(ID3v1.size)
            v1 = found
        }
        if layout.audioEnd >= UInt64(APEv2.footerSize) + layout.audioStart,
           let ape = try APEv2.read(endingAt: layout.audioEnd, in: source, notBefore: layout.audioStart, keepPictureData: keepPictureData) {
            layout.audioEnd = ape.start
            layout.tags.fill(from: ape.tags)
        }
        if front == nil, let v1 { layout.tags.fill(from: v1) }
        try source.seek(to: layout.audioStart)
        return layout
    }
}
