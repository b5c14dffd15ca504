import TonearmAudio

/// A picture embedded in a file: a FLAC PICTURE block, an ID3v2 APIC frame, an MP4 `covr`
/// atom, a Vorbis comment's METADATA_BLOCK_PICTURE.
public struct Picture: Sendable, Equatable {
    /// The ID3v2 APIC picture type (3 = front cover).
    public var type: Int
    public var mimeType: String
    public var description: String
    public var width: Int
    public var height: Int
    public var byteCount: Int
    /// The image bytes, when the reader was asked to keep them.
    public var data: [UInt8]?

    public static let frontCoverType = 3

    public var typeName: String {
        let names = [
            "other", "fileIcon", "otherFileIcon", "frontCover", "backCover", "leaflet", "media",
            "leadArtist", "artist", "conductor", "band", "composer", "lyricist", "recordingLocation",
            "duringRecording", "duringPerformance", "screenCapture", "brightFish", "illustration",
            "bandLogo", "publisherLogo",
        ]
        return names.indices.contains(type) ? names[type] : "unknown"
    }
}

/// What a file or stream says about itself, whatever its format: the audio format, the length,
/// its tags under Vorbis comment names (TITLE, ARTIST, TRACKNUMBER, REPLAYGAIN_TRACK_GAIN, …;
/// each format's own tags are mapped onto them) and its pictures.
public struct TrackInfo: Sendable {
    public var path: String
    /// The codec, as a person would name it: "FLAC", "MP3", "Vorbis", "Opus", "AAC", "ALAC", "PCM".
    public var codec: String
    /// The format of the decoded frames.
    public var format: StreamFormat
    /// The format the header claims, for reports; `format` is what plays.
    public var headerFormat: StreamFormat
    /// Frames (samples per channel) of music; nil when the source does not say (a live stream).
    public var totalFrames: Int?
    /// Tags in file order, names upper-cased.
    public var comments: [(name: String, value: String)]
    public var pictures: [Picture]

    public init(path: String, codec: String, format: StreamFormat, headerFormat: StreamFormat? = nil, totalFrames: Int?,
                comments: [(name: String, value: String)] = [], pictures: [Picture] = []) {
        self.path = path
        self.codec = codec
        self.format = format
        self.headerFormat = headerFormat ?? format
        self.totalFrames = totalFrames
        self.comments = comments
        self.pictures = pictures
    }

    public var duration: Double? { totalFrames.map { Double($0) / Double(format.sampleRate) } }

    /// The first value of a Vorbis comment, by case-insensitive name.
    public func comment(_ name: String) -> String? {
        let key = name.uppercased()
        return comments.first { $0.name == key }?.value
    }

    public var title: String? { comment("TITLE") }
    public var artist: String? { comment("ARTIST") }
    public var album: String? { comment("ALBUM") }
    public var albumArtist: String? { comment("ALBUMARTIST") ?? comment("ALBUM ARTIST") }
    public var date: String? { comment("DATE") }
    public var genre: String? { comment("GENRE") }
    /// TRACKNUMBER, also in its "3/12" form.
    public var trackNumber: Int? { Self.leadingNumber(comment("TRACKNUMBER")) }
    public var trackTotal: Int? {
        Self.leadingNumber(comment("TRACKTOTAL") ?? comment("TOTALTRACKS"))
            ?? comment("TRACKNUMBER").flatMap { $0.split(separator: "/").dropFirst().first }.flatMap { Int($0) }
    }
    public var discNumber: Int? { Self.leadingNumber(comment("DISCNUMBER")) }
    /// DISCTOTAL (or TOTALDISCS), also from DISCNUMBER's "1/2" form.
    public var discTotal: Int? {
        Self.leadingNumber(comment("DISCTOTAL") ?? comment("TOTALDISCS"))
            ?? comment("DISCNUMBER").flatMap { $0.split(separator: "/").dropFirst().first }.flatMap { Int($0) }
    }
    /// REPLAYGAIN_TRACK_GAIN and friends, in dB or linear peak, when present and numeric.
    public var replayGain: ReplayGain {
        ReplayGain(
            trackGain: Self.decibels(comment("REPLAYGAIN_TRACK_GAIN")),
            trackPeak: comment("REPLAYGAIN_TRACK_PEAK").flatMap { Double($0.trimmingSpaces) },
            albumGain: Self.decibels(comment("REPLAYGAIN_ALBUM_GAIN")),
            albumPeak: comment("REPLAYGAIN_ALBUM_PEAK").flatMap { Double($0.trimmingSpaces) }
        )
    }

    /// The picture a display should show: the front cover, else the first picture.
    public var preferredPicture: Picture? {
        pictures.first { $0.type == Picture.frontCoverType } ?? pictures.first
    }

    static func leadingNumber(_ text: String?) -> Int? {
        guard let text else { return nil }
        return Int(text.trimmingSpaces.prefix { $0.isNumber })
    }

    static func decibels(_ text: String?) -> Double? {
        guard var t = text?.trimmingSpaces else { return nil }
        if t.lowercased().hasSuffix("db") { t = String(t.dropLast(2)).trimmingSpaces }
        return Double(t)
    }
}

extension String {
    var trimmingSpaces: String {
        guard let first = firstIndex(where: { $0 != " " }), let last = lastIndex(where: { $0 != " " }) else { return "" }
        return String(self[first...last])
    }
}
