/// A box's four-character type, as its big-endian bytes. iTunes' '©nam' is 0xA9 'n' 'a' 'm'.
struct BoxType: Hashable, CustomStringConvertible {
    var raw: UInt32

    init(raw: UInt32) { self.raw = raw }

    /// From four Latin-1 characters ("moov", "©nam").
    init(_ text: String) {
        raw = text.unicodeScalars.reduce(0) { ($0 << 8) | ($1.value & 0xFF) }
    }

    /// Latin-1 (iTunes' '©'), with a control character shown as "?": an error stays one line
    /// whatever bytes a broken file has where a type should be.
    var description: String {
        String((0..<4).map { index -> Character in
            let byte = UInt8(truncatingIfNeeded: raw >> (24 - 8 * UInt32(index)))
            return byte < 0x20 || (0x7F...0x9F).contains(byte) ? "?" : Character(Unicode.Scalar(byte))
        })
    }
}

/// One box found in the file: where its header starts, where its body starts and where it ends.
struct MP4Box {
    var type: BoxType
    var start: UInt64
    var body: UInt64
    var end: UInt64
    var bodySize: UInt64 { end - body }
}

/// What a track's sample description says the codec is.
enum MP4SampleEntry {
    /// 'mp4a' with an MPEG-4 audio decoder config: the AudioSpecificConfig.
    case aac(audioSpecificConfig: [UInt8], channels: Int, sampleRate: Int)
    /// 'alac' with its magic cookie (the 24-byte ALACSpecificConfig).
    case alac(cookie: [UInt8])
    /// Anything else, named for the error.
    case other(String)
}

/// Where each sample (access unit) of a track lies, how long it lasts and how big it is, from
/// the sample table (stts, stsc, stsz/stz2, stco/co64). Offsets of the samples are found from
/// the chunk they lie in; a cursor makes reading them in order cost no search.
struct MP4SampleTable {
    /// stts runs: `count` samples of `delta` ticks each, with the first sample and tick of each run.
    var timeRuns: [(count: Int, delta: Int, firstSample: Int, firstTick: Int)] = []
    /// stsc runs: from chunk index `firstChunk` (0-based) on, `samplesPerChunk` samples per chunk.
    var chunkRuns: [(firstChunk: Int, samplesPerChunk: Int, firstSample: Int)] = []
    var chunkOffsets: [UInt64] = []
    /// Per-sample sizes, unless all have `fixedSize`.
    var sizes: [UInt32] = []
    var fixedSize: Int = 0
    var sampleCount = 0
    /// Ticks of all samples together.
    var totalTicks = 0
    var largestSample = 0
    /// Bytes in front of each sample's access unit (an ADTS header); 0 in MP4.
    var unitHeaderSize = 0

    func size(of sample: Int) -> Int { fixedSize > 0 ? fixedSize : Int(sizes[sample]) }

    /// The first tick of `sample` (`totalTicks` for `sampleCount`).
    func tick(of sample: Int) -> Int {
        guard sample < sampleCount else { return totalTicks }
        var lo = 0, hi = timeRuns.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if timeRuns[mid].firstSample <= sample { lo = mid } else { hi = mid - 1 }
        }
        let run = timeRuns[lo]
        return run.firstTick + (sample - run.firstSample) * run.delta
    }

    /// The sample whose ticks contain `tick`; `sampleCount` past the end.
    func sample(containing tick: Int) -> Int {
        guard tick < totalTicks else { return sampleCount }
        for run in timeRuns where tick < run.firstTick + run.count * run.delta {
            return run.delta == 0 ? run.firstSample : run.firstSample + (tick - run.firstTick) / run.delta
        }
        return sampleCount
    }

    /// The byte offset of `sample`.
    func offset(of sample: Int) -> UInt64 {
        var lo = 0, hi = chunkRuns.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if chunkRuns[mid].firstSample <= sample { lo = mid } else { hi = mid - 1 }
        }
        let run = chunkRuns[lo]
        let chunk = run.firstChunk + (sample - run.firstSample) / run.samplesPerChunk
        let firstInChunk = sample - (sample - run.firstSample) % run.samplesPerChunk
        var offset = chunkOffsets[chunk]
        if fixedSize > 0 {
            offset &+= UInt64(fixedSize * (sample - firstInChunk))
        } else {
            for s in firstInChunk..<sample { offset &+= UInt64(sizes[s]) }
        }
        return offset
    }

    /// Whether `sample` is the first of its chunk (its offset is then the chunk's, not the
    /// previous sample's end).
    func startsChunk(_ sample: Int) -> Bool {
        for run in chunkRuns.reversed() where run.firstSample <= sample {
            return (sample - run.firstSample) % run.samplesPerChunk == 0
        }
        return true
    }
}

