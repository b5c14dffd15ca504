import TonearmAudio
import TonearmControlPlane
import TonearmDecoding

/// A file read by a scan, as the index keeps it: a song of its directory's record.
struct IndexedTrack {
    var entry: ListingRecord.Entry
    var path: String { entry.song.path }

    init(path: String, status: FileStatus, info: TrackInfo) {
        var tags: [(tag: Tag, value: String)] = []
        for (name, value) in info.comments {
            if let tag = Self.vorbisNames[name], let value = Self.indexed(value, as: tag) { tags.append((tag, value)) }
        }
        let song = LibrarySong(
            path: path, tags: tags, duration: info.duration, sampleRate: info.format.sampleRate,
            bitsPerSample: info.format.bitsPerSample, channels: info.format.channels, size: status.size,
            modified: status.modifiedSeconds, hasPicture: !info.pictures.isEmpty, replayGain: info.replayGain)
        entry = ListingRecord.Entry(song: song, modifiedNanoseconds: status.modifiedSeconds * 1_000_000_000 + status.modifiedNanoseconds)
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

    /// A value as the index keeps it (nil: none): Track and Disc are the number before a
    /// total ("3/12" → "3", as mpd shows them; the totals are columns of their own).
    static func indexed(_ value: String, as tag: Tag) -> String? {
        guard tag == .track || tag == .disc, let slash = value.firstIndex(of: "/") else { return value.isEmpty ? nil : value }
        let number = value[..<slash].filter { $0 != " " }
        return number.isEmpty ? nil : String(number)
    }

    /// A song's tag values as the index finds it by them: every value it has, with the value
    /// that sorts it (its sort tag's first value, or itself), and whether the file has it
    /// (`own`) or it is AlbumArtist taken from Artist for a file without one.
    static func rows(_ tags: [(tag: Tag, value: String)]) -> [TagRow] {
        func first(_ tag: Tag) -> String? { tags.first { $0.tag == tag }?.value }
        var rows: [TagRow] = []
        rows.reserveCapacity(tags.count + 1)
        for (tag, value) in tags {
            rows.append(TagRow(tag: tag, value: value, sort: tag.sortTag.flatMap(first) ?? value, own: true))
        }
        if first(.albumArtist) == nil {
            let sort = first(.albumArtistSort) ?? first(.artistSort)
            for (tag, value) in tags where tag == .artist {
                rows.append(TagRow(tag: .albumArtist, value: value, sort: sort ?? value, own: false))
            }
        }
        return rows
    }
}

/// One value of one tag of a song, with the value that sorts it (`IndexedTrack.rows`).
struct TagRow: Hashable {
    var tag: Tag
    var value: String
    var sort: String
    var own: Bool
}
