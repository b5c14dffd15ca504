/// A control socket that could not be served or talked to, naming the socket and the cause
/// ("cannot connect to tonearmd at /run/tonearm/control.sock: No such file or directory (is
/// the daemon running?)"), or an error the daemon answered a request with.
public struct ControlError: Error, CustomStringConvertible, Sendable {
    /// The socket path.
    public var path: String
    /// The daemon's error code ("badArgument", "unknownCommand", "tooManyClients"…, see
    /// `ControlErrorCode`) when the daemon answered with an error; nil when the failure is on
    /// this side (the socket, a timeout, an answer that is not JSON).
    public var code: String?
    /// The whole message: for local failures it names the path; for the daemon's errors it is
    /// the daemon's message ("'seconds' must be a number").
    public var message: String

    public init(path: String, code: String? = nil, message: String) {
        self.path = path
        self.code = code
        self.message = message
    }

    public var description: String {
        guard let code else { return message }
        return "\(message) (\(code))"
    }
}

/// A request argument that is missing or of the wrong type; the handler answers it with
/// `reply.fail(error)` (code `badArgument`).
public struct ArgumentError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The argument's key.
    public var key: String
    /// "'seconds' must be a number", "'path' is required".
    public var description: String

    public init(key: String, description: String) {
        self.key = key
        self.description = description
    }
}