/// What the file says about its one audio track and itself.
struct MP4Movie {
    var entry: MP4SampleEntry
    var table: MP4SampleTable
    /// The media's ticks per second (mdhd).
    var timescale: Int
    /// The movie's ticks per second (mvhd), in which edit durations are counted.
    var movieTimescale: Int
    /// The first edit that shows media: where it starts in the media and how long it lasts
    /// (movie ticks; 0 = unknown).
    var edit: (mediaTime: Int, duration: Int)?
    var tags = MP4Tags()
}

/// Reads an MP4/M4A file's boxes from a `ByteSource`, bounded: a size past the end of its
/// container, a box too small for its header, more than `maxBoxes` boxes, a table larger than
/// `maxTableBytes` or claiming more entries than its bytes hold is an error, and nothing is
/// allocated before the bytes it would hold are known to be in the file. Only the boxes on the
/// paths moov/trak/mdia/minf/stbl and moov/udta/meta/ilst are descended into, so the nesting
/// the parser follows is bounded by those paths whatever the file nests.
struct MP4Demuxer {
    static let maxBoxes = 20_000
    /// No sample table, tag or cover larger than this is read.
    static let maxTableBytes: UInt64 = 16 << 20
    /// A sample (access unit) larger than this is corrupt: AAC's are at most 6144 bits per
    /// channel, ALAC's a frame of uncompressed PCM.
    static let maxSampleBytes = 4 << 20

    let source: ByteSource
    let length: UInt64
    let keepPictureData: Bool
    private var boxesSeen = 0

    init(source: ByteSource, keepPictureData: Bool) throws(DecodeError) {
        guard source.isSeekable, let length = source.length else {
            throw DecodeError(path: source.name, reason: .unsupported("MP4 from a source that cannot seek"))
        }
        self.source = source
        self.length = length
        self.keepPictureData = keepPictureData
    }

    private var path: String { source.name }

    private func corrupt(_ why: String) -> DecodeError { DecodeError(path: path, reason: .badMetadata(why)) }

    /// Reads `count` bytes at `offset`; fewer only at the end of the file.
    func bytes(at offset: UInt64, count: Int) throws(DecodeError) -> [UInt8] {
        try source.seek(to: offset)
        return try source.readUpTo(count)
    }

    /// The boxes inside `range`, in order. At the top level a box that runs past the end of the
    /// file is cut at its end when it is 'mdat' (a file cut short still plays what it holds).
    mutating func children(of range: Range<UInt64>, topLevel: Bool = false) throws(DecodeError) -> [MP4Box] {
        var boxes: [MP4Box] = []
        var at = range.lowerBound
        while range.upperBound - at >= 8 {
            boxesSeen += 1
            guard boxesSeen <= Self.maxBoxes else { throw corrupt("more than \(Self.maxBoxes) boxes") }
            let header = try bytes(at: at, count: 16)
            guard header.count >= 8 else { break }
            let type = BoxType(raw: be32(header, 4))
            var size = UInt64(be32(header, 0))
            var headerSize: UInt64 = 8
            if size == 1 {
                guard header.count >= 16 else { throw corrupt("box '\(type)' at byte \(at) is cut short") }
                size = be64(header, 8)
                headerSize = 16
            } else if size == 0 {
                size = range.upperBound - at
            }
            guard size >= headerSize else {
                throw corrupt("box '\(type)' at byte \(at) has a size of \(size) bytes, smaller than its header")
            }
            var end = at.addingReportingOverflow(size).partialValue
            if size > range.upperBound - at {
                guard topLevel && type == BoxType("mdat") else {
                    throw corrupt("box '\(type)' at byte \(at) claims \(size) bytes, past the end of its container")
                }
                end = range.upperBound
            }
            boxes.append(MP4Box(type: type, start: at, body: at + headerSize, end: end))
            at = end
        }
        return boxes
    }

