import TonearmControlPlane

extension MPDCommands {
    /// The music database: browsing (`lsinfo`, `listall`, `listallinfo`), tag values (`list`),
    /// searches (`find`, `search`, `count`), adding what they find (`findadd`, `searchadd`)
    /// and scans (`update`, `rescan`). Every query runs on the library's worker pool.
    enum DatabaseCommands {
        /// Songs read from the index at a time for `find` and `search`.
        static let pageSize = 1000

        /// `lsinfo [URI]`: a directory's directories, songs and playlists, or one song.
        static func lsinfo(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let uri = call.arguments.first ?? ""
            if uri.contains("://") { throw MPDError(.noExist, "Unsupported URI scheme") }
            let path = mpd.trimmed(uri), tags = call.client.tags
            let answer = try await mpd.query { (catalog) throws(CommandFailure) -> String? in
                guard let listing = try? catalog.listDirectory(path) else {
                    // A file, then.
                    return try MPDCommands.librarySong(path, in: catalog).map { MPDSong.block($0, tags: tags) }
                }
                var out = listing.directories.map { "directory: \($0.path)\nLast-Modified: \(MPDSong.time($0.modified))\n" }.joined()
                for song in listing.songs { out += MPDSong.block(song, tags: tags) }
                out += listing.playlists.map { "playlist: \($0.path)\nLast-Modified: \(MPDSong.time($0.modified))\n" }.joined()
                // The top also lists the stored playlists, as mpd does (mpc's lsplaylists reads them here).
                if path.isEmpty, let stored = try? catalog.storedPlaylists() {
                    out += stored.map { "playlist: \($0.name)\nLast-Modified: \(MPDSong.time($0.modified))\n" }.joined()
                }
                return out
            }
            guard let answer else { throw MPDError(.noExist, "No such directory") }
            return answer
        }

        /// `listall [URI]` (paths) and `listallinfo [URI]` (songs): everything under a
        /// directory, a directory at a time.
        static func listAll(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let path = mpd.trimmed(call.arguments.first ?? "")
            let withInfo = call.name == "listallinfo"
            // A directory named is listed itself first, as MPD does.
            if !path.isEmpty, let modified = try await mpd.directoryModified(path) {
                call.out.append("directory: \(path)\n")
                if withInfo { call.out.append("Last-Modified: \(MPDSong.time(modified))\n") }
            }
            try await mpd.listAll(path, withInfo: withInfo, call.client, into: call.out)
            return ""
        }

        /// `list TAG [FILTER…] [group TAG…]`; and the old `list album ARTIST`.
        static func list(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let name = call.arguments[0]
            guard let tag = Tag(named: name) else {
                if name.lowercased() == "file" { throw .argument("list file is not supported; use listall") }
                throw .argument("Unknown tag type: \(name)")
            }
            var rest = Array(call.arguments.dropFirst())
            var filters: [TagFilter] = []
            if tag == .album, rest.count == 1, !rest[0].hasPrefix("(") {
                filters = [TagFilter(.tag(.artist), rest[0])]
                rest = []
            } else {
                (filters, rest) = try MPDFilter.parse(rest)
            }
            var groups: [Tag] = []
            while rest.count >= 2, rest[0].lowercased() == "group" {
                guard let group = Tag(named: rest[1]) else { throw .argument("Unknown tag type: \(rest[1])") }
                groups.append(group)
                rest.removeFirst(2)
            }
            guard rest.isEmpty else { throw .argument("unexpected arguments: \(rest.joined(separator: " "))") }
            return try await mpd.query { [filters, groups] (catalog) throws(CommandFailure) -> String in
                var out = ""
                var previous: [String] = []
                try catalog.values(of: tag, filters: filters, groupedBy: groups) { row in
                    // Group values when they change, outermost first, then the tag's value.
                    let groupValues = Array(row.dropLast())
                    let changed = groupValues.indices.first { previous.count <= $0 || previous[$0] != groupValues[$0] } ?? groupValues.count
                    for index in changed..<groupValues.count { out += "\(groups[index].rawValue): \(groupValues[index])\n" }
                    previous = groupValues
                    out += "\(tag.rawValue): \(row.last ?? "")\n"
                    return true
                }
                return out
            }
        }

