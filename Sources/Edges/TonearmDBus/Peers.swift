#if canImport(Glibc)
import Glibc
#endif

/// What a client of another peer needs beyond `call` and `subscribe`: its properties, and who
/// owns its name. Everything answers through callbacks run in `process()`, as `call` does.
extension DBusConnection {
    public static let propertiesInterface = "org.freedesktop.DBus.Properties"
    /// What a peer's answer of the wrong shape is called.
    static let inconsistent = "org.freedesktop.DBus.Error.InconsistentMessage"
    private static let driver = (name: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus")

    /// `Properties.Get`: the property's value, out of its variant.
    public func getProperty(_ destination: String, _ path: String, _ interface: String, _ name: String,
                            reply: @escaping (Result<DBusValue, DBusError>) -> Void) throws(DBusError) {
        try call(destination, path, Self.propertiesInterface, "Get", [.string(interface), .string(name)]) { [bus] result in
            reply(result.flatMap { values in
                guard values.count == 1, case .variant(let value) = values[0] else {
                    return .failure(DBusError(bus: bus, operation: "read \(destination) \(interface).\(name)", code: -EBADMSG,
                                              name: Self.inconsistent, message: "Get answered \(values.map(\.signature).joined()), not a variant"))
                }
                return .success(value)
            })
        }
    }

    /// `Properties.GetAll`: every property of `interface`, by name.
    public func getAllProperties(_ destination: String, _ path: String, _ interface: String,
                                 reply: @escaping (Result<[(String, DBusValue)], DBusError>) -> Void) throws(DBusError) {
        try call(destination, path, Self.propertiesInterface, "GetAll", [.string(interface)]) { [bus] result in
            reply(result.flatMap { values in
                guard values.count == 1, case .dictionary(let properties) = values[0] else {
                    return .failure(DBusError(bus: bus, operation: "read \(destination) \(interface)'s properties", code: -EBADMSG,
                                              name: Self.inconsistent, message: "GetAll answered \(values.map(\.signature).joined()), not a{sv}"))
                }
                return .success(properties)
            })
        }
    }

    /// `Properties.Set`.
    public func setProperty(_ destination: String, _ path: String, _ interface: String, _ name: String, _ value: DBusValue,
                            reply: @escaping (Result<Void, DBusError>) -> Void) throws(DBusError) {
        try call(destination, path, Self.propertiesInterface, "Set", [.string(interface), .string(name), .variant(value)]) { result in
            reply(result.map { _ in () })
        }
    }

    /// Follows who owns `name`: `changed` runs with its owner's unique name (":1.42") as soon
    /// as the bus says who owns it now, then at every change; with nil while nobody does.
    public func followOwner(of name: String, _ changed: @escaping (String?) -> Void) throws(DBusError) {
        // The bus answers GetNameOwner and signals NameOwnerChanged in the order things
        // happened; an answer that comes after a signal is older than it, and is dropped.
        let signalled = Flag()
        try subscribe(Self.matchRule(sender: Self.driver.name, path: Self.driver.path, interface: Self.driver.interface,
                                     member: "NameOwnerChanged", arg0: name)) { message in
            guard message.arguments.count == 3, let owner = message.arguments[2].string else { return }
            signalled.isSet = true
            changed(owner.isEmpty ? nil : owner)
        }
        try call(Self.driver.name, Self.driver.path, Self.driver.interface, "GetNameOwner", [.string(name)]) { result in
            guard !signalled.isSet else { return }
            // An error: nobody owns it (NameHasNoOwner).
            changed(try? result.get().first?.string)
        }
    }

    /// A match rule for signals: each part given narrows it. Values are quoted as the rules
    /// require (a `'` inside one is written `'\''`).
    public static func matchRule(sender: String? = nil, path: String? = nil, interface: String? = nil, member: String? = nil,
                                 arg0: String? = nil) -> String {
        let parts: [(String, String?)] = [("sender", sender), ("path", path), ("interface", interface), ("member", member), ("arg0", arg0)]
        return (["type='signal'"] + parts.compactMap { key, value in
            value.map { "\(key)='\(quoted($0))'" }
        }).joined(separator: ",")
    }

    private static func quoted(_ value: String) -> String {
        value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''")
    }
}

/// Set once by one callback, read by another: both run in the same `process()` call chain on
/// the connection's one thread.
private final class Flag {
    var isSet = false
}
