#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// ReplayGain as a file carries it: gains in dB, peaks linear (1.0 = full scale).
public struct ReplayGain: Sendable, Equatable {
    public var trackGain: Double?
    public var trackPeak: Double?
    public var albumGain: Double?
    public var albumPeak: Double?

    public init(trackGain: Double? = nil, trackPeak: Double? = nil, albumGain: Double? = nil, albumPeak: Double? = nil) {
        self.trackGain = trackGain
        self.trackPeak = trackPeak
        self.albumGain = albumGain
        self.albumPeak = albumPeak
    }

    /// The factor to play the file at, as MPD computes it: the gain of the kind `album` asks
    /// for (album falls back to track when the file has no album gain, and track to album),
    /// plus the pre-amp; limited to 1 ÷ that kind's peak when `preventsClipping`, so the loudest
    /// sample stays within full scale. A file with neither gain plays at `missingPreamp` dB.
    public func scale(album: Bool, preamp: Double, missingPreamp: Double = 0, preventsClipping: Bool = true) -> Double {
        let chosen: (gain: Double, peak: Double?)? =
            if album, let g = albumGain { (g, albumPeak) }
            else if let g = trackGain { (g, trackPeak) }
            else if let g = albumGain { (g, albumPeak) }
            else { nil }
        guard let chosen, chosen.gain.isFinite else { return ReplayGain.linear(missingPreamp) }
        var factor = ReplayGain.linear(chosen.gain + preamp)
        if preventsClipping, let peak = chosen.peak, peak.isFinite, peak > 0, factor * peak > 1 { factor = 1 / peak }
        return factor
    }

    /// dB to an amplitude factor.
    public static func linear(_ decibels: Double) -> Double { pow(10, decibels / 20) }
}

/// How ReplayGain is applied: not at all (the stream stays bit-perfect), by each track's gain,
/// by the album's, or by the album's while the queue plays an album in order (`auto`).
public enum ReplayGainMode: String, Sendable, CaseIterable {
    case off, track, album, auto
}

/// ReplayGain as the profile and the clients set it.
public struct ReplayGainSettings: Sendable, Equatable {
    public var mode: ReplayGainMode
    /// dB added to every file's gain.
    public var preamp: Double
    /// dB for files that carry no ReplayGain at all.
    public var missingPreamp: Double
    /// Limits the gain by the stored peak so the file cannot clip.
    public var preventsClipping: Bool

    public init(mode: ReplayGainMode = .off, preamp: Double = 0, missingPreamp: Double = 0, preventsClipping: Bool = true) {
        self.mode = mode
        self.preamp = preamp
        self.missingPreamp = missingPreamp
        self.preventsClipping = preventsClipping
    }

    /// The pre-amps a client may set, in dB.
    public static let preampRange = -15.0...15.0

    /// The factor a file with `gain` plays at; `albumInOrder` says whether `auto` takes the
    /// album's gain for it. Exactly 1 when the mode is off.
    public func scale(_ gain: ReplayGain, albumInOrder: Bool) -> Double {
        let album: Bool
        switch mode {
        case .off: return 1
        case .track: album = false
        case .album: album = true
        case .auto: album = albumInOrder
        }
        return gain.scale(album: album, preamp: preamp, missingPreamp: missingPreamp, preventsClipping: preventsClipping)
    }
}