    /// The body of `box`, which must be at most `maxTableBytes`.
    func body(_ box: MP4Box, skipping: UInt64 = 0) throws(DecodeError) -> [UInt8] {
        guard box.bodySize <= Self.maxTableBytes else {
            throw corrupt("box '\(box.type)' of \(box.bodySize) bytes is larger than \(Self.maxTableBytes >> 20) MiB")
        }
        guard skipping <= box.bodySize else { return [] }
        let got = try bytes(at: box.body + skipping, count: Int(box.bodySize - skipping))
        guard got.count == Int(box.bodySize - skipping) else { throw corrupt("box '\(box.type)' is cut short") }
        return got
    }

    /// Parses the file from `start` (after anything in front, such as an ID3v2 tag): finds the
    /// 'moov' box wherever it is (before or after 'mdat') and its first sound track.
    mutating func parse(from start: UInt64) throws(DecodeError) -> MP4Movie {
        let top = try children(of: start..<length, topLevel: true)
        guard top.first?.type == BoxType("ftyp") else {
            throw DecodeError(path: path, reason: .notFormat("not an MP4 file (no 'ftyp' box)"))
        }
        guard let moov = top.first(where: { $0.type == BoxType("moov") }) else {
            throw corrupt("no 'moov' box (the file may be cut short)")
        }
        var movieTimescale = 0
        var movie: MP4Movie?
        var tags = MP4Tags()
        for box in try children(of: moov.body..<moov.end) {
            switch box.type {
            case BoxType("mvhd"):
                let b = try body(box)
                // version 0: 4 flags, 4 created, 4 modified, 4 timescale; version 1: 8-byte times.
                let at = b.first == 1 ? 20 : 12
                guard b.count >= at + 4 else { throw corrupt("'mvhd' box is too short") }
                movieTimescale = Int(be32(b, at))
            case BoxType("trak") where movie == nil:
                movie = try track(box)
            case BoxType("udta"):
                try userData(box, into: &tags)
            case BoxType("meta"):
                try metadata(box, into: &tags)
            default:
                break
            }
        }
        guard var found = movie else { throw DecodeError(path: path, reason: .noAudio) }
        found.movieTimescale = movieTimescale
        tags.comments = EmbeddedTags.ordered(tags.comments, by: MP4Tags.listingOrder)
        found.tags = tags
        return found
    }

    /// A 'trak' box: nil unless it is a sound track.
    private mutating func track(_ trak: MP4Box) throws(DecodeError) -> MP4Movie? {
        var edit: (mediaTime: Int, duration: Int)?
        var mdia: MP4Box?
        for box in try children(of: trak.body..<trak.end) {
            if box.type == BoxType("mdia") { mdia = box }
            if box.type == BoxType("edts"), let elst = try children(of: box.body..<box.end).first(where: { $0.type == BoxType("elst") }) {
                edit = try editList(elst)
            }
        }
        guard let mdia else { return nil }
        var timescale = 0
        var isSound = false
        var minf: MP4Box?
        for box in try children(of: mdia.body..<mdia.end) {
            switch box.type {
            case BoxType("mdhd"):
                let b = try body(box)
                let at = b.first == 1 ? 20 : 12
                guard b.count >= at + 4 else { throw corrupt("'mdhd' box is too short") }
                timescale = Int(be32(b, at))
            case BoxType("hdlr"):
                let b = try body(box)
                isSound = b.count >= 12 && be32(b, 8) == BoxType("soun").raw
            case BoxType("minf"):
                minf = box
            default:
                break
            }
        }
        guard isSound, let minf else { return nil }
        guard timescale > 0 else { throw corrupt("the sound track's 'mdhd' gives no timescale") }
        guard let stbl = try children(of: minf.body..<minf.end).first(where: { $0.type == BoxType("stbl") }) else {
            throw corrupt("the sound track has no sample table")
        }
        let (entry, table) = try sampleTable(stbl)
        return MP4Movie(entry: entry, table: table, timescale: timescale, movieTimescale: 0, edit: edit)
    }

