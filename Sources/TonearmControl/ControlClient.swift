#if canImport(Glibc)
import Glibc
#endif
import TonearmJSON

/// A synchronous connection to tonearmd's control socket, for the `tonearm` CLI: one request
/// at a time, and events for `tonearm watch`. Used from one thread.
public final class ControlClient {
    public let path: String
    private let fd: Int32
    private var nextID = 0
    /// Received bytes; lines before `head` are taken, and up to `scanned` there is no newline.
    private var input: [UInt8] = []
    private var head = 0
    private var scanned = 0
    private var chunk = [UInt8](repeating: 0, count: 65536)
    /// Events that arrived while waiting for a response.
    private var events: [(topic: String, data: JSONValue)] = []

    public init(path: String) throws(ControlError) {
        self.path = path
        guard path.utf8.count <= maxSocketPathBytes else {
            throw ControlError(path: path, message: "cannot connect to tonearmd at \(path): the path is too long for a Unix socket")
        }
        let fd = makeUnixSocket(nonBlocking: false)
        guard fd >= 0 else {
            throw ControlError(path: path, message: "cannot connect to tonearmd at \(path): socket: \(errnoText(-fd))")
        }
        let error = connectUnix(fd, to: path)
        guard error == 0 else {
            close(fd)
            let hint = switch error {
            case ENOENT, ECONNREFUSED: " (is the daemon running?)"
            case EACCES: " (may this user use the socket? see its group and mode)"
            default: ""
            }
            throw ControlError(path: path, message: "cannot connect to tonearmd at \(path): \(errnoText(error))\(hint)")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Sends a request and waits for its response; returns the result, or throws the
    /// daemon's error (with its `code`) or a local one. `id` and `command` are set here, so
    /// `arguments` must not hold them.
    public func request(_ command: String, _ arguments: [(String, JSONValue)] = [], timeout: Double = 5) throws(ControlError) -> JSONValue {
        precondition(!arguments.contains { $0.0 == "id" || $0.0 == "command" }, "'id' and 'command' are set by request()")
        nextID += 1
        let id = JSONValue.int(nextID)
        let deadline = monotonicNow() + timeout
        try send(line(.object([("id", id), ("command", .string(command))] + arguments)), deadline: deadline)
        while true {
            guard let message = try readMessage(deadline: deadline) else {
                throw ControlError(path: path, message: "tonearmd at \(path) did not answer '\(command)' within \(timeout) s")
            }
            if let topic = message["event"]?.stringValue, message["id"] == nil {
                events.append((topic, message["data"] ?? .null))
                continue
            }
            // A response without an id is the server refusing the connection (tooManyClients);
            // one with another id answers an earlier request that timed out.
            guard message["id"] == nil || message["id"] == id else { continue }
            if message["ok"]?.boolValue == true { return message["result"] ?? .null }
            let error = message["error"]
            throw ControlError(
                path: path, code: error?["code"]?.stringValue ?? ControlErrorCode.internal,
                message: error?["message"]?.stringValue ?? "tonearmd answered with an error and no message")
        }
    }

    /// The next event (from topics subscribed with `request("subscribe", …)`), or nil when
    /// none came within `timeout` seconds (nil: wait as long as it takes).
    public func readEvent(timeout: Double?) throws(ControlError) -> (topic: String, data: JSONValue)? {
        if !events.isEmpty { return events.removeFirst() }
        let deadline = timeout.map { monotonicNow() + $0 }
        while let message = try readMessage(deadline: deadline) {
            if let topic = message["event"]?.stringValue, message["id"] == nil {
                return (topic, message["data"] ?? .null)
            }
            if message["id"] == nil, message["ok"]?.boolValue == false {
                let error = message["error"]
                throw ControlError(
                    path: path, code: error?["code"]?.stringValue ?? ControlErrorCode.internal,
                    message: error?["message"]?.stringValue ?? "tonearmd refused the connection")
            }
        }
        return nil
    }

    // MARK: Lines

    private func send(_ bytes: [UInt8], deadline: Double) throws(ControlError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { sendNow(fd, UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            if sent < 0 {
                // A server that refused the connection said why before closing it.
                if let refusal = try? readMessage(deadline: monotonicNow()), refusal["id"] == nil,
                   let error = refusal["error"], let code = error["code"]?.stringValue {
                    throw ControlError(path: path, code: code, message: error["message"]?.stringValue ?? "tonearmd refused the connection")
                }
                throw failure("cannot send to tonearmd at \(path)", errno: Int32(-sent))
            }
            offset += sent
            if sent == 0 {
                let ready = waitFor(fd, events: Int16(POLLOUT), seconds: max(0, deadline - monotonicNow()))
                if ready == 0 { throw ControlError(path: path, message: "tonearmd at \(path) is not reading requests") }
            }
        }
    }

    /// The next message, or nil at the deadline (never, when there is none).
    private func readMessage(deadline: Double?) throws(ControlError) -> JSONValue? {
        while true {
            if let newline = input[max(head, scanned)...].firstIndex(of: 0x0A) {
                let start = head
                head = newline + 1
                scanned = head
                let message = input.withUnsafeBufferPointer { buffer in
                    Result { () throws(JSONParseError) in try JSONValue.parse(UnsafeBufferPointer(rebasing: buffer[start..<newline])) }
                }
                switch message {
                case .success(let value): return value
                case .failure(let error):
                    throw ControlError(path: path, message: "tonearmd at \(path) sent a line that is not JSON: \(error)")
                }
            }
            scanned = input.count
            let ready = waitFor(fd, events: Int16(POLLIN), seconds: deadline.map { max(0, $0 - monotonicNow()) })
            if ready == 0 { return nil }
            let count = chunk.withUnsafeMutableBytes { receiveNow(fd, $0) }
            guard let count else { continue }
            if count == 0 { throw ControlError(path: path, message: "tonearmd at \(path) closed the connection") }
            if count < 0 { throw failure("cannot read from tonearmd at \(path)", errno: Int32(-count)) }
            if head > 0 {
                input.removeFirst(head)
                scanned -= head
                head = 0
            }
            input.append(contentsOf: chunk[..<count])
        }
    }

    private func failure(_ what: String, errno code: Int32) -> ControlError {
        if code == EPIPE || code == ECONNRESET {
            return ControlError(path: path, message: "tonearmd at \(path) closed the connection")
        }
        return ControlError(path: path, message: "\(what): \(errnoText(code))")
    }
}
