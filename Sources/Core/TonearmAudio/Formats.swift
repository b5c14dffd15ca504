/// The shape of a PCM stream as it leaves a decoder: rate, channel count and the bit depth of
/// its samples. Inside Tonearm every sample travels as a left-justified `Int32` (the source's
/// most significant bit at bit 31), so a 12-bit and a 24-bit stream share one representation
/// and going back to the source's depth is a shift, never a rounding.
public struct StreamFormat: Hashable, Sendable, CustomStringConvertible {
    public var sampleRate: Int
    public var channels: Int
    public var bitsPerSample: Int

    public init(sampleRate: Int, channels: Int, bitsPerSample: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = bitsPerSample
    }

    public var description: String { "\(bitsPerSample)-bit \(sampleRate) Hz \(channels) ch" }
}

/// Sample formats Tonearm writes to a device, in the device's byte layout.
public enum DeviceSampleFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    case s16LE = "S16_LE"
    case s24_3LE = "S24_3LE"
    case s24LE = "S24_LE"
    case s32LE = "S32_LE"
    case floatLE = "FLOAT_LE"

    /// Bytes one sample takes in the device buffer.
    public var bytesPerSample: Int {
        switch self {
        case .s16LE: 2
        case .s24_3LE: 3
        case .s24LE, .s32LE, .floatLE: 4
        }
    }

    /// Significant bits an integer sample carries (floats: treated as 24-bit precise).
    public var significantBits: Int {
        switch self {
        case .s16LE: 16
        case .s24_3LE, .s24LE: 24
        case .s32LE: 32
        case .floatLE: 24
        }
    }

    public var description: String { rawValue }

    /// The formats to try for a source of `bits` bits, best first: the narrowest container that
    /// holds every bit (bit-perfect), then wider ones, then float. A 12-bit source plays as
    /// S16_LE, a 20-bit one as S24_3LE; nothing is ever narrower than the source unless the
    /// device accepts nothing wider.
    public static func preferenceOrder(forBits bits: Int) -> [DeviceSampleFormat] {
        let lossless: [DeviceSampleFormat]
        switch bits {
        case ...16: lossless = [.s16LE, .s24_3LE, .s24LE, .s32LE]
        case ...24: lossless = [.s24_3LE, .s24LE, .s32LE]
        default: lossless = [.s32LE]
        }
        let rest = DeviceSampleFormat.allCases.filter { !lossless.contains($0) && $0 != .floatLE }
            .sorted { $0.significantBits > $1.significantBits }
        return lossless + [.floatLE] + rest
    }
}

/// What the output device was actually configured to.
public struct DeviceFormat: Hashable, Sendable, CustomStringConvertible {
    public var sampleFormat: DeviceSampleFormat
    public var sampleRate: Int
    public var channels: Int
    public var periodFrames: Int
    public var bufferFrames: Int

    public init(sampleFormat: DeviceSampleFormat, sampleRate: Int, channels: Int, periodFrames: Int, bufferFrames: Int) {
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channels = channels
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
    }

    public var bytesPerFrame: Int { sampleFormat.bytesPerSample * channels }

    /// The shortest buffer taken back on a change to the mix: in a shorter one a command is
    /// heard within the buffer anyway, and a take-back would leave the device only the guard.
    public static let shortestRewoundMilliseconds = 100

    /// Whether the buffer is long enough to be rewound where the device can
    /// (`shortestRewoundMilliseconds`), whichever unit it was asked in.
    public var isRewoundWherePossible: Bool {
        bufferFrames * 1000 >= DeviceFormat.shortestRewoundMilliseconds * sampleRate
    }

    public var description: String {
        "\(sampleFormat) \(sampleRate) Hz \(channels) ch, period \(periodFrames), buffer \(bufferFrames)"
    }
}