        /// `find FILTER… [sort TAG] [window START:END]` (exact) and `search …` (any case,
        /// anywhere): a page at a time, each handed on before the next is read.
        static func find(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let (filters, rest) = try MPDFilter.parse(call.arguments)
            guard !filters.isEmpty else { throw .argument("too few arguments for \"\(call.name)\"") }
            let window = try windowOption(rest) ?? 0..<Int.max
            let matching: Matching = call.name == "find" ? .exact : .substring
            let tags = call.client.tags
            // The first page from the window's start, each next one after the last song given.
            var offset = window.lowerBound
            var last: String?
            while offset < window.upperBound {
                let size = min(window.upperBound - offset, pageSize)
                let page = last == nil ? offset..<offset + size : 0..<size
                let query = SongQuery(filters, matching: matching, window: page, countsAll: false, after: last)
                let (text, found, end) = try await mpd.query { (catalog) throws(CommandFailure) -> (String, Int, String?) in
                    var text = "", found = 0
                    var end: String?
                    try catalog.songs(query) { song in
                        text += MPDSong.block(song, tags: tags)
                        found += 1
                        end = song.path
                        return true
                    }
                    return (text, found, end)
                }
                call.out.append(text)
                try await call.out.drain()
                guard found == size, let end else { break }
                offset += found
                last = end
            }
            return ""
        }

        /// `findadd FILTER… [position POS]` and `searchadd …`: what the search finds, into the
        /// queue.
        static func findAdd(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let (filters, rest) = try MPDFilter.parse(call.arguments)
            guard !filters.isEmpty else { throw .argument("too few arguments for \"\(call.name)\"") }
            let position = try await mpd.positionOption(rest)
            let paths = try await mpd.paths(SongQuery(filters, matching: call.name == "findadd" ? .exact : .substring))
            guard !paths.isEmpty else { return "" }
            return try await mpd.send(.queue(.add(paths: try paths.map { (path) throws(MPDError) in try mpd.absolute(path) }, at: position)))
        }

        /// `count [FILTER…] [group TAG]`: songs and play time, in all or per value of a tag.
        static func count(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let (filters, rest) = try MPDFilter.parse(call.arguments)
            var group: Tag?
            if rest.count == 2, rest[0].lowercased() == "group" {
                guard let tag = Tag(named: rest[1]) else { throw .argument("Unknown tag type: \(rest[1])") }
                group = tag
            } else if !rest.isEmpty {
                throw .argument("unexpected arguments: \(rest.joined(separator: " "))")
            }
            let counts = try await mpd.query { [group] (catalog) throws(CommandFailure) in try catalog.count(filters, matching: .exact, groupedBy: group) }
            return counts.map { count in
                (group.map { "\($0.rawValue): \(count.group ?? "")\n" } ?? "")
                    + "songs: \(count.songs)\nplaytime: \(Int(count.playTime.rounded()))\n"
            }.joined()
        }

        /// `update [URI]` and `rescan [URI]`: a scan queued; its job number.
        static func update(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let result = await mpd.plane.send(.updateLibrary(path: call.arguments.first.map { mpd.trimmed($0) }), from: mpd.source)
            if let failure = result.failure { throw MPDError(MPDCommands.code(failure), failure.message) }
            guard case .scanQueued(let job) = result.payload else { return "" }
            return "updating_db: \(job)\n"
        }

        /// `window START:END` after a search's filters, and `sort TAG`, which changes nothing:
        /// songs come in path order.
        private static func windowOption(_ rest: [String]) throws(MPDError) -> Range<Int>? {
            var window: Range<Int>?
            var index = 0
            while index + 1 < rest.count {
                switch rest[index].lowercased() {
                case "window": window = try MPDFilter.range(rest[index + 1])
                case "sort": break
                default: throw .argument("unexpected arguments: \(rest.joined(separator: " "))")
                }
                index += 2
            }
            guard index == rest.count else { throw .argument("unexpected arguments: \(rest.joined(separator: " "))") }
            return window
        }
    }

    // MARK: Directories

