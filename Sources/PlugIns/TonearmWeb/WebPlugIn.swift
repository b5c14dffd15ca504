import NIOCore
import TonearmControl
import TonearmControlPlane
import TonearmControlJSON
import TonearmJSON
import TonearmNetwork
import TonearmSystem

/// The web remote as a plug-in of the control plane: the page, the JSON API (the control
/// socket's vocabulary over HTTP) and one WebSocket per page that is pushed the published
/// state on events only. Served on the daemon's one event loop.
public final class WebPlugIn: PlugIn {
    public let name: String
    private let options: HTTPServerOptions
    private let hosts: HostCheck
    private let access: WebAccess
    private let group: any EventLoopGroup

    private enum Input {
        case request(HTTPRequest, HTTPReply)
        case opened(Int)
    }

    /// The server is bound when the plug-in runs: a port in use is logged and tried again with
    /// back-off while the rest of the daemon goes on.
    /// `allowedHosts`: names or addresses a request's `Host` may give besides the box's own
    /// (`[web] allowed_hosts`).
    public init(bind: String, port: Int, token: String?, allowedHosts: [String], maxClients: Int, group: any EventLoopGroup) {
        var options = HTTPServerOptions(host: bind, port: port)
        options.maxClients = maxClients
        self.options = options
        hosts = HostCheck(port: port, allowedHosts: allowedHosts)
        access = WebAccess(token: token)
        self.group = group
        name = "web remote http://\(bind.contains(":") ? "[\(bind)]" : bind):\(port)/"
    }

    public func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let (inputs, continuation) = AsyncStream<Input>.makeStream()
        let client = plane.newClient()
        let routes = WebRoutes(plane: plane, hosts: hosts, access: access, source: CommandSource("web", client: client))
        var options = options
        options.log = { log.warning($0) }
        options.webSocketOpened = { continuation.yield(.opened($0)) }
        options.acceptsWebSocket = { routes.acceptsWebSocket($0) }
        let server = try HTTPServer(options: options, group: group) { request, reply in continuation.yield(.request(request, reply)) }
        let changes = plane.subscribe(Set(Subsystem.allCases))
        server.start()
        defer { server.stop() }
        // Discarding: a request's task is gone once it answered (a plain group would keep every
        // finished one until the plug-in stops).
        await withDiscardingTaskGroup { group in
            group.addTask { await Self.forward(changes, plane, to: server) }
            for await input in inputs {
                switch input {
                case .request(let request, let reply):
                    // Each on its own: a cover being scaled holds up no other page. A connection's
                    // requests still come one at a time, in order.
                    group.addTask { reply.send(await routes.respond(request)) }
                case .opened(let socket):
                    let state = await plane.snapshot()
                    for event in WebEvents.all(state, plane.catalog, now: monotonicSeconds()) {
                        server.send(event, toWebSocket: socket)
                    }
                }
            }
            group.cancelAll()
        }
        await plane.clientLeft(client)
    }

    /// Changes into the pages' events, as they come; what did not change is not sent.
    private static func forward(_ changes: ChangeSubscription, _ plane: any ControlPlane, to server: HTTPServer) async {
        var current = await plane.snapshot().queue.currentItemID
        for await batch in changes {
            let state = await plane.snapshot()
            let events = WebEvents.changed(batch, state, plane.catalog, now: monotonicSeconds(), currentItemWas: current)
            current = state.queue.currentItemID
            for event in events { server.broadcast(event) }
        }
    }
}

/// The WebSocket's messages: `{"event":NAME,"data":REPORT}`, each report the control
/// protocol's.
enum WebEvents {
    /// Everything, for a page that just connected.
    static func all(_ state: ControlState, _ catalog: (any LibraryCatalog)?, now: Double) -> [String] {
        [
            event("status", Reports.status(state, now: now)), event("queue", Reports.queue(state.queue)),
            event("sessions", Reports.sessions(state.sessions)), event("playlists", playlists(catalog)),
            event("library", Reports.library(state.library)),
        ]
    }

    /// What `batch` changed: the status for anything the player, mixer, options, output or
    /// sessions did, and the queue, sessions, playlists and library when they changed.
    /// The queue goes too when only its current item changed (`currentItemWas`): the page
    /// marks the item that plays.
    static func changed(_ batch: ChangeBatch, _ state: ControlState, _ catalog: (any LibraryCatalog)?, now: Double,
                        currentItemWas: Int?) -> [String] {
        var events: [String] = []
        let statusParts: Set<Subsystem> = [.player, .mixer, .options, .output, .sessions, .queue]
        if !batch.subsystems.isDisjoint(with: statusParts) || !batch.publications.isEmpty {
            events.append(event("status", Reports.status(state, now: now)))
        }
        if batch.subsystems.contains(.queue) || state.queue.currentItemID != currentItemWas {
            events.append(event("queue", Reports.queue(state.queue)))
        }
        if batch.subsystems.contains(.sessions) { events.append(event("sessions", Reports.sessions(state.sessions))) }
        if batch.subsystems.contains(.storedPlaylists) { events.append(event("playlists", playlists(catalog))) }
        if batch.subsystems.contains(.library) { events.append(event("library", Reports.library(state.library))) }
        return events
    }

    static func playlists(_ catalog: (any LibraryCatalog)?) -> JSONValue {
        let all = (try? catalog?.storedPlaylists()) ?? []
        return .object([("playlists", .array(all.map(Reports.playlist)))])
    }

    static func event(_ name: String, _ data: JSONValue) -> String {
        JSONValue.object([("event", .string(name)), ("data", data)]).serialized
    }
}
