#if canImport(Glibc)
import Glibc
#endif
import CSystemd

/// A value as D-Bus carries it: every basic type, arrays, dictionaries, structures and
/// variants — what MPRIS sends and what BlueZ's objects hold.
public indirect enum DBusValue: Equatable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A file descriptor: only read (its number in the message), never sent.
    case unixFD(Int32)
    /// An array of `element`-typed values (the element's signature, e.g. "s" or "{oa{sv}}").
    case array(element: String, [DBusValue])
    /// `a{sv}`: names and variants, in order.
    case dictionary([(String, DBusValue)])
    /// One entry of a dictionary other than `a{sv}`, inside an `array`.
    case entry(DBusValue, DBusValue)
    case structure([DBusValue])
    case variant(DBusValue)

    /// The value's D-Bus signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element
        case .dictionary: "a{sv}"
        case .entry(let key, let value): "{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    public static func == (a: DBusValue, b: DBusValue) -> Bool {
        switch (a, b) {
        case (.byte(let x), .byte(let y)): x == y
        case (.boolean(let x), .boolean(let y)): x == y
        case (.int16(let x), .int16(let y)): x == y
        case (.uint16(let x), .uint16(let y)): x == y
        case (.int32(let x), .int32(let y)), (.unixFD(let x), .unixFD(let y)): x == y
        case (.uint32(let x), .uint32(let y)): x == y
        case (.int64(let x), .int64(let y)): x == y
        case (.uint64(let x), .uint64(let y)): x == y
        case (.double(let x), .double(let y)): x == y
        case (.string(let x), .string(let y)), (.objectPath(let x), .objectPath(let y)), (.signature(let x), .signature(let y)): x == y
        case (.array(let e, let x), .array(let f, let y)): e == f && x == y
        case (.dictionary(let x), .dictionary(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.entry(let k, let v), .entry(let l, let w)): k == l && v == w
        case (.structure(let x), .structure(let y)): x == y
        case (.variant(let x), .variant(let y)): x == y
        default: false
        }
    }

    // MARK: Reading what arrived

    public var string: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): s
        case .variant(let inner): inner.string
        default: nil
        }
    }

    /// The items of an array (of any element type).
    public var items: [DBusValue]? {
        if case .array(_, let items) = self { return items }
        return nil
    }

    /// A dictionary's value by key: an `a{sv}` one's by name, another's by string or path key.
    public subscript(key: String) -> DBusValue? {
        switch self {
        case .dictionary(let entries): return entries.first { $0.0 == key }?.1
        case .array(_, let items):
            for case .entry(let k, let value) in items where k.string == key { return value }
            return nil
        default: return nil
        }
    }

    /// The keys of a dictionary, in order.
    public var keys: [String] {
        switch self {
        case .dictionary(let entries): entries.map(\.0)
        case .array(_, let items): items.compactMap { if case .entry(let k, _) = $0 { k.string } else { nil } }
        default: []
        }
    }
}

// MARK: Messages

extension DBusValue {
    /// Appends the value to a message being written; sd-bus's return code.
    static func append(_ value: DBusValue, to message: OpaquePointer) -> Int32 {
        func basic<T>(_ type: UInt8, _ v: T) -> Int32 {
            withUnsafePointer(to: v) { sd_bus_message_append_basic(message, CChar(bitPattern: type), $0) }
        }
        func text(_ type: UInt8, _ s: String) -> Int32 {
            s.withCString { sd_bus_message_append_basic(message, CChar(bitPattern: type), $0) }
        }
        func container(_ type: UInt8, _ contents: String, _ items: [DBusValue]) -> Int32 {
            var rc = sd_bus_message_open_container(message, CChar(bitPattern: type), contents)
            for item in items where rc >= 0 { rc = append(item, to: message) }
            return rc < 0 ? rc : sd_bus_message_close_container(message)
        }
        switch value {
        case .byte(let v): return basic(UInt8(ascii: "y"), v)
        case .boolean(let b): return basic(UInt8(ascii: "b"), Int32(b ? 1 : 0))
        case .int16(let v): return basic(UInt8(ascii: "n"), v)
        case .uint16(let v): return basic(UInt8(ascii: "q"), v)
        case .int32(let v): return basic(UInt8(ascii: "i"), v)
        case .uint32(let v): return basic(UInt8(ascii: "u"), v)
        case .int64(let v): return basic(UInt8(ascii: "x"), v)
        case .uint64(let v): return basic(UInt8(ascii: "t"), v)
        case .double(let v): return basic(UInt8(ascii: "d"), v)
        case .string(let s): return text(UInt8(ascii: "s"), s)
        case .objectPath(let s): return text(UInt8(ascii: "o"), s)
        case .signature(let s): return text(UInt8(ascii: "g"), s)
        case .unixFD: return -EINVAL  // descriptors are never sent
        case .array(let element, let items): return container(UInt8(ascii: "a"), element, items)
        case .dictionary(let entries):
            return container(UInt8(ascii: "a"), "{sv}", entries.map { .entry(.string($0.0), .variant($0.1)) })
        case .entry(let key, let item):
            return container(UInt8(ascii: "e"), key.signature + item.signature, [key, item])
        case .structure(let fields):
            return container(UInt8(ascii: "r"), fields.map(\.signature).joined(), fields)
        case .variant(let inner): return container(UInt8(ascii: "v"), inner.signature, [inner])
        }
    }