    /// 'elst': the first edit that shows media (an empty edit, media time −1, only delays).
    private func editList(_ box: MP4Box) throws(DecodeError) -> (mediaTime: Int, duration: Int)? {
        let b = try body(box)
        guard b.count >= 8 else { throw corrupt("'elst' box is too short") }
        let wide = b[0] == 1
        let entrySize = wide ? 20 : 12
        let count = Int(be32(b, 4))
        guard count <= (b.count - 8) / entrySize else { throw corrupt("'elst' claims \(count) edits in \(b.count) bytes") }
        for i in 0..<count {
            let at = 8 + i * entrySize
            let duration = wide ? Int(truncatingIfNeeded: be64(b, at)) : Int(be32(b, at))
            let mediaTime = wide ? Int(Int64(bitPattern: be64(b, at + 8))) : Int(Int32(bitPattern: be32(b, at + 4)))
            if mediaTime >= 0 { return (mediaTime, max(0, duration)) }
        }
        return nil
    }

    private mutating func sampleTable(_ stbl: MP4Box) throws(DecodeError) -> (MP4SampleEntry, MP4SampleTable) {
        var entry: MP4SampleEntry?
        var table = MP4SampleTable()
        var sizeCount: Int?
        var times: [(count: Int, delta: Int)]?
        var chunks: [(firstChunk: Int, samplesPerChunk: Int)]?
        var offsets: [UInt64]?
        for box in try children(of: stbl.body..<stbl.end) {
            switch box.type {
            case BoxType("stsd"):
                entry = try sampleDescription(box)
            case BoxType("stts"):
                let b = try body(box)
                let count = try entryCount(b, box, entrySize: 8)
                times = (0..<count).map { (Int(be32(b, 8 + $0 * 8)), Int(be32(b, 12 + $0 * 8))) }
            case BoxType("stsc"):
                let b = try body(box)
                let count = try entryCount(b, box, entrySize: 12)
                chunks = (0..<count).map { (Int(be32(b, 8 + $0 * 12)), Int(be32(b, 12 + $0 * 12))) }
            case BoxType("stsz"):
                let b = try body(box)
                guard b.count >= 12 else { throw corrupt("'stsz' box is too short") }
                table.fixedSize = Int(be32(b, 4))
                let count = Int(be32(b, 8))
                if table.fixedSize == 0 {
                    guard count <= (b.count - 12) / 4 else { throw corrupt("'stsz' claims \(count) samples in \(b.count) bytes") }
                    table.sizes = (0..<count).map { be32(b, 12 + $0 * 4) }
                }
                sizeCount = count
            case BoxType("stz2"):
                let b = try body(box)
                guard b.count >= 12 else { throw corrupt("'stz2' box is too short") }
                let field = Int(b[7])
                let count = Int(be32(b, 8))
                guard [4, 8, 16].contains(field) else { throw corrupt("'stz2' field size \(field)") }
                guard count <= (b.count - 12) * 8 / field else { throw corrupt("'stz2' claims \(count) samples in \(b.count) bytes") }
                table.sizes = (0..<count).map { i -> UInt32 in
                    switch field {
                    case 4: UInt32(i % 2 == 0 ? b[12 + i / 2] >> 4 : b[12 + i / 2] & 0x0F)
                    case 8: UInt32(b[12 + i])
                    default: UInt32(b[12 + 2 * i]) << 8 | UInt32(b[13 + 2 * i])
                    }
                }
                sizeCount = count
            case BoxType("stco"):
                let b = try body(box)
                let count = try entryCount(b, box, entrySize: 4)
                offsets = (0..<count).map { UInt64(be32(b, 8 + $0 * 4)) }
            case BoxType("co64"):
                let b = try body(box)
                let count = try entryCount(b, box, entrySize: 8)
                offsets = (0..<count).map { be64(b, 8 + $0 * 8) }
            default:
                break
            }
        }
        guard let entry else { throw corrupt("the sound track has no sample description") }
        guard let sizeCount, let times, let chunks, let offsets else {
            throw corrupt("the sample table lacks one of 'stts', 'stsc', 'stsz' and 'stco'")
        }
        table.chunkOffsets = offsets

        // Samples that every table accounts for; a table that stops early ends the track there.
        var count = sizeCount
        var tick = 0, timed = 0
        for run in times where run.count > 0 {
            guard timed < count else { break }
            let n = min(run.count, count - timed)
            let (product, overflow) = n.multipliedReportingOverflow(by: run.delta)
            guard !overflow, product <= Int(UInt32.max) * 4096 else { throw corrupt("'stts' durations overflow") }
            table.timeRuns.append((n, run.delta, timed, tick))
            tick += product
            guard tick <= 1 << 48 else { throw corrupt("'stts' durations add up to more than \(1 << 48) ticks") }
            timed += n
        }
        count = min(count, timed)

        var first = 0
        for (i, run) in chunks.enumerated() {
            guard run.firstChunk >= 1, run.samplesPerChunk >= 1, run.firstChunk <= offsets.count else {
                throw corrupt("'stsc' entry \(i) is out of range")
            }
            if let last = table.chunkRuns.last {
                guard run.firstChunk - 1 > last.firstChunk else { throw corrupt("'stsc' chunks are out of order") }
                let (n, overflow) = (run.firstChunk - 1 - last.firstChunk).multipliedReportingOverflow(by: last.samplesPerChunk)
                guard !overflow, first <= Int.max - n else { throw corrupt("'stsc' sample counts overflow") }
                first += n
            }
            guard first < count else { break }
            table.chunkRuns.append((run.firstChunk - 1, run.samplesPerChunk, first))
        }
        if let last = table.chunkRuns.last {
            let (inLast, overflow) = (offsets.count - last.firstChunk).multipliedReportingOverflow(by: last.samplesPerChunk)
            if !overflow { count = min(count, last.firstSample + inLast) }
        } else {
            count = 0
        }
        // Time runs past the last located sample are cut.
        table.timeRuns = table.timeRuns.filter { $0.firstSample < count }
        if let last = table.timeRuns.popLast() {
            let n = min(last.count, count - last.firstSample)
            table.timeRuns.append((n, last.delta, last.firstSample, last.firstTick))
            table.totalTicks = last.firstTick + n * last.delta
        }
        table.sampleCount = count
        guard count > 0 else { throw DecodeError(path: path, reason: .noAudio) }
        table.largestSample = table.fixedSize > 0 ? table.fixedSize : Int(table.sizes[..<count].max() ?? 0)
        guard table.largestSample <= Self.maxSampleBytes else {
            throw corrupt("a sample of \(table.largestSample) bytes is larger than any audio frame")
        }
        return (entry, table)
    }

