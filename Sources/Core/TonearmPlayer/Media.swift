/// A cover image the daemon has resolved for an item (the file's embedded front cover, else a cover file
/// next to it). The core only compares ids: a different id is a different picture.
public struct Artwork: Sendable, Equatable {
    public var id: String
    public var mimeType: String
    public var width: Int
    public var height: Int
    public var byteCount: Int

    public init(id: String, mimeType: String, width: Int, height: Int, byteCount: Int) {
        self.id = id
        self.mimeType = mimeType
        self.width = width
        self.height = height
        self.byteCount = byteCount
    }
}

/// What is known about one item. Every field may be missing.
public struct TrackMetadata: Sendable, Equatable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var trackNumber: Int?
    public var discNumber: Int?
    public var genre: String?
    /// Seconds; nil when unknown (a stream without a length).
    public var duration: Double?
    public var artwork: Artwork?
    /// A live stream (internet radio): no length, and no seeking in it.
    public var isLiveStream: Bool

    public init(
        title: String? = nil, artist: String? = nil, album: String? = nil,
        albumArtist: String? = nil, trackNumber: Int? = nil, discNumber: Int? = nil,
        genre: String? = nil, duration: Double? = nil, artwork: Artwork? = nil, isLiveStream: Bool = false
    ) {
        self.isLiveStream = isLiveStream
        self.title = title
        self.artist = artist
        self.album = album
        self.albumArtist = albumArtist
        self.trackNumber = trackNumber
        self.discNumber = discNumber
        self.genre = genre
        self.duration = duration
        self.artwork = artwork
    }
}

/// One entry of the queue. `id` is given by `PlayerCore` and never reused, so a command that
/// names an item still means that item after the queue was edited.
public struct QueueItem: Sendable, Equatable {
    public let id: Int
    public var path: String
    public var metadata: TrackMetadata
    /// 0…255: with shuffle on, higher priorities play first (MPD's `prio`).
    public var priority: Int
    /// The part of the file that plays; nil: all of it (MPD's `rangeid`).
    public var range: PlayRange?

    public init(id: Int, path: String, metadata: TrackMetadata, priority: Int = 0, range: PlayRange? = nil) {
        self.id = id
        self.path = path
        self.metadata = metadata
        self.priority = priority
        self.range = range
    }

    public static let priorities = 0...255

    /// Where the item starts playing, in seconds into the file.
    public var start: Double { range?.start ?? 0 }
}

/// A part of a file, in seconds: from `start` to `end` (the file's end when nil).
public struct PlayRange: Sendable, Equatable {
    public var start: Double
    public var end: Double?

    public init(start: Double = 0, end: Double? = nil) {
        self.start = start
        self.end = end
    }
}
