import TonearmAudio
import TonearmPlayer

/// The music library as every client sees it: tags, queries, songs, directories, totals and
/// the scan's progress. The daemon's index (SQLite, in TonearmLibrary) answers them; a
/// plug-in reaches it through `ControlPlane.catalog`.

/// A tag the library indexes, by MPD's name (what its clients send and expect), in MPD's order
/// (the four last come after the MusicBrainz ids only to keep the index's numbers).
public enum Tag: String, CaseIterable, Sendable, Hashable {
    case artist = "Artist"
    case artistSort = "ArtistSort"
    case album = "Album"
    case albumSort = "AlbumSort"
    case albumArtist = "AlbumArtist"
    case albumArtistSort = "AlbumArtistSort"
    case title = "Title"
    case titleSort = "TitleSort"
    case track = "Track"
    case name = "Name"
    case genre = "Genre"
    case date = "Date"
    case originalDate = "OriginalDate"
    case composer = "Composer"
    case composerSort = "ComposerSort"
    case performer = "Performer"
    case conductor = "Conductor"
    case work = "Work"
    case grouping = "Grouping"
    case comment = "Comment"
    case disc = "Disc"
    case label = "Label"
    case musicBrainzArtistID = "MUSICBRAINZ_ARTISTID"
    case musicBrainzAlbumID = "MUSICBRAINZ_ALBUMID"
    case musicBrainzAlbumArtistID = "MUSICBRAINZ_ALBUMARTISTID"
    case musicBrainzTrackID = "MUSICBRAINZ_TRACKID"
    case musicBrainzReleaseTrackID = "MUSICBRAINZ_RELEASETRACKID"
    case musicBrainzWorkID = "MUSICBRAINZ_WORKID"
    // Added after the first schema: their numbers in the index follow the ones above.
    case movement = "Movement"
    case movementNumber = "MovementNumber"
    case ensemble = "Ensemble"
    case location = "Location"

    /// By name, in any case ("albumartist", "AlbumArtist").
    public init?(named name: String) {
        let lowered = name.lowercased()
        guard let tag = Tag.allCases.first(where: { $0.rawValue.lowercased() == lowered }) else { return nil }
        self = tag
    }

    /// The tag whose values order this one's ("Beatles, The" for "The Beatles").
    public var sortTag: Tag? {
        switch self {
        case .artist: .artistSort
        case .album: .albumSort
        case .albumArtist: .albumArtistSort
        case .title: .titleSort
        case .composer: .composerSort
        default: nil
        }
    }
}

/// What a filter compares: one tag, any tag, the file's path, or everything under a directory.
public enum FilterKey: Sendable, Hashable {
    case tag(Tag)
    case anyTag
    case file
    case base

    /// "artist", "any", "file", "base" (any case).
    public init?(named name: String) {
        switch name.lowercased() {
        case "any": self = .anyTag
        case "file": self = .file
        case "base": self = .base
        default:
            guard let tag = Tag(named: name) else { return nil }
            self = .tag(tag)
        }
    }

    public var name: String {
        switch self {
        case .tag(let tag): tag.rawValue
        case .anyTag: "any"
        case .file: "file"
        case .base: "base"
        }
    }
}

/// One condition of a query. `find` matches whole values, case-sensitively; `search` matches
/// substrings, ignoring case. `base` always takes a directory and everything under it.
public struct TagFilter: Sendable, Hashable {
    public var key: FilterKey
    public var value: String
    /// How this filter compares, when not as the query says (MPD's filter expressions mix
    /// `==`, `contains`, `starts_with` and `=~`).
    public var matching: Matching?
    /// Songs that do not match (MPD's `!=`, `!~` and `!`); songs without the tag are among them.
    public var negated: Bool

    public init(_ key: FilterKey, _ value: String, matching: Matching? = nil, negated: Bool = false) {
        self.key = key
        self.value = value
        self.matching = matching
        self.negated = negated
    }
}