    /// A full box's entry count, checked against the bytes there are.
    private func entryCount(_ b: [UInt8], _ box: MP4Box, entrySize: Int) throws(DecodeError) -> Int {
        guard b.count >= 8 else { throw corrupt("'\(box.type)' box is too short") }
        let count = Int(be32(b, 4))
        guard count <= (b.count - 8) / entrySize else {
            throw corrupt("'\(box.type)' claims \(count) entries in \(b.count) bytes")
        }
        return count
    }

    /// 'stsd': the first sample entry.
    private mutating func sampleDescription(_ stsd: MP4Box) throws(DecodeError) -> MP4SampleEntry {
        guard let entry = try children(of: stsd.body + 8..<stsd.end).first else {
            throw corrupt("'stsd' has no sample entry")
        }
        // An audio sample entry: 6 reserved, 2 data reference index, 2 version, 6 reserved,
        // 2 channels, 2 sample size, 4 reserved, 4 rate (16.16); QuickTime versions 1 and 2
        // add 16 and 36 bytes.
        let head = try bytes(at: entry.body, count: 28)
        guard head.count == 28, entry.bodySize >= 28 else { throw corrupt("sample entry '\(entry.type)' is too short") }
        let version = Int(head[8]) << 8 | Int(head[9])
        let channels = Int(head[16]) << 8 | Int(head[17])
        let rate = Int(be32(head, 24) >> 16)
        let extra: UInt64 = version == 1 ? 16 : version == 2 ? 36 : 0
        guard entry.bodySize >= 28 + extra else { throw corrupt("sample entry '\(entry.type)' is too short") }
        let inner = try children(of: entry.body + 28 + extra..<entry.end)
        switch entry.type {
        case BoxType("mp4a"):
            var esds = inner.first { $0.type == BoxType("esds") }
            if esds == nil, let wave = inner.first(where: { $0.type == BoxType("wave") }) {
                esds = try children(of: wave.body..<wave.end).first { $0.type == BoxType("esds") }
            }
            guard let esds else { throw corrupt("'mp4a' has no 'esds' box") }
            let config = try audioSpecificConfig(try body(esds, skipping: 4))
            return .aac(audioSpecificConfig: config, channels: channels, sampleRate: rate)
        case BoxType("alac"):
            guard let cookie = inner.first(where: { $0.type == BoxType("alac") }) else {
                throw corrupt("'alac' sample entry has no magic cookie")
            }
            return .alac(cookie: try body(cookie, skipping: 4))
        default:
            return .other("'\(entry.type)' audio")
        }
    }

