import NIOCore
import TonearmControl
import TonearmControlPlane

/// The MPD protocol as a plug-in of the control plane: phone apps, Home Assistant, ncmpcpp
/// and mpc drive the player and browse the library through it. Commands become control-plane
/// commands (transport commands follow the Now Playing owner rule like every other source);
/// changes become `idle` events.
public final class MPDPlugIn: PlugIn {
    public let name: String
    private let options: MPDServerOptions
    private let settings: MPDSettings
    private let group: any EventLoopGroup

    private enum Input {
        case request(MPDRequest, MPDReply)
        case left(Int)
    }

    /// The server is bound when the plug-in runs: a port in use is logged and tried again
    /// with back-off while the rest of the daemon goes on (MPD is not needed to play).
    public init(options: MPDServerOptions, settings: MPDSettings, group: any EventLoopGroup) {
        self.options = options
        self.settings = settings
        self.group = group
        let places = [options.host.map { "\($0):\(options.port)" }, options.socketPath].compactMap { $0 }
        name = "MPD server \(places.joined(separator: " and "))"
    }

    public func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let (inputs, continuation) = AsyncStream<Input>.makeStream()
        var options = options
        options.log = { log.warning($0) }
        options.clientDisconnected = { continuation.yield(.left($0)) }
        let commands = MPDCommands(plane: plane, settings: settings)
        let server = try MPDServer(options: options, group: group) { request, reply in
            if let answer = commands.answerAtOnce(request) { return reply.send(answer) }
            continuation.yield(.request(request, reply))
        }
        let changes = plane.subscribe(Set(Subsystem.allCases))
        server.start()
        defer { server.stop() }
        await withDiscardingTaskGroup { group in
            group.addTask { await Self.forward(changes, plane, to: server) }
            // Each client's requests in the order they came, clients side by side: one client's
            // long search holds up no other.
            var clients: [Int: AsyncStream<(MPDRequest, MPDReply)>.Continuation] = [:]
            for await input in inputs {
                switch input {
                case .request(let request, let reply):
                    let client = request.clientID
                    if clients[client] == nil {
                        let (requests, continuation) = AsyncStream<(MPDRequest, MPDReply)>.makeStream()
                        clients[client] = continuation
                        group.addTask {
                            for await (request, reply) in requests {
                                let (response, close) = await commands.answer(request, streamingTo: reply)
                                reply.send(response, close: close)
                            }
                            await commands.forget(client)
                        }
                    }
                    clients[client]?.yield((request, reply))
                case .left(let client):
                    clients.removeValue(forKey: client)?.finish()
                }
            }
            for continuation in clients.values { continuation.finish() }
            group.cancelAll()
        }
    }

    /// Changes into MPD's idle subsystems.
    private static func forward(_ changes: ChangeSubscription, _ plane: any ControlPlane, to server: MPDServer) async {
        var last = await plane.snapshot()
        for await batch in changes {
            var names = Set<String>()
            for subsystem in batch.subsystems {
                switch subsystem {
                case .player, .sessions: names.insert("player")
                case .mixer: names.insert("mixer")
                case .options: names.insert("options")
                case .queue: names.insert("playlist")
                case .output: names.insert("output")
                case .storedPlaylists: names.insert("stored_playlist")
                case .library:
                    let now = await plane.snapshot().library
                    if now.scan.isScanning != last.library.scan.isScanning || now.scan.job != last.library.scan.job {
                        names.insert("update")
                    }
                    if now.totals != last.library.totals || now.unavailable != last.library.unavailable { names.insert("database") }
                    last.library = now
                }
            }
            if !batch.publications.isEmpty { names.insert("player") }
            server.changed(names)
        }
    }
}
