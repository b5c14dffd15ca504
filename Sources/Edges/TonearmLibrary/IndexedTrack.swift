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
}

extension Tag {
    /// A song's values of this tag, as it is found, listed and counted by them: its own, or,
    /// for AlbumArtist on a song without one, its Artists. Each comes with the value that
    /// sorts it (when `sorted`): the first of the song's values of the tag's sort tag
    /// (AlbumArtistSort, else ArtistSort, for an Artist taken), else none. `tags` are a song's,
    /// numbered as `Tag.index`; `body` returns false to stop.
    func forEachValue<Value, Failure: Error>(
        in tags: [(tag: Int, value: Value)], sorted: Bool = true,
        _ body: (_ value: Value, _ sort: Value?) throws(Failure) -> Bool
    ) throws(Failure) {
        func first(_ tag: Tag?) -> Value? {
            guard sorted, let number = tag?.index else { return nil }
            return tags.first { $0.tag == number }?.value
        }
        let wanted = index
        var sort: Value??
        for (number, value) in tags where number == wanted {
            if sort == nil { sort = .some(first(sortTag)) }
            guard try body(value, sort ?? nil) else { return }
        }
        guard sort == nil, self == .albumArtist else { return }
        let taken = first(.albumArtistSort) ?? first(.artistSort)
        let artist = Tag.artist.index
        for (number, value) in tags where number == artist {
            guard try body(value, taken) else { return }
        }
    }
}
