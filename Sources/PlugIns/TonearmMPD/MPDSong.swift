#if canImport(Glibc)
import Glibc
#endif
import TonearmControlPlane
import TonearmJSON
import TonearmPlayer
import TonearmSQLite

/// Songs as MPD words them: `file` first, `Last-Modified`, `Format`, the tags the client
/// enabled, `Time` and `duration`.
enum MPDSong {
    /// The tags Debian's mpd 0.23 offers by default, in its order (MusicBrainz ids last);
    /// `tagtypes` lists them. TitleSort (0.24) and Comment (off by default) are indexed and
    /// searchable, not shown.
    static let tagOrder: [Tag] = [
        .artist, .artistSort, .album, .albumSort, .albumArtist, .albumArtistSort, .title, .track, .name, .genre, .date,
        .originalDate, .composer, .composerSort, .performer, .conductor, .work, .movement, .movementNumber, .ensemble,
        .location, .grouping, .disc, .label, .musicBrainzArtistID, .musicBrainzAlbumID, .musicBrainzAlbumArtistID,
        .musicBrainzTrackID, .musicBrainzReleaseTrackID, .musicBrainzWorkID,
    ]

    static func block(_ song: LibrarySong, tags enabled: [Tag]) -> String {
        var out: [UInt8] = []
        append(song, tags: enabled, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `block(song, tags:)` appended to `out` as UTF-8: a listing of thousands of songs is
    /// written into one buffer, with no string made per song, line or number.
    static func append(_ song: LibrarySong, tags enabled: [Tag], to out: inout [UInt8]) {
        out += "file: ".utf8
        out += song.path.utf8
        out += "\nLast-Modified: ".utf8
        appendTime(song.modified, to: &out)
        out.append(newline)
        if song.sampleRate > 0 {
            out += "Format: ".utf8
            out.appendDigits(song.sampleRate)
            out.append(UInt8(ascii: ":"))
            out.appendDigits(song.bitsPerSample)
            out.append(UInt8(ascii: ":"))
            out.appendDigits(song.channels)
            out.append(newline)
        }
        // A song has a dozen values and a client enables thirty tags at most: a look along the
        // list costs less than a set made for each song.
        for (tag, value) in song.tags where enabled.contains(tag) {
            out += tag.rawValue.utf8
            out += ": ".utf8
            // On one line: a line break inside a value would start a line of its own.
            let start = out.count
            out += value.utf8
            out.withUnsafeMutableBufferPointer { bytes in
                for index in start..<bytes.count where bytes[index] == newline { bytes[index] = UInt8(ascii: " ") }
            }
            out.append(newline)
        }
        if let duration = song.duration {
            out += "Time: ".utf8
            out.appendDigits(Int(duration.rounded()))
            out += "\nduration: ".utf8
            appendDecimal(duration, to: &out)
            out.append(newline)
        }
    }

    static let newline = UInt8(ascii: "\n")

    /// `n` in at least two digits (a month, an hour).
    private static func appendTwo(_ n: Int32, to out: inout [UInt8]) {
        if n < 10 { out.append(UInt8(ascii: "0")) }
        out.appendDigits(Int(n))
    }

    /// `decimal(seconds)` appended.
    static func appendDecimal(_ seconds: Double, to out: inout [UInt8]) {
        let millis = Int((max(0, seconds) * 1000).rounded())
        out.appendDigits(millis / 1000)
        out.append(UInt8(ascii: "."))
        let fraction = millis % 1000
        if fraction < 100 { out.append(UInt8(ascii: "0")) }
        if fraction < 10 { out.append(UInt8(ascii: "0")) }
        out.appendDigits(fraction)
    }

    /// `time(epochSeconds)` appended.
    static func appendTime(_ epochSeconds: Int, to out: inout [UInt8]) {
        var seconds = time_t(epochSeconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        out.appendDigits(Int(parts.tm_year) + 1900)
        out.append(UInt8(ascii: "-"))
        appendTwo(parts.tm_mon + 1, to: &out)
        out.append(UInt8(ascii: "-"))
        appendTwo(parts.tm_mday, to: &out)
        out.append(UInt8(ascii: "T"))
        appendTwo(parts.tm_hour, to: &out)
        out.append(UInt8(ascii: ":"))
        appendTwo(parts.tm_min, to: &out)
        out.append(UInt8(ascii: ":"))
        appendTwo(parts.tm_sec, to: &out)
        out.append(UInt8(ascii: "Z"))
    }

    /// A song known only by the queue's metadata (a file the index does not have).
    static func block(path: String, _ metadata: TrackMetadata, tags enabled: [Tag]) -> String {
        var out = "file: \(path)\n"
        let wanted = Set(enabled)
        if metadata.isLiveStream {
            // As mpd shows a stream: its StreamTitle as Title, the station (icy-name) as Name.
            if wanted.contains(.title), let title = metadata.title, title != metadata.album { out += "Title: \(oneLine(title))\n" }
            if wanted.contains(.name), let name = metadata.album { out += "Name: \(oneLine(name))\n" }
            return out
        }
        for (tag, value) in metadata.tags where wanted.contains(tag) { out += "\(tag.rawValue): \(oneLine(value))\n" }
        if let duration = metadata.duration {
            out += "Time: \(Int(duration.rounded()))\nduration: \(decimal(duration))\n"
        }
        return out
    }

    /// What another program plays while its session owns Now Playing (a `[[link]]`): named by
    /// its sessions' name, as a stream is by its URL; no position or id, as it is not queued.
    static func block(linked link: LinkState, _ info: NowPlayingInfo, tags enabled: [Tag]) -> String {
        let song = block(path: link.sessionName, TrackMetadata(title: info.title, artist: info.artist, album: info.album,
                                                               albumArtist: info.albumArtist, trackNumber: info.trackNumber), tags: enabled)
        let name = enabled.contains(.name) ? "Name: \(oneLine(link.player))\n" : ""
        let times = info.duration.map { "Time: \(Int($0.rounded()))\nduration: \(decimal($0))\n" } ?? ""
        return song + name + times
    }

    /// A filter of `playlistfind` or `playlistsearch`, ready to match queue songs: its pattern
    /// checked and compiled once (the index's `RegularExpression`: one matcher, one set of bounds).
    struct QueueFilter {
        let filter: TagFilter
        /// The command's: `.exact` for playlistfind, whether case counts.
        let matching: Matching
        let pattern: RegularExpression?

        init(_ filter: TagFilter, matching: Matching) throws(MPDError) {
            self.filter = filter
            self.matching = matching
            guard filter.matching == .regularExpression else {
                pattern = nil
                return
            }
            switch RegularExpression.compile(filter.value, ignoringCase: matching != .exact) {
            case .success(let compiled): pattern = compiled
            case .failure(let refusal): throw .argument("regular expression refused: \(refusal.reason)")
            }
        }
    }

    /// Whether a queue song matches a filter (`playlistfind`, `playlistsearch`): by the index's
    /// tags when it has the file, else by the queue's metadata. AlbumArtist falls back to Artist.
    /// The filter's operator says how much of a value it compares; the command's matching
    /// whether case counts. Regular expressions count against `budget`; a search that runs out
    /// of it is refused.
    static func matches(_ queueFilter: QueueFilter, path: String, song: LibrarySong?, _ metadata: TrackMetadata,
                        budget: QueryBudget) throws(MPDError) -> Bool {
        let filter = queueFilter.filter
        return try filter.negated != matchesPositively(queueFilter, path: path, song: song, metadata, budget: budget)
    }

    private static func matchesPositively(_ queueFilter: QueueFilter, path: String, song: LibrarySong?, _ metadata: TrackMetadata,
                                          budget: QueryBudget) throws(MPDError) -> Bool {
        let filter = queueFilter.filter
        let folds = queueFilter.matching != .exact
        let wanted = folds ? filter.value.lowercased() : filter.value
        func compare(_ raw: String) throws(MPDError) -> Bool {
            let value = folds ? raw.lowercased() : raw
            switch filter.matching ?? queueFilter.matching {
            case .exact: return value == wanted
            case .substring: return value.contains(wanted)
            case .prefix: return value.hasPrefix(wanted)
            case .regularExpression:
                guard let pattern = queueFilter.pattern else { return false }
                guard budget.take(pattern.work(forBytes: raw.utf8.count)) else { throw .argument(QueryBudget.refusal) }
                return pattern.matches(raw)
            }
        }
        let tags = song?.tags ?? metadata.tags
        switch filter.key {
        case .file: return try compare(path)
        case .base:
            let base = filter.value.split(separator: "/").joined(separator: "/")
            return base.isEmpty || path.hasPrefix(base + "/")
        case .anyTag:
            for (_, value) in tags where try compare(value) { return true }
            return false
        case .tag(let tag):
            var values = tags.filter { $0.tag == tag }.map(\.value)
            if values.isEmpty && tag == .albumArtist { values = tags.filter { $0.tag == .artist }.map(\.value) }
            for value in values where try compare(value) { return true }
            return false
        }
    }

    /// A value on one line: MPD's answers are lines, so a newline in a tag becomes a space.
    static func oneLine(_ value: String) -> String {
        // By byte: in "\r\n" the line feed is part of one Character, which a split on "\n" passes over.
        value.utf8.contains(newline) ? String(decoding: value.utf8.map { $0 == newline ? UInt8(ascii: " ") : $0 }, as: UTF8.self) : value
    }

    /// Seconds with three decimals, as MPD writes times.
    static func decimal(_ seconds: Double) -> String {
        var out: [UInt8] = []
        appendDecimal(seconds, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// ISO 8601 in UTC, as MPD's `Last-Modified`.
    static func time(_ epochSeconds: Int) -> String {
        var out: [UInt8] = []
        appendTime(epochSeconds, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Bits per sample from ALSA's sample format name ("S16_LE" → 16, "S24_3LE" → 24), "f"
    /// for float, as MPD says it; a name with no number after its first letter, whole.
    static func appendBits(_ format: String, to out: inout [UInt8]) {
        if format.hasPrefix("FLOAT") { return out.append(UInt8(ascii: "f")) }
        let digits = format.utf8.dropFirst().prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        if digits.isEmpty { out += format.utf8 } else { out += digits }
    }
}
