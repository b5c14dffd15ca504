/// How carefully a stream is resampled when the device lacks its rate: libsoxr's five standard
/// recipes. The raw values are what a config file says.
///
/// Measured from 48 kHz to 44.1 kHz (Nyquist 22.05 kHz): what each keeps of 18 kHz and lets
/// fold back of 23 kHz, and what a bare libsoxr pass from 44.1 kHz stereo to 48 kHz costs
/// beside `high` (`scripts/bench-soxr.c`).
///
///     quality     18 kHz    23 kHz    CPU
///     quick       -2.5 dB     -4 dB   0.7
///     low         -3.6 dB   -111 dB   0.9
///     medium      -0.1 dB   -116 dB   1.0
///     high         0.0 dB   -135 dB   1
///     veryHigh     0.0 dB   -155 dB   1.3
public enum ResampleQuality: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Cubic interpolation: soft treble, and no stopband to speak of.
    case quick
    /// 16-bit precision, flat to 0.68 of Nyquist.
    case low
    /// 16-bit precision, flat to 0.91 of Nyquist within 0.35 dB.
    case medium
    /// 20-bit precision, flat to 0.91 of Nyquist within 0.01 dB: transparent for 16-bit audio.
    case high
    /// 28-bit precision, otherwise as `high`: transparent for 24-bit audio.
    case veryHigh = "very_high"

    public var description: String { rawValue }
}
