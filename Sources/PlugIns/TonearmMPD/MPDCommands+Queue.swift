import TonearmControlPlane
import TonearmPlayer
import TonearmSQLite

extension MPDCommands {
    /// The queue: adding, removing, moving and ordering its songs, and listing them. Song ids
    /// are the queue's stable item ids; `playlist` in `status` is its version.
    enum QueueCommands {
        /// `add URI [POSITION]` and `addid URI [POSITION]`, which answers the new song's id (so
        /// takes one song, not a directory).
        static func add(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            let position = try args.count > 1 ? await mpd.insertPosition(args[1]) : nil
            let before = await mpd.plane.snapshot().queue.items.map(\.id)
            _ = try await mpd.send(.queue(.add(paths: [try mpd.absolute(args[0])], at: position)))
            guard call.name == "addid" else { return "" }
            let added = await mpd.plane.snapshot().queue.items.filter { !before.contains($0.id) }
            guard added.count == 1 else { throw .argument("addid takes one song, not a directory") }
            return "Id: \(added[0].id)\n"
        }

        static func clear(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            try await mpd.send(.queue(.clear))
        }

        /// `delete POS` or `delete START:END`.
        static func delete(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let range = try MPDFilter.range(call.arguments[0])
            let items = await mpd.plane.snapshot().queue.items
            guard range.lowerBound < items.count, range.upperBound == Int.max || range.upperBound <= items.count else {
                throw MPDError(.argument, "Bad song index")
            }
            return try await mpd.send(.queue(.remove(itemIDs: items[range.clamped(to: 0..<items.count)].map(\.id))))
        }

        static func deleteID(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            try await mpd.send(.queue(.remove(itemIDs: [try await mpd.itemID(call.arguments[0], byPosition: false)])))
        }

        /// `move FROM[:TO] TO` and `moveid ID TO`.
        static func move(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            guard let to = Int(args[1]) else { throw .argument("Number expected: \(args[1])") }
            if call.name == "moveid" {
                return try await mpd.send(.queue(.move(itemID: try await mpd.itemID(args[0], byPosition: false), to: to)))
            }
            let range = try MPDFilter.range(args[0])
            let items = await mpd.plane.snapshot().queue.items
            guard range.lowerBound < items.count, range.upperBound == Int.max || range.upperBound <= items.count else {
                throw MPDError(.argument, "Bad song index")
            }
            let moving = items[range.clamped(to: 0..<items.count)].map(\.id)
            for (offset, id) in moving.enumerated() { _ = try await mpd.send(.queue(.move(itemID: id, to: to + offset))) }
            return ""
        }

        /// `swap POS POS` and `swapid ID ID`: two moves, the first item to the second's place,
        /// then the second to the first's.
        static func swap(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            let byPosition = call.name == "swap"
            let (a, b) = (try await mpd.itemID(args[0], byPosition: byPosition), try await mpd.itemID(args[1], byPosition: byPosition))
            let items = await mpd.plane.snapshot().queue.items
            guard let p = items.firstIndex(where: { $0.id == a }), let q = items.firstIndex(where: { $0.id == b }), p != q else { return "" }
            _ = try await mpd.send(.queue(.move(itemID: a, to: q)))
            return try await mpd.send(.queue(.move(itemID: b, to: p)))
        }

        /// `shuffle [START:END]`.
        static func shuffle(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let length = await mpd.plane.snapshot().queue.items.count
            var range: Range<Int>?
            if let text = call.arguments.first {
                let asked = try MPDFilter.range(text)
                guard asked.lowerBound <= length else { throw .argument("Bad song index") }
                range = asked.clamped(to: 0..<length)
            }
            return try await mpd.send(.queue(.shuffle(range: range)))
        }

        /// `prio PRIORITY START:END…` and `prioid PRIORITY ID…`.
        static func priority(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            guard let priority = Int(args[0]) else { throw .argument("Number expected: \(args[0])") }
            guard QueueItem.priorities.contains(priority) else { throw .argument("Number too large: \(args[0])") }
            var ids: [Int] = []
            if call.name == "prioid" {
                for text in args.dropFirst() {
                    guard let id = Int(text) else { throw .argument("Number expected: \(text)") }
                    ids.append(id)
                }
            } else {
                let items = await mpd.plane.snapshot().queue.items
                for text in args.dropFirst() {
                    let range = try MPDFilter.range(text)
                    guard range.lowerBound < items.count else { throw .argument("Bad song index") }
                    ids += items[range.clamped(to: 0..<items.count)].map(\.id)
                }
            }
            return try await mpd.send(.queue(.priority(priority, itemIDs: ids)))
        }

