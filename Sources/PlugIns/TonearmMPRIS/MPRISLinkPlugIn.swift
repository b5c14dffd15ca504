import Synchronization
import TonearmControlPlane
import TonearmDBus
import TonearmPlayer
import TonearmSystem

/// A `[[link]]`: speaks for the sessions of one name (an ALSA program's, "shairport-sync")
/// with that program's MPRIS player. It follows the player on its bus — its properties from
/// `PropertiesChanged`, its position from `Seeked` and from reading `Position` when the
/// item, the play state or the rate changes, its coming and going from `NameOwnerChanged`;
/// never on a timer — and publishes what it plays through the control plane
/// (`LinkCommand.publish`). The daemon makes that Tonearm's Now Playing while a session of
/// that name owns it, and sends this plug-in every remote command meanwhile, which it carries
/// out with the player's methods (`Play`, `Next`, `Seek`, `SetPosition`…).
///
/// The connection lives on the thread "tonearm-link" (`MPRISLinkConnection`), which sleeps in
/// poll on the bus and on a wake pipe this plug-in's task rings when a command comes.
public struct MPRISLinkPlugIn: PlugIn {
    public let sessionName: String
    public let busName: String
    public let bus: DBusConnection.Bus

    public var name: String { "link \(sessionName) to \(busName)" }

    public init(sessionName: String, busName: String, bus: DBusConnection.Bus) {
        self.sessionName = sessionName
        self.busName = busName
        self.bus = bus
    }

    /// The player as `status` and `doctor` name it.
    var player: String {
        switch bus {
        case .system: "\(busName) on the system bus"
        case .session: "\(busName) on the session bus"
        case .address(let address): "\(busName) on the bus \(address)"
        }
    }

    public func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let client = plane.newClient()
        let source = CommandSource(name, client: client)
        // Notices only: the remote commands for this client.
        let notices = plane.subscribe([])
        let (updates, published) = AsyncStream<LinkedNowPlaying?>.makeStream()
        let mailbox = LinkMailbox()
        // Claimed at once, the player not there until it is seen.
        published.yield(nil)
        let thread = NamedThread(name: "tonearm-link") { [bus, busName, name] in
            MPRISLinkConnection.follow(bus: bus, busName: busName, label: name, mailbox: mailbox, log: log) { published.yield($0) }
        }
        defer {
            mailbox.stop()
            thread.join()
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [sessionName, player, name] in
                for await playing in updates {
                    let result = await plane.send(.link(.publish(LinkedPlayer(sessionName: sessionName, player: player, playing: playing))),
                                                  from: source)
                    if let failure = result.failure { log.error("\(name): \(failure)") }
                }
            }
            for await batch in notices {
                for case .remoteCommand(let owner, _, let request) in batch.notices where owner == client {
                    mailbox.post(request)
                }
            }
            group.cancelAll()
        }
        published.finish()
        await plane.clientLeft(client)
    }
}

/// Between the plug-in's task and the bus thread: the commands to carry out, and the word to
/// stop. The bus thread sleeps on `poll`, which both ring.
final class LinkMailbox: Sendable {
    private let state = Mutex<(commands: [CommandRequest], stopped: Bool)>(([], false))
    let poll = DevicePoll()
    /// A bus thread that cannot keep up keeps the latest commands, not an unbounded backlog.
    static let keep = 32

    func post(_ request: CommandRequest) {
        state.withLock { state in
            state.commands.append(request)
            if state.commands.count > Self.keep { state.commands.removeFirst(state.commands.count - Self.keep) }
        }
        poll.wake()
    }

    func take() -> (commands: [CommandRequest], stopped: Bool) {
        state.withLock { state in
            defer { state.commands = [] }
            return (state.commands, state.stopped)
        }
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    func stop() {
        state.withLock { $0.stopped = true }
        poll.wake()
    }
}