    /// The message's arguments from where it is read now to its end.
    static func read(_ message: OpaquePointer) -> [DBusValue] {
        var values: [DBusValue] = []
        while let value = readOne(message) { values.append(value) }
        return values
    }

    /// The next value of the message, or nil at the end of the message or container (or when
    /// it cannot be read).
    private static func readOne(_ message: OpaquePointer) -> DBusValue? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(message, &type, &contents) > 0 else { return nil }
        func basic<T>(_ initial: T, _ make: (T) -> DBusValue) -> DBusValue? {
            var v = initial
            let read = withUnsafeMutableBytes(of: &v) { sd_bus_message_read_basic(message, type, $0.baseAddress) }
            return read > 0 ? make(v) : nil
        }
        func text(_ make: (String) -> DBusValue) -> DBusValue? {
            var pointer: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(message, type, &pointer) > 0, let pointer else { return nil }
            return make(String(cString: pointer))
        }
        func inside(_ read: () -> DBusValue?) -> DBusValue? {
            guard let contents, sd_bus_message_enter_container(message, type, contents) > 0 else { return nil }
            let value = read()
            sd_bus_message_exit_container(message)
            return value
        }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "y"): return basic(UInt8(0), DBusValue.byte)
        case UInt8(ascii: "b"): return basic(Int32(0)) { .boolean($0 != 0) }
        case UInt8(ascii: "n"): return basic(Int16(0), DBusValue.int16)
        case UInt8(ascii: "q"): return basic(UInt16(0), DBusValue.uint16)
        case UInt8(ascii: "i"): return basic(Int32(0), DBusValue.int32)
        case UInt8(ascii: "u"): return basic(UInt32(0), DBusValue.uint32)
        case UInt8(ascii: "x"): return basic(Int64(0), DBusValue.int64)
        case UInt8(ascii: "t"): return basic(UInt64(0), DBusValue.uint64)
        case UInt8(ascii: "d"): return basic(Double(0), DBusValue.double)
        case UInt8(ascii: "h"): return basic(Int32(0), DBusValue.unixFD)
        case UInt8(ascii: "s"): return text(DBusValue.string)
        case UInt8(ascii: "o"): return text(DBusValue.objectPath)
        case UInt8(ascii: "g"): return text(DBusValue.signature)
        case UInt8(ascii: "v"): return inside { readOne(message).map { .variant($0) } }
        case UInt8(ascii: "r"): return inside { .structure(read(message)) }
        case UInt8(ascii: "e"):
            return inside {
                guard let key = readOne(message), let value = readOne(message) else { return nil }
                return .entry(key, value)
            }
        case UInt8(ascii: "a"):
            guard let contents else { return nil }
            let element = String(cString: contents)
            return inside {
                let items = read(message)
                guard element == "{sv}" else { return .array(element: element, items) }
                return .dictionary(items.compactMap { item in
                    guard case .entry(.string(let key), .variant(let value)) = item else { return nil }
                    return (key, value)
                })
            }
        default:
            return nil
        }
    }
}