    /// A directory `listAll` has still to list; the top of the walk has no line of its own.
    private struct PendingDirectory: Sendable {
        var path: String
        var modified: Int
        var isTop = false
    }

    /// What `listAll` reads from the index in one turn of a library worker before handing it
    /// to the client: some tens of directories, not one turn per directory.
    static let listAllChunkBytes = 64 << 10

    /// Every song under `path` into `out`: a directory's songs, then each of its directories
    /// (its line, then what is under it), as MPD nests them; read a chunk of directories at a
    /// time, the next chunk read while the last goes to the client (two chunks at most).
    func listAll(_ path: String, withInfo: Bool, _ client: Client, into out: Output) async throws(MPDError) {
        let tags = client.tags
        var reading: Task<Result<ListAllChunk, MPDError>, Never>? = readListAllChunk(
            [PendingDirectory(path: path, modified: 0, isTop: true)], withInfo: withInfo, tags: tags)
        while let current = reading {
            let chunk = try await current.value.get()
            reading = chunk.left.isEmpty ? nil : readListAllChunk(chunk.left, withInfo: withInfo, tags: tags)
            out.append(chunk.text)
            // A directory that went between its parent's listing and its own.
            if chunk.failed { throw MPDError(.noExist, "No such directory") }
            do throws(MPDError) {
                try await out.drain()
            } catch {
                reading?.cancel()
                throw error
            }
        }
    }

    /// A part of `listAll`'s answer, the directories still to list after it, and whether a
    /// directory went before it could be read (then nothing is left).
    private struct ListAllChunk: Sendable {
        var text: [UInt8]
        var left: [PendingDirectory]
        var failed: Bool
    }

    /// Starts reading the next part of `listAll`'s answer on the library's worker pool.
    private func readListAllChunk(_ pending: [PendingDirectory], withInfo: Bool, tags: [Tag])
        -> Task<Result<ListAllChunk, MPDError>, Never> {
        Task {
            do throws(MPDError) {
                return .success(try await query { (catalog) throws(CommandFailure) -> ListAllChunk in
                    try catalog.readingDirectories { (listDirectory) throws(CommandFailure) -> ListAllChunk in
                        try Self.listAllChunk(pending, withInfo: withInfo, tags: tags, listDirectory)
                    }
                })
            } catch {
                return .failure(error)
            }
        }
    }

    /// The directories of `pending` (the last first) and what is under them, as `listAll`
    /// writes them, until a chunk's worth is written.
    private static func listAllChunk(_ pending: [PendingDirectory], withInfo: Bool, tags: [Tag],
                                     _ listDirectory: (String) throws(CommandFailure) -> DirectoryListing)
        throws(CommandFailure) -> ListAllChunk {
        var stack = pending, text: [UInt8] = []
        text.reserveCapacity(listAllChunkBytes + (4 << 10))
        while !stack.isEmpty && text.count < listAllChunkBytes {
            let directory = stack.removeLast()
            if !directory.isTop {
                text += "directory: \(directory.path)\n".utf8
                if withInfo {
                    text += "Last-Modified: ".utf8
                    MPDSong.appendTime(directory.modified, to: &text)
                    text.append(UInt8(ascii: "\n"))
                }
            }
            let listing: DirectoryListing
            do throws(CommandFailure) {
                listing = try listDirectory(directory.path)
            } catch {
                if directory.path.isEmpty { throw error }
                return ListAllChunk(text: text, left: [], failed: true)
            }
            for song in listing.songs {
                if withInfo {
                    MPDSong.append(song, tags: tags, to: &text)
                } else {
                    text += "file: \(song.path)\n".utf8
                }
            }
            stack += listing.directories.reversed().map { PendingDirectory(path: $0.path, modified: $0.modified) }
        }
        return ListAllChunk(text: text, left: stack, failed: false)
    }

    /// The modification time of the directory `path`, from its parent's listing.
    func directoryModified(_ path: String) async throws(MPDError) -> Int? {
        let parent = path.split(separator: "/").dropLast().joined(separator: "/")
        let listing = try? await query { (catalog) throws(CommandFailure) in try catalog.listDirectory(parent) }
        return listing?.directories.first { $0.path == path }?.modified
    }
}
