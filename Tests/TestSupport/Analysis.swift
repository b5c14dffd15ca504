import Foundation

/// Where two sample sequences first differ, for a failure message that fits on a screen
/// (XCTAssertEqual on arrays of a million samples prints them all).
public func sampleMismatch(_ actual: [Int32], _ expected: [Int32], channels: Int = 1) -> String? {
    let common = min(actual.count, expected.count)
    var first: Int?
    var differing = 0
    actual.withUnsafeBufferPointer { a in
        expected.withUnsafeBufferPointer { e in
            for i in 0..<common where a[i] != e[i] {
                if first == nil { first = i }
                differing += 1
            }
        }
    }
    if first == nil && actual.count == expected.count { return nil }
    var text = "got \(actual.count) samples (\(actual.count / max(1, channels)) frames), expected \(expected.count) (\(expected.count / max(1, channels)) frames)"
    if let first {
        let frame = first / max(1, channels)
        let lo = max(0, first - 2), hi = min(common, first + 4)
        text += "; \(differing) of the first \(common) differ, first at sample \(first) (frame \(frame), channel \(first % max(1, channels)))"
        text += ": got \(Array(actual[lo..<hi])), expected \(Array(expected[lo..<hi]))"
    } else {
        text += "; the common \(common) samples are equal"
    }
    return text
}

/// Amplitude (peak, as a fraction of full scale) of `frequency` in one channel, by the
/// Goertzel algorithm over the whole signal (use whole-ish numbers of cycles).
public func toneAmplitude(_ samples: [Float], channel: Int, channels: Int, sampleRate: Int, frequency: Double) -> Double {
    let frames = samples.count / channels
    guard frames > 0 else { return 0 }
    let w = 2 * Double.pi * frequency / Double(sampleRate)
    let coefficient = 2 * cos(w)
    var s1 = 0.0, s2 = 0.0
    for n in 0..<frames {
        let s0 = Double(samples[n * channels + channel]) + coefficient * s1 - s2
        s2 = s1
        s1 = s0
    }
    let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
    return 2 * sqrt(max(0, power)) / Double(frames)
}

/// Left-justified integers as floats in [-1, 1).
public func normalised(_ samples: [Int32]) -> [Float] {
    samples.map { Float($0) / 2_147_483_648 }
}

/// The summary line `played N files in X s: U underruns, L device losses`, parsed.
public struct PlaySummary: Sendable, Equatable {
    public var files: Int
    public var seconds: Double
    public var underruns: Int
    public var deviceLosses: Int

    public init(files: Int, seconds: Double, underruns: Int, deviceLosses: Int) {
        self.files = files
        self.seconds = seconds
        self.underruns = underruns
        self.deviceLosses = deviceLosses
    }

    /// Finds the summary line in tonearm's standard error (which may also hold libjack noise).
    public init?(stderr: String) {
        for line in stderr.split(separator: "\n").reversed() where line.hasPrefix("played ") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == ":" || $0 == "," })
            // played N file(s) in X s U underruns L device losses
            guard words.count >= 10, let n = Int(words[1]), let s = Double(words[4]),
                  let u = Int(words[6]), let l = Int(words[8]) else { continue }
            self.files = n
            self.seconds = s
            self.underruns = u
            self.deviceLosses = l
            return
        }
        return nil
    }
}
