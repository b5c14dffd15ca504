#if canImport(Glibc)
import Glibc
#endif
import TonearmAudio
import TonearmControlPlane
import TonearmDecoding
import TonearmPlayer
import TonearmSQLite
import TonearmSystem

/// What the MPD plug-in needs besides the control plane. (The password is the server's:
/// `MPDServerOptions.password`; each request says whether its client gave it.)
public struct MPDSettings: Sendable {
    /// The canonical music directory: queue paths are shown relative to it, as MPD's URIs.
    public var musicDirectory: String?

    public init(musicDirectory: String? = nil) {
        self.musicDirectory = musicDirectory
    }
}

/// Carries out MPD commands through the control plane and words the answers as MPD does.
/// Each client's requests come one at a time, clients side by side; library queries run on
/// the library's worker pool, in the client's turn.
actor MPDCommands {
    private let plane: any ControlPlane
    private let settings: MPDSettings
    private let started = monotonicSeconds()
    private var clients: [Int: Client] = [:]

    /// What a connection has set for itself.
    struct Client {
        /// Gave the password, as the connection says with each request (it decides).
        var authorized = false
        /// The tags song answers carry (`tagtypes`), in MPD's order.
        var tags: [Tag]
        /// The most bytes of a picture one `albumart` or `readpicture` answer carries.
        var binaryLimit = 8192
    }

    /// Pictures read, for the chunks that follow: a client reads a cover 8 KiB at a time.
    private var pictures = PictureCache(limit: PictureCache.defaultLimit)
    /// Pictures being read, for the clients that ask for one meanwhile.
    private var picturesLoading: [PictureCache.Key: Task<Result<PictureCache.Picture?, MPDError>, Never>] = [:]

    /// The picture read last started: the next waits for it.
    private var lastPictureRead: Task<Result<PictureCache.Picture?, MPDError>, Never>?

    /// Whose turn a library query waits for on the worker pool: the request's client.
    @TaskLocal private static var requester = "mpd"

    /// Every command served, sorted as `commands` lists them. `close`, `idle`, `noidle`,
    /// `password` and the command lists are the connection's own.
    /// `decoders`: every decoder plug-in with its suffixes and MIME types, as mpd lists its own;
    /// plug-ins of one library (mpd's name) are one entry, as in mpd.
    static let decoders: String = {
        var names: [String] = []
        var suffixes: [String: [String]] = [:]
        var mimeTypes: [String: [String]] = [:]
        for plugIn in Decoders.all {
            if suffixes[plugIn.name] == nil { names.append(plugIn.name) }
            suffixes[plugIn.name, default: []] += plugIn.suffixes.filter { !(suffixes[plugIn.name] ?? []).contains($0) }
            mimeTypes[plugIn.name, default: []] += plugIn.mimeTypes.filter { !(mimeTypes[plugIn.name] ?? []).contains($0) }
        }
        return names.map { name in
            "plugin: \(name)\n" + suffixes[name, default: []].map { "suffix: \($0)\n" }.joined()
                + mimeTypes[name, default: []].map { "mime_type: \($0)\n" }.joined()
        }.joined()
    }()

    static let served: [String] = [
        "add", "addid", "albumart", "binarylimit", "clear", "clearerror", "close", "command_list_begin", "command_list_end",
        "command_list_ok_begin", "commands", "consume", "count", "crossfade", "currentsong", "decoders", "delete", "deleteid", "disableoutput", "enableoutput", "find",
        "findadd", "getvol", "idle", "list", "listall", "listallinfo", "listplaylist", "listplaylistinfo",
        "listplaylists", "load", "lsinfo", "mixrampdb", "mixrampdelay", "move", "moveid", "next", "noidle", "notcommands", "outputs",
        "password", "pause", "ping", "play", "playid", "playlist", "playlistid", "playlistinfo", "plchanges",
        "playlistadd", "playlistclear", "playlistdelete", "playlistfind", "playlistmove", "playlistsearch", "plchangesposid", "previous", "prio", "prioid", "rangeid", "random", "readpicture", "rename", "repeat", "replay_gain_mode", "replay_gain_status", "rescan", "rm", "save", "search", "searchadd", "searchaddpl", "seek", "seekcur",
        "seekid", "setvol", "shuffle", "single", "stats", "status", "stop", "swap", "swapid", "tagtypes", "toggleoutput", "update", "urlhandlers",
        "volume",
    ].sorted()

    /// Songs read from the index at a time for `find` and `search`.
    static let pageSize = 1000

    init(plane: any ControlPlane, settings: MPDSettings) {
        self.plane = plane
        self.settings = settings
    }

    func forget(_ client: Int) { clients[client] = nil }

    /// What a request's answer has made so far: handed to the client a part at a time when a
    /// reply to stream to is given, so a long listing never waits in memory whole.
    final class Output {
        private(set) var bytes: [UInt8] = []
        private let reply: MPDReply?
        static let part = 64 << 10

        init(streamingTo reply: MPDReply?) { self.reply = reply }

        func append(_ text: String) { bytes += text.utf8 }
        func append(_ more: [UInt8]) { bytes += more }

        /// Sends what is made once there is a part's worth; runs in the caller's isolation.
        func drain(isolation: isolated (any Actor)? = #isolation) async throws(MPDError) {
            guard let reply, bytes.count >= Self.part else { return }
            let part = bytes
            bytes.removeAll(keepingCapacity: true)
            guard await reply.write(part) else { throw MPDError(.system, "the client went away") }
        }
    }

    /// The answer to a request (what is left of it when parts went to `reply` already), and
    /// whether the connection closes after it.
    func answer(_ request: MPDRequest, streamingTo reply: MPDReply? = nil) async -> ([UInt8], close: Bool) {
        await Self.$requester.withValue("mpd \(request.clientID)") { await answering(request, streamingTo: reply) }
    }

    private func answering(_ request: MPDRequest, streamingTo reply: MPDReply?) async -> ([UInt8], close: Bool) {
        var client = clients[request.clientID] ?? Client(tags: MPDSong.tagOrder)
        client.authorized = request.authorized
        defer { clients[request.clientID] = client }
        let out = Output(streamingTo: reply)
        for (index, command) in request.commands.enumerated() {
            if command.name == "close" { return (out.bytes, true) }
            do throws(MPDError) {
                guard client.authorized || MPDServer.openCommands.contains(command.name) else {
                    throw MPDError(.permission, "you don't have permission for \"\(command.name)\"")
                }
                if command.name == "albumart" || command.name == "readpicture" {
                    out.append(try await picture(command, client))
                } else {
                    out.append(try await run(command, &client, out))
                }
                if request.listOK { out.append("list_OK\n") }
                try await out.drain()
            } catch {
                out.append(error.line(index: index, failed: command.name))
                return (out.bytes, false)
            }
        }
        out.append("OK\n")
        return (out.bytes, false)
    }

    /// `albumart URI OFFSET` (the cover file beside the song) and `readpicture URI OFFSET` (the
    /// song's own picture): a chunk from OFFSET, at most the client's `binarylimit`.
    private func picture(_ command: MPDCommand, _ client: Client) async throws(MPDError) -> [UInt8] {
        try count(command.arguments, 2)
        guard let offset = Int(command.arguments[1]), offset >= 0 else { throw .argument("Number expected: \(command.arguments[1])") }
        let path = try absolute(command.arguments[0])
        let embedded = command.name == "readpicture"
        guard let picture = try await picture(PictureCache.Key(path: path, embedded: embedded), reread: offset == 0) else {
            // None: albumart says so, readpicture answers nothing (as MPD).
            if embedded { return [] }
            throw MPDError(.noExist, "No file exists")
        }
        guard offset <= picture.bytes.count else { throw .argument("Offset too large") }
        let chunk = picture.bytes[offset..<min(picture.bytes.count, offset + client.binaryLimit)]
        var out = Array("size: \(picture.bytes.count)\n".utf8)
        if embedded, !picture.mimeType.isEmpty { out += Array("type: \(picture.mimeType)\n".utf8) }
        out += Array("binary: \(chunk.count)\n".utf8) + chunk + [0x0A]
        return out
    }

    /// A picture from the cache, else read (once, however many clients ask meanwhile). A
    /// client's first chunk reads it again (`reread`): a cover changed on disk shows.
    private func picture(_ key: PictureCache.Key, reread: Bool) async throws(MPDError) -> PictureCache.Picture? {
        if !reread, let cached = pictures[key] { return cached }
        // Given up before it is read again: the old bytes and the new are never both held.
        if reread, picturesLoading[key] == nil { pictures.forget(key) }
        let loading: Task<Result<PictureCache.Picture?, MPDError>, Never>
        if let running = picturesLoading[key] {
            loading = running
        } else {
            // One picture read at a time: a read holds a large picture twice while it is
            // decoded, and two at once, with the cache full, would pass the memory budget.
            let plane = plane, source = source, previous = lastPictureRead
            loading = Task {
                _ = await previous?.value
                let result = await plane.send(.picture(path: key.path, embedded: key.embedded), from: source)
                if let failure = result.failure { return .failure(MPDError(Self.code(failure), failure.message)) }
                guard case .artwork(_, let mimeType, let bytes) = result.payload else { return .success(nil) }
                return .success(PictureCache.Picture(mimeType: mimeType, bytes: bytes))
            }
            picturesLoading[key] = loading
            lastPictureRead = loading
        }
        let result = await loading.value
        if picturesLoading[key] == loading {
            picturesLoading[key] = nil
            if case .success(let picture?) = result { pictures.keep(picture, for: key) }
        }
        return try result.get()
    }

    // MARK: Commands

    /// Carries out one command; its answer is returned, or (long listings) added to `out`.
    private func run(_ command: MPDCommand, _ client: inout Client, _ out: Output) async throws(MPDError) -> String {
        let args = command.arguments
        switch command.name {
        case "ping", "clearerror":
            try count(args, 0)
            return ""
        case "commands":
            return Self.served.filter { client.authorized || MPDServer.openCommands.contains($0) }.map { "command: \($0)\n" }.joined()
        case "notcommands":
            return client.authorized ? "" : Self.served.filter { !MPDServer.openCommands.contains($0) }.map { "command: \($0)\n" }.joined()
        case "tagtypes":
            return try tagTypes(args, &client)
        case "binarylimit":
            try count(args, 1)
            guard let limit = Int(args[0]), limit >= 64 else { throw .argument("Value too small: \(args[0])") }
            client.binaryLimit = min(limit, 1 << 20)
            return ""
        case "urlhandlers":
            return "handler: http://\nhandler: https://\n"
        case "decoders":
            return Self.decoders
        case "status":
            return try await status()
        case "currentsong":
            let state = await plane.snapshot()
            if let link = state.nowPlayingLink { return MPDSong.block(linked: link, state.nowPlaying, tags: client.tags) }
            guard let id = state.queue.currentItemID, let position = state.queue.items.firstIndex(where: { $0.id == id }) else { return "" }
            return try await songs([(position, state.queue.items[position])], client)
        case "stats":
            return try await stats()
        case "outputs":
            let output = await plane.snapshot().output
            return "outputid: 0\noutputname: \(output.device)\nplugin: alsa\noutputenabled: \(output.enabled ? 1 : 0)\n"
        case "enableoutput", "disableoutput", "toggleoutput":
            // Output 0 is the player's device; there is no other.
            try count(args, 1)
            guard let id = Int(args[0]) else { throw .argument("Integer expected: \(args[0])") }
            guard id == 0 else { throw MPDError(.noExist, "No such audio output") }
            let on = command.name == "toggleoutput" ? !(await plane.snapshot().output.enabled) : command.name == "enableoutput"
            return try await send(.output(enabled: on))

        // Playback
        case "play", "playid":
            try count(args, 0...1)
            guard let argument = args.first, argument != "-1" else { return try await remote(CommandRequest(.play)) }
            let id = try await itemID(argument, byPosition: command.name == "play")
            return try await send(.queue(.play(itemID: id)))
        case "pause":
            // Asking for the state the player is in is done, as MPD answers it (the command
            // center would call the command disabled).
            try count(args, 0...1)
            let transport = await plane.snapshot().transport
            switch args.first {
            case nil: return try await remote(CommandRequest(.togglePlayPause))
            case "1": return transport == .playing ? try await remote(CommandRequest(.pause)) : ""
            case "0": return transport == .playing ? "" : try await remote(CommandRequest(.play))
            default: throw .argument("Boolean (0/1) expected: \(args[0])")
            }
        case "stop":
            return await plane.snapshot().transport == .stopped ? "" : try await remote(CommandRequest(.stop))
        case "next": return try await remote(CommandRequest(.nextTrack))
        case "previous": return try await remote(CommandRequest(.previousTrack))
        case "seek", "seekid":
            try count(args, 2)
            let id = try await itemID(args[0], byPosition: command.name == "seek")
            let seconds = try number(args[1])
            if await plane.snapshot().queue.currentItemID != id { _ = try await send(.queue(.play(itemID: id))) }
            return try await remote(CommandRequest(.changePlaybackPosition, position: seconds))
        case "seekcur":
            try count(args, 1)
            let text = args[0]
            let amount = try number(text.hasPrefix("+") ? String(text.dropFirst()) : text)
            var target = amount
            if text.hasPrefix("+") || text.hasPrefix("-") {
                let state = await plane.snapshot()
                target = state.nowPlaying.elapsed(at: monotonicSeconds()) + amount
            }
            return try await remote(CommandRequest(.changePlaybackPosition, position: max(0, target)))

        // Options
        case "setvol":
            try count(args, 1)
            guard let volume = Int(args[0]), (0...100).contains(volume) else { throw .argument("Invalid volume value: \(args[0])") }
            return try await send(.volume(.set(Double(volume))))
        case "volume":
            try count(args, 1)
            guard let step = Int(args[0]), (-100...100).contains(step) else { throw .argument("Invalid volume value: \(args[0])") }
            return try await send(.volume(.step(Double(step))))
        case "getvol":
            return "volume: \(Int((await plane.snapshot().volume).rounded()))\n"
        case "repeat":
            try count(args, 1)
            let on = try boolean(args[0])
            let state = await plane.snapshot()
            // MPD's repeat + single is the command center's repeat one; leaving it keeps single.
            if !on, state.repeatMode == .one { _ = try await send(.playerMode(.single(.on))) }
            return try await remote(CommandRequest(.changeRepeatMode, repeatMode: on ? (state.repeatMode == .off ? .all : state.repeatMode) : .off))
        case "random":
            try count(args, 1)
            return try await remote(CommandRequest(.changeShuffleMode, shuffle: try boolean(args[0])))
        case "single":
            try count(args, 1)
            let mode: SingleMode = args[0] == "oneshot" ? .oneshot : try boolean(args[0]) ? .on : .off
            if mode == .off, await plane.snapshot().repeatMode == .one {
                // Repeat one is repeat with single: without single it is repeat all.
                _ = try await remote(CommandRequest(.changeRepeatMode, repeatMode: .all))
            }
            return try await send(.playerMode(.single(mode)))
        case "consume":
            // mpd 0.23 knows only 0 and 1 (oneshot came with 0.24).
            try count(args, 1)
            return try await send(.playerMode(.consume(try boolean(args[0]))))
        case "replay_gain_mode":
            try count(args, 1)
            guard let mode = ReplayGainMode(rawValue: args[0]) else { throw .argument("Unrecognized replay gain mode") }
            return try await send(.playerMode(.replayGain(mode: mode, preamp: nil, missingPreamp: nil)))
        case "replay_gain_status":
            try count(args, 0)
            return "replay_gain_mode: \((await plane.snapshot().replayGain.mode).rawValue)\n"
        case "crossfade":
            // Tracks join gaplessly, sample for sample; there is no crossfade to set.
            try count(args, 1)
            guard let seconds = UInt(args[0]) else { throw .argument("Integer expected: \(args[0])") }
            guard seconds == 0 else { throw .argument("crossfade is not supported: tracks join gaplessly") }
            return ""
        case "mixrampdb":
            try count(args, 1)
            guard let decibels = Double(args[0]) else { throw .argument("Float expected: \(args[0])") }
            guard decibels == 0 else { throw .argument("MixRamp is not supported: tracks join gaplessly") }
            return ""
        case "mixrampdelay":
            // A negative delay or "nan" turns MixRamp off, which it always is.
            try count(args, 1)
            guard let seconds = Double(args[0]) else { throw .argument("Float expected: \(args[0])") }
            guard seconds.isNaN || seconds < 0 else { throw .argument("MixRamp is not supported: tracks join gaplessly") }
            return ""

        // The queue
        case "add", "addid":
            try count(args, 1...2)
            let position = try args.count > 1 ? await insertPosition(args[1]) : nil
            let before = await plane.snapshot().queue.items.map(\.id)
            _ = try await send(.queue(.add(paths: [try absolute(args[0])], at: position)))
            guard command.name == "addid" else { return "" }
            let added = await plane.snapshot().queue.items.filter { !before.contains($0.id) }
            guard added.count == 1 else { throw .argument("addid takes one song, not a directory") }
            return "Id: \(added[0].id)\n"
        case "clear":
            return try await send(.queue(.clear))
        case "delete":
            try count(args, 1)
            let range = try MPDFilter.range(args[0])
            let items = await plane.snapshot().queue.items
            guard range.lowerBound < items.count, range.upperBound == Int.max || range.upperBound <= items.count else {
                throw MPDError(.argument, "Bad song index")
            }
            return try await send(.queue(.remove(itemIDs: items[range.clamped(to: 0..<items.count)].map(\.id))))
        case "deleteid":
            try count(args, 1)
            return try await send(.queue(.remove(itemIDs: [try await itemID(args[0], byPosition: false)])))
        case "move", "moveid":
            try count(args, 2)
            guard let to = Int(args[1]) else { throw .argument("Number expected: \(args[1])") }
            if command.name == "moveid" {
                return try await send(.queue(.move(itemID: try await itemID(args[0], byPosition: false), to: to)))
            }
            let range = try MPDFilter.range(args[0])
            let items = await plane.snapshot().queue.items
            guard range.lowerBound < items.count, range.upperBound == Int.max || range.upperBound <= items.count else {
                throw MPDError(.argument, "Bad song index")
            }
            let moving = items[range.clamped(to: 0..<items.count)].map(\.id)
            for (offset, id) in moving.enumerated() { _ = try await send(.queue(.move(itemID: id, to: to + offset))) }
            return ""
        case "swap", "swapid":
            // Two moves: the first item to the second's place, then the second to the first's.
            try count(args, 2)
            let byPosition = command.name == "swap"
            let (a, b) = (try await itemID(args[0], byPosition: byPosition), try await itemID(args[1], byPosition: byPosition))
            let items = await plane.snapshot().queue.items
            guard let p = items.firstIndex(where: { $0.id == a }), let q = items.firstIndex(where: { $0.id == b }), p != q else { return "" }
            _ = try await send(.queue(.move(itemID: a, to: q)))
            return try await send(.queue(.move(itemID: b, to: p)))
        case "shuffle":
            try count(args, 0...1)
            let length = await plane.snapshot().queue.items.count
            var range: Range<Int>?
            if let text = args.first {
                let asked = try MPDFilter.range(text)
                guard asked.lowerBound <= length else { throw .argument("Bad song index") }
                range = asked.clamped(to: 0..<length)
            }
            return try await send(.queue(.shuffle(range: range)))
        case "prio", "prioid":
            guard args.count >= 2 else { throw .argument("too few arguments for \"\(command.name)\"") }
            guard let priority = Int(args[0]) else { throw .argument("Number expected: \(args[0])") }
            guard QueueItem.priorities.contains(priority) else { throw .argument("Number too large: \(args[0])") }
            var ids: [Int] = []
            if command.name == "prioid" {
                for text in args.dropFirst() {
                    guard let id = Int(text) else { throw .argument("Number expected: \(text)") }
                    ids.append(id)
                }
            } else {
                let items = await plane.snapshot().queue.items
                for text in args.dropFirst() {
                    let range = try MPDFilter.range(text)
                    guard range.lowerBound < items.count else { throw .argument("Bad song index") }
                    ids += items[range.clamped(to: 0..<items.count)].map(\.id)
                }
            }
            return try await send(.queue(.priority(priority, itemIDs: ids)))
        case "rangeid":
            // START:END in seconds, either side may be empty; ":" plays the whole song again.
            try count(args, 2)
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
            let queue = await plane.snapshot().queue
            if id == queue.currentItemID, await plane.snapshot().transport != .stopped {
                throw MPDError(.permission, "Cannot edit the current song")
            }
            return try await send(.queue(.range(itemID: id, range)))
        case "playlistfind", "playlistsearch":
            let (filters, rest) = try MPDFilter.parse(args)
            guard !filters.isEmpty else { throw .argument("too few arguments for \"\(command.name)\"") }
            guard rest.isEmpty else { throw .argument("unexpected arguments: \(rest.joined(separator: " "))") }
            let matching: Matching = command.name == "playlistfind" ? .exact : .substring
            let queueFilters = try filters.map { (filter) throws(MPDError) in try MPDSong.QueueFilter(filter, matching: matching) }
            let items = await plane.snapshot().queue.items.enumerated().map { (position: $0.offset, item: $0.element, path: uri($0.element.path)) }
            let catalog = plane.catalog, tags = client.tags
            // On the worker pool: the index's songs, the matching and the wording.
            return try await work { () throws(MPDError) -> String in
                var found = ""
                let budget = QueryBudget()
                budget.start()
                search: for (position, item, path) in items {
                    let song = try Self.librarySong(path, catalog)
                    for filter in queueFilters where !(try MPDSong.matches(filter, path: path, song: song, item.metadata, budget: budget)) {
                        continue search
                    }
                    found += Self.song(item, path: path, song: song, position: position, tags: tags)
                }
                return found
            }
        case "playlist":
            let items = await plane.snapshot().queue.items
            return items.enumerated().map { "\($0.offset):file: \(uri($0.element.path))\n" }.joined()
        case "playlistinfo", "playlistid":
            try count(args, 0...1)
            let items = await plane.snapshot().queue.items
            var range = 0..<items.count
            if let argument = args.first {
                if command.name == "playlistid" {
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
            return try await songs(range.map { ($0, items[$0]) }, client)
        case "plchanges", "plchangesposid":
            try count(args, 1...2)
            guard let version = Int(args[0]) else { throw .argument("Number expected: \(args[0])") }
            let queue = await plane.snapshot().queue
            var range = 0..<queue.items.count
            if args.count > 1 { range = try MPDFilter.range(args[1]).clamped(to: range) }
            let positions = queue.positionsChanged(since: version).filter { range.contains($0) }
            guard command.name == "plchanges" else {
                return positions.map { "cpos: \($0)\nId: \(queue.items[$0].id)\n" }.joined()
            }
            return try await songs(positions.map { ($0, queue.items[$0]) }, client)

        // Stored playlists
        case "listplaylists":
            return try await playlists().map { "playlist: \($0.name)\nLast-Modified: \(MPDSong.time($0.modified))\n" }.joined()
        case "listplaylist", "listplaylistinfo":
            try count(args, 1...2)
            let playlist = try await storedPlaylist(args[0])
            guard command.name == "listplaylistinfo" else { return playlist.entries.map { "file: \($0)\n" }.joined() }
            let tags = client.tags
            return try await query { (catalog) throws(CommandFailure) -> String in
                var out = ""
                for entry in playlist.entries {
                    if let song = try Self.librarySong(entry, in: catalog) {
                        out += MPDSong.block(song, tags: tags)
                    } else {
                        out += "file: \(entry)\n"
                    }
                }
                return out
            }
        case "load":
            try count(args, 1...3)
            let playlist = try await storedPlaylist(args[0])
            var entries = playlist.entries
            if args.count > 1 { entries = Array(entries[try MPDFilter.range(args[1]).clamped(to: 0..<entries.count)]) }
            let position = try args.count > 2 ? await insertPosition(args[2]) : nil
            guard !entries.isEmpty else { return "" }
            return try await send(.queue(.add(paths: try entries.map { (entry) throws(MPDError) in try absolute(entry) }, at: position)))

        case "save":
            try count(args, 1)
            return try await playlist(.saveQueue(name: args[0], replacing: false), exists: "Playlist already exists")
        case "playlistadd":
            try count(args, 2...3)
            let entries = try await songsAt(args[1])
            var position: Int?
            if args.count > 2 {
                guard let at = Int(args[2]), at >= 0 else { throw .argument("Number expected: \(args[2])") }
                position = at
            }
            return try await playlist(.add(name: args[0], entries: entries, at: position))
        case "searchaddpl":
            guard args.count >= 2 else { throw .argument("too few arguments for \"searchaddpl\"") }
            let (filters, rest) = try MPDFilter.parse(Array(args.dropFirst()))
            guard !filters.isEmpty else { throw .argument("too few arguments for \"searchaddpl\"") }
            guard rest.isEmpty else { throw .argument("unexpected arguments: \(rest.joined(separator: " "))") }
            let entries = try await paths(SongQuery(filters, matching: .substring))
            return try await playlist(.add(name: args[0], entries: entries, at: nil))
        case "playlistclear":
            try count(args, 1)
            return try await playlist(.clear(name: args[0]))
        case "playlistdelete":
            try count(args, 2)
            return try await playlist(.delete(name: args[0], positions: try MPDFilter.range(args[1])), position: "Bad song index")
        case "playlistmove":
            try count(args, 3)
            guard let from = Int(args[1]), from >= 0 else { throw .argument("Number expected: \(args[1])") }
            guard let to = Int(args[2]), to >= 0 else { throw .argument("Number expected: \(args[2])") }
            return try await playlist(.move(name: args[0], from: from, to: to), position: "Bad range")
        case "rename":
            try count(args, 2)
            return try await playlist(.rename(name: args[0], to: args[1]), exists: "Playlist exists already")
        case "rm":
            try count(args, 1)
            return try await playlist(.remove(name: args[0]))

        // The library
        case "lsinfo":
            try count(args, 0...1)
            return try await lsinfo(args.first ?? "", client)
        case "listall", "listallinfo":
            try count(args, 0...1)
            let path = trimmed(args.first ?? "")
            // A directory named is listed itself first, as MPD does.
            if !path.isEmpty, let modified = try await directoryModified(path) {
                out.append("directory: \(path)\n")
                if command.name == "listallinfo" { out.append("Last-Modified: \(MPDSong.time(modified))\n") }
            }
            try await listAll(path, withInfo: command.name == "listallinfo", client, into: out)
            return ""
        case "list":
            return try await list(args)
        case "find", "search":
            let (filters, rest) = try MPDFilter.parse(args)
            guard !filters.isEmpty else { throw .argument("too few arguments for \"\(command.name)\"") }
            let window = try windowOption(rest) ?? 0..<Int.max
            let matching: Matching = command.name == "find" ? .exact : .substring
            let tags = client.tags
            // A page at a time, each handed on before the next is read.
            var offset = window.lowerBound
            while offset < window.upperBound {
                let page = offset..<min(window.upperBound, offset + Self.pageSize)
                let (text, found) = try await query { (catalog) throws(CommandFailure) -> (String, Int) in
                    var text = "", found = 0
                    try catalog.songs(SongQuery(filters, matching: matching, window: page)) { song in
                        text += MPDSong.block(song, tags: tags)
                        found += 1
                        return true
                    }
                    return (text, found)
                }
                out.append(text)
                try await out.drain()
                if found < page.count { break }
                offset += found
            }
            return ""
        case "findadd", "searchadd":
            let (filters, rest) = try MPDFilter.parse(args)
            guard !filters.isEmpty else { throw .argument("too few arguments for \"\(command.name)\"") }
            let position = try await positionOption(rest)
            let paths = try await paths(SongQuery(filters, matching: command.name == "findadd" ? .exact : .substring))
            guard !paths.isEmpty else { return "" }
            return try await send(.queue(.add(paths: try paths.map { (path) throws(MPDError) in try absolute(path) }, at: position)))
        case "count":
            let (filters, rest) = try MPDFilter.parse(args)
            var group: Tag?
            if rest.count == 2, rest[0].lowercased() == "group" {
                guard let tag = Tag(named: rest[1]) else { throw .argument("Unknown tag type: \(rest[1])") }
                group = tag
            } else if !rest.isEmpty {
                throw .argument("unexpected arguments: \(rest.joined(separator: " "))")
            }
            let counts = try await query { [group] (catalog) throws(CommandFailure) in try catalog.count(filters, matching: .exact, groupedBy: group) }
            return counts.map { count in
                (group.map { "\($0.rawValue): \(count.group ?? "")\n" } ?? "")
                    + "songs: \(count.songs)\nplaytime: \(Int(count.playTime.rounded()))\n"
            }.joined()
        case "update", "rescan":
            try count(args, 0...1)
            let result = await plane.send(.updateLibrary(path: args.first.map(trimmed)), from: source)
            if let failure = result.failure { throw MPDError(Self.code(failure), failure.message) }
            guard case .scanQueued(let job) = result.payload else { return "" }
            return "updating_db: \(job)\n"

        default:
            throw MPDError(.unknown, "unknown command \"\(command.name)\"", command: "")
        }
    }

    // MARK: Status

    private func status() async throws(MPDError) -> String {
        let state = await plane.snapshot()
        let queue = state.queue
        let now = monotonicSeconds()
        var out = """
            volume: \(Int(state.volume.rounded()))
            repeat: \(state.repeatMode == .off ? 0 : 1)
            random: \(state.shuffle ? 1 : 0)
            single: \(state.single == .oneshot ? "oneshot" : state.single == .on || state.repeatMode == .one ? "1" : "0")
            consume: \(state.consume ? 1 : 0)
            partition: default
            playlist: \(queue.version)
            playlistlength: \(queue.items.count)
            mixrampdb: 0.000000

            """
        // An interrupted or ducked-out player is paused as far as MPD clients can tell.
        let playing = state.transport == .playing && state.nowPlaying.rate != 0
        let word = switch state.transport {
        case .stopped: "stop"
        case .paused: "pause"
        case .playing: playing ? "play" : "pause"
        }
        out += "state: \(word)\n"
        if state.nowPlayingLink != nil {
            // Another program's item: not in the queue, so no song number; its times only.
            if state.transport != .stopped {
                let elapsed = state.nowPlaying.elapsed(at: now)
                let duration = state.nowPlaying.duration
                out += "time: \(Int(elapsed.rounded())):\(Int((duration ?? 0).rounded()))\n"
                out += "elapsed: \(MPDSong.decimal(elapsed))\n"
                if let duration { out += "duration: \(MPDSong.decimal(duration))\n" }
            }
        } else if let id = queue.currentItemID, let position = queue.items.firstIndex(where: { $0.id == id }) {
            out += "song: \(position)\nsongid: \(id)\n"
            if state.transport != .stopped {
                let elapsed = state.nowPlaying.elapsed(at: now)
                let duration = queue.items[position].metadata.duration
                out += "time: \(Int(elapsed.rounded())):\(Int((duration ?? 0).rounded()))\n"
                out += "elapsed: \(MPDSong.decimal(elapsed))\n"
                if let duration { out += "duration: \(MPDSong.decimal(duration))\n" }
                if let rate = state.output.sampleRate, let format = state.output.sampleFormat, let channels = state.output.channels {
                    out += "audio: \(rate):\(MPDSong.bits(format)):\(channels)\n"
                }
            }
            let repeatsSong = state.repeatMode == .one || (state.single != .off && state.repeatMode == .all)
            if !state.shuffle, position + 1 < queue.items.count || state.repeatMode != .off, !queue.items.isEmpty {
                let next = repeatsSong ? position : (position + 1) % queue.items.count
                out += "nextsong: \(next)\nnextsongid: \(queue.items[next].id)\n"
            }
        }
        if state.library.scan.isScanning { out += "updating_db: \(state.library.scan.job)\n" }
        return out
    }

    private func stats() async throws(MPDError) -> String {
        let library = await plane.snapshot().library
        let uptime = Int(monotonicSeconds() - started)
        guard library.isIndexed else { return "uptime: \(uptime)\n" }
        let totals = library.totals
        return """
            artists: \(totals.artists)
            albums: \(totals.albums)
            songs: \(totals.songs)
            uptime: \(uptime)
            db_playtime: \(Int(totals.playTime.rounded()))
            db_update: \(totals.lastUpdate)

            """
    }

    private func tagTypes(_ args: [String], _ client: inout Client) throws(MPDError) -> String {
        guard let sub = args.first?.lowercased() else {
            return client.tags.map { "tagtype: \($0.rawValue)\n" }.joined()
        }
        func named(_ names: ArraySlice<String>) throws(MPDError) -> Set<Tag> {
            var tags = Set<Tag>()
            for name in names {
                guard let tag = Tag(named: name) else { throw .argument("Unknown tag type: \(name)") }
                tags.insert(tag)
            }
            return tags
        }
        switch sub {
        case "clear": client.tags = []
        case "all": client.tags = MPDSong.tagOrder
        case "enable":
            let more = try named(args.dropFirst())
            client.tags = MPDSong.tagOrder.filter { client.tags.contains($0) || more.contains($0) }
        case "disable":
            let fewer = try named(args.dropFirst())
            client.tags = client.tags.filter { !fewer.contains($0) }
        default: throw .argument("Unknown sub command: \(args[0])")
        }
        return ""
    }

    // MARK: The library

    private func lsinfo(_ uri: String, _ client: Client) async throws(MPDError) -> String {
        if uri.contains("://") { throw MPDError(.noExist, "Unsupported URI scheme") }
        let path = trimmed(uri), tags = client.tags
        let answer = try await query { (catalog) throws(CommandFailure) -> String? in
            guard let listing = try? catalog.listDirectory(path) else {
                // A file, then.
                return try Self.librarySong(path, in: catalog).map { MPDSong.block($0, tags: tags) }
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

    private func listAll(_ path: String, withInfo: Bool, _ client: Client, into out: Output) async throws(MPDError) {
        let tags = client.tags
        let songs: String, directories: [DirectoryListing.Entry]
        do throws(MPDError) {
            (songs, directories) = try await query { (catalog) throws(CommandFailure) in
                let listing = try catalog.listDirectory(path)
                let songs = listing.songs.map { withInfo ? MPDSong.block($0, tags: tags) : "file: \($0.path)\n" }.joined()
                return (songs, listing.directories)
            }
        } catch {
            if path.isEmpty { throw error }
            throw MPDError(.noExist, "No such directory")
        }
        out.append(songs)
        try await out.drain()
        for directory in directories {
            out.append("directory: \(directory.path)\n")
            if withInfo { out.append("Last-Modified: \(MPDSong.time(directory.modified))\n") }
            try await listAll(directory.path, withInfo: withInfo, client, into: out)
        }
    }

    /// `list TAG [FILTER…] [group TAG…]`; and the old `list album ARTIST`.
    private func list(_ args: [String]) async throws(MPDError) -> String {
        guard let name = args.first else { throw .argument("too few arguments for \"list\"") }
        guard let tag = Tag(named: name) else {
            if name.lowercased() == "file" { throw .argument("list file is not supported; use listall") }
            throw .argument("Unknown tag type: \(name)")
        }
        var rest = Array(args.dropFirst())
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
        return try await query { [filters, groups] (catalog) throws(CommandFailure) -> String in
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

    /// A catalog query on the library's worker pool, in the requesting client's turn; its
    /// failure as MPD's error.
    private func query<T: Sendable>(_ body: @escaping @Sendable (any LibraryCatalog) throws(CommandFailure) -> T) async throws(MPDError) -> T {
        let catalog = try catalog()
        return try await work { () throws(MPDError) -> T in
            do throws(CommandFailure) {
                return try body(catalog)
            } catch {
                throw MPDError(Self.code(error), error.message)
            }
        }
    }

    /// Work on the library's worker pool, in the requesting client's turn.
    private func work<T: Sendable>(_ body: @escaping @Sendable () throws(MPDError) -> T) async throws(MPDError) -> T {
        try await WorkerPool.library.run(for: Self.requester, body)
    }

    /// The modification time of the directory `path`, from its parent's listing.
    private func directoryModified(_ path: String) async throws(MPDError) -> Int? {
        let parent = path.split(separator: "/").dropLast().joined(separator: "/")
        let listing = try? await query { (catalog) throws(CommandFailure) in try catalog.listDirectory(parent) }
        return listing?.directories.first { $0.path == path }?.modified
    }

    private func catalog() throws(MPDError) -> any LibraryCatalog {
        guard let catalog = plane.catalog else { throw MPDError(.system, "there is no music library: no music directory is configured") }
        return catalog
    }

    /// The indexed song at `path` (relative to the music directory), on the worker's thread.
    private static func librarySong(_ path: String, in catalog: any LibraryCatalog) throws(CommandFailure) -> LibrarySong? {
        var found: LibrarySong?
        let file = path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        try catalog.songs(SongQuery([TagFilter(.file, file)], matching: .exact)) { song in
            found = song
            return false
        }
        return found
    }

    /// `librarySong` with the failure as MPD's error, for work already on the pool.
    private static func librarySong(_ path: String, _ catalog: (any LibraryCatalog)?) throws(MPDError) -> LibrarySong? {
        guard let catalog else { return nil }
        do throws(CommandFailure) {
            return try librarySong(path, in: catalog)
        } catch {
            throw MPDError(Self.code(error), error.message)
        }
    }

    /// The paths of the songs `query` finds, in path order.
    private func paths(_ query: SongQuery) async throws(MPDError) -> [String] {
        try await self.query { (catalog) throws(CommandFailure) -> [String] in
            var paths: [String] = []
            try catalog.songs(query) { song in
                paths.append(song.path)
                return true
            }
            return paths
        }
    }

    private func playlists() async throws(MPDError) -> [StoredPlaylist] {
        try await query { (catalog) throws(CommandFailure) in try catalog.storedPlaylists() }
    }

    /// A stored playlist edit, its refusals worded as MPD words them.
    private func playlist(_ edit: PlaylistEdit, exists: String = "Playlist already exists",
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
    private func songsAt(_ uri: String) async throws(MPDError) -> [String] {
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

    private func storedPlaylist(_ name: String) async throws(MPDError) -> StoredPlaylist {
        guard let playlist = try await playlists().first(where: { $0.name == name }) else { throw MPDError(.noExist, "No such playlist") }
        return playlist
    }

    // MARK: Queue songs

    /// Queue items as MPD shows them, the index's songs looked up on the worker pool.
    private func songs(_ items: [(position: Int, item: QueueItem)], _ client: Client) async throws(MPDError) -> String {
        let items = items.map { (position: $0.position, item: $0.item, path: uri($0.item.path)) }
        let tags = client.tags, catalog = plane.catalog
        guard catalog != nil else {
            return items.map { Self.song($0.item, path: $0.path, song: nil, position: $0.position, tags: tags) }.joined()
        }
        return try await work { () throws(MPDError) -> String in
            items.map { Self.song($0.item, path: $0.path, song: try? Self.librarySong($0.path, catalog), position: $0.position, tags: tags) }
                .joined()
        }
    }

    /// A queue item as MPD shows it: the library's tags when the index has the file.
    private static func song(_ item: QueueItem, path: String, song: LibrarySong?, position: Int, tags: [Tag]) -> String {
        var out = song.map { MPDSong.block($0, tags: tags) } ?? MPDSong.block(path: path, item.metadata, tags: tags)
        if let range = item.range {
            // Right after the file, as MPD shows it; the times are the range's.
            var lines = out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
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
            out = lines.joined(separator: "\n")
        }
        out += "Pos: \(position)\nId: \(item.id)\n"
        if item.priority > 0 { out += "Prio: \(item.priority)\n" }
        return out
    }

    /// A queue path as MPD's URI: relative to the music directory.
    private func uri(_ path: String) -> String {
        guard let root = settings.musicDirectory, path.hasPrefix(root + "/") else { return path }
        return String(path.dropFirst(root.count + 1))
    }

    /// An MPD URI as the path the queue takes: inside the music directory.
    private func absolute(_ uri: String) throws(MPDError) -> String {
        // Internet radio: the URL is the queue's path, as mpd keeps it.
        let scheme = uri.prefix(8).lowercased()
        if scheme.hasPrefix("http://") || scheme.hasPrefix("https://") { return uri }
        if uri.contains("://") { throw MPDError(.noExist, "Unsupported URI scheme") }
        guard let root = settings.musicDirectory else {
            guard uri.hasPrefix("/") else { throw MPDError(.noExist, "No such song: no music directory is configured") }
            return uri
        }
        let relative = trimmed(uri)
        return relative.isEmpty ? root : root + "/" + relative
    }

    private func trimmed(_ uri: String) -> String {
        uri.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }

    /// The id of the item at a queue position, or of the id given.
    private func itemID(_ text: String, byPosition: Bool) async throws(MPDError) -> Int {
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
    private func insertPosition(_ text: String) async throws(MPDError) -> Int {
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

    private func positionOption(_ rest: [String]) async throws(MPDError) -> Int? {
        guard !rest.isEmpty else { return nil }
        guard rest.count == 2, rest[0].lowercased() == "position" else { throw .argument("unexpected arguments: \(rest.joined(separator: " "))") }
        return try await insertPosition(rest[1])
    }

    private func windowOption(_ rest: [String]) throws(MPDError) -> Range<Int>? {
        var window: Range<Int>?
        var index = 0
        while index + 1 < rest.count {
            switch rest[index].lowercased() {
            case "window": window = try MPDFilter.range(rest[index + 1])
            case "sort": break  // songs come in path order
            default: throw .argument("unexpected arguments: \(rest.joined(separator: " "))")
            }
            index += 2
        }
        guard index == rest.count else { throw .argument("unexpected arguments: \(rest.joined(separator: " "))") }
        return window
    }

    // MARK: Sending

    private var source: CommandSource { CommandSource("mpd") }

    private func remote(_ request: CommandRequest) async throws(MPDError) -> String {
        try await send(.remote(request))
    }

    /// Sends a command; a refusal becomes MPD's error.
    private func send(_ command: Command) async throws(MPDError) -> String {
        let result = await plane.send(command, from: source)
        if let failure = result.failure { throw MPDError(Self.code(failure), failure.message) }
        switch result.status {
        case .success: return ""
        case .disabled: throw MPDError(.playerSync, "not possible now (the command is disabled)")
        case .noActionableNowPlayingItem: throw MPDError(.playerSync, "there is no current song")
        case .noSuchContent: throw MPDError(.noExist, "No such song")
        case .commandFailed: throw MPDError(.argument, "the player refused the command")
        }
    }

    private static func code(_ failure: CommandFailure) -> MPDError.Code {
        switch failure.code {
        case .badArgument: .argument
        case .notFound: .noExist
        case .exists: .exist
        case .forbidden: .permission
        default: .system
        }
    }

    // MARK: Arguments

    private func count(_ args: [String], _ exactly: Int) throws(MPDError) {
        try count(args, exactly...exactly)
    }

    private func count(_ args: [String], _ allowed: ClosedRange<Int>) throws(MPDError) {
        if args.count < allowed.lowerBound { throw .argument("too few arguments") }
        if args.count > allowed.upperBound { throw .argument("too many arguments") }
    }

    private func number(_ text: String) throws(MPDError) -> Double {
        guard let value = Double(text), value.isFinite else { throw .argument("Number expected: \(text)") }
        return value
    }

    private func boolean(_ text: String) throws(MPDError) -> Bool {
        switch text {
        case "0": return false
        case "1": return true
        default: throw .argument("Boolean (0/1) expected: \(text)")
        }
    }
}
