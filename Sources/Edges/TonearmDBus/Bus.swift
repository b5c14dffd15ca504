#if canImport(Glibc)
import Glibc
#endif
import CSystemd

/// What a D-Bus call failed with: the bus, what was done, and the reason — sd-bus's errno, and
/// the D-Bus error a peer answered with when it did.
public struct DBusError: Error, CustomStringConvertible, Sendable, Equatable {
    public var bus: String
    public var operation: String
    /// A negative errno, as sd-bus returns it.
    public var code: Int32
    /// The error's D-Bus name ("org.bluez.Error.NotSupported") and text, when a peer answered
    /// with one.
    public var name: String?
    public var message: String?

    public init(bus: String, operation: String, code: Int32, name: String? = nil, message: String? = nil) {
        self.bus = bus
        self.operation = operation
        self.code = code
        self.name = name
        self.message = message
    }

    public var description: String {
        let reason = name.map { name in message.map { "\($0) (\(name))" } ?? name } ?? String(cString: strerror(-code))
        return "D-Bus \(bus): cannot \(operation): \(reason)"
    }

    /// The peer that was called is not on the bus.
    public var isNoSuchPeer: Bool {
        name == "org.freedesktop.DBus.Error.ServiceUnknown" || name == "org.freedesktop.DBus.Error.NameHasNoOwner"
    }
}

/// A message that arrived: a method call on an object this connection serves, or a signal it
/// subscribed to.
public struct DBusMessage: Sendable {
    public var interface: String
    public var member: String
    public var path: String
    public var sender: String
    /// The arguments, in order.
    public var arguments: [DBusValue]

    public init(interface: String, member: String, path: String, sender: String, arguments: [DBusValue]) {
        self.interface = interface
        self.member = member
        self.path = path
        self.sender = sender
        self.arguments = arguments
    }

    init(_ message: OpaquePointer) {
        func text(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        self.init(interface: text(sd_bus_message_get_interface(message)), member: text(sd_bus_message_get_member(message)),
                  path: text(sd_bus_message_get_path(message)), sender: text(sd_bus_message_get_sender(message)),
                  arguments: DBusValue.read(message))
    }
}

/// The answer to a call: values to return, or a D-Bus error by name.
public enum DBusReply: Sendable {
    case values([DBusValue])
    case error(name: String, message: String)

    public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
    public static let failed = "org.freedesktop.DBus.Error.Failed"
}

/// One connection to a bus (sd-bus), used from one thread: it serves objects, owns names, calls
/// other peers, follows signals and sends its own. It is driven from its descriptor — the owner
/// polls `descriptor` for `events` with at most `timeoutMilliseconds`, then calls `process()`,
/// in which every handler and reply callback runs — never on a timer.
public final class DBusConnection {
    public typealias Handler = (DBusMessage) -> DBusReply

    /// What the bus is, for errors: "session", "system", or the address.
    public let bus: String
    private var handle: OpaquePointer?
    private var handlers: [String: Handler] = [:]
    private var subscriptions: [Subscription] = []
    private var slots: [OpaquePointer] = []

    public enum Bus: Sendable {
        case session, system
        case address(String)
    }

    public init(_ which: Bus) throws(DBusError) {
        var bus: OpaquePointer?
        let rc: Int32
        switch which {
        case .session:
            self.bus = "session"
            rc = sd_bus_open_user(&bus)
        case .system:
            self.bus = "system"
            rc = sd_bus_open_system(&bus)
        case .address(let address):
            self.bus = address
            var made: OpaquePointer?
            var step = sd_bus_new(&made)
            if step >= 0 { step = sd_bus_set_address(made, address) }
            if step >= 0 { step = sd_bus_set_bus_client(made, 1) }
            if step >= 0 { step = sd_bus_start(made) }
            if step < 0 { sd_bus_unref(made) } else { bus = made }
            rc = step
        }
        guard rc >= 0, let bus else { throw DBusError(bus: self.bus, operation: "connect", code: rc) }
        handle = bus
    }

    deinit {
        // The slots go first: they hold unretained pointers to this connection and its
        // subscriptions. Pending calls' slots are the bus's; closing it releases them.
        for slot in slots { sd_bus_slot_unref(slot) }
        if let handle { sd_bus_flush_close_unref(handle) }
    }

    /// This connection's unique name (":1.42").
    public var uniqueName: String {
        var name: UnsafePointer<CChar>?
        guard sd_bus_get_unique_name(handle, &name) >= 0, let name else { return "" }
        return String(cString: name)
    }

    // MARK: Names

    public enum NameRequest: Sendable, Equatable {
        case owned
        /// Another connection owns it; this one is next in line (`NameAcquired` tells when).
        case queued(ownerPID: Int32?)
    }

