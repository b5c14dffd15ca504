import Foundation

/// A sine component of a fixture signal.
public struct Tone: Sendable {
    public var frequency: Double
    /// Peak amplitude as a fraction of full scale.
    public var level: Double
    public init(_ frequency: Double, level: Double) {
        self.frequency = frequency
        self.level = level
    }
}

/// A small deterministic generator (SplitMix64): the same seed gives the same noise on every
/// machine and run.
public struct SeededRandom: Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    public mutating func nextSigned() -> Double {
        Double(next() >> 11) / Double(1 << 52) - 1
    }
}

/// A picture to embed in a fixture.
public struct FixturePicture: Sendable {
    /// ID3v2 APIC type (3 = front cover).
    public var type: Int
    public var width: Int
    public var height: Int
    public var description: String

    public init(type: Int = 3, width: Int = 24, height: Int = 16, description: String = "") {
        self.type = type
        self.width = width
        self.height = height
        self.description = description
    }
}

/// A FLAC fixture, generated in the test: tones plus seeded noise, encoded by the `flac` CLI.
///
/// The PCM is made here, so a test knows every sample without any decoder; `flac -d` (see
/// `referenceDecode`) must give the same samples back, since FLAC is lossless.
public struct FLACFixture: Sendable {
    public var frames: Int
    public var sampleRate: Int
    public var channels: Int
    /// 8, 12, 16, 20, 24 or 32.
    public var bitsPerSample: Int
    /// The tones of channel 0; channel c plays each at (1 + 0.25 c) times the frequency, so
    /// channels differ and a swap shows.
    public var tones: [Tone]
    /// Peak level of the seeded noise, as a fraction of full scale.
    public var noiseLevel: Double
    public var seed: UInt64
    /// Vorbis comments, in order (`-T NAME=VALUE`).
    public var tags: [(name: String, value: String)]
    public var picture: FixturePicture?
    public var seekTable: Bool
    /// Fixed block size (`-b`); nil for flac's default.
    public var blockSize: Int?
    /// False encodes from stdin to stdout, which leaves STREAMINFO's total sample count 0
    /// ("unknown") and its MD5 zero.
    public var totalSamplesInStreamInfo: Bool
    /// Anything else for the encoder, e.g. ["-0"] or ["-8"].
    public var extraEncoderArguments: [String]

    public init(frames: Int = 22050, sampleRate: Int = 44100, channels: Int = 2, bitsPerSample: Int = 16,
                tones: [Tone] = [Tone(440, level: 0.4), Tone(1250, level: 0.2)], noiseLevel: Double = 0.05,
                seed: UInt64 = 1, tags: [(name: String, value: String)] = [], picture: FixturePicture? = nil,
                seekTable: Bool = true, blockSize: Int? = nil, totalSamplesInStreamInfo: Bool = true,
                extraEncoderArguments: [String] = []) {
        self.frames = frames
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = bitsPerSample
        self.tones = tones
        self.noiseLevel = noiseLevel
        self.seed = seed
        self.tags = tags
        self.picture = picture
        self.seekTable = seekTable
        self.blockSize = blockSize
        self.totalSamplesInStreamInfo = totalSamplesInStreamInfo
        self.extraEncoderArguments = extraEncoderArguments
    }

    public var duration: Double { Double(frames) / Double(sampleRate) }

    /// The interleaved samples, right-justified: each fits in `bitsPerSample` signed bits.
    public func samples() -> [Int32] {
        let maxValue = Double((Int64(1) << (bitsPerSample - 1)) - 1)
        let minValue = -maxValue - 1
        var random = SeededRandom(seed: seed)
        var out = [Int32](repeating: 0, count: frames * channels)
        let rate = Double(sampleRate)
        for frame in 0..<frames {
            let t = Double(frame) / rate
            for channel in 0..<channels {
                let scale = 1 + 0.25 * Double(channel)
                var x = 0.0
                for tone in tones {
                    x += tone.level * sin(2 * Double.pi * tone.frequency * scale * t + Double(channel))
                }
                x += noiseLevel * random.nextSigned()
                let value = (x * maxValue).rounded()
                out[frame * channels + channel] = Int32(min(maxValue, max(minValue, value)))
            }
        }
        return out
    }

    /// The samples left-justified in 32 bits (value << (32 − bitsPerSample)), the form
    /// `WAVFile.samples` and `referenceDecode` use.
    public func leftJustifiedSamples() -> [Int32] {
        let shift = Int32(32 - bitsPerSample)
        return samples().map { $0 << shift }
    }

