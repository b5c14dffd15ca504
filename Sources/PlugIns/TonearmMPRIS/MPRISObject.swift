import Synchronization
import TonearmControlPlane
import TonearmDBus
import TonearmPlayer
import TonearmSystem

/// The object `/org/mpris/MediaPlayer2`: answers its calls on the bus thread — properties from
/// the published state, methods as commands through the control plane, one call at a time.
/// BlueZ calls it too, for a head unit's buttons (it registered this object as the adapter's
/// player).
struct MPRISObject: Sendable {
    let published: PublishedState
    let plane: any ControlPlane

    /// Errors of Tonearm's own, by name.
    static let disabled = "org.mpris.MediaPlayer2.Tonearm.Disabled"
    static let refused = "org.mpris.MediaPlayer2.Tonearm.Refused"

    func answer(_ call: DBusMessage) -> DBusReply {
        let (state, artURL) = published.current
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return .values([.string(Self.introspection)])
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard call.arguments.count == 2, case .string(let interface) = call.arguments[0], case .string(let property) = call.arguments[1] else {
                return .error(name: DBusReply.invalidArgs, message: "Get takes (ss)")
            }
            guard let value = Self.properties(interface, state, artURL: artURL).first(where: { $0.0 == property })?.1 else {
                return .error(name: DBusReply.unknownProperty, message: "\(interface) has no property \(property)")
            }
            return .values([.variant(value)])
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            guard call.arguments.count == 1, case .string(let interface) = call.arguments[0] else {
                return .error(name: DBusReply.invalidArgs, message: "GetAll takes (s)")
            }
            return .values([.dictionary(Self.properties(interface, state, artURL: artURL))])
        case ("org.freedesktop.DBus.Properties", "Set"):
            return set(call.arguments)
        case (MPRISProperties.root, "Raise"), (MPRISProperties.root, "Quit"):
            // CanRaise and CanQuit are false: the spec's no-op.
            return .values([])
        case (MPRISProperties.player, let member):
            return player(member, call.arguments, state: state)
        default:
            return .error(name: DBusReply.unknownMethod, message: "no method \(call.interface).\(call.member)")
        }
    }

    /// An interface's properties; `Position` extrapolated to now.
    static func properties(_ interface: String, _ state: ControlState, artURL: String?) -> [(String, DBusValue)] {
        switch interface {
        case MPRISProperties.root: MPRISProperties.rootProperties()
        case MPRISProperties.player:
            MPRISProperties.playerProperties(state, artURL: artURL) + [("Position", .int64(MPRISProperties.position(state, now: monotonicSeconds())))]
        default: []
        }
    }

    private func player(_ member: String, _ arguments: [DBusValue], state: ControlState) -> DBusReply {
        let request: CommandRequest
        switch member {
        case "Play": request = CommandRequest(.play)
        case "Pause": request = CommandRequest(.pause)
        case "PlayPause": request = CommandRequest(.togglePlayPause)
        case "Stop": request = CommandRequest(.stop)
        case "Next": request = CommandRequest(.nextTrack)
        case "Previous": request = CommandRequest(.previousTrack)
        case "Seek":
            guard arguments.count == 1, case .int64(let offset) = arguments[0] else {
                return .error(name: DBusReply.invalidArgs, message: "Seek takes (x) microseconds")
            }
            let target = max(0, MPRISProperties.position(state, now: monotonicSeconds()) + offset)
            request = CommandRequest(.changePlaybackPosition, position: Double(target) / 1_000_000)
        case "SetPosition":
            guard arguments.count == 2, case .objectPath(let track) = arguments[0], case .int64(let position) = arguments[1] else {
                return .error(name: DBusReply.invalidArgs, message: "SetPosition takes (ox)")
            }
            // A stale track id, or a position outside the track, is ignored, as the spec says.
            let length = MPRISProperties.duration(state).map { Int64($0 * 1_000_000) } ?? .max
            guard track == MPRISProperties.trackID(state), (0...length).contains(position) else { return .values([]) }
            request = CommandRequest(.changePlaybackPosition, position: Double(position) / 1_000_000)
        case "OpenUri":
            guard arguments.count == 1, case .string(let uri) = arguments[0] else {
                return .error(name: DBusReply.invalidArgs, message: "OpenUri takes (s)")
            }
            return open(uri)
        default:
            return .error(name: DBusReply.unknownMethod, message: "no method \(MPRISProperties.player).\(member)")
        }
        return reply(send(.remote(request)))
    }

    /// Queues the file (or folder) a `file://` URI names and plays it. The control plane keeps
    /// the queue to the music directory and to the formats it plays: what it refuses comes back as the error.
    private func open(_ uri: String) -> DBusReply {
        guard let path = MPRISProperties.filePath(uri) else {
            return .error(name: Self.refused, message: "\(uri): only file:// URIs of this machine can be opened")
        }
        let added = send(.queue(.add(paths: [path], at: nil)))
        guard let added, case .added(let count, let skipped, let queueCount) = added.payload else { return reply(added) }
        guard count > 0 else {
            return .error(name: Self.refused, message: "\(uri): \(skipped.first?.reason ?? "nothing in it can be played")")
        }
        // What was added is at the end of the queue as the add left it.
        guard let items = wait({ [plane] in await plane.snapshot().queue.items }), items.count >= queueCount else {
            return .error(name: DBusReply.failed, message: "\(uri) was queued but the queue changed before it could start")
        }
        return reply(send(.queue(.play(itemID: items[queueCount - count].id))))
    }

    private func set(_ arguments: [DBusValue]) -> DBusReply {
        guard arguments.count == 3, case .string(let interface) = arguments[0], case .string(let property) = arguments[1],
              case .variant(let value) = arguments[2] else {
            return .error(name: DBusReply.invalidArgs, message: "Set takes (ssv)")
        }
        guard interface == MPRISProperties.player else {
            return .error(name: DBusReply.propertyReadOnly, message: "\(interface).\(property) is read-only")
        }
        switch (property, value) {
        case ("Volume", .double(let volume)):
            return reply(send(.volume(.set(min(100, max(0, volume * 100))))))
        case ("LoopStatus", .string(let text)):
            guard let mode = MPRISProperties.repeatMode(text) else { return .error(name: DBusReply.invalidArgs, message: "LoopStatus is None, Track or Playlist") }
            return reply(send(.remote(CommandRequest(.changeRepeatMode, repeatMode: mode))))
        case ("Shuffle", .boolean(let on)):
            return reply(send(.remote(CommandRequest(.changeShuffleMode, shuffle: on))))
        case ("Rate", .double(let rate)):
            return rate == 1 ? .values([]) : .error(name: DBusReply.invalidArgs, message: "the rate is always 1")
        case ("Volume", _), ("LoopStatus", _), ("Shuffle", _), ("Rate", _):
            return .error(name: DBusReply.invalidArgs, message: "\(property) has another type")
        default:
            return .error(name: DBusReply.propertyReadOnly, message: "\(interface).\(property) is read-only or unknown")
        }
    }

    /// Sends a command through the control plane and waits for its answer (nil: none within
    /// 5 s, as at shutdown): calls are answered in order, on the bus thread.
    private func send(_ command: Command) -> CommandResult? {
        wait { [plane] in await plane.send(command, from: CommandSource("MPRIS")) }
    }

    /// Runs `body` on the control plane's side and waits for it at most 5 s.
    private func wait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T? {
        let answered = Wakeup()
        let result = Mutex<T?>(nil)
        Task {
            let outcome = await body()
            result.withLock { $0 = outcome }
            answered.post()
        }
        answered.wait(milliseconds: 5000)
        return result.withLock { $0 }
    }

    private func reply(_ outcome: CommandResult?) -> DBusReply {
        guard let outcome else { return .error(name: DBusReply.failed, message: "the player did not answer") }
        if let failure = outcome.failure { return .error(name: Self.refused, message: failure.message) }
        switch outcome.status {
        case .success: return .values([])
        case .disabled: return .error(name: Self.disabled, message: "the command is disabled now; nothing changed")
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
