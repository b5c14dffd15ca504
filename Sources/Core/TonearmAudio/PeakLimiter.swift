#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A look-ahead-free peak limiter for the float bus: instantaneous attack, exponential release.
///
/// A frame whose peak (over all channels, so the stereo image holds) exceeds full scale sets
/// the gain that brings it down to the ceiling; the gain drops to it at once, so no sample ever
/// leaves full scale, and climbs back with a one-pole release (time constant `releaseSeconds`).
/// Without look-ahead only the rise to a new, higher peak is held at the ceiling; everything
/// after it is scaled by a slowly moving gain, not clipped. While the bus stays within full
/// scale and the gain has come back to 1, the limiter multiplies nothing.
///
/// `process` is part of the render path (see `Mixer.render`): no allocation, lock or system call.
struct PeakLimiter {
    /// The largest positive 16-bit sample: limited output is never clamped by the conversion.
    static let ceiling: Float = 32767.0 / 32768.0
    /// Closer to unity than this (−0.00001 dB), the release ends at exactly 1.
    private static let releaseSnap = 1e-6

    private(set) var gain: Double = 1
    /// Per-frame release coefficient: `exp(-1 / (releaseSeconds × rate))`.
    private var release: Double

    init(releaseSeconds: Double, sampleRate: Int) {
        release = PeakLimiter.coefficient(releaseSeconds: releaseSeconds, sampleRate: sampleRate)
    }

    mutating func configure(releaseSeconds: Double, sampleRate: Int) {
        release = PeakLimiter.coefficient(releaseSeconds: releaseSeconds, sampleRate: sampleRate)
    }

    private static func coefficient(releaseSeconds: Double, sampleRate: Int) -> Double {
        let frames = releaseSeconds * Double(sampleRate)
        return frames > 0 ? exp(-1 / frames) : 0
    }

    /// Limits `frames` interleaved frames of `bus` in place.
    @inline(__always)
    mutating func process(_ bus: UnsafeMutablePointer<Float>, frames: Int, channels: Int) {
        var g = gain
        var i = 0
        let end = frames * channels
        while i < end {
            var peak: Float = 0
            for c in 0..<channels {
                let magnitude = abs(bus[i + c])
                if magnitude > peak { peak = magnitude }
            }
            // Engages above full scale, which one stream at unity never reaches (its most
            // negative sample is exactly −1), and holds the peak at the ceiling.
            let wanted = peak > 1 ? Double(PeakLimiter.ceiling / peak) : 1
            if wanted < g {
                g = wanted
            } else if g < 1 {
                g = wanted - (wanted - g) * release
                if wanted == 1 && 1 - g < PeakLimiter.releaseSnap { g = 1 }
            }
            if g < 1 {
                let scale = Float(g)
                for c in 0..<channels { bus[i + c] *= scale }
            }
            i += channels
        }
        gain = g
    }
}
