import SystemPackage
import TonearmJSON
import TonearmSystem

/// A synchronous connection to tonearmd's control socket, for the `tonearm` CLI: one request
/// at a time, and events for `tonearm watch`. Used from one thread.
public final class ControlClient {
    public let path: String
    private let socket: FileDescriptor
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
        guard path.utf8.count <= LocalSocket.maxPathBytes else {
            throw ControlError(path: path, message: "cannot connect to tonearmd at \(path): the path is too long for a Unix socket")
        }
        let socket: FileDescriptor
        do {
            socket = try LocalSocket.open(nonBlocking: false)
        } catch {
            throw ControlError(path: path, message: "cannot connect to tonearmd at \(path): socket: \(error)")
        }
        do {
            try LocalSocket.connect(socket, to: path)
        } catch {
            try? socket.close()
            let hint = switch error {
            case .noSuchFileOrDirectory, .connectionRefused: " (is the daemon running?)"
            case .permissionDenied: " (may this user use the socket? see its group and mode)"
            default: ""
            }
            throw ControlError(path: path, message: "cannot connect to tonearmd at \(path): \(error)\(hint)")
        }
        self.socket = socket
    }

    deinit { try? socket.close() }

    /// Sends a request and waits for its response; returns the result, or throws the
    /// daemon's error (with its `code`) or a local one. `id` and `command` are set here, so
    /// `arguments` must not hold them.
    public func request(_ command: String, _ arguments: [(String, JSONValue)] = [], timeout: Double = 5) throws(ControlError) -> JSONValue {
        precondition(!arguments.contains { $0.0 == "id" || $0.0 == "command" }, "'id' and 'command' are set by request()")
        nextID += 1
        let id = JSONValue.int(nextID)
        let deadline = monotonicSeconds() + timeout
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
        let deadline = timeout.map { monotonicSeconds() + $0 }
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
            let sent: Int
            switch bytes.withUnsafeBytes({ buffer in
                Result { () throws(Errno) in try LocalSocket.send(socket, UnsafeRawBufferPointer(rebasing: buffer[offset...])) }
            }) {
            case .success(let count): sent = count
            case .failure(let error):
                // A server that refused the connection said why before closing it.
                if let refusal = try? readMessage(deadline: monotonicSeconds()), refusal["id"] == nil,
                   let error = refusal["error"], let code = error["code"]?.stringValue {
                    throw ControlError(path: path, code: code, message: error["message"]?.stringValue ?? "tonearmd refused the connection")
                }
                throw failure("cannot send to tonearmd at \(path)", error)
            }
            offset += sent
            if sent == 0 {
                let ready: Bool
                do {
                    ready = try LocalSocket.wait(socket, writable: true, seconds: max(0, deadline - monotonicSeconds()))
                } catch {
                    throw failure("cannot send to tonearmd at \(path)", error)
                }
                if !ready { throw ControlError(path: path, message: "tonearmd at \(path) is not reading requests") }
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
            let count: Int
            do {
                guard try LocalSocket.wait(socket, seconds: deadline.map { max(0, $0 - monotonicSeconds()) }) else { return nil }
                count = try chunk.withUnsafeMutableBytes { buffer in Result { () throws(Errno) in try LocalSocket.read(socket, into: buffer) } }.get()
            } catch {
                throw failure("cannot read from tonearmd at \(path)", error)
            }
            if count == 0 { throw ControlError(path: path, message: "tonearmd at \(path) closed the connection") }
            if head > 0 {
                input.removeFirst(head)
                scanned -= head
                head = 0
            }
            input.append(contentsOf: chunk[..<count])
        }
    }

    private func failure(_ what: String, _ error: Errno) -> ControlError {
        if error == .brokenPipe || error == .connectionReset {
            return ControlError(path: path, message: "tonearmd at \(path) closed the connection")
        }
        return ControlError(path: path, message: "\(what): \(error)")
    }
}