    /// Asks for a well-known name. With `queue`, a name another connection owns is waited for
    /// in the bus's queue; without, that fails.
    @discardableResult
    public func requestName(_ name: String, queue: Bool = false) throws(DBusError) -> NameRequest {
        let rc = sd_bus_request_name(handle, name, queue ? UInt64(SD_BUS_NAME_QUEUE) : 0)
        guard rc >= 0 else { throw DBusError(bus: bus, operation: "own the name \(name)", code: rc) }
        return rc > 0 ? .owned : .queued(ownerPID: ownerPID(of: name))
    }

    public func releaseName(_ name: String) {
        sd_bus_release_name(handle, name)
    }

    /// The process that owns `name`, when the bus says.
    private func ownerPID(of name: String) -> Int32? {
        var creds: OpaquePointer?
        guard sd_bus_get_name_creds(handle, name, UInt64(SD_BUS_CREDS_PID), &creds) >= 0, let creds else { return nil }
        defer { sd_bus_creds_unref(creds) }
        var pid: pid_t = 0
        return sd_bus_creds_get_pid(creds, &pid) >= 0 ? pid : nil
    }

    // MARK: Serving objects

    /// Serves every call to `path` with `handler` (the Properties and Introspectable
    /// interfaces included: the handler answers them).
    public func serve(_ path: String, _ handler: @escaping Handler) throws(DBusError) {
        handlers[path] = handler
        var slot: OpaquePointer?
        // Unretained: the slot, which holds the pointer, goes before the connection does.
        let rc = sd_bus_add_object(handle, &slot, path, dispatch, Unmanaged.passUnretained(self).toOpaque())
        guard rc >= 0, let slot else { throw DBusError(bus: bus, operation: "serve \(path)", code: rc) }
        slots.append(slot)
    }

    /// Sends a signal from `path`.
    public func emit(_ path: String, interface: String, member: String, _ arguments: [DBusValue]) throws(DBusError) {
        var message: OpaquePointer?
        var rc = sd_bus_message_new_signal(handle, &message, path, interface, member)
        guard rc >= 0, let message else { throw DBusError(bus: bus, operation: "make the signal \(member)", code: rc) }
        defer { sd_bus_message_unref(message) }
        rc = append(arguments, to: message)
        guard rc >= 0 else { throw DBusError(bus: bus, operation: "write the signal \(member)", code: rc) }
        rc = sd_bus_send(handle, message, nil)
        guard rc >= 0 else { throw DBusError(bus: bus, operation: "send the signal \(member)", code: rc) }
    }

    // MARK: Other peers

    /// Runs `handler` in `process()` for every message that matches `rule`, a D-Bus match rule
    /// ("type='signal',interface='org.freedesktop.DBus.ObjectManager'"), for as long as the
    /// connection lives.
    public func subscribe(_ rule: String, _ handler: @escaping (DBusMessage) -> Void) throws(DBusError) {
        let subscription = Subscription(handler)
        var slot: OpaquePointer?
        // Unretained: `subscriptions` keeps it, and the slot goes first (deinit).
        let rc = sd_bus_add_match(handle, &slot, rule, matched, Unmanaged.passUnretained(subscription).toOpaque())
        guard rc >= 0, let slot else { throw DBusError(bus: bus, operation: "follow \(rule)", code: rc) }
        subscriptions.append(subscription)
        slots.append(slot)
    }

    /// Calls `member` on `destination` without waiting: `reply` runs in `process()` with the
    /// answer, the peer's error, or a timeout's (25 s, sd-bus's default). A peer that is not
    /// on the bus is not started for the call unless `startsPeer`.
    public func call(_ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
                     startsPeer: Bool = false, reply: @escaping (Result<[DBusValue], DBusError>) -> Void) throws(DBusError) {
        let operation = "call \(destination) \(path) \(interface).\(member)"
        var message: OpaquePointer?
        var rc = sd_bus_message_new_method_call(handle, &message, destination, path, interface, member)
        guard rc >= 0, let message else { throw DBusError(bus: bus, operation: operation, code: rc) }
        defer { sd_bus_message_unref(message) }
        rc = sd_bus_message_set_auto_start(message, startsPeer ? 1 : 0)
        if rc >= 0 { rc = append(arguments, to: message) }
        guard rc >= 0 else { throw DBusError(bus: bus, operation: operation, code: rc) }
        let pending = PendingCall(bus: bus, operation: operation, reply)
        var slot: OpaquePointer?
        rc = sd_bus_call_async(handle, &slot, message, answered, Unmanaged.passRetained(pending).toOpaque(), 0)
        guard rc >= 0, let slot else {
            Unmanaged.passUnretained(pending).release()
            throw DBusError(bus: bus, operation: operation, code: rc)
        }
        // The bus owns the slot now; it releases `pending` once the answer came or the
        // connection closed.
        sd_bus_slot_set_destroy_callback(slot, releasePending)
        sd_bus_slot_set_floating(slot, 1)
        sd_bus_slot_unref(slot)
    }

