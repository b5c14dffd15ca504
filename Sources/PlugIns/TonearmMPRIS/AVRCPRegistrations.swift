import TonearmDBus

/// Which Bluetooth adapters carry Tonearm's player, so that a paired car head unit sees Now
/// Playing and its buttons reach the remote commands (AVRCP, the target role). BlueZ's
/// `mpris-proxy` relays only players on the session bus; a service on the system bus registers
/// its MPRIS object itself with each adapter's `org.bluez.Media1`, whenever `bluetoothd` (the
/// owner of `org.bluez`) starts or restarts and whenever an adapter appears.
///
/// Pure: the bus thread reports what it saw and carries out the actions returned.
struct AVRCPRegistrations: Equatable {
    enum Action: Equatable {
        /// Ask `bluetoothd` for its objects (`GetManagedObjects`), then report `listed`.
        case listAdapters(generation: Int)
        case register(adapter: String, generation: Int)
        case unregister(adapter: String)
    }

    enum Registration: Equatable {
        case registering
        case registered
        /// The adapter said no (no AVRCP on it, say); not asked again until BlueZ restarts.
        case refused(String)
    }

    /// The adapters ("hci0") the player is offered on; nil: every one.
    let offeredOn: Set<String>?
    /// `org.bluez`'s owner (a unique name) while `bluetoothd` is on the bus.
    private(set) var bluez: String?
    /// Counts `bluetoothd`'s comings: an answer from an earlier one is stale.
    private(set) var generation = 0
    private(set) var adapters: [String: Registration] = [:]

    static let media = "org.bluez.Media1"

    init(offeredOn: Set<String>? = nil) {
        self.offeredOn = offeredOn
    }

    /// `org.bluez` has a new owner (`bluetoothd` started), or none (it stopped): its
    /// registrations went with it.
    mutating func ownerChanged(to owner: String?) -> [Action] {
        guard owner != bluez else { return [] }
        bluez = owner
        generation += 1
        adapters = [:]
        return owner == nil ? [] : [.listAdapters(generation: generation)]
    }

    /// The paths that hold `org.bluez.Media1`, as `GetManagedObjects` answered.
    mutating func listed(_ adapters: [String], generation: Int) -> [Action] {
        guard generation == self.generation, let bluez else { return [] }
        return adapters.flatMap { added($0, by: bluez) }
    }

    /// `InterfacesAdded`: an object of `sender` got `org.bluez.Media1` (an adapter appeared).
    mutating func added(_ adapter: String, by sender: String) -> [Action] {
        guard sender == bluez, adapters[adapter] == nil, isOffered(adapter) else { return [] }
        adapters[adapter] = .registering
        return [.register(adapter: adapter, generation: generation)]
    }

    /// `InterfacesRemoved`: the adapter went (unplugged); so did the registration.
    mutating func removed(_ adapter: String, by sender: String) {
        guard sender == bluez else { return }
        adapters[adapter] = nil
    }

    /// `RegisterPlayer` answered: nil on success. Returns what to log, if anything.
    mutating func answered(_ adapter: String, generation: Int, error: DBusError?) -> String? {
        guard generation == self.generation, adapters[adapter] == .registering else { return nil }
        guard let error, error.name != "org.bluez.Error.AlreadyExists" else {
            adapters[adapter] = .registered
            return "AVRCP: the player is registered with Bluetooth adapter \(adapter)"
        }
        let reason = error.message ?? error.name ?? error.description
        adapters[adapter] = .refused(reason)
        return "AVRCP: Bluetooth adapter \(adapter) refused the player: \(reason)"
    }

    /// Tonearm stops: every registration is taken back.
    mutating func leaving() -> [Action] {
        let held = adapters.filter { $0.value == .registered || $0.value == .registering }.keys.sorted()
        adapters = [:]
        return held.map { .unregister(adapter: $0) }
    }

    /// Whether the profile offers the player on the adapter at `path` (/org/bluez/hci0).
    func isOffered(_ path: String) -> Bool {
        offeredOn.map { $0.contains(String(path.split(separator: "/").last ?? "")) } ?? true
    }

    /// Adapters with `org.bluez.Media1` in a `GetManagedObjects` answer (`a{oa{sa{sv}}}`).
    static func adapters(in managedObjects: DBusValue) -> [String] {
        managedObjects.keys.filter { path in managedObjects[path]?[media] != nil }
    }
}