        /// `rangeid ID START:END`, in seconds, either side may be empty; ":" plays the whole
        /// song again.
        static func rangeID(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            guard let id = Int(args[0]) else { throw .argument("Number expected: \(args[0])") }
            let sides = args[1].split(separator: ":", omittingEmptySubsequences: false)
            guard sides.count == 2 else { throw .argument("Bad range") }
            func seconds(_ text: Substring) throws(MPDError) -> Double? {
                guard !text.isEmpty else { return nil }
                guard let value = Double(text), value.isFinite, value >= 0 else { throw .argument("Bad range") }
                return value
            }
            let start = try seconds(sides[0]), end = try seconds(sides[1])
            if let start, let end, end <= start { throw .argument("Bad range") }
            let range = start == nil && end == nil ? nil : PlayRange(start: start ?? 0, end: end)
            let queue = await mpd.plane.snapshot().queue
            if id == queue.currentItemID, await mpd.plane.snapshot().transport != .stopped {
                throw MPDError(.permission, "Cannot edit the current song")
            }
            return try await mpd.send(.queue(.range(itemID: id, range)))
        }

        /// `playlistfind FILTER…` (exact) and `playlistsearch FILTER…` (any case, anywhere).
        static func playlistFind(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let (filters, rest) = try MPDFilter.parse(call.arguments)
            guard !filters.isEmpty else { throw .argument("too few arguments for \"\(call.name)\"") }
            guard rest.isEmpty else { throw .argument("unexpected arguments: \(rest.joined(separator: " "))") }
            let matching: Matching = call.name == "playlistfind" ? .exact : .substring
            let queueFilters = try filters.map { (filter) throws(MPDError) in try MPDSong.QueueFilter(filter, matching: matching) }
            let items = await mpd.plane.snapshot().queue.items.enumerated().map { (position: $0.offset, item: $0.element, path: mpd.uri($0.element.path)) }
            let catalog = mpd.plane.catalog, tags = call.client.tags
            // On the worker pool: the index's songs, the matching and the wording.
            return try await mpd.work { () throws(MPDError) -> String in
                var found = ""
                let budget = QueryBudget()
                budget.start()
                search: for (position, item, path) in items {
                    let song = try MPDCommands.librarySong(path, catalog)
                    for filter in queueFilters where !(try MPDSong.matches(filter, path: path, song: song, item.metadata, budget: budget)) {
                        continue search
                    }
                    found += MPDCommands.song(item, path: path, song: song, position: position, tags: tags)
                }
                return found
            }
        }

        static func playlist(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let items = await mpd.plane.snapshot().queue.items
            return items.enumerated().map { "\($0.offset):file: \(mpd.uri($0.element.path))\n" }.joined()
        }

        /// `playlistinfo [POS | START:END]` and `playlistid [ID]`.
        static func playlistInfo(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let items = await mpd.plane.snapshot().queue.items
            var range = 0..<items.count
            if let argument = call.arguments.first {
                if call.name == "playlistid" {
                    guard let id = Int(argument), let position = items.firstIndex(where: { $0.id == id }) else {
                        throw MPDError(.noExist, "No such song")
                    }
                    range = position..<(position + 1)
                } else {
                    let asked = try MPDFilter.range(argument)
                    guard asked.lowerBound < items.count || (asked.lowerBound == 0 && items.isEmpty && asked.upperBound == Int.max) else {
                        throw MPDError(.argument, "Bad song index")
                    }
                    range = asked.clamped(to: 0..<items.count)
                }
            }
            return try await mpd.songs(range.map { ($0, items[$0]) }, call)
        }

        /// `plchanges VERSION [START:END]` (the songs) and `plchangesposid VERSION [START:END]`
        /// (positions and ids): only what moved or changed since the version.
        static func changes(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            guard let version = Int(args[0]) else { throw .argument("Number expected: \(args[0])") }
            let queue = await mpd.plane.snapshot().queue
            var range = 0..<queue.items.count
            if args.count > 1 { range = try MPDFilter.range(args[1]).clamped(to: range) }
            let positions = queue.positionsChanged(since: version).filter { range.contains($0) }
            guard call.name == "plchanges" else {
                return positions.map { "cpos: \($0)\nId: \(queue.items[$0].id)\n" }.joined()
            }
            return try await mpd.songs(positions.map { ($0, queue.items[$0]) }, call)
        }
    }

    // MARK: Queue songs

