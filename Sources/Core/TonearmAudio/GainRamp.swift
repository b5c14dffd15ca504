#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One gain factor on its way to a target, advanced a frame at a time on the output thread.
///
/// A ramp covers a fixed number of frames from wherever the factor is when the target changes,
/// so a change that arrives mid-ramp bends the curve without a jump, and the last frame lands
/// exactly on the target. The arithmetic is in `Double`: summed over thousands of frames,
/// `Float` steps drift by more than an LSB and the snap to the target would click.
///
/// Part of the render path (see `Mixer.render`): no allocation, lock or system call.
struct GainRamp {
    /// Below this (−60 dB) a ramp in dB would take most of its time in the inaudible tail, and
    /// cannot reach 0 at all; such ramps are linear in amplitude.
    static let decibelFloor = 0.001

    /// The factor applied to the last frame.
    private(set) var value: Double
    private(set) var target: Double
    /// Added to (linear) or multiplied into (dB) `value` each frame.
    private var step: Double = 0
    private var multiplies = false
    /// Frames left until `value` is `target`.
    private(set) var remaining = 0

    init(_ value: Float) {
        self.value = Double(value)
        target = self.value
    }

    /// At its target and staying there.
    var isSettled: Bool { remaining == 0 }

    /// Settled at exactly `level`.
    @inline(__always)
    func isSettled(at level: Double) -> Bool { remaining == 0 && value == level }

    /// Jumps to `level`: for a stream's first sample, never for one that is sounding.
    mutating func snap(to level: Float) {
        value = Double(level)
        target = value
        remaining = 0
    }

    /// Heads for `newTarget` over `frames` frames, linearly in amplitude or, when `inDecibels`
    /// and both ends are above the floor, linearly in dB (a constant ratio per frame).
    @inline(__always)
    mutating func retarget(_ newTarget: Float, frames: Int, inDecibels: Bool) {
        let t = Double(newTarget)
        guard t != target else { return }
        target = t
        guard t != value else {
            remaining = 0
            return
        }
        remaining = frames > 1 ? frames : 1
        if inDecibels && value >= GainRamp.decibelFloor && t >= GainRamp.decibelFloor {
            multiplies = true
            step = exp(log(t / value) / Double(remaining))
        } else {
            multiplies = false
            step = (t - value) / Double(remaining)
        }
    }

    /// The factor for the next frame.
    @inline(__always)
    mutating func next() -> Double {
        if remaining > 0 {
            remaining -= 1
            value = remaining == 0 ? target : (multiplies ? value * step : value + step)
        }
        return value
    }

    /// Lets `frames` frames pass with nothing to apply the factor to (an input whose ring ran
    /// dry): the ramp keeps the device's time, so the stream restarts where the ramp would be.
    @inline(__always)
    mutating func advance(by frames: Int) {
        guard remaining > 0, frames > 0 else { return }
        if frames >= remaining {
            value = target
            remaining = 0
        } else {
            value = multiplies ? value * pow(step, Double(frames)) : value + step * Double(frames)
            remaining -= frames
        }
    }
}
