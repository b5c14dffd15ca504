#if canImport(Glibc)
import Glibc
#endif
import CSystemd

/// What a D-Bus call failed with: the bus, what was done, and sd-bus's reason.
public struct DBusError: Error, CustomStringConvertible, Sendable, Equatable {
    public var bus: String
    public var operation: String
    /// A negative errno, as sd-bus returns it.
    public var code: Int32

    public init(bus: String, operation: String, code: Int32) {
        self.bus = bus
        self.operation = operation
        self.code = code
    }

    public var description: String { "D-Bus \(bus): cannot \(operation): \(String(cString: strerror(-code)))" }
}

/// A value as D-Bus carries it, with the types MPRIS and BlueZ need.
public indirect enum DBusValue: Equatable, Sendable {
    case string(String)
    case objectPath(String)
    case boolean(Bool)
    case int32(Int32)
    case int64(Int64)
    case uint32(UInt32)
    case double(Double)
    /// An array of `element`-typed values (the element's signature, e.g. "s").
    case array(element: String, [DBusValue])
    /// `a{sv}`: names and variants, in order.
    case dictionary([(String, DBusValue)])
    case variant(DBusValue)

    /// The value's D-Bus signature.
    public var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .boolean: "b"
        case .int32: "i"
        case .int64: "x"
        case .uint32: "u"
        case .double: "d"
        case .array(let element, _): "a" + element
        case .dictionary: "a{sv}"
        case .variant: "v"
        }
    }

    public static func == (a: DBusValue, b: DBusValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)), (.objectPath(let x), .objectPath(let y)): x == y
        case (.boolean(let x), .boolean(let y)): x == y
        case (.int32(let x), .int32(let y)): x == y
        case (.int64(let x), .int64(let y)): x == y
        case (.uint32(let x), .uint32(let y)): x == y
        case (.double(let x), .double(let y)): x == y
        case (.array(let e, let x), .array(let f, let y)): e == f && x == y
        case (.dictionary(let x), .dictionary(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.variant(let x), .variant(let y)): x == y
        default: false
        }
    }
}

/// A method call on an object this connection serves.
public struct DBusCall: Sendable {
    public var interface: String
    public var member: String
    public var path: String
    public var sender: String
    /// The arguments, as far as their types are among `DBusValue`'s.
    public var arguments: [DBusValue]
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

/// One connection to a bus (sd-bus), used from one thread: it serves objects, owns names and
/// sends signals, and is driven from its descriptor — the owner polls `descriptor` for
/// `events` with at most `timeoutMilliseconds`, then calls `process()` — never on a timer.
public final class DBusConnection {
    public typealias Handler = (DBusCall) -> DBusReply

    /// What the bus is, for errors: "session", "system", or the address.
    public let bus: String
    private var handle: OpaquePointer?
    private var handlers: [String: Handler] = [:]
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
        for slot in slots { sd_bus_slot_unref(slot) }
        if let handle { sd_bus_flush_close_unref(handle) }
    }

    /// Asks for a well-known name, failing when another connection owns it.
    public func requestName(_ name: String) throws(DBusError) {
        let rc = sd_bus_request_name(handle, name, 0)
        guard rc >= 0 else { throw DBusError(bus: bus, operation: "own the name \(name)", code: rc) }
    }

