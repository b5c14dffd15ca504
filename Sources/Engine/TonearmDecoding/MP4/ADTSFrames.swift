/// A raw AAC stream of ADTS frames (an `.aac` file): each frame a 7-byte header (9 with a
/// CRC) and one access unit. Scanned once at open into the same sample table an MP4 track
/// has, so the AAC codec, trimming and seeking are shared; the access units are the frames
/// less their headers.
///
/// The stream says nothing of priming or length: the music is what libfaad gives (from the
/// second frame on), and the length is known after the scan. Its tags are a raw stream's
/// (`TaggedAudio`: ID3v2 in front, APEv2 or ID3v1 at the end); the scan runs between them. A frame cut short at the end is
/// dropped; the scan stops at the first bytes that are not a frame of the same stream. A
/// source that cannot seek is read frame by frame instead (`ADTSStreamDecoder`).
enum ADTSFrames {
    /// Whether `bytes` start with an ADTS header: the 12-bit sync and layer 0 (MPEG audio
    /// layers 1 to 3 share the sync with other layer bits).
    static func starts(_ bytes: [UInt8]) -> Bool { ADTSHeader(bytes, at: 0) != nil }

    static func scan(_ source: ByteSource, from start: UInt64, to end: UInt64) throws(DecodeError) -> MP4Movie {
        guard source.isSeekable, let fileLength = source.length else {
            throw DecodeError(path: source.name, reason: .unsupported("ADTS AAC from a source that cannot seek"))
        }
        let length = min(end, fileLength)
        try source.seek(to: start)
        var table = MP4SampleTable()
        var config: (profile: UInt8, rateIndex: UInt8, channels: UInt8, headerSize: Int)?
        var window: [UInt8] = []
        var windowStart = start
        var at = start
        while at + 7 <= length {
            // Only the headers are read: the window starts anew at a header it lacks.
            if at + 9 > windowStart + UInt64(window.count) {
                try source.seek(to: at)
                windowStart = at
                window = try source.readUpTo(1 << 16)
                if window.count < 7 { break }
            }
            let h = Int(at - windowStart)
            guard let header = ADTSHeader(window, at: h) else { break }
            let frameLength = header.frameLength
            let this = (header.profile, header.rateIndex, header.channels, header.headerSize)
            if let c = config {
                guard c == this else { break }
            } else {
                try header.checkPlayable(source.name)
                config = this
            }
            guard header.frameLength > header.headerSize, header.blocks == 0 else { break }
            guard at + UInt64(frameLength) <= length else { break }
            table.sizes.append(UInt32(frameLength))
            at += UInt64(frameLength)
        }
        guard let config, !table.sizes.isEmpty else {
            throw DecodeError(path: source.name, reason: .notFormat("not an ADTS AAC stream (no whole frame)"))
        }
        let count = table.sizes.count
        table.sampleCount = count
        table.chunkOffsets = [start]
        table.chunkRuns = [(firstChunk: 0, samplesPerChunk: count, firstSample: 0)]
        table.timeRuns = [(count: count, delta: 1024, firstSample: 0, firstTick: 0)]
        table.totalTicks = count * 1024
        table.largestSample = Int(table.sizes.max() ?? 0)
        table.unitHeaderSize = config.headerSize
        let asc = ADTSHeader.audioSpecificConfig(profile: config.profile, rateIndex: config.rateIndex, channels: config.channels)
        let rate = AudioSpecificConfig.rates[Int(config.rateIndex)]
        return MP4Movie(entry: .aac(audioSpecificConfig: asc, channels: Int(config.channels), sampleRate: rate),
                        table: table, timescale: rate, movieTimescale: rate, edit: nil)
    }
}

/// One ADTS frame header: the 12-bit sync and layer 0, then the profile, sampling frequency
/// index, channel configuration, the frame's length (header included) and its count of raw
/// data blocks less one. The CRC, when present, makes it 9 bytes.
struct ADTSHeader: Equatable {
    var profile: UInt8
    var rateIndex: UInt8
    var channels: UInt8
    var headerSize: Int
    var frameLength: Int
    var blocks: UInt8

    /// The header at `bytes[at...]`, when the sync is there and 7 bytes are.
    init?(_ bytes: UnsafeRawBufferPointer, at h: Int) {
        guard h >= 0, h + 7 <= bytes.count, bytes[h] == 0xFF, bytes[h + 1] & 0xF6 == 0xF0 else { return nil }
        headerSize = bytes[h + 1] & 1 == 1 ? 7 : 9
        profile = bytes[h + 2] >> 6
        rateIndex = (bytes[h + 2] >> 2) & 0xF
        channels = (bytes[h + 2] & 1) << 2 | bytes[h + 3] >> 6
        frameLength = Int(bytes[h + 3] & 3) << 11 | Int(bytes[h + 4]) << 3 | Int(bytes[h + 5] >> 5)
        blocks = bytes[h + 6] & 3
    }

    init?(_ bytes: [UInt8], at h: Int) {
        guard let header = bytes.withUnsafeBytes({ Self($0, at: h) }) else { return nil }
        self = header
    }

    /// Whether it can start a frame at all: a known sampling frequency, and a length past the
    /// header. Random bytes with the sync rarely pass, and two in a row practically never.
    var isPlausible: Bool { rateIndex < 13 && frameLength > headerSize }

    /// Whether `other` continues the same stream: the same profile, rate and channels (a CRC
    /// may come and go).
    func isSameStream(as other: ADTSHeader) -> Bool {
        profile == other.profile && rateIndex == other.rateIndex && channels == other.channels
    }

    /// The sampling frequency the header gives (the AAC core's: SBR doubles it).
    var sampleRate: Int { AudioSpecificConfig.rates[Int(min(rateIndex, 12))] }

    /// Throws what makes the stream one Tonearm does not play.
    func checkPlayable(_ path: String) throws(DecodeError) {
        guard rateIndex < 13 else { throw DecodeError(path: path, reason: .badMetadata("ADTS sampling frequency index \(rateIndex)")) }
        guard channels > 0 else { throw DecodeError(path: path, reason: .unsupported("ADTS AAC whose channels are set by a program config element")) }
        guard blocks == 0 else { throw DecodeError(path: path, reason: .unsupported("ADTS frames of several access units")) }
    }

    var audioSpecificConfig: [UInt8] { Self.audioSpecificConfig(profile: profile, rateIndex: rateIndex, channels: channels) }

    /// An AudioSpecificConfig: object type (profile + 1), rate index, channels, and a
    /// GASpecificConfig of three zero bits.
    static func audioSpecificConfig(profile: UInt8, rateIndex: UInt8, channels: UInt8) -> [UInt8] {
        [(profile + 1) << 3 | rateIndex >> 1, (rateIndex & 1) << 7 | channels << 3]
    }
}
