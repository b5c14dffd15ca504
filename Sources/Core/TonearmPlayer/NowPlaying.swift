/// The Now Playing dictionary, as subscribers see it.
///
/// Progress is `elapsed` at `timestamp` moving at `rate`: subscribers extrapolate with
/// `elapsed(at:)` and nothing is ever published on a timer (seed pattern 4: "don't update elapsed
/// on a timer; the system infers from rate").
public struct NowPlayingInfo: Sendable, Equatable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var trackNumber: Int?
    /// Seconds; nil when unknown.
    public var duration: Double?
    /// Seconds into the current item at `timestamp`.
    public var elapsed: Double
    /// 1 playing, 0 paused or stopped, ±4 scanning. Play state is read from the rate (seed
    /// pattern 4: "iOS ignores playbackState, uses playbackRate").
    public var rate: Double
    public var defaultRate: Double
    /// Index of the current item in play order (the shuffle order when shuffle is on).
    public var queueIndex: Int?
    public var queueCount: Int
    /// True for a current item without a known duration.
    public var isLiveStream: Bool
    public var artwork: Artwork?
    /// The time (on the clock of `now`) at which the audio at `elapsed` is heard: when a play's
    /// or a gapless step's first frame reaches the listener, once the engine has said so; it
    /// may lie a little ahead of the publication.
    public var timestamp: Double

    public init(
        title: String? = nil, artist: String? = nil, album: String? = nil,
        albumArtist: String? = nil, trackNumber: Int? = nil, duration: Double? = nil,
        elapsed: Double = 0, rate: Double = 0, defaultRate: Double = 1, queueIndex: Int? = nil,
        queueCount: Int = 0, isLiveStream: Bool = false, artwork: Artwork? = nil,
        timestamp: Double = 0
    ) {
        self.title = title
        self.artist = artist
        self.album = album
        self.albumArtist = albumArtist
        self.trackNumber = trackNumber
        self.duration = duration
        self.elapsed = elapsed
        self.rate = rate
        self.defaultRate = defaultRate
        self.queueIndex = queueIndex
        self.queueCount = queueCount
        self.isLiveStream = isLiveStream
        self.artwork = artwork
        self.timestamp = timestamp
    }

    /// Elapsed extrapolated to `now` (elapsed + rate × (now − timestamp)), clamped to
    /// [0, duration].
    public func elapsed(at now: Double) -> Double {
        Self.extrapolate(elapsed, rate: rate, from: timestamp, to: now, duration: duration)
    }

    static func extrapolate(
        _ elapsed: Double, rate: Double, from timestamp: Double, to now: Double, duration: Double?
    ) -> Double {
        let position = rate == 0 ? elapsed : elapsed + rate * (now - timestamp)
        return min(max(position, 0), duration ?? .infinity)
    }
}

/// Why a publication was made. These are the only moments anything is published (seed pattern 4:
/// playback start, pause, seek, track change, rate change; pattern 3: artwork).
public enum PublicationReason: String, Sendable {
    case playbackStarted, paused, resumed, seek, trackChanged, rateChanged, metadataChanged,
        artworkChanged, stopped, queueChanged
}

/// One update of the Now Playing dictionary.
public struct NowPlayingPublication: Sendable, Equatable {
    public var reason: PublicationReason
    /// The full merged dictionary after the update.
    public var info: NowPlayingInfo
    /// True when the current item changed: one full replacement, artwork included (seed pattern
    /// 3: no separate artwork update at a track change, so no flicker). False for a merged
    /// partial update, in which only the keys that changed differ from the previous `info`.
    public var isReplacement: Bool
    /// True when the artwork id differs from the previous publication's.
    public var artworkChanged: Bool

    public init(
        reason: PublicationReason, info: NowPlayingInfo, isReplacement: Bool, artworkChanged: Bool
    ) {
        self.reason = reason
        self.info = info
        self.isReplacement = isReplacement
        self.artworkChanged = artworkChanged
    }
}
