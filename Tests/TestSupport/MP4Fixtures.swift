import Foundation

/// MP4/M4A fixtures: PCM made here, encoded by ffmpeg (AAC or ALAC), decoded by the `faad`
/// reference decoder, and edited box by box to make the cases a tagger or a broken file makes.
public enum MP4Fixtures {
    /// Encodes `samples` with ffmpeg to `path`: `codec` "aac" or "alac", plus `arguments`
    /// (tags, bit rate, movflags…) before the output name.
    @discardableResult
    public static func encode(_ samples: [Int32], to path: String, codec: String, sampleRate: Int = 44100, channels: Int = 2,
                              bits: Int = 16, arguments: [String] = [], inputs: [String] = []) throws -> String {
        let wav = path + ".in.wav"
        try WAVFile.write(samples, channels: channels, sampleRate: sampleRate, bits: bits, to: wav)
        defer { try? FileManager.default.removeItem(atPath: wav) }
        var args = ["-v", "error", "-y", "-i", wav] + inputs.flatMap { ["-i", $0] }
        args += ["-c:a", codec]
        if codec == "alac" { args += ["-sample_fmt", bits == 16 ? "s16p" : "s32p"] }
        if codec == "aac" { args += ["-b:a", "128k"] }
        try runChecked("ffmpeg", args + arguments + [path], timeout: 120)
        return path
    }

    /// The `faad` reference decoder's 16-bit output for `path`, left-justified.
    public static func faadReference(_ path: String) throws -> [Int32] {
        let out = path + ".faad.wav"
        defer { try? FileManager.default.removeItem(atPath: out) }
        try runChecked("faad", ["-q", "-o", out, path], timeout: 120)
        return try WAVFile(path: out).samples()
    }

    /// A test signal: tones and seeded noise, right-justified at `bits`.
    public static func signal(frames: Int, channels: Int = 2, bits: Int = 16, sampleRate: Int = 44100, seed: UInt64 = 1) -> [Int32] {
        FLACFixture(frames: frames, sampleRate: sampleRate, channels: channels, bitsPerSample: bits, seed: seed).samples()
    }
}

/// An MP4 file's bytes, with the edits tests make: find a box by its path, rename it, patch a
/// field, add a box to a container (its ancestors' sizes follow).
public struct MP4Bytes {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    public init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw TestSupportError("cannot read \(path)") }
        bytes = [UInt8](data)
    }

    public func write(to path: String) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }

    /// A box type's four bytes: Latin-1, so "©nam" is A9 6E 61 6D.
    public static func fourCC(_ type: String) -> [UInt8] { type.unicodeScalars.map { UInt8($0.value & 0xFF) } }

    public static func box(_ type: String, _ body: [UInt8]) -> [UInt8] { be32(8 + body.count) + fourCC(type) + body }

    /// A 'data' box of well-known `type` (1 UTF-8, 13 JPEG, 14 PNG, 0 binary).
    public static func data(type: Int, _ value: [UInt8]) -> [UInt8] { box("data", be32(type) + be32(0) + value) }

    /// A freeform '----' item: com.apple.iTunes, `name`, UTF-8 `value`.
    public static func freeform(_ name: String, _ value: String) -> [UInt8] {
        box("----", box("mean", be32(0) + Array("com.apple.iTunes".utf8)) + box("name", be32(0) + Array(name.utf8))
            + data(type: 1, Array(value.utf8)))
    }

    public static func be32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * $0)) } }

    func u32(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }

    /// The box at `path` (e.g. ["moov", "trak", "mdia", "minf", "stbl", "stsz"]): its start and size.
    public func box(_ path: [String]) -> (start: Int, size: Int)? {
        var range = 0..<bytes.count
        var found: (start: Int, size: Int)?
        for name in path {
            found = nil
            var at = range.lowerBound
            while at + 8 <= range.upperBound {
                let size = u32(at)
                guard size >= 8 else { return nil }
                if Array(bytes[at + 4..<at + 8]) == Self.fourCC(name) {
                    found = (at, size)
                    break
                }
                at += size
            }
            guard let box = found else { return nil }
            let skip = name == "meta" ? 12 : 8
            range = box.start + skip..<box.start + box.size
        }
        return found
    }

    public mutating func rename(_ path: [String], to type: String) throws {
        guard let box = box(path) else { throw TestSupportError("no box \(path.joined(separator: "/"))") }
        bytes.replaceSubrange(box.start + 4..<box.start + 8, with: Self.fourCC(type))
    }

    /// Sets the 32-bit big-endian value `offset` bytes into the box at `path`.
    public mutating func patch(_ path: [String], at offset: Int, to value: Int) throws {
        guard let box = box(path) else { throw TestSupportError("no box \(path.joined(separator: "/"))") }
        bytes.replaceSubrange(box.start + offset..<box.start + offset + 4, with: Self.be32(value))
    }

    /// Appends `child` at the end of the container at `path`; every container on the path
    /// grows by its size. Only for containers after 'mdat' (no chunk offset moves).
    public mutating func append(_ child: [UInt8], into path: [String]) throws {
        var starts: [Int] = []
        for depth in 1...path.count {
            guard let box = box(Array(path.prefix(depth))) else { throw TestSupportError("no box \(path.prefix(depth).joined(separator: "/"))") }
            starts.append(box.start)
        }
        let container = box(path)!
        bytes.insert(contentsOf: child, at: container.start + container.size)
        for start in starts { bytes.replaceSubrange(start..<start + 4, with: Self.be32(u32(start) + child.count)) }
    }
}