    /// The AudioSpecificConfig inside an ES descriptor: ES_Descriptor (tag 3) holding a
    /// DecoderConfigDescriptor (tag 4) holding the DecoderSpecificInfo (tag 5).
    private func audioSpecificConfig(_ b: [UInt8]) throws(DecodeError) -> [UInt8] {
        var at = 0
        func descriptor() -> (tag: UInt8, size: Int)? {
            guard at < b.count else { return nil }
            let tag = b[at]
            at += 1
            var size = 0
            for _ in 0..<4 {
                guard at < b.count else { return nil }
                let byte = b[at]
                at += 1
                size = size << 7 | Int(byte & 0x7F)
                if byte & 0x80 == 0 { break }
            }
            return (tag, size)
        }
        guard let es = descriptor(), es.tag == 3, at + 3 <= b.count else { throw corrupt("'esds' has no ES descriptor") }
        let flags = b[at + 2]
        at += 3
        if flags & 0x80 != 0 { at += 2 }
        if flags & 0x40 != 0, at < b.count { at += 1 + Int(b[at]) }
        if flags & 0x20 != 0 { at += 2 }
        guard let config = descriptor(), config.tag == 4, at + 13 <= b.count else {
            throw corrupt("'esds' has no decoder config")
        }
        let objectType = b[at]
        // 0x40 MPEG-4 audio; 0x66…0x68 MPEG-2 AAC profiles. 0x69 and 0x6B are MP3.
        guard objectType == 0x40 || (0x66...0x68).contains(objectType) else {
            throw DecodeError(path: path, reason: .unsupported("MP4 audio of object type 0x\(String(objectType, radix: 16))"
                + (objectType == 0x69 || objectType == 0x6B ? " (MP3)" : "")))
        }
        at += 13
        guard let specific = descriptor(), specific.tag == 5, specific.size >= 2, at + specific.size <= b.count else {
            throw corrupt("'esds' has no AudioSpecificConfig")
        }
        return Array(b[at..<(at + specific.size)])
    }

    /// 'udta': its 'meta' box.
    private mutating func userData(_ udta: MP4Box, into tags: inout MP4Tags) throws(DecodeError) {
        for box in try children(of: udta.body..<udta.end) where box.type == BoxType("meta") {
            try metadata(box, into: &tags)
        }
    }

    /// 'meta' (a full box, though QuickTime writes it without version and flags): its 'ilst'.
    private mutating func metadata(_ meta: MP4Box, into tags: inout MP4Tags) throws(DecodeError) {
        guard meta.bodySize >= 8 else { return }
        let peek = try bytes(at: meta.body + 4, count: 4)
        let skip: UInt64 = BoxType(raw: be32(peek, 0)) == BoxType("hdlr") ? 0 : 4
        for box in try children(of: meta.body + skip..<meta.end) where box.type == BoxType("ilst") {
            for item in try children(of: box.body..<box.end) {
                try tags.read(item: item, demuxer: &self)
            }
        }
    }
}

func be32(_ b: [UInt8], _ at: Int) -> UInt32 {
    UInt32(b[at]) << 24 | UInt32(b[at + 1]) << 16 | UInt32(b[at + 2]) << 8 | UInt32(b[at + 3])
}

func be64(_ b: [UInt8], _ at: Int) -> UInt64 {
    UInt64(be32(b, at)) << 32 | UInt64(be32(b, at + 4))
}