    /// Encodes the fixture to `path` with the `flac` CLI and returns `path`.
    ///
    /// flac 1.4.2 takes raw input only at 8/16/24/32 bits; 12- and 20-bit sources go in as
    /// WAVE_FORMAT_EXTENSIBLE with wValidBitsPerSample 12/20 in a 16/24-bit container
    /// (samples left-justified, as WAV requires), which flac encodes as a 12/20-bit stream.
    @discardableResult
    public func write(to path: String) throws -> String {
        guard [8, 12, 16, 20, 24, 32].contains(bitsPerSample) else {
            throw TestSupportError("unsupported fixture bit depth \(bitsPerSample)")
        }
        let flac = try which("flac")
        let samples = samples()
        let containerBytes = (bitsPerSample + 7) / 8
        var arguments = ["--silent", "--force"]
        let inputPath: String
        if bitsPerSample % 8 == 0 {
            inputPath = path + ".raw"
            try Data(packLittleEndian(samples, bytesPerSample: containerBytes, shift: 0))
                .write(to: URL(fileURLWithPath: inputPath))
            arguments += ["--force-raw-format", "--endian=little", "--sign=signed", "--channels=\(channels)",
                          "--bps=\(bitsPerSample)", "--sample-rate=\(sampleRate)"]
        } else {
            inputPath = path + ".in.wav"
            let body = packLittleEndian(samples, bytesPerSample: containerBytes, shift: containerBytes * 8 - bitsPerSample)
            try Data(WAVFile.header(channels: channels, sampleRate: sampleRate, containerBits: containerBytes * 8,
                                    validBits: bitsPerSample, dataBytes: body.count) + body)
                .write(to: URL(fileURLWithPath: inputPath))
        }
        defer { try? FileManager.default.removeItem(atPath: inputPath) }
        if let blockSize { arguments.append("--blocksize=\(blockSize)") }
        if !seekTable { arguments.append("--no-seektable") }
        for tag in tags { arguments.append("--tag=\(tag.name)=\(tag.value)") }
        var picturePath: String?
        if let picture {
            let file = path + ".picture.png"
            try Data(TinyPNG.make(width: picture.width, height: picture.height)).write(to: URL(fileURLWithPath: file))
            picturePath = file
            // TYPE|MIME|DESCRIPTION|WIDTHxHEIGHTxDEPTH|FILE; empty fields are read from the PNG.
            arguments.append("--picture=\(picture.type)|image/png|\(picture.description)||\(file)")
        }
        defer { if let picturePath { try? FileManager.default.removeItem(atPath: picturePath) } }
        arguments += extraEncoderArguments
        if totalSamplesInStreamInfo {
            try runChecked(flac, arguments + ["-o", path, inputPath])
        } else {
            // From stdin to stdout flac cannot seek back, so STREAMINFO keeps total_samples 0.
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            try runChecked(flac, arguments + ["--stdout", "-"], stdinPath: inputPath, stdoutPath: path)
        }
        return path
    }
}

/// Little-endian, `bytesPerSample` bytes per value, each shifted left by `shift` first.
public func packLittleEndian(_ samples: [Int32], bytesPerSample: Int, shift: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: samples.count * bytesPerSample)
    bytes.withUnsafeMutableBufferPointer { out in
        var i = 0
        for sample in samples {
            let v = UInt32(bitPattern: sample << Int32(shift))
            for b in 0..<bytesPerSample {
                out[i + b] = UInt8(truncatingIfNeeded: v >> UInt32(8 * b))
            }
            i += bytesPerSample
        }
    }
    return bytes
}

/// A valid, tiny PNG (8-bit RGB, a colour gradient) written without any image library.
public enum TinyPNG {
    public static func make(width: Int, height: Int) -> [UInt8] {
        var raw: [UInt8] = []
        for y in 0..<height {
            raw.append(0)  // filter: none
            for x in 0..<width {
                raw += [UInt8(x * 255 / max(1, width - 1)), UInt8(y * 255 / max(1, height - 1)), 0x80]
            }
        }
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var ihdr = bigEndian32(UInt32(width)) + bigEndian32(UInt32(height))
        ihdr += [8, 2, 0, 0, 0]  // depth 8, colour type RGB, deflate, adaptive filter, no interlace
        png += chunk("IHDR", ihdr)
        png += chunk("IDAT", zlibStored(raw))
        png += chunk("IEND", [])
        return png
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return bigEndian32(UInt32(data.count)) + typed + bigEndian32(crc32(typed))
    }

    /// A zlib stream of "stored" (uncompressed) deflate blocks.
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let n = min(65535, data.count - offset)
            let final: UInt8 = offset + n == data.count ? 1 : 0
            out += [final, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[offset..<offset + n]
            offset += n
        } while offset < data.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return out + bigEndian32(b << 16 | a)
    }

    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func bigEndian32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }
}