extension MP4Bytes {
    /// A minimal M4A written here: 'ftyp', 'mdat' with `samples`, then 'moov' with one sound
    /// track whose sample description is `sampleEntry`. Sizes go in 'stz2' (16-bit) when
    /// `compactSizes`, chunk offsets in 'co64' when `wideOffsets`.
    public static func movie(sampleEntry: [UInt8], samples: [[UInt8]], durations: [Int], timescale: Int,
                             samplesPerChunk: Int = 1, wideOffsets: Bool = false, compactSizes: Bool = false) -> [UInt8] {
        let full = be32(0)
        let ftyp = box("ftyp", Array("M4A ".utf8) + be32(0) + Array("M4A isom".utf8))
        let mdat = box("mdat", samples.flatMap { $0 })
        var offsets: [Int] = []
        var at = ftyp.count + 8
        for (i, sample) in samples.enumerated() {
            if i % samplesPerChunk == 0 { offsets.append(at) }
            at += sample.count
        }
        var runs: [(count: Int, delta: Int)] = []
        for d in durations {
            if let last = runs.last, last.delta == d { runs[runs.count - 1].count += 1 } else { runs.append((1, d)) }
        }
        let total = durations.reduce(0, +)
        let stsd = box("stsd", full + be32(1) + sampleEntry)
        let stts = box("stts", full + be32(runs.count) + runs.flatMap { be32($0.count) + be32($0.delta) })
        let stsc = box("stsc", full + be32(1) + be32(1) + be32(samplesPerChunk) + be32(1))
        let sizes = compactSizes
            ? box("stz2", full + [0, 0, 0, 16] + be32(samples.count) + samples.flatMap { [UInt8($0.count >> 8), UInt8($0.count & 0xFF)] })
            : box("stsz", full + be32(0) + be32(samples.count) + samples.flatMap { be32($0.count) })
        let chunks = wideOffsets
            ? box("co64", full + be32(offsets.count) + offsets.flatMap { be32(0) + be32($0) })
            : box("stco", full + be32(offsets.count) + offsets.flatMap { be32($0) })
        let stbl = box("stbl", stsd + stts + stsc + sizes + chunks)
        let times: [UInt8] = be32(0) + be32(0) + be32(timescale) + be32(total)
        let mdhd = box("mdhd", full + times + [0x55, 0xC4, 0, 0])
        let hdlr = box("hdlr", full + be32(0) + Array("soun".utf8) + [UInt8](repeating: 0, count: 13))
        let mdia = box("mdia", mdhd + hdlr + box("minf", stbl))
        let mvhd = box("mvhd", full + times + [UInt8](repeating: 0, count: 80))
        return ftyp + mdat + box("moov", mvhd + box("trak", mdia))
    }

    /// An 'alac' sample entry with its magic cookie.
    public static func alacEntry(bits: Int, channels: Int, sampleRate: Int, frameLength: Int) -> [UInt8] {
        let layout: [UInt8] = [0, UInt8(bits), 40, 10, 14, UInt8(channels), 0, 255]
        let cookie: [UInt8] = be32(frameLength) + layout + be32(0) + be32(0) + be32(sampleRate)
        let reserved: [UInt8] = [UInt8](repeating: 0, count: 6) + [0, 1] + [UInt8](repeating: 0, count: 8)
        let shape: [UInt8] = [0, UInt8(channels), 0, UInt8(min(bits, 24))]
        let audio: [UInt8] = reserved + shape + be32(0) + be32(min(sampleRate, 65535) << 16)
        return box("alac", audio + box("alac", be32(0) + cookie))
    }

    /// One ALAC frame stored uncompressed (the encoder's escape for frames that do not
    /// compress): interleaved samples at full depth, right-justified `bits` each.
    public static func uncompressedALACFrame(_ samples: ArraySlice<Int32>, channels: Int, bits: Int, frameLength: Int) -> [UInt8] {
        var out: [UInt8] = []
        var accumulator: UInt64 = 0
        var pending = 0
        func put(_ value: UInt64, _ n: Int) {
            for i in stride(from: n - 1, through: 0, by: -1) {
                accumulator = accumulator << 1 | (value >> UInt64(i) & 1)
                pending += 1
                if pending == 8 {
                    out.append(UInt8(accumulator & 0xFF))
                    accumulator = 0
                    pending = 0
                }
            }
        }
        let frames = samples.count / channels
        let partial = frames != frameLength
        put(channels == 2 ? 1 : 0, 3)              // CPE or SCE
        put(0, 4)                                   // element instance
        put(0, 12)                                  // unused
        put((partial ? 8 : 0) | 1, 4)              // partial frame, no bytes shifted, escaped
        if partial { put(UInt64(frames), 32) }
        for s in samples { put(UInt64(UInt32(bitPattern: s)) & ((1 << UInt64(bits)) - 1), bits) }
        put(7, 3)                                   // END
        if pending > 0 { put(0, 8 - pending) }
        return out
    }
}