    /// Queue items as MPD shows them, the index's songs looked up on the worker pool, into the
    /// call's answer a page at a time: a whole library queued is 20,000 songs, a few megabytes
    /// that are handed to the client as they are made, never held whole.
    func songs(_ items: [(position: Int, item: QueueItem)], _ call: Call) async throws(MPDError) -> String {
        let tags = call.client.tags, catalog = plane.catalog
        for start in stride(from: 0, to: items.count, by: Self.songsPage) {
            let page = items[start..<min(items.count, start + Self.songsPage)].map {
                (position: $0.position, item: $0.item, path: uri($0.item.path))
            }
            let text: String
            if catalog == nil {
                text = page.map { Self.song($0.item, path: $0.path, song: nil, position: $0.position, tags: tags) }.joined()
            } else {
                text = try await work { () throws(MPDError) -> String in
                    page.map { Self.song($0.item, path: $0.path, song: try? Self.librarySong($0.path, catalog), position: $0.position, tags: tags) }
                        .joined()
                }
            }
            call.out.append(text)
            try await call.out.drain()
        }
        return ""
    }

    /// Queue songs made per turn of `songs`: about 200 KB of answer.
    static let songsPage = 500

    /// A queue item as MPD shows it: the library's tags when the index has the file.
    static func song(_ item: QueueItem, path: String, song: LibrarySong?, position: Int, tags: [Tag]) -> String {
        var out: [UInt8] = []
        appendSong(item, path: path, song: song, position: position, tags: tags, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `song(…)` appended to `out` as UTF-8.
    static func appendSong(_ item: QueueItem, path: String, song: LibrarySong?, position: Int, tags: [Tag], to out: inout [UInt8]) {
        if let range = item.range {
            var block = song.map { MPDSong.block($0, tags: tags) } ?? MPDSong.block(path: path, item.metadata, tags: tags)
            // Right after the file, as MPD shows it; the times are the range's.
            var lines = block.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let end = range.end.map(MPDSong.decimal) ?? ""
            lines.insert("Range: \(MPDSong.decimal(range.start))-\(end)", at: min(1, lines.count))
            if let whole = item.metadata.duration {
                let length = max(0, min(range.end ?? whole, whole) - range.start)
                lines = lines.map { line in
                    if line.hasPrefix("Time: ") { return "Time: \(Int(length.rounded()))" }
                    if line.hasPrefix("duration: ") { return "duration: \(MPDSong.decimal(length))" }
                    return line
                }
            }
            block = lines.joined(separator: "\n")
            out += block.utf8
        } else if let song {
            MPDSong.append(song, tags: tags, to: &out)
        } else {
            out += MPDSong.block(path: path, item.metadata, tags: tags).utf8
        }
        out += "Pos: ".utf8
        out.appendDigits(position)
        out += "\nId: ".utf8
        out.appendDigits(item.id)
        out.append(MPDSong.newline)
        if item.priority > 0 {
            out += "Prio: ".utf8
            out.appendDigits(item.priority)
            out.append(MPDSong.newline)
        }
    }

    // MARK: Queue positions

    /// The id of the item at a queue position, or of the id given.
    func itemID(_ text: String, byPosition: Bool) async throws(MPDError) -> Int {
        guard let number = Int(text), number >= 0 else { throw .argument("Number expected: \(text)") }
        let items = await plane.snapshot().queue.items
        if byPosition {
            guard number < items.count else { throw MPDError(.argument, "Bad song index") }
            return items[number].id
        }
        guard items.contains(where: { $0.id == number }) else { throw MPDError(.noExist, "No such song") }
        return number
    }

    /// An insert position: `N`, or `+N`/`-N` relative to the current song.
    func insertPosition(_ text: String) async throws(MPDError) -> Int {
        let queue = await plane.snapshot().queue
        if text.hasPrefix("+") || text.hasPrefix("-") {
            guard let offset = Int(text.dropFirst()), let id = queue.currentItemID,
                  let current = queue.items.firstIndex(where: { $0.id == id }) else {
                throw .argument("No current song for a relative position: \(text)")
            }
            return text.hasPrefix("+") ? current + 1 + offset : max(0, current - offset)
        }
        guard let position = Int(text), (0...queue.items.count).contains(position) else { throw MPDError(.argument, "Bad song index") }
        return position
    }

    /// `position POS` after the filters of `findadd` and `searchadd`.
    func positionOption(_ rest: [String]) async throws(MPDError) -> Int? {
        guard !rest.isEmpty else { return nil }
        guard rest.count == 2, rest[0].lowercased() == "position" else { throw .argument("unexpected arguments: \(rest.joined(separator: " "))") }
        return try await insertPosition(rest[1])
    }
}
