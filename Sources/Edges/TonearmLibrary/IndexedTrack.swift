import TonearmAudio
import TonearmControlPlane
import TonearmDecoding

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
    /// Every tag value in the file's order, with the value that
    /// sorts it, and whether the file has it (`own`) or it is AlbumArtist taken from Artist for
    /// a file without one.
    var tagRows: [(tag: Tag, value: String, sort: String, own: Bool)]

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
        let values = Self.values(from: info.comments)
        tagRows = Self.rows(info.comments, values)
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
        "MUSICBRAINZ_WORKID": .musicBrainzWorkID, "MOVEMENTNAME": .movement, "MOVEMENT": .movementNumber,
        "ENSEMBLE": .ensemble, "LOCATION": .location,
        // The MusicBrainz ids as Picard names them in ID3 TXXX frames and MP4 "----" items,
        // whose descriptions the tag readers keep, upper-cased, as the comment's name.
        "MUSICBRAINZ ARTIST ID": .musicBrainzArtistID, "MUSICBRAINZ ALBUM ID": .musicBrainzAlbumID,
        "MUSICBRAINZ ALBUM ARTIST ID": .musicBrainzAlbumArtistID, "MUSICBRAINZ TRACK ID": .musicBrainzTrackID,
        "MUSICBRAINZ RELEASE TRACK ID": .musicBrainzReleaseTrackID, "MUSICBRAINZ WORK ID": .musicBrainzWorkID,
    ]

    /// Each tag's values in file order, by `Tag.index`.
    static func values(from comments: [(name: String, value: String)]) -> [[String]] {
        var values = [[String]](repeating: [], count: Tag.ordered.count)
        for (name, value) in comments {
            if let tag = vorbisNames[name], let value = indexed(value, as: tag) { values[tag.index].append(value) }
        }
        return values
    }

    /// A value as the index keeps it (nil: none): Track and Disc are the number before a
    /// total ("3/12" → "3", as mpd shows them; the totals are columns of their own).
    static func indexed(_ value: String, as tag: Tag) -> String? {
        guard tag == .track || tag == .disc, let slash = value.firstIndex(of: "/") else { return value.isEmpty ? nil : value }
        let number = value[..<slash].filter { $0 != " " }
        return number.isEmpty ? nil : String(number)
    }

    /// The rows of `tagRows`.
    static func rows(_ comments: [(name: String, value: String)], _ values: [[String]]) -> [(tag: Tag, value: String, sort: String, own: Bool)] {
        func first(_ tag: Tag) -> String? { values[tag.index].first }
        var rows: [(tag: Tag, value: String, sort: String, own: Bool)] = []
        // In the file's order, as MPD shows a song's tags.
        for (name, value) in comments {
            guard let tag = vorbisNames[name], let value = indexed(value, as: tag) else { continue }
            rows.append((tag, value, tag.sortTag.flatMap(first) ?? value, true))
        }
        if first(.albumArtist) == nil {
            let sort = first(.albumArtistSort) ?? first(.artistSort)
            for value in values[Tag.artist.index] {
                rows.append((.albumArtist, value, sort ?? value, false))
            }
        }
        return rows
    }
}
