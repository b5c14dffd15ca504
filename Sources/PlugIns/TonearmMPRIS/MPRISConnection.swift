import SystemPackage
import TonearmControlPlane
import TonearmDBus
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// The bus thread's one connection: it serves the MPRIS object, owns the name (or waits in the
/// bus's queue for it), signals what the plug-in published, and registers the object with
/// every Bluetooth adapter BlueZ has (`AVRCPRegistrations`). Lives on "tonearm-mpris" only.
final class MPRISConnection {
    private let connection: DBusConnection
    private let name: String
    private let published: PublishedState
    private let log: PlugInLog
    private var avrcp: AVRCPRegistrations
    /// `UnregisterPlayer` calls not answered yet.
    private var unregistering = 0

    private static let driver = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")

    /// Connects, serves and asks for the name; the bus, or another process owning the name,
    /// only delays Tonearm, never playback.
    static func serve(bus: DBusConnection.Bus, name: String, avrcpAdapters: Set<String>?, published: PublishedState,
                      plane: any ControlPlane, log: PlugInLog) {
        // The bus is not there (yet), went away, or refuses the name.
        BusRetry.keep("MPRIS", log: log, isStopped: { published.isStopped },
                      sleep: { _ = try? published.poll.wait(for: [], until: monotonicSeconds() + $0) },
                      describe: { error in
                          let hint = error.code == -EACCES && error.bus == "system"
                              ? " (the system bus allows it with Tonearm's policy: Board/tonearm-dbus.conf in /etc/dbus-1/system.d)" : ""
                          return "\(error)\(hint)"
                      }) { connected throws(DBusError) in
            let session = try MPRISConnection(bus: bus, name: name, avrcpAdapters: avrcpAdapters, published: published, plane: plane, log: log)
            connected()
            try session.run()
            session.close()
        }
    }

    private init(bus: DBusConnection.Bus, name: String, avrcpAdapters: Set<String>?, published: PublishedState, plane: any ControlPlane,
                 log: PlugInLog) throws(DBusError) {
        connection = try DBusConnection(bus)
        self.name = name
        avrcp = AVRCPRegistrations(offeredOn: avrcpAdapters)
        self.published = published
        self.log = log
        let object = MPRISObject(published: published, plane: plane)
        try connection.serve(MPRISProperties.objectPath) { object.answer($0) }
        let where_ = connection.bus
        try connection.subscribe(Self.driverSignal("NameAcquired", arg0: name)) { _ in
            log.info("MPRIS: \(name) on the \(where_) bus")
        }
        switch try connection.requestName(name, queue: true) {
        case .owned:
            break  // NameAcquired says so
        case .queued(let pid):
            log.warning("MPRIS: \(name) is owned by another process\(pid.map { " (pid \($0))" } ?? ""); "
                + "Tonearm takes the name when it lets go")
        }
        try followBlueZ()
    }

    /// Signals what changed until the plug-in stops; throws when the bus goes away.
    private func run() throws(DBusError) {
        while true {
            try connection.process()
            let (changed, seeked, stopped) = published.take()
            if stopped { return }
            if !changed.isEmpty {
                try connection.emit(MPRISProperties.objectPath, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                    [.string(MPRISProperties.player), .dictionary(changed), .array(element: "s", [])])
            }
            if seeked {
                let position = MPRISProperties.position(published.current.state, now: monotonicSeconds())
                try connection.emit(MPRISProperties.objectPath, interface: MPRISProperties.player, member: "Seeked", [.int64(position)])
            }
            if !changed.isEmpty || seeked { connection.flush() }
            try wait(until: nil)
        }
    }

    /// Takes the player back from every adapter (waiting at most a second for BlueZ to say
    /// so) and gives the name up.
    private func close() {
        perform(avrcp.leaving())
        connection.flush()
        let deadline = monotonicSeconds() + 1
        while unregistering > 0 && monotonicSeconds() < deadline {
            do throws(DBusError) {
                try connection.process()
                if unregistering > 0 { try wait(until: deadline) }
            } catch {
                break
            }
        }
        connection.releaseName(name)
    }

    /// Sleeps until the bus has something, the plug-in rings, sd-bus's own deadline, or
    /// `deadline`.
    private func wait(until deadline: Double?) throws(DBusError) {
        let timeout = connection.timeoutMilliseconds
        let own = timeout < 0 ? nil : monotonicSeconds() + Double(timeout) / 1000
        let until = [deadline, own].compactMap { $0 }.min()
        do {
            _ = try published.poll.wait(for: [(FileDescriptor(rawValue: connection.descriptor), PollEvents(rawValue: connection.events))],
                                        until: until)
        } catch {
            throw DBusError(bus: connection.bus, operation: "wait for the bus", code: -error.rawValue)
        }
    }

