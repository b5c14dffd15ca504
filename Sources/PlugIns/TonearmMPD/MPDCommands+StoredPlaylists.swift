import TonearmControlPlane

extension MPDCommands {
    /// Stored playlists (`NAME.m3u` in the playlist directory): listing, loading into the queue,
    /// and the edits, whose refusals are worded as MPD words them.
    enum StoredPlaylistCommands {
        static func listPlaylists(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            try await mpd.playlists().map { "playlist: \($0.name)\nLast-Modified: \(MPDSong.time($0.modified))\n" }.joined()
        }

        /// `listplaylist NAME` (the paths) and `listplaylistinfo NAME` (the songs, with the
        /// index's tags when it has them).
        static func listPlaylist(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let playlist = try await mpd.storedPlaylist(call.arguments[0])
            guard call.name == "listplaylistinfo" else { return playlist.entries.map { "file: \($0)\n" }.joined() }
            let tags = call.client.tags
            return try await mpd.query { (catalog) throws(CommandFailure) -> String in
                var out = ""
                for entry in playlist.entries {
                    if let song = try MPDCommands.librarySong(entry, in: catalog) {
                        out += MPDSong.block(song, tags: tags)
                    } else {
                        out += "file: \(entry)\n"
                    }
                }
                return out
            }
        }

        /// `load NAME [START:END [POSITION]]`.
        static func load(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            let playlist = try await mpd.storedPlaylist(args[0])
            var entries = playlist.entries
            if args.count > 1 { entries = Array(entries[try MPDFilter.range(args[1]).clamped(to: 0..<entries.count)]) }
            let position = try args.count > 2 ? await mpd.insertPosition(args[2]) : nil
            guard !entries.isEmpty else { return "" }
            return try await mpd.send(.queue(.add(paths: try entries.map { (entry) throws(MPDError) in try mpd.absolute(entry) }, at: position)))
        }

        static func save(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            try await mpd.playlist(.saveQueue(name: call.arguments[0], replacing: false), exists: "Playlist already exists")
        }

        /// `playlistadd NAME URI [POSITION]`: a song, or every song under a directory.
        static func playlistAdd(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            let entries = try await mpd.songsAt(args[1])
            var position: Int?
            if args.count > 2 {
                guard let at = Int(args[2]), at >= 0 else { throw .argument("Number expected: \(args[2])") }
                position = at
            }
            return try await mpd.playlist(.add(name: args[0], entries: entries, at: position))
        }

        /// `searchaddpl NAME FILTER…`: the songs a search finds, at the playlist's end.
        static func searchAddPlaylist(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            let (filters, rest) = try MPDFilter.parse(Array(args.dropFirst()))
            guard !filters.isEmpty else { throw .argument("too few arguments for \"searchaddpl\"") }
            guard rest.isEmpty else { throw .argument("unexpected arguments: \(rest.joined(separator: " "))") }
            let entries = try await mpd.paths(SongQuery(filters, matching: .substring))
            return try await mpd.playlist(.add(name: args[0], entries: entries, at: nil))
        }

        static func playlistClear(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            try await mpd.playlist(.clear(name: call.arguments[0]))
        }

        /// `playlistdelete NAME POS` or `NAME START:END`.
        static func playlistDelete(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            return try await mpd.playlist(.delete(name: args[0], positions: try MPDFilter.range(args[1])), position: "Bad song index")
        }

        /// `playlistmove NAME FROM TO`.
        static func playlistMove(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            guard let from = Int(args[1]), from >= 0 else { throw .argument("Number expected: \(args[1])") }
            guard let to = Int(args[2]), to >= 0 else { throw .argument("Number expected: \(args[2])") }
            return try await mpd.playlist(.move(name: args[0], from: from, to: to), position: "Bad range")
        }

        static func rename(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            try await mpd.playlist(.rename(name: call.arguments[0], to: call.arguments[1]), exists: "Playlist exists already")
        }

        /// `rm NAME`.
        static func remove(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            try await mpd.playlist(.remove(name: call.arguments[0]))
        }
    }

    // MARK: Stored playlists

    func playlists() async throws(MPDError) -> [StoredPlaylist] {
        try await query { (catalog) throws(CommandFailure) in try catalog.storedPlaylists() }
    }

    func storedPlaylist(_ name: String) async throws(MPDError) -> StoredPlaylist {
        guard let playlist = try await playlists().first(where: { $0.name == name }) else { throw MPDError(.noExist, "No such playlist") }
        return playlist
    }

    /// A stored playlist edit, its refusals worded as MPD words them.
    func playlist(_ edit: PlaylistEdit, exists: String = "Playlist already exists",
                  position: String = "Bad song index") async throws(MPDError) -> String {
        let result = await plane.send(.playlist(edit), from: source)
        guard let failure = result.failure else { return "" }
        switch failure.code {
        case .notFound: throw MPDError(.noExist, "No such playlist")
        case .exists: throw MPDError(.exist, exists)
        case .badArgument: throw .argument(failure.message.contains("cannot name a playlist") ? "Bad playlist name" : position)
        default: throw MPDError(Self.code(failure), failure.message)
        }
    }

    /// The songs a URI names for a stored playlist: the song, or every song under a directory,
    /// in path order.
    func songsAt(_ uri: String) async throws(MPDError) -> [String] {
        let path = trimmed(uri)
        let songs = try await query { (catalog) throws(CommandFailure) -> [String] in
            if let song = try Self.librarySong(path, in: catalog) { return [song.path] }
            var songs: [String] = []
            if !path.isEmpty {
                try catalog.songs(SongQuery([TagFilter(.base, path)], matching: .exact)) { song in
                    songs.append(song.path)
                    return true
                }
            }
            return songs
        }
        guard !songs.isEmpty else { throw MPDError(.noExist, "No such directory") }
        return songs
    }
}