public enum Matching: Sendable, Hashable {
    /// The whole value, case-sensitively (`find`).
    case exact
    /// A substring, ignoring case (`search`).
    case substring
    /// The value's beginning: case-sensitively in a query that matches exactly, else ignoring
    /// (ASCII) case.
    case prefix
    /// A POSIX extended regular expression found anywhere in the value (its first 4 KB):
    /// case-sensitively in a query that matches exactly, else ignoring case. Patterns are
    /// bounded (TonearmSQLite's `RegularExpression`): a larger one is refused as a bad argument.
    case regularExpression
}

/// Songs that match every filter; `window` pages through them (in path order).
public struct SongQuery: Sendable, Hashable {
    public var filters: [TagFilter]
    public var matching: Matching
    public var window: Range<Int>?
    /// Whether the caller wants how many songs match in all. When not, a catalog may stop
    /// reading once it knows the window's songs, and count only those it read.
    public var countsAll: Bool
    /// Only songs whose paths follow this one (byte by byte): the page after one that ended
    /// with it, read without going through the pages before.
    public var after: String?

    public init(_ filters: [TagFilter], matching: Matching, window: Range<Int>? = nil, countsAll: Bool = true, after: String? = nil) {
        self.filters = filters
        self.matching = matching
        self.window = window
        self.countsAll = countsAll
        self.after = after
    }
}

extension TrackMetadata {
    /// The tags a queue item's metadata holds, as the index keeps a song's (`LibrarySong.tags`):
    /// Artist, Album, AlbumArtist, Title, Track and Disc, those it has.
    public var tags: [(tag: Tag, value: String)] {
        let fields: [(Tag, String?)] = [
            (.artist, artist), (.album, album), (.albumArtist, albumArtist), (.title, title),
            (.track, trackNumber.map(String.init)), (.disc, discNumber.map(String.init)),
        ]
        return fields.compactMap { tag, value in value.map { (tag, $0) } }
    }
}

/// One indexed track.
public struct LibrarySong: Sendable, Equatable {
    /// Relative to the music directory.
    public var path: String
    /// Every value of every tag the file has, in the file's order (a tag may have several).
    public var tags: [(tag: Tag, value: String)]
    public var duration: Double?
    public var sampleRate: Int
    public var bitsPerSample: Int
    public var channels: Int
    public var size: Int
    /// Modification time, seconds since the epoch.
    public var modified: Int
    public var hasPicture: Bool
    /// False while the medium holding it is not mounted.
    public var isAvailable: Bool
    public var replayGain: ReplayGain

    public init(path: String, tags: [(tag: Tag, value: String)] = [], duration: Double? = nil, sampleRate: Int = 0,
                bitsPerSample: Int = 0, channels: Int = 0, size: Int = 0, modified: Int = 0, hasPicture: Bool = false,
                isAvailable: Bool = true, replayGain: ReplayGain = ReplayGain()) {
        self.path = path
        self.tags = tags
        self.duration = duration
        self.sampleRate = sampleRate
        self.bitsPerSample = bitsPerSample
        self.channels = channels
        self.size = size
        self.modified = modified
        self.hasPicture = hasPicture
        self.isAvailable = isAvailable
        self.replayGain = replayGain
    }

    /// The first value of `tag`.
    public func first(_ tag: Tag) -> String? { tags.first { $0.tag == tag }?.value }

    public static func == (a: LibrarySong, b: LibrarySong) -> Bool {
        a.path == b.path && a.tags.elementsEqual(b.tags, by: { $0.tag == $1.tag && $0.value == $1.value })
            && a.duration == b.duration && a.sampleRate == b.sampleRate && a.bitsPerSample == b.bitsPerSample
            && a.channels == b.channels && a.size == b.size && a.modified == b.modified && a.hasPicture == b.hasPicture
            && a.isAvailable == b.isAvailable && a.replayGain == b.replayGain
    }
}

