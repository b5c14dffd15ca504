/// A raw AAC stream of ADTS frames (an `.aac` file): each frame a 7-byte header (9 with a
/// CRC) and one access unit. Scanned once at open into the same sample table an MP4 track
/// has, so the AAC codec, trimming and seeking are shared; the access units are the frames
/// less their headers.
///
/// The stream says nothing of priming or length: the music is what libfaad gives (from the
/// second frame on), and the length is known after the scan. A frame cut short at the end is
/// dropped; the scan stops at the first bytes that are not a frame of the same stream.
enum ADTSFrames {
    /// Whether `bytes` start with an ADTS header: the 12-bit sync and layer 0 (MPEG audio
    /// layers 1 to 3 share the sync with other layer bits).
    static func starts(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 7 && bytes[0] == 0xFF && bytes[1] & 0xF6 == 0xF0
    }

    static func scan(_ source: ByteSource, from start: UInt64) throws(DecodeError) -> MP4Movie {
        guard source.isSeekable, let length = source.length else {
            throw DecodeError(path: source.name, reason: .unsupported("ADTS AAC from a source that cannot seek"))
        }
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
            guard starts(Array(window[h..<min(window.count, h + 7)])) else { break }
            let protectionAbsent = window[h + 1] & 1 == 1
            let profile = window[h + 2] >> 6
            let rateIndex = (window[h + 2] >> 2) & 0xF
            let channels = (window[h + 2] & 1) << 2 | window[h + 3] >> 6
            let frameLength = Int(window[h + 3] & 3) << 11 | Int(window[h + 4]) << 3 | Int(window[h + 5] >> 5)
            let blocks = window[h + 6] & 3
            let headerSize = protectionAbsent ? 7 : 9
            if let c = config {
                guard c.profile == profile, c.rateIndex == rateIndex, c.channels == channels, c.headerSize == headerSize else { break }
            } else {
                guard rateIndex < 13 else { throw DecodeError(path: source.name, reason: .badMetadata("ADTS sampling frequency index \(rateIndex)")) }
                guard channels > 0 else { throw DecodeError(path: source.name, reason: .unsupported("ADTS AAC whose channels are set by a program config element")) }
                guard blocks == 0 else { throw DecodeError(path: source.name, reason: .unsupported("ADTS frames of several access units")) }
                config = (profile, rateIndex, channels, headerSize)
            }
            guard frameLength > headerSize, blocks == 0 else { break }
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
        // An AudioSpecificConfig: object type (profile + 1), rate index, channels, and a
        // GASpecificConfig of three zero bits.
        let objectType = config.profile + 1
        let asc = [objectType << 3 | config.rateIndex >> 1, (config.rateIndex & 1) << 7 | config.channels << 3]
        let rate = AudioSpecificConfig.rates[Int(config.rateIndex)]
        return MP4Movie(entry: .aac(audioSpecificConfig: asc, channels: Int(config.channels), sampleRate: rate),
                        table: table, timescale: rate, movieTimescale: rate, edit: nil)
    }
}
