import TonearmAudio
import TonearmControlPlane
import TonearmFLAC

/// A track as the index keeps it: where it is, what it is, and every tag value it has.
struct IndexedTrack {
    var path: String
    var size: Int
    var modified: Int
    var modifiedNanoseconds: Int
    var sampleRate: Int
    var bitsPerSample: Int
    var channels: Int
    var duration: Double?
    var trackTotal: Int?
    var discTotal: Int?
    var replayGain: ReplayGain
    var hasPicture: Bool
    /// In `Tag` order, each tag's values in file order.
    var tags: [(tag: Tag, value: String)]

    init(path: String, status: FileStatus, info: TrackInfo) {
        self.path = path
        size = status.size
        modified = status.modifiedSeconds
        modifiedNanoseconds = status.modifiedSeconds * 1_000_000_000 + status.modifiedNanoseconds
        sampleRate = info.format.sampleRate
        bitsPerSample = info.format.bitsPerSample
        channels = info.format.channels
        duration = info.duration
        trackTotal = info.trackTotal
        discTotal = info.discTotal
        replayGain = info.replayGain
        hasPicture = !info.pictures.isEmpty
        tags = Self.tags(from: info.comments)
    }

    /// Vorbis comment names (upper case) and the tags they are.
    static let vorbisNames: [String: Tag] = [
        "ARTIST": .artist, "ARTISTSORT": .artistSort, "ALBUM": .album, "ALBUMSORT": .albumSort,
        "ALBUMARTIST": .albumArtist, "ALBUM ARTIST": .albumArtist, "ALBUMARTISTSORT": .albumArtistSort,
        "TITLE": .title, "TITLESORT": .titleSort, "TRACKNUMBER": .track, "GENRE": .genre, "DATE": .date,
        "ORIGINALDATE": .originalDate, "COMPOSER": .composer, "COMPOSERSORT": .composerSort,
        "PERFORMER": .performer, "CONDUCTOR": .conductor, "WORK": .work, "GROUPING": .grouping,
        "COMMENT": .comment, "DESCRIPTION": .comment, "DISCNUMBER": .disc, "LABEL": .label,
        "ORGANIZATION": .label, "MUSICBRAINZ_ARTISTID": .musicBrainzArtistID,
        "MUSICBRAINZ_ALBUMID": .musicBrainzAlbumID, "MUSICBRAINZ_ALBUMARTISTID": .musicBrainzAlbumArtistID,
        "MUSICBRAINZ_TRACKID": .musicBrainzTrackID, "MUSICBRAINZ_RELEASETRACKID": .musicBrainzReleaseTrackID,
        "MUSICBRAINZ_WORKID": .musicBrainzWorkID,
    ]

    private static let order: [Tag: Int] = Dictionary(uniqueKeysWithValues: Tag.allCases.enumerated().map { ($1, $0) })

    static func tags(from comments: [(name: String, value: String)]) -> [(tag: Tag, value: String)] {
        var tags: [(tag: Tag, value: String)] = []
        for comment in comments {
            guard let tag = vorbisNames[comment.name] else { continue }
            if !comment.value.isEmpty { tags.append((tag, comment.value)) }
        }
        // Stable: values of one tag keep the file's order.
        return tags.enumerated().sorted { a, b in
            let (x, y) = (order[a.element.tag]!, order[b.element.tag]!)
            return x != y ? x < y : a.offset < b.offset
        }.map(\.element)
    }

    /// The rows of `tags`: each value with the value that sorts it, and whether the file has
    /// it (`own`) or it is AlbumArtist taken from Artist for a file without one.
    var tagRows: [(tag: Tag, value: String, sort: String, own: Bool)] {
        func first(_ tag: Tag) -> String? { tags.first { $0.tag == tag }?.value }
        var rows: [(tag: Tag, value: String, sort: String, own: Bool)] = []
        for (tag, value) in tags {
            rows.append((tag, value, tag.sortTag.flatMap(first) ?? value, true))
        }
        if first(.albumArtist) == nil {
            let sort = first(.albumArtistSort) ?? first(.artistSort)
            for (tag, value) in tags where tag == .artist {
                rows.append((.albumArtist, value, sort ?? value, false))
            }
        }
        return rows
    }
}
