/// What a display shows: Now Playing, the transport state and which commands are enabled.
/// Published to displays on events only (start, pause, seek, track change, a command enabled or
/// disabled, volume, mute), never on a timer: a display ticks its own clock from `elapsed`,
/// `rate` and `timestamp` (elapsed + rate × (now − timestamp)).
public struct BoardDisplayState: Equatable, Sendable {
    public enum Transport: String, Sendable {
        case playing, paused, stopped
    }

    public var transport: Transport
    public var title: String?
    public var artist: String?
    public var album: String?
    /// Seconds; nil when unknown.
    public var duration: Double?
    /// Seconds into the track at `timestamp`.
    public var elapsed: Double
    /// 1 while playing, 0 otherwise.
    public var rate: Double
    /// When `elapsed` was true, in seconds of the daemon's monotonic clock
    /// (CLOCK_MONOTONIC, the same clock `monotonicSeconds()` reads).
    public var timestamp: Double
    /// 0-based; nil when nothing is current.
    public var queueIndex: Int?
    public var queueCount: Int
    /// Percent.
    public var volume: Double
    public var muted: Bool
    /// Every command a control can send, enabled or not (disabled commands are shown disabled).
    public var enabled: [BoardCommand.Name: Bool]

    public init(
        transport: Transport = .stopped, title: String? = nil, artist: String? = nil, album: String? = nil,
        duration: Double? = nil, elapsed: Double = 0, rate: Double = 0, timestamp: Double = 0,
        queueIndex: Int? = nil, queueCount: Int = 0, volume: Double = 100, muted: Bool = false,
        enabled: [BoardCommand.Name: Bool] = [:]
    ) {
        self.transport = transport
        self.title = title
        self.artist = artist
        self.album = album
        self.duration = duration
        self.elapsed = elapsed
        self.rate = rate
        self.timestamp = timestamp
        self.queueIndex = queueIndex
        self.queueCount = queueCount
        self.volume = volume
        self.muted = muted
        self.enabled = enabled
    }

    /// `elapsed` extrapolated to `now` (same clock as `timestamp`), within the duration.
    public func elapsed(at now: Double) -> Double {
        let value = elapsed + rate * (now - timestamp)
        if let duration { return min(max(0, value), duration) }
        return max(0, value)
    }

    public func isEnabled(_ name: BoardCommand.Name) -> Bool { enabled[name] ?? false }
}
