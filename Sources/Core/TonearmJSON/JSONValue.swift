/// A JSON value, written without Foundation (the player binary stays small).
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// Keys keep their order, so output is stable and readable.
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case let (.bool(x), .bool(y)): x == y
        case let (.int(x), .int(y)): x == y
        case let (.double(x), .double(y)): x == y
        case let (.string(x), .string(y)): x == y
        case let (.array(x), .array(y)): x == y
        case let (.object(x), .object(y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// Compact JSON text.
    public var serialized: String { String(decoding: serializedBytes, as: UTF8.self) }

    /// Compact JSON text as UTF-8, as it goes on a wire or into a file.
    public var serializedBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(to: &out)
        return out
    }

    private func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.appendDigits(i)
        case .double(let d):
            if d.isFinite {
                if d == d.rounded() && abs(d) < 1e15 {
                    out.appendDigits(Int(d))
                } else {
                    out.append(contentsOf: String(d).utf8)
                }
            } else {
                out.append(contentsOf: "null".utf8)
            }
        case .string(let s): Self.writeString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }


    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        // Runs that need nothing escaped (most strings, whole) are copied at once.
        s.withUTF8 { bytes in
            var run = 0
            for (i, byte) in bytes.enumerated() where byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                run = i + 1
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
                case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
                case UInt8(ascii: "\n"): out.append(contentsOf: #"\n"#.utf8)
                case UInt8(ascii: "\r"): out.append(contentsOf: #"\r"#.utf8)
                case UInt8(ascii: "\t"): out.append(contentsOf: #"\t"#.utf8)
                default:
                    out.append(contentsOf: #"\u00"#.utf8)
                    out.append(hexDigits[Int(byte >> 4)])
                    out.append(hexDigits[Int(byte & 0xF)])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...]))
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension JSONValue {
    /// `.string(s)` or `.null`.
    public init(_ string: String?) { self = string.map { .string($0) } ?? .null }
    /// `.int(i)` or `.null`.
    public init(_ int: Int?) { self = int.map { .int($0) } ?? .null }
    /// `.double(d)` or `.null`.
    public init(_ double: Double?) { self = double.map { .double($0) } ?? .null }
    /// `.bool(b)` or `.null`.
    public init(_ bool: Bool?) { self = bool.map { .bool($0) } ?? .null }
}

extension Array where Element == UInt8 {
    /// `n` in decimal, with its sign, written in place (no `String` made for each number): for
    /// every writer of UTF-8 text (JSON here, MPD's answers).
    public mutating func appendDigits(_ n: Int) {
        if n < 0 { append(UInt8(ascii: "-")) }
        var magnitude = n.magnitude
        let start = count
        repeat {
            append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        self[start...].reverse()
    }
}
