#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import TonearmControlPlane
import TonearmDBus
import TonearmPlayer
import TonearmSystem

/// MPRIS 2.2 on D-Bus (`org.mpris.MediaPlayer2.NAME` at `/org/mpris/MediaPlayer2`): desktop
/// shells, playerctl and phone bridges see Now Playing and send the remote commands. A plug-in
/// of the control plane: methods become commands through it (the Now Playing owner rule holds),
/// and its properties come from the published state. They are signalled (PropertiesChanged,
/// only what changed) when the control plane says something changed, never on a timer;
/// `Position` is computed when read.
///
/// The connection lives on the thread "tonearm-mpris", which sleeps in poll on the bus and on
/// a wake pipe the plug-in's task rings when there is something to signal.
public struct MPRISPlugIn: PlugIn {
    public let bus: DBusConnection.Bus
    public let busName: String

    public var name: String { "MPRIS \(busName)" }

    public init(bus: DBusConnection.Bus, name: String = "tonearm") {
        self.bus = bus
        busName = "org.mpris.MediaPlayer2." + name
    }

    public func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let shared = Shared(await plane.snapshot())
        let changes = plane.subscribe([.player, .mixer, .options, .queue])
        let thread = NamedThread(name: "tonearm-mpris") { [bus, busName] in
            Self.serve(bus: bus, name: busName, shared: shared, plane: plane, log: log)
        }
        defer {
            shared.stop()
            thread.join()
        }
        for await _ in changes {
            shared.update(await plane.snapshot())
        }
    }

    /// What the plug-in's task and the bus thread share.
    final class Shared: Sendable {
        struct Published {
            var state: ControlState
            var player: [(String, DBusValue)]
            /// Changed Player properties not yet signalled.
            var pending: [(String, DBusValue)] = []
            var stopped = false
        }

        let published: Mutex<Published>
        let wake = WakePipe()

        init(_ state: ControlState) {
            published = Mutex(Published(state: state, player: MPRISProperties.playerProperties(state)))
        }

        func update(_ state: ControlState) {
            let any = published.withLock { p -> Bool in
                let player = MPRISProperties.playerProperties(state)
                let changed = MPRISProperties.changed(from: p.player, to: player)
                p.state = state
                p.player = player
                for (name, value) in changed {
                    p.pending.removeAll { $0.0 == name }
                    p.pending.append((name, value))
                }
                return !changed.isEmpty
            }
            if any { wake.wake() }
        }

        func stop() {
            published.withLock { $0.stopped = true }
            wake.wake()
        }
    }

    // MARK: The bus thread

    private static func serve(bus: DBusConnection.Bus, name: String, shared: Shared, plane: any ControlPlane, log: PlugInLog) {
        var delay = 1.0
        while !shared.published.withLock({ $0.stopped }) {
            do throws(DBusError) {
                let connection = try DBusConnection(bus)
                try connection.requestName(name)
                try connection.serve(MPRISProperties.objectPath) { call in
                    answer(call, shared: shared, plane: plane)
                }
                log.info("MPRIS: \(name) on the \(connection.bus) bus")
                delay = 1
                try loop(connection, shared: shared)
                connection.releaseName(name)
                return
            } catch {
                // The bus is not there (yet), went away, or another process owns the name.
                log.warning("MPRIS: \(error); trying again in \(Int(delay)) s")
                var ready = pollfd(fd: shared.wake.descriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&ready, 1, Int32(delay * 1000))
                shared.wake.drain()
                delay = min(delay * 2, 30)
            }
        }
    }

    /// Serves calls and sends what changed until stopped.
    private static func loop(_ connection: DBusConnection, shared: Shared) throws(DBusError) {
        while true {
            try connection.process()
            let (stopped, pending) = shared.published.withLock { p -> (Bool, [(String, DBusValue)]) in
                defer { p.pending = [] }
                return (p.stopped, p.pending)
            }
            if stopped { return }
            if !pending.isEmpty {
                try connection.emit(MPRISProperties.objectPath, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                    [.string(MPRISProperties.player), .dictionary(pending), .array(element: "s", [])])
                connection.flush()
            }
            var fds = [pollfd(fd: connection.descriptor, events: connection.events, revents: 0),
                       pollfd(fd: shared.wake.descriptor, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, connection.timeoutMilliseconds)
            if fds[1].revents != 0 { shared.wake.drain() }
        }
    }

    /// One call to the MPRIS object.
    private static func answer(_ call: DBusMessage, shared: Shared, plane: any ControlPlane) -> DBusReply {
        let state = shared.published.withLock { $0.state }
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return .values([.string(introspection)])
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard case .string(let interface)? = call.arguments.first, call.arguments.count == 2,
                  case .string(let property) = call.arguments[1] else { return .error(name: DBusReply.invalidArgs, message: "Get takes (ss)") }
            guard let value = properties(interface, state).first(where: { $0.0 == property })?.1 else {
                return .error(name: DBusReply.unknownProperty, message: "\(interface) has no property \(property)")
            }
            return .values([.variant(value)])
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            guard case .string(let interface)? = call.arguments.first else { return .error(name: DBusReply.invalidArgs, message: "GetAll takes (s)") }
            return .values([.dictionary(properties(interface, state))])
        case ("org.freedesktop.DBus.Properties", "Set"):
            return set(call.arguments, state: state, plane: plane)
        case (MPRISProperties.root, "Raise"), (MPRISProperties.root, "Quit"):
            // CanRaise and CanQuit are false: the spec's no-op.
            return .values([])
        case (MPRISProperties.player, let member):
            return player(member, call.arguments, state: state, plane: plane)
        default:
            return .error(name: DBusReply.unknownMethod, message: "no method \(call.interface).\(call.member)")
        }
    }

    private static func properties(_ interface: String, _ state: ControlState) -> [(String, DBusValue)] {
        switch interface {
        case MPRISProperties.root: return MPRISProperties.rootProperties()
        case MPRISProperties.player:
            return MPRISProperties.playerProperties(state) + [("Position", .int64(MPRISProperties.position(state, now: monotonicSeconds())))]
        default: return []
        }
    }

    private static func player(_ member: String, _ arguments: [DBusValue], state: ControlState, plane: any ControlPlane) -> DBusReply {
        let request: CommandRequest
        switch member {
        case "Play": request = CommandRequest(.play)
        case "Pause": request = CommandRequest(.pause)
        case "PlayPause": request = CommandRequest(.togglePlayPause)
        case "Stop": request = CommandRequest(.stop)
        case "Next": request = CommandRequest(.nextTrack)
        case "Previous": request = CommandRequest(.previousTrack)
        case "Seek":
            guard case .int64(let offset)? = arguments.first else { return .error(name: DBusReply.invalidArgs, message: "Seek takes (x) microseconds") }
            let target = max(0, MPRISProperties.position(state, now: monotonicSeconds()) + offset)
            request = CommandRequest(.changePlaybackPosition, position: Double(target) / 1_000_000)
        case "SetPosition":
            guard arguments.count == 2, case .objectPath(let track) = arguments[0], case .int64(let position) = arguments[1] else {
                return .error(name: DBusReply.invalidArgs, message: "SetPosition takes (ox)")
            }
            // A stale track id is ignored, as the spec says.
            guard track == MPRISProperties.trackID(state), position >= 0 else { return .values([]) }
            request = CommandRequest(.changePlaybackPosition, position: Double(position) / 1_000_000)
        case "OpenUri":
            return .error(name: "org.mpris.MediaPlayer2.Tonearm.NotSupported", message: "OpenUri is not supported yet")
        default:
            return .error(name: DBusReply.unknownMethod, message: "no method \(MPRISProperties.player).\(member)")
        }
        return send(.remote(request), plane)
    }

    private static func set(_ arguments: [DBusValue], state: ControlState, plane: any ControlPlane) -> DBusReply {
        guard arguments.count == 3, case .string(let interface) = arguments[0], case .string(let property) = arguments[1],
              case .variant(let value) = arguments[2] else {
            return .error(name: DBusReply.invalidArgs, message: "Set takes (ssv)")
        }
        guard interface == MPRISProperties.player else {
            return .error(name: DBusReply.propertyReadOnly, message: "\(interface).\(property) is read-only")
        }
        switch (property, value) {
        case ("Volume", .double(let volume)):
            return send(.volume(.set(min(100, max(0, volume * 100)))), plane)
        case ("LoopStatus", .string(let text)):
            guard let mode = MPRISProperties.repeatMode(text) else { return .error(name: DBusReply.invalidArgs, message: "LoopStatus is None, Track or Playlist") }
            return send(.remote(CommandRequest(.changeRepeatMode, repeatMode: mode)), plane)
        case ("Shuffle", .boolean(let on)):
            return send(.remote(CommandRequest(.changeShuffleMode, shuffle: on)), plane)
        case ("Rate", .double(let rate)):
            return rate == 1 ? .values([]) : .error(name: DBusReply.invalidArgs, message: "the rate is always 1")
        case ("Volume", _), ("LoopStatus", _), ("Shuffle", _), ("Rate", _):
            return .error(name: DBusReply.invalidArgs, message: "\(property) has another type")
        default:
            return .error(name: DBusReply.propertyReadOnly, message: "\(interface).\(property) is read-only or unknown")
        }
    }

    /// Sends a command through the control plane and waits for its answer: calls are
    /// answered in order, on the bus thread.
    private static func send(_ command: Command, _ plane: any ControlPlane) -> DBusReply {
        let answered = Wakeup()
        let result = Mutex<CommandResult?>(nil)
        Task {
            let outcome = await plane.send(command, from: CommandSource("MPRIS"))
            result.withLock { $0 = outcome }
            answered.post()
        }
        // Bounded: at shutdown the control plane may no longer answer.
        answered.wait(milliseconds: 5000)
        guard let outcome = result.withLock({ $0 }) else { return .error(name: DBusReply.failed, message: "no answer") }
        if let failure = outcome.failure { return .error(name: DBusReply.failed, message: failure.message) }
        switch outcome.status {
        case .success: return .values([])
        case .disabled: return .error(name: "org.mpris.MediaPlayer2.Tonearm.Disabled", message: "the command is disabled now; nothing changed")
        default: return .error(name: DBusReply.failed, message: "the player answered \(outcome.status.rawValue)")
        }
    }

    static let introspection = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
         <interface name="org.freedesktop.DBus.Introspectable"><method name="Introspect"><arg name="xml" type="s" direction="out"/></method></interface>
         <interface name="org.freedesktop.DBus.Properties">
          <method name="Get"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
          <method name="GetAll"><arg type="s" direction="in"/><arg type="a{sv}" direction="out"/></method>
          <method name="Set"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/></method>
          <signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal>
         </interface>
         <interface name="org.mpris.MediaPlayer2">
          <method name="Raise"/><method name="Quit"/>
          <property name="CanQuit" type="b" access="read"/><property name="CanRaise" type="b" access="read"/>
          <property name="HasTrackList" type="b" access="read"/><property name="Identity" type="s" access="read"/>
          <property name="DesktopEntry" type="s" access="read"/><property name="SupportedUriSchemes" type="as" access="read"/>
          <property name="SupportedMimeTypes" type="as" access="read"/>
         </interface>
         <interface name="org.mpris.MediaPlayer2.Player">
          <method name="Next"/><method name="Previous"/><method name="Pause"/><method name="PlayPause"/><method name="Stop"/><method name="Play"/>
          <method name="Seek"><arg name="Offset" type="x" direction="in"/></method>
          <method name="SetPosition"><arg name="TrackId" type="o" direction="in"/><arg name="Position" type="x" direction="in"/></method>
          <method name="OpenUri"><arg name="Uri" type="s" direction="in"/></method>
          <signal name="Seeked"><arg name="Position" type="x"/></signal>
          <property name="PlaybackStatus" type="s" access="read"/><property name="LoopStatus" type="s" access="readwrite"/>
          <property name="Rate" type="d" access="readwrite"/><property name="Shuffle" type="b" access="readwrite"/>
          <property name="Metadata" type="a{sv}" access="read"/><property name="Volume" type="d" access="readwrite"/>
          <property name="Position" type="x" access="read"/><property name="MinimumRate" type="d" access="read"/>
          <property name="MaximumRate" type="d" access="read"/><property name="CanGoNext" type="b" access="read"/>
          <property name="CanGoPrevious" type="b" access="read"/><property name="CanPlay" type="b" access="read"/>
          <property name="CanPause" type="b" access="read"/><property name="CanSeek" type="b" access="read"/>
          <property name="CanControl" type="b" access="read"/>
         </interface>
        </node>
        """
}
