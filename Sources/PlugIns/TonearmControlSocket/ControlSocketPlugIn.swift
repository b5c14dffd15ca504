import NIOCore
import Synchronization
import TonearmControl
import TonearmControlJSON
import TonearmControlPlane
import TonearmJSON
import TonearmNetwork
import TonearmSession
import TonearmSystem

/// The JSON-lines control socket as a plug-in of the control plane: `tonearm`, scripts and
/// `socat` speak it (the protocol: `TonearmControl/Protocol.swift`). Requests become commands
/// or reports of one snapshot; changes become the topics' events.
public final class ControlSocketPlugIn: PlugIn {
    public let name: String
    /// Without its socket the daemon cannot be reached: it does not start.
    public var isRequired: Bool { true }
    private let server: ControlServer
    private let inputs: AsyncStream<Input>
    private let clients = ClientMap()

    private enum Input {
        case request(ControlRequest, Reply)
        case left(Int)
    }

    /// The topics a client may subscribe to. `interruption`, `duck`, `stream` and
    /// `remoteCommand` carry events about a client's own sessions only.
    public static let topics = ["nowPlaying", "state", "queue", "commands", "sessions", "library", "interruption", "duck", "stream", "remoteCommand"]

    /// Binds the socket now, so a daemon that cannot have it fails before it starts anything.
    /// It is served on `group`, the daemon's one event loop.
    public init(path: String, group: any EventLoopGroup, log: PlugInLog) throws(ControlError) {
        name = "control socket \(path)"
        let (inputs, continuation) = AsyncStream<Input>.makeStream()
        self.inputs = inputs
        var options = ControlServerOptions(path: path, topics: Self.topics)
        options.log = { log.warning($0) }
        options.clientDisconnected = { continuation.yield(.left($0)) }
        server = try ControlServer(options: options, group: group) { request, reply in continuation.yield(.request(request, reply)) }
    }

    public func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let changes = plane.subscribe(Set(Subsystem.allCases))
        server.start()
        defer { server.stop() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.forward(changes, plane) }
            // Requests in the order they came, one at a time: a client's `add` is done before
            // its `play`.
            for await input in inputs {
                switch input {
                case .request(let request, let reply):
                    await answer(request, reply, plane)
                case .left(let connection):
                    if let client = clients.remove(connection) { await plane.clientLeft(client) }
                }
            }
            group.cancelAll()
        }
    }

    // MARK: Requests

    private func answer(_ request: ControlRequest, _ reply: Reply, _ plane: any ControlPlane) async {
        await ControlResponder.answer(request, reply, plane) {
            CommandSource("socket client \(request.clientID)", client: clients.client(for: request.clientID, plane))
        }
    }

    // MARK: Events

    /// Changes into the topics' events, as they come; what did not change is not sent.
    private func forward(_ changes: ChangeSubscription, _ plane: any ControlPlane) async {
        var last = await plane.snapshot()
        for await batch in changes {
            for publication in batch.publications {
                server.publish(topic: "nowPlaying", event: Reports.publication(publication))
            }
            let needsState = !batch.subsystems.intersection([.player, .queue, .sessions]).isEmpty
            let state = needsState ? await plane.snapshot() : last
            if state.transport != last.transport {
                server.publish(topic: "state", event: .object([("state", .string(state.transport.rawValue))]))
            }
            if state.enabledCommands != last.enabledCommands {
                server.publish(topic: "commands", event: Reports.commands(state.enabledCommands))
            }
            if batch.subsystems.contains(.queue) { server.publish(topic: "queue", event: Reports.queue(state.queue)) }
            if batch.subsystems.contains(.sessions) { server.publish(topic: "sessions", event: Reports.sessions(state.sessions)) }
            if batch.subsystems.contains(.library) {
                let library = await plane.snapshot().library
                server.publish(topic: "library", event: Reports.library(library))
            }
            last = state
            for notice in batch.notices { tell(notice) }
        }
    }

    private func tell(_ notice: Notice) {
        let topic: String
        let fields: [(String, JSONValue)]
        switch notice {
        case .itemFailed(let item, let message):
            server.publish(topic: "state", event: .object([("error", .string(message)), ("item", .int(item))]))
            return
        case .interruptionBegan(let began):
            topic = "interruption"
            fields = [("session", .int(began.session.value)), ("type", .string("began")), ("reason", .string(began.reason.rawValue)),
                      ("interrupter", .int(began.interrupter.value))]
        case .interruptionEnded(let ended):
            topic = "interruption"
            fields = [("session", .int(ended.session.value)), ("type", .string("ended")), ("reason", .string("interrupterDeactivated")),
                      ("shouldResume", .bool(ended.shouldResume)), ("endedBy", .int(ended.endedBy.value))]
        case .duck(_, let session, let ducked, let by):
            topic = "duck"
            fields = [("session", .int(session.value)), ("ducked", .bool(ducked)), ("by", .array(by.map { .int($0.value) }))]
        case .streamFinished(_, let session):
            topic = "stream"
            fields = [("session", .int(session.value)), ("finished", .bool(true))]
        case .remoteCommand(_, let session, let request):
            topic = "remoteCommand"
            var all: [(String, JSONValue)] = [("session", .int(session.value)), ("name", .string(request.command.rawValue))]
            if let interval = request.interval { all.append(("interval", .double(interval))) }
            if let position = request.position { all.append(("position", .double(position))) }
            if let mode = request.repeatMode { all.append(("mode", .string(mode.rawValue))) }
            if let on = request.shuffle { all.append(("on", .bool(on))) }
            if let phase = request.scanning { all.append(("phase", .string(phase.rawValue))) }
            fields = all
        }
        guard let owner = notice.owner, let connection = clients.connection(of: owner) else { return }
        server.publish(topic: topic, event: .object(fields), to: connection)
    }
}

/// The socket's connections and the control plane's clients, both ways.
private final class ClientMap: Sendable {
    private let map = Mutex<(clients: [Int: ClientID], connections: [ClientID: Int])>(([:], [:]))

    func client(for connection: Int, _ plane: any ControlPlane) -> ClientID {
        map.withLock { map in
            if let known = map.clients[connection] { return known }
            let client = plane.newClient()
            map.clients[connection] = client
            map.connections[client] = connection
            return client
        }
    }

    func connection(of client: ClientID) -> Int? { map.withLock { $0.connections[client] } }

    func remove(_ connection: Int) -> ClientID? {
        map.withLock { map in
            guard let client = map.clients.removeValue(forKey: connection) else { return nil }
            map.connections[client] = nil
            return client
        }
    }
}
