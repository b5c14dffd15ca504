import Synchronization
import SystemPackage
import TonearmControl
import TonearmControlPlane
import TonearmPlayer
import TonearmSession
import TonearmNetwork
import TonearmSystem

/// Every ALSA program as an audio session: the `tonearm` plugin connects each PCM a program
/// opens to this socket, and the program's audio is arbitrated by the category rules exactly
/// as the player's is. A plug-in of the control plane: each connection is a client, its
/// session that client's.
public final class PCMSessionsPlugIn: PlugIn {
    public let name: String
    private let server: PacketServer
    private struct Live {
        var connections: [ClientID: PCMConnection] = [:]
        var threads: [ClientID: NamedThread] = [:]
        /// Connections whose thread has ended: joined when the next one comes, or at the end.
        var ended: [ClientID] = []
    }
    private let live = Mutex(Live())

    /// Binds `path` now (mode 0660, group `group`: only its members may open sessions), so a
    /// daemon that cannot have it says so before it starts.
    public init(path: String, group: String?, log: PlugInLog) throws(ControlError) {
        name = "program audio \(path)"
        server = try PacketServer(path: path, group: group) { log.warning($0) }
    }

    public func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let changes = plane.subscribe([])
        server.start { [self] socket in
            let connection = PCMConnection(socket: socket, client: plane.newClient(), plane: plane, log: log)
            let ended = live.withLock { live in
                defer { live.ended.removeAll() }
                return live.ended.compactMap { live.threads.removeValue(forKey: $0) }
            }
            for thread in ended { thread.join() }
            live.withLock { $0.connections[connection.client] = connection }
            let thread = NamedThread(name: "tonearm-program") { [self] in
                connection.run()
                live.withLock { live in
                    live.connections[connection.client] = nil
                    live.ended.append(connection.client)
                }
            }
            live.withLock { $0.threads[connection.client] = thread }
        }
        defer { stop() }
        // Notices for a program's session go to its connection.
        for await batch in changes {
            for notice in batch.notices {
                guard let owner = notice.owner, let connection = live.withLock({ $0.connections[owner] }) else { continue }
                connection.deliver(notice)
            }
        }
    }

    private func stop() {
        server.stop()
        for connection in live.withLock({ Array($0.connections.values) }) { connection.stop() }
        for thread in live.withLock({ Array($0.threads.values) }) { thread.join() }
    }
}
