import Synchronization
import TonearmControlPlane
import TonearmDBus
import TonearmPlayer
import TonearmSystem

/// MPRIS 2.2 on D-Bus (`org.mpris.MediaPlayer2.NAME` at `/org/mpris/MediaPlayer2`): desktop
/// shells, playerctl, phone bridges and — through BlueZ — car head units see Now Playing and
/// send the remote commands. A plug-in of the control plane: methods become commands through it
/// (the Now Playing owner rule holds), and its properties come from the published state. They
/// are signalled (`PropertiesChanged`, only what changed; `Seeked` after a seek) when the
/// control plane says something changed, never on a timer; `Position` is computed when read.
///
/// The connection lives on the thread "tonearm-mpris" (`MPRISConnection`), which sleeps in poll
/// on the bus and on a wake pipe this plug-in's task rings when there is something to signal.
public struct MPRISPlugIn: PlugIn {
    public let bus: DBusConnection.Bus
    public let busName: String
    /// Where the current cover is written for `mpris:artUrl`; nil: no cover URL.
    public let coverDirectory: String?
    /// The Bluetooth adapters ("hci0") the player is registered with for AVRCP; nil: every one.
    public let avrcpAdapters: Set<String>?

    public var name: String { "MPRIS \(busName)" }

    public init(bus: DBusConnection.Bus, name: String = "tonearm", coverDirectory: String? = nil, avrcpAdapters: Set<String>? = nil) {
        self.bus = bus
        busName = "org.mpris.MediaPlayer2." + name
        self.coverDirectory = coverDirectory
        self.avrcpAdapters = avrcpAdapters
    }

    public func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let changes = plane.subscribe([.player, .mixer, .options, .queue])
        var covers = CoverFiles(directory: coverDirectory)
        let first = await plane.snapshot()
        let published = PublishedState(first, artURL: await covers.url(for: MPRISProperties.artwork(first), plane, log: log))
        let thread = NamedThread(name: "tonearm-mpris") { [bus, busName, avrcpAdapters] in
            MPRISConnection.serve(bus: bus, name: busName, avrcpAdapters: avrcpAdapters, published: published, plane: plane, log: log)
        }
        defer {
            published.stop()
            thread.join()
            covers.removeCurrent()
        }
        for await batch in changes {
            let state = await plane.snapshot()
            let artURL = await covers.url(for: MPRISProperties.artwork(state), plane, log: log)
            published.update(state, artURL: artURL, seeked: batch.publications.contains { $0.reason == .seek })
        }
    }
}

/// What the plug-in's task publishes and the bus thread signals and answers from.
final class PublishedState: Sendable {
    private struct Published {
        var state: ControlState
        var artURL: String?
        var player: [(String, DBusValue)]
        /// Changed Player properties not yet signalled.
        var pending: [(String, DBusValue)] = []
        /// A seek not yet signalled.
        var seeked = false
        var stopped = false
    }

    private let published: Mutex<Published>
    /// The bus thread's wait; `update` and `stop` end it.
    let poll = DevicePoll()

    init(_ state: ControlState, artURL: String?) {
        published = Mutex(Published(state: state, artURL: artURL, player: MPRISProperties.playerProperties(state, artURL: artURL)))
    }

    /// The state to answer calls from, and the cover's URL.
    var current: (state: ControlState, artURL: String?) { published.withLock { ($0.state, $0.artURL) } }

    var isStopped: Bool { published.withLock { $0.stopped } }

    func update(_ state: ControlState, artURL: String?, seeked: Bool) {
        let wake = published.withLock { p -> Bool in
            let player = MPRISProperties.playerProperties(state, artURL: artURL)
            let changed = MPRISProperties.changed(from: p.player, to: player)
            p.state = state
            p.artURL = artURL
            p.player = player
            for (name, value) in changed {
                p.pending.removeAll { $0.0 == name }
                p.pending.append((name, value))
            }
            p.seeked = p.seeked || seeked
            return !changed.isEmpty || seeked
        }
        if wake { poll.wake() }
    }

    /// What to signal now: the changed properties and whether there was a seek; and whether
    /// the plug-in stops.
    func take() -> (changed: [(String, DBusValue)], seeked: Bool, stopped: Bool) {
        published.withLock { p in
            defer {
                p.pending = []
                p.seeked = false
            }
            return (p.pending, p.seeked, p.stopped)
        }
    }

    func stop() {
        published.withLock { $0.stopped = true }
        poll.wake()
    }
}
