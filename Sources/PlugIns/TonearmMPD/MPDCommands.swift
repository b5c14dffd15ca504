#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import TonearmControlPlane
import TonearmPlayer
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
///
/// Which commands there are, who may use them and how many arguments they take is the table
/// (`MPDCommandTable.swift`); each handler is in the file of its area (status, playback,
/// options, the queue, stored playlists, the database, pictures, outputs, the connection).
actor MPDCommands {
    let plane: any ControlPlane
    let settings: MPDSettings
    let started = monotonicSeconds()
    private var clients: [Int: Client] = [:]

    /// What a connection has set for itself, kept from one of its requests to the next.
    final class Client {
        let id: Int
        /// Gave the password, as the connection says with each request (it decides).
        var authorized = false
        /// The tags song answers carry (`tagtypes`), in MPD's order.
        var tags: [Tag]
        /// The most bytes of a picture one `albumart` or `readpicture` answer carries.
        var binaryLimit = 8192

        init(id: Int, tags: [Tag]) {
            self.id = id
            self.tags = tags
        }
    }

    /// One command being carried out: what the client sent, its connection's settings, and
    /// the answer so far (a handler adds a long listing there a part at a time, and returns
    /// the rest).
    struct Call {
        let name: String
        let arguments: [String]
        let client: Client
        let out: Output
    }

    /// Pictures read, for the chunks that follow: a client reads a cover 8 KiB at a time.
    var pictures = PictureCache(limit: PictureCache.defaultLimit)
    /// Pictures being read, for the clients that ask for one meanwhile.
    var picturesLoading: [PictureCache.Key: Task<Result<PictureCache.Picture?, MPDError>, Never>] = [:]
    /// The picture read last started: the next waits for it.
    var lastPictureRead: Task<Result<PictureCache.Picture?, MPDError>, Never>?

    /// What `answerAtOnce` reads on the network thread besides the published state, kept here
    /// by the commands that change it.
    struct Shared: Sendable {
        /// The index's song for the current song's path (nil: the index has no such file) as
        /// of the scan `scan` finished: what `currentsong` shows until another song plays or
        /// another scan is done.
        var currentSong: KnownSong?
        /// The clients whose song answers carry other tags than all (`tagtypes`).
        var ownTags: Set<Int> = []
    }
    typealias KnownSong = (path: String, scan: Int, song: LibrarySong?)
    nonisolated let shared = Mutex(Shared())

    /// Whose turn a library query waits for on the worker pool: the request's client.
    @TaskLocal static var requester = "mpd"

    init(plane: any ControlPlane, settings: MPDSettings) {
        self.plane = plane
        self.settings = settings
    }

    func forget(_ client: Int) {
        clients[client] = nil
        shared.withLock { _ = $0.ownTags.remove(client) }
    }

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

    /// A request answered where it was read, with no turn of this actor's or the daemon's
    /// executor: what clients poll (`status` and `currentsong`, twice a second while a song
    /// plays), alone and allowed, from the plane's published state and the index's song kept
    /// for it. Nil for any other request, and for a `currentsong` the index must be asked for
    /// or a client with tags of its own: `answer` takes those.
    nonisolated func answerAtOnce(_ request: MPDRequest) -> [UInt8]? {
        guard request.authorized, !request.isList, request.commands.count == 1, let command = request.commands.first,
              command.arguments.isEmpty
        else { return nil }
        var out: [UInt8] = []
        switch command.name {
        case "status":
            StatusCommands.appendStatus(plane.published, now: monotonicSeconds(), to: &out)
        case "currentsong":
            let (known, ownTags) = shared.withLock { ($0.currentSong, $0.ownTags.contains(request.clientID)) }
            guard !ownTags, case .answer(let song) = StatusCommands.currentSong(
                in: plane.published, known: known, musicDirectory: settings.musicDirectory, indexed: plane.catalog != nil,
                tags: MPDSong.tagOrder)
            else { return nil }
            out = song
        default:
            return nil
        }
        out += "OK\n".utf8
        return out
    }

    /// The answer to a request (what is left of it when parts went to `reply` already), and
    /// whether the connection closes after it.
    func answer(_ request: MPDRequest, streamingTo reply: MPDReply? = nil) async -> ([UInt8], close: Bool) {
        await Self.$requester.withValue("mpd \(request.clientID)") { await answering(request, streamingTo: reply) }
    }

    private func answering(_ request: MPDRequest, streamingTo reply: MPDReply?) async -> ([UInt8], close: Bool) {
        let client = clients[request.clientID] ?? Client(id: request.clientID, tags: MPDSong.tagOrder)
        clients[request.clientID] = client
        client.authorized = request.authorized
        let out = Output(streamingTo: reply)
        for (index, command) in request.commands.enumerated() {
            // A `close` in a command list closes once what came before it is answered.
            if command.name == "close" { return (out.bytes, true) }
            do throws(MPDError) {
                guard client.authorized || Self.openCommands.contains(command.name) else {
                    throw MPDError(.permission, "you don't have permission for \"\(command.name)\"")
                }
                guard let entry = Self.entries[command.name], let handler = entry.handler else {
                    throw MPDError(.unknown, "unknown command \"\(command.name)\"", command: "")
                }
                try entry.check(command.arguments)
                out.append(try await handler(self, Call(name: command.name, arguments: command.arguments, client: client, out: out)))
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

    // MARK: Sending

    var source: CommandSource { CommandSource("mpd") }

    func remote(_ request: CommandRequest) async throws(MPDError) -> String {
        try await send(.remote(request))
    }

    /// Sends a command; a refusal becomes MPD's error.
    func send(_ command: Command) async throws(MPDError) -> String {
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

    static func code(_ failure: CommandFailure) -> MPDError.Code {
        switch failure.code {
        case .badArgument: .argument
        case .notFound: .noExist
        case .exists: .exist
        case .forbidden: .permission
        default: .system
        }
    }

    // MARK: Arguments

    func number(_ text: String) throws(MPDError) -> Double {
        guard let value = Double(text), value.isFinite else { throw .argument("Number expected: \(text)") }
        return value
    }

    func boolean(_ text: String) throws(MPDError) -> Bool {
        switch text {
        case "0": return false
        case "1": return true
        default: throw .argument("Boolean (0/1) expected: \(text)")
        }
    }

    // MARK: URIs

    /// A queue path as MPD's URI: relative to the music directory.
    func uri(_ path: String) -> String { Self.uri(path, in: settings.musicDirectory) }

    static func uri(_ path: String, in musicDirectory: String?) -> String {
        guard let root = musicDirectory, path.hasPrefix(root + "/") else { return path }
        return String(path.dropFirst(root.count + 1))
    }

    /// An MPD URI as the path the queue takes: inside the music directory.
    func absolute(_ uri: String) throws(MPDError) -> String {
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

    func trimmed(_ uri: String) -> String {
        uri.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }

    // MARK: The library

    /// A catalog query on the library's worker pool, in the requesting client's turn; its
    /// failure as MPD's error.
    func query<T: Sendable>(_ body: @escaping @Sendable (any LibraryCatalog) throws(CommandFailure) -> T) async throws(MPDError) -> T {
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
    func work<T: Sendable>(_ body: @escaping @Sendable () throws(MPDError) -> T) async throws(MPDError) -> T {
        try await WorkerPool.library.run(for: Self.requester, body)
    }

    func catalog() throws(MPDError) -> any LibraryCatalog {
        guard let catalog = plane.catalog else { throw MPDError(.system, "there is no music library: no music directory is configured") }
        return catalog
    }

    /// The indexed song at `path` (relative to the music directory), on the worker's thread.
    static func librarySong(_ path: String, in catalog: any LibraryCatalog) throws(CommandFailure) -> LibrarySong? {
        var found: LibrarySong?
        let file = path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        try catalog.songs(SongQuery([TagFilter(.file, file)], matching: .exact)) { song in
            found = song
            return false
        }
        return found
    }

    /// `librarySong` with the failure as MPD's error, for work already on the pool.
    static func librarySong(_ path: String, _ catalog: (any LibraryCatalog)?) throws(MPDError) -> LibrarySong? {
        guard let catalog else { return nil }
        do throws(CommandFailure) {
            return try librarySong(path, in: catalog)
        } catch {
            throw MPDError(Self.code(error), error.message)
        }
    }

    /// The paths of the songs `query` finds, in path order.
    func paths(_ query: SongQuery) async throws(MPDError) -> [String] {
        try await self.query { (catalog) throws(CommandFailure) -> [String] in
            var paths: [String] = []
            try catalog.songs(query) { song in
                paths.append(song.path)
                return true
            }
            return paths
        }
    }
}