    public func releaseName(_ name: String) {
        sd_bus_release_name(handle, name)
    }

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
        for argument in arguments {
            rc = Self.append(argument, to: message)
            guard rc >= 0 else { throw DBusError(bus: bus, operation: "write the signal \(member)", code: rc) }
        }
        rc = sd_bus_send(handle, message, nil)
        guard rc >= 0 else { throw DBusError(bus: bus, operation: "send the signal \(member)", code: rc) }
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
        let call = DBusCall(interface: sd_bus_message_get_interface(message).map { String(cString: $0) } ?? "",
                            member: sd_bus_message_get_member(message).map { String(cString: $0) } ?? "",
                            path: path,
                            sender: sd_bus_message_get_sender(message).map { String(cString: $0) } ?? "",
                            arguments: Self.read(message))
        switch handler(call) {
        case .values(let values):
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { return -ENOMEM }
            defer { sd_bus_message_unref(reply) }
            for value in values where Self.append(value, to: reply) < 0 { return -EINVAL }
            return sd_bus_send(handle, reply, nil) < 0 ? -EIO : 1
        case .error(let name, let text):
            var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
            defer { sd_bus_error_free(&error) }
            sd_bus_error_set(&error, name, text)
            return sd_bus_reply_method_error(message, &error)
        }
    }

    // MARK: Values

    static func append(_ value: DBusValue, to message: OpaquePointer) -> Int32 {
        func basic<T>(_ type: Character, _ v: T) -> Int32 {
            withUnsafePointer(to: v) { sd_bus_message_append_basic(message, CChar(type.asciiValue!), $0) }
        }
        switch value {
        case .string(let s): return s.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
        case .objectPath(let s): return s.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "o")), $0) }
        case .boolean(let b): return basic("b", Int32(b ? 1 : 0))
        case .int32(let v): return basic("i", v)
        case .int64(let v): return basic("x", v)
        case .uint32(let v): return basic("u", v)
        case .double(let v): return basic("d", v)
        case .array(let element, let items):
            var rc = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), element)
            for item in items where rc >= 0 { rc = append(item, to: message) }
            return rc < 0 ? rc : sd_bus_message_close_container(message)
        case .dictionary(let entries):
            var rc = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "{sv}")
            for (key, item) in entries where rc >= 0 {
                rc = sd_bus_message_open_container(message, CChar(UInt8(ascii: "e")), "sv")
                if rc >= 0 { rc = append(.string(key), to: message) }
                if rc >= 0 { rc = append(.variant(item), to: message) }
                if rc >= 0 { rc = sd_bus_message_close_container(message) }
            }
            return rc < 0 ? rc : sd_bus_message_close_container(message)
        case .variant(let inner):
            var rc = sd_bus_message_open_container(message, CChar(UInt8(ascii: "v")), inner.signature)
            if rc >= 0 { rc = append(inner, to: message) }
            return rc < 0 ? rc : sd_bus_message_close_container(message)
        }
    }

    /// The message's arguments from where it is read now, until one of a type not read here.
    static func read(_ message: OpaquePointer) -> [DBusValue] {
        var values: [DBusValue] = []
        while let value = readOne(message) { values.append(value) }
        return values
    }

    private static func readOne(_ message: OpaquePointer) -> DBusValue? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(message, &type, &contents) > 0 else { return nil }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "s"), UInt8(ascii: "o"):
            var text: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(message, type, &text) > 0, let text else { return nil }
            return type == CChar(UInt8(ascii: "s")) ? .string(String(cString: text)) : .objectPath(String(cString: text))
        case UInt8(ascii: "b"):
            var v: Int32 = 0
            return sd_bus_message_read_basic(message, type, &v) > 0 ? .boolean(v != 0) : nil
        case UInt8(ascii: "i"):
            var v: Int32 = 0
            return sd_bus_message_read_basic(message, type, &v) > 0 ? .int32(v) : nil
        case UInt8(ascii: "x"):
            var v: Int64 = 0
            return sd_bus_message_read_basic(message, type, &v) > 0 ? .int64(v) : nil
        case UInt8(ascii: "u"):
            var v: UInt32 = 0
            return sd_bus_message_read_basic(message, type, &v) > 0 ? .uint32(v) : nil
        case UInt8(ascii: "d"):
            var v: Double = 0
            return sd_bus_message_read_basic(message, type, &v) > 0 ? .double(v) : nil
        case UInt8(ascii: "v"):
            guard let contents, sd_bus_message_enter_container(message, type, contents) > 0 else { return nil }
            let inner = readOne(message)
            sd_bus_message_exit_container(message)
            return inner.map { .variant($0) }
        default:
            return nil
        }
    }
}

/// sd-bus's entry for calls to served objects.
private let dispatch: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<sd_bus_error>?) -> Int32 = { message, userdata, _ in
    guard let message, let userdata else { return 0 }
    return Unmanaged<DBusConnection>.fromOpaque(userdata).takeUnretainedValue().handle(message)
}
