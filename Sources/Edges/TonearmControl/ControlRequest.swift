import Synchronization
import TonearmJSON

/// One well-formed request, as the command handler gets it.
public struct ControlRequest: Sendable {
    /// The connection it came on; ids are never reused while the server lives.
    public let clientID: Int
    /// The request's `"id"`, echoed in its response (`.null` when it had none).
    public let id: JSONValue
    public let command: String
    /// The whole request object, `id` and `command` included.
    public let arguments: JSONValue

    public init(clientID: Int, id: JSONValue, command: String, arguments: JSONValue) {
        self.clientID = clientID
        self.id = id
        self.command = command
        self.arguments = arguments
    }

    /// The argument `key`, as sent.
    public subscript(key: String) -> JSONValue? { arguments[key] }

    public func string(_ key: String) throws(ArgumentError) -> String {
        try required(key, "a string", \.stringValue)
    }

    /// An integer; `3.0` counts, `3.5` does not.
    public func int(_ key: String) throws(ArgumentError) -> Int {
        try required(key, "an integer", \.intValue)
    }

    public func double(_ key: String) throws(ArgumentError) -> Double {
        try required(key, "a number", \.doubleValue)
    }

    public func bool(_ key: String) throws(ArgumentError) -> Bool {
        try required(key, "true or false", \.boolValue)
    }

    /// nil when the key is absent or null; an error when it holds something else.
    public func optionalString(_ key: String) throws(ArgumentError) -> String? {
        try optional(key, "a string", \.stringValue)
    }

    public func optionalInt(_ key: String) throws(ArgumentError) -> Int? {
        try optional(key, "an integer", \.intValue)
    }

    public func optionalDouble(_ key: String) throws(ArgumentError) -> Double? {
        try optional(key, "a number", \.doubleValue)
    }

    public func optionalBool(_ key: String) throws(ArgumentError) -> Bool? {
        try optional(key, "true or false", \.boolValue)
    }

    private func required<T>(_ key: String, _ kind: String, _ extract: (JSONValue) -> T?) throws(ArgumentError) -> T {
        guard let value = try optional(key, kind, extract) else {
            throw ArgumentError(key: key, description: "'\(key)' is required (\(kind))")
        }
        return value
    }

    private func optional<T>(_ key: String, _ kind: String, _ extract: (JSONValue) -> T?) throws(ArgumentError) -> T? {
        // A request has one "id", and it is the request's: an argument needs another name.
        assert(key != "id", "'id' is the request's id, not an argument; give the argument another name ('item')")
        guard let value = arguments[key], !value.isNull else { return nil }
        guard let typed = extract(value) else {
            throw ArgumentError(key: key, description: "'\(key)' must be \(kind)")
        }
        return typed
    }
}

/// The answer to one request, given once, from any thread, whenever it is ready.
///
/// A `Reply` released without an answer answers `internal` itself, so a client never waits
/// for a response that cannot come. A second answer is ignored.
public final class Reply: Sendable {
    private let clientID: Int
    private let id: JSONValue
    private let command: String
    private let log: (@Sendable (String) -> Void)?
    private let deliver: @Sendable ([UInt8]) -> Void
    private let answered = Atomic<Bool>(false)

    /// `deliver` takes the response line, exactly once, on whichever thread answers (or
    /// releases the reply unanswered).
    package init(
        clientID: Int, id: JSONValue, command: String, log: (@Sendable (String) -> Void)?,
        deliver: @escaping @Sendable ([UInt8]) -> Void
    ) {
        self.clientID = clientID
        self.id = id
        self.command = command
        self.log = log
        self.deliver = deliver
    }

    deinit {
        if !answered.load(ordering: .acquiring) {
            log?("control: '\(command)' from client \(clientID) was dropped without an answer")
            deliver(line(Self.failure(id: id, code: ControlErrorCode.internal, message: "the daemon dropped the request without answering")))
        }
    }

    public func succeed(_ result: JSONValue) {
        answer(.object([("id", id), ("ok", .bool(true)), ("result", result)]))
    }

    public func fail(code: String, message: String) {
        answer(Self.failure(id: id, code: code, message: message))
    }

    /// `badArgument` with the argument's message.
    public func fail(_ error: ArgumentError) {
        fail(code: ControlErrorCode.badArgument, message: error.description)
    }

    /// `unknownCommand`, naming the command.
    public func failUnknownCommand() {
        fail(code: ControlErrorCode.unknownCommand, message: "unknown command '\(command)'")
    }

    private func answer(_ response: JSONValue) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else {
            log?("control: '\(command)' from client \(clientID) was answered twice; the second answer is dropped")
            return
        }
        deliver(line(response))
    }

    /// An error response; without an id (`tooManyClients`) when `id` is nil.
    package static func failure(id: JSONValue?, code: String, message: String) -> JSONValue {
        let error: JSONValue = .object([("code", .string(code)), ("message", .string(message))])
        guard let id else { return .object([("ok", .bool(false)), ("error", error)]) }
        return .object([("id", id), ("ok", .bool(false)), ("error", error)])
    }
}

/// A message as it goes on the wire: compact JSON and a newline.
package func line(_ message: JSONValue) -> [UInt8] {
    var bytes = message.serializedBytes
    bytes.append(0x0A)
    return bytes
}