    // MARK: Bluetooth (AVRCP)

    /// Follows `bluetoothd` (the owner of `org.bluez`) and its adapters, then asks who owns it
    /// now; both come back through `perform`.
    private func followBlueZ() throws(DBusError) {
        try connection.subscribe(Self.driverSignal("NameOwnerChanged", arg0: "org.bluez")) { [weak self] message in
            guard let self, message.arguments.count == 3, let owner = message.arguments[2].string else { return }
            perform(avrcp.ownerChanged(to: owner.isEmpty ? nil : owner))
        }
        let objectManager = "org.freedesktop.DBus.ObjectManager"
        try connection.subscribe("type='signal',interface='\(objectManager)',member='InterfacesAdded'") { [weak self] message in
            guard let self, message.arguments.count == 2, let path = message.arguments[0].string,
                  message.arguments[1][AVRCPRegistrations.media] != nil, message.sender == avrcp.bluez else { return }
            sayLeftOut([path])
            perform(avrcp.added(path, by: message.sender))
        }
        try connection.subscribe("type='signal',interface='\(objectManager)',member='InterfacesRemoved'") { [weak self] message in
            guard let self, message.arguments.count == 2, let path = message.arguments[0].string,
                  message.arguments[1].items?.contains(.string(AVRCPRegistrations.media)) == true else { return }
            avrcp.removed(path, by: message.sender)
        }
        let (driver, path, interface) = Self.driver
        try connection.call(driver, path, interface, "GetNameOwner", [.string("org.bluez")]) { [weak self] result in
            // An error: bluetoothd is not running; NameOwnerChanged says when it starts.
            guard let self, case .success(let values) = result, let owner = values.first?.string else { return }
            perform(avrcp.ownerChanged(to: owner))
        }
    }

    private func perform(_ actions: [AVRCPRegistrations.Action]) {
        for action in actions {
            do throws(DBusError) {
                switch action {
                case .listAdapters(let generation):
                    try connection.call("org.bluez", "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects") { [weak self] result in
                        guard let self else { return }
                        switch result {
                        case .success(let values):
                            let adapters = values.first.map(AVRCPRegistrations.adapters(in:)) ?? []
                            if generation == avrcp.generation { sayLeftOut(adapters) }
                            perform(avrcp.listed(adapters, generation: generation))
                        case .failure(let error) where !error.isNoSuchPeer:
                            log.warning("AVRCP: cannot list the Bluetooth adapters: \(error)")
                        case .failure:
                            break
                        }
                    }
                case .register(let adapter, let generation):
                    let (state, artURL) = published.current
                    let properties = MPRISProperties.playerProperties(state, artURL: artURL) + [
                        ("Position", .int64(MPRISProperties.position(state, now: monotonicSeconds()))),
                        ("Identity", .string(MPRISProperties.identity)),
                    ]
                    try connection.call("org.bluez", adapter, AVRCPRegistrations.media, "RegisterPlayer",
                                        [.objectPath(MPRISProperties.objectPath), .dictionary(properties)]) { [weak self] result in
                        guard let self else { return }
                        let error: DBusError? = if case .failure(let error) = result { error } else { nil }
                        if let line = avrcp.answered(adapter, generation: generation, error: error) { log.info(line) }
                    }
                case .unregister(let adapter):
                    unregistering += 1
                    try connection.call("org.bluez", adapter, AVRCPRegistrations.media, "UnregisterPlayer",
                                        [.objectPath(MPRISProperties.objectPath)]) { [weak self] result in
                        guard let self else { return }
                        unregistering -= 1
                        if case .failure(let error) = result {
                            log.warning("AVRCP: \(error)")
                        } else {
                            log.info("AVRCP: the player is unregistered from Bluetooth adapter \(adapter)")
                        }
                    }
                }
            } catch {
                log.warning("AVRCP: \(error)")
                if case .unregister = action { unregistering -= 1 }
            }
        }
    }

    /// Names the adapters the profile leaves out (`[mpris] avrcp_adapters`), as they are found.
    private func sayLeftOut(_ adapters: [String]) {
        for adapter in adapters where !avrcp.isOffered(adapter) && avrcp.adapters[adapter] == nil {
            log.info("AVRCP: Bluetooth adapter \(adapter) is left out ([mpris] avrcp_adapters)")
        }
    }

    /// A match rule for a signal of the bus itself about `arg0`.
    private static func driverSignal(_ member: String, arg0: String) -> String {
        let (driver, path, interface) = Self.driver
        return "type='signal',sender='\(driver)',path='\(path)',interface='\(interface)',member='\(member)',arg0='\(arg0)'"
    }
}