/// A directory's contents.
public struct DirectoryListing: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// Relative to the music directory.
        public var path: String
        public var modified: Int

        public init(path: String, modified: Int) {
            self.path = path
            self.modified = modified
        }
    }

    public var directories: [Entry]
    public var songs: [LibrarySong]
    public var playlists: [Entry]

    public init(directories: [Entry] = [], songs: [LibrarySong] = [], playlists: [Entry] = []) {
        self.directories = directories
        self.songs = songs
        self.playlists = playlists
    }
}

/// Songs and play time, for a filter or a group.
public struct SongCount: Sendable, Equatable {
    public var group: String?
    public var songs: Int
    public var playTime: Double

    public init(group: String? = nil, songs: Int, playTime: Double) {
        self.group = group
        self.songs = songs
        self.playTime = playTime
    }
}

/// The whole library's figures.
public struct LibraryTotals: Sendable, Equatable {
    public var artists: Int
    public var albums: Int
    public var songs: Int
    public var playTime: Double
    /// When the last scan finished, seconds since the epoch; 0 before the first.
    public var lastUpdate: Int

    public init(artists: Int = 0, albums: Int = 0, songs: Int = 0, playTime: Double = 0, lastUpdate: Int = 0) {
        self.artists = artists
        self.albums = albums
        self.songs = songs
        self.playTime = playTime
        self.lastUpdate = lastUpdate
    }
}

/// A stored playlist (an `.m3u` in the playlist directory).
public struct StoredPlaylist: Sendable, Equatable {
    public var name: String
    public var modified: Int
    /// Entries as written: paths relative to the music directory, or absolute ones, or URLs.
    public var entries: [String]

    public init(name: String, modified: Int, entries: [String]) {
        self.name = name
        self.modified = modified
        self.entries = entries
    }
}

/// What a scan has done so far. A scan is numbered (`job`); `finishedJob` is the last one done.
public struct ScanProgress: Sendable, Equatable {
    public var job = 0
    public var finishedJob = 0
    public var isScanning = false
    /// Files looked at, read and indexed (new or changed), unchanged, removed, and failed.
    public var seen = 0
    public var indexed = 0
    public var unchanged = 0
    public var removed = 0
    public var failed = 0
    /// The scan's time so far, or the last one's.
    public var seconds = 0.0

    public init() {}
}

/// Queries over the index. Results come row by row (`each` returns false to stop), so a query
/// over the whole library never holds it all in memory.
public protocol LibraryCatalog: Sendable {
    /// Sub-directories, songs and playlists of `directory` ("" for the music directory).
    func listDirectory(_ directory: String) throws(CommandFailure) -> DirectoryListing
    /// `body` given `listDirectory` reading one snapshot of the index: a walk that lists many
    /// directories in one turn takes the database's read lock once, not twice per directory.
    func readingDirectories<T>(
        _ body: (_ listDirectory: (String) throws(CommandFailure) -> DirectoryListing) throws(CommandFailure) -> T
    ) throws(CommandFailure) -> T
    /// Songs matching `query`, in path order; returns how many matched in all (at least as
    /// many as the window reaches, when `query.countsAll` is false).
    @discardableResult
    func songs(_ query: SongQuery, _ each: (LibrarySong) -> Bool) throws(CommandFailure) -> Int
    /// The distinct values of `tag` among songs matching `filters` (exactly), each with the
    /// values of `groups` it comes with, sorted by the sort tags where there are some.
    /// AlbumArtist falls back to Artist for songs without one. `each` gets group values first,
    /// then the tag's value.
    func values(of tag: Tag, filters: [TagFilter], groupedBy groups: [Tag], _ each: ([String]) -> Bool) throws(CommandFailure)
    /// Songs and play time matching `filters`, in all or per value of `group`.
    func count(_ filters: [TagFilter], matching: Matching, groupedBy group: Tag?) throws(CommandFailure) -> [SongCount]
    func totals() throws(CommandFailure) -> LibraryTotals
    func storedPlaylists() throws(CommandFailure) -> [StoredPlaylist]
    /// The files the scans could not read, with why, in path order.
    func failures(_ each: (_ path: String, _ reason: String) -> Bool) throws(CommandFailure)
}