    // MARK: Driving it

    public var descriptor: Int32 { sd_bus_get_fd(handle) }

    /// The poll events to wait for.
    public var events: Int16 { Int16(truncatingIfNeeded: max(0, sd_bus_get_events(handle))) }

    /// How long to wait at most before `process()` (-1: no limit).
    public var timeoutMilliseconds: Int32 {
        var usec: UInt64 = 0
        guard sd_bus_get_timeout(handle, &usec) >= 0, usec != UInt64.max else { return -1 }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowUsec = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        return usec <= nowUsec ? 0 : Int32(min(UInt64(Int32.max), (usec - nowUsec + 999) / 1000))
    }

    /// Handles everything pending; returns when there is nothing more to do now. Throws when
    /// the connection is gone.
    public func process() throws(DBusError) {
        while true {
            let rc = sd_bus_process(handle, nil)
            guard rc >= 0 else { throw DBusError(bus: bus, operation: "read from the bus", code: rc) }
            if rc == 0 { return }
        }
    }

    /// Flushes what was sent.
    public func flush() { sd_bus_flush(handle) }

    // MARK: Calls

    fileprivate func handle(_ message: OpaquePointer) -> Int32 {
        let path = sd_bus_message_get_path(message).map { String(cString: $0) } ?? ""
        guard let handler = handlers[path] else { return 0 }
        switch handler(DBusMessage(message)) {
        case .values(let values):
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { return -ENOMEM }
            defer { sd_bus_message_unref(reply) }
            guard append(values, to: reply) >= 0 else { return -EINVAL }
            return sd_bus_send(handle, reply, nil) < 0 ? -EIO : 1
        case .error(let name, let text):
            var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
            defer { sd_bus_error_free(&error) }
            sd_bus_error_set(&error, name, text)
            return sd_bus_reply_method_error(message, &error)
        }
    }

    private func append(_ values: [DBusValue], to message: OpaquePointer) -> Int32 {
        for value in values {
            let rc = DBusValue.append(value, to: message)
            if rc < 0 { return rc }
        }
        return 0
    }
}

/// A match's handler, kept by its connection.
private final class Subscription {
    let handler: (DBusMessage) -> Void
    init(_ handler: @escaping (DBusMessage) -> Void) { self.handler = handler }
}

/// A call waiting for its answer, kept alive by the bus's slot.
private final class PendingCall {
    let bus: String
    let operation: String
    let reply: (Result<[DBusValue], DBusError>) -> Void

    init(bus: String, operation: String, _ reply: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        self.bus = bus
        self.operation = operation
        self.reply = reply
    }

    func answer(_ message: OpaquePointer) {
        guard let error = sd_bus_message_get_error(message) else {
            reply(.success(DBusValue.read(message)))
            return
        }
        let code = sd_bus_error_get_errno(error)
        reply(.failure(DBusError(bus: bus, operation: operation, code: -(code == 0 ? EIO : code),
                                 name: error.pointee.name.map { String(cString: $0) },
                                 message: error.pointee.message.map { String(cString: $0) })))
    }
}

/// sd-bus's entry for calls to served objects.
private let dispatch: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<sd_bus_error>?) -> Int32 = { message, userdata, _ in
    guard let message, let userdata else { return 0 }
    return Unmanaged<DBusConnection>.fromOpaque(userdata).takeUnretainedValue().handle(message)
}

/// sd-bus's entry for matched messages.
private let matched: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<sd_bus_error>?) -> Int32 = { message, userdata, _ in
    guard let message, let userdata else { return 0 }
    Unmanaged<Subscription>.fromOpaque(userdata).takeUnretainedValue().handler(DBusMessage(message))
    return 0
}

/// sd-bus's entry for answers to calls (a synthesized error when the connection closes first).
private let answered: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<sd_bus_error>?) -> Int32 = { message, userdata, _ in
    guard let message, let userdata else { return 0 }
    Unmanaged<PendingCall>.fromOpaque(userdata).takeUnretainedValue().answer(message)
    return 0
}

private let releasePending: @convention(c) (UnsafeMutableRawPointer?) -> Void = { userdata in
    guard let userdata else { return }
    Unmanaged<PendingCall>.fromOpaque(userdata).release()
}
