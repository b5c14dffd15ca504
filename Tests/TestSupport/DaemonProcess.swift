import Foundation

#if canImport(Glibc)
import Glibc
#endif

// MARK: A raw connection to the control socket

/// One raw connection to tonearmd's control socket (JSON lines, see
/// Sources/Edges/TonearmControl/Protocol.swift), written independently of the daemon's own client so
/// that tests can send anything at all: half lines, garbage, huge lines, or nothing while events
/// pile up.
///
/// Non-blocking underneath; every read and write waits with a deadline, so a test never hangs on
/// a daemon that stopped answering. Used from one thread.
public final class ControlSocket: @unchecked Sendable {
    public let path: String
    private var fd: Int32
    private var input: [UInt8] = []
    private var nextID = 0
    /// True once the daemon closed its side (a read returned 0, or a write failed with EPIPE).
    public var closedByPeer: Bool { readEnded || writeFailed }
    /// A read returned end of file: nothing more will arrive.
    public private(set) var readEnded = false
    /// A write failed (EPIPE): the daemon no longer reads, though what it sent before closing
    /// can still be read.
    public private(set) var writeFailed = false
    /// Events (`{"event":…}` lines) that arrived while `request` waited for its response, with
    /// the monotonic time each was read.
    public var events: [(received: Double, message: [String: Any])] = []
    /// When true, a Now Playing start correction is set aside in `startCorrections` instead of
    /// joining `events`: a `seek` the daemon publishes by itself because the device took longer
    /// than the player's start tolerance to open, fill and start after a play, seek or skip
    /// (`PlayerCore.playStartTolerance`). How long a device takes to start depends on the
    /// machine, so tests of other publications count on their own ones only.
    public var setsAsideStartCorrections = false
    /// The start corrections set aside.
    public private(set) var startCorrections: [(received: Double, message: [String: Any])] = []

    /// Connects to the socket at `path`; throws at once when nothing listens there.
    public init(path: String) throws {
        self.path = path
        signal(SIGPIPE, SIG_IGN)
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            _ = Glibc.close(fd)
            throw TestSupportError("socket path too long (\(bytes.count) bytes): \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in bytes.enumerated() { raw[i] = byte }
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        guard connected == 0 else {
            let error = errno
            _ = Glibc.close(fd)
            throw TestSupportError("cannot connect to \(path): \(String(cString: strerror(error)))")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { close() }

    /// Closes the connection (idempotent).
    public func close() {
        if fd >= 0 {
            _ = Glibc.close(fd)
            fd = -1
        }
    }

    /// Shrinks the kernel's receive buffer, so that a client that never reads falls behind sooner.
    public func setReceiveBuffer(bytes: Int32) {
        var size = bytes
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Writes as much of `bytes` as the daemon takes within `timeout` seconds; returns how many
    /// bytes went out (fewer when the daemon stopped reading or closed the connection).
    @discardableResult
    public func write(_ bytes: [UInt8], timeout: Double = 10) -> Int {
        let deadline = monotonicSeconds() + timeout
        var sent = 0
        while sent < bytes.count && fd >= 0 {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                sent += n
                continue
            }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                let left = deadline - monotonicSeconds()
                if left <= 0 { break }
                var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&pfd, 1, Int32(min(left, 0.1) * 1000) + 1)
                continue
            }
            writeFailed = true
            break
        }
        return sent
    }

    /// Writes `text` followed by a newline.
    @discardableResult
    public func writeLine(_ text: String, timeout: Double = 10) -> Int {
        write(Array(text.utf8) + [0x0A], timeout: timeout)
    }

    /// The next line (without its newline), or nil when none arrived within `timeout` seconds or
    /// the daemon closed the connection (`closedByPeer` tells which).
    public func readLine(timeout: Double) -> [UInt8]? {
        let deadline = monotonicSeconds() + timeout
        var scanned = 0
        while true {
            if let newline = input[scanned...].firstIndex(of: 0x0A) {
                let line = Array(input[..<newline])
                input.removeSubrange(...newline)
                return line
            }
            scanned = input.count
            guard fd >= 0, !readEnded else { return nil }
            let left = deadline - monotonicSeconds()
            if left <= 0 { return nil }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(left * 1000) + 1)
            if ready <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n > 0 {
                input += chunk[..<n]
            } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
                readEnded = true
            }
        }
    }

    /// The next line parsed as a JSON object; nil on timeout, close, or a line that is not one
    /// (which a test then reports).
    public func readMessage(timeout: Double) -> [String: Any]? {
        guard let line = readLine(timeout: timeout) else { return nil }
        return parseJSONObject(line)
    }

    /// Sends `{"id":N,"command":…, arguments…}` and returns the response with that id. Events
    /// that arrive meanwhile are kept in `events`; throws on timeout or close.
    public func request(_ command: String, _ arguments: [String: Any] = [:], timeout: Double = 5) throws -> [String: Any] {
        nextID += 1
        let id = nextID
        var object = arguments
        object["id"] = id
        object["command"] = command
        let data = try JSONSerialization.data(withJSONObject: object)
        let sent = write(Array(data) + [0x0A], timeout: timeout)
        guard sent == data.count + 1 else {
            throw TestSupportError("'\(command)': only \(sent) of \(data.count + 1) bytes went out (closed: \(closedByPeer))")
        }
        return try response(id: id, command: command, timeout: timeout)
    }

    /// Waits for the response with `id`, keeping events and dropping other responses.
    public func response(id: Any, command: String = "request", timeout: Double = 5) throws -> [String: Any] {
        let deadline = monotonicSeconds() + timeout
        while true {
            let left = deadline - monotonicSeconds()
            guard left > 0, let line = readLine(timeout: left) else {
                throw TestSupportError("no response to '\(command)' within \(timeout) s (closed by the daemon: \(closedByPeer))")
            }
            guard let message = parseJSONObject(line) else {
                throw TestSupportError("'\(command)': a line that is not a JSON object: \(String(decoding: line, as: UTF8.self))")
            }
            if message["event"] != nil && message["id"] == nil {
                keep(message)
                continue
            }
            if let got = message["id"], "\(got)" == "\(id)" { return message }
        }
    }

    /// `request`, then the `result` of a successful response; throws with the error otherwise.
    public func result(_ command: String, _ arguments: [String: Any] = [:], timeout: Double = 5) throws -> [String: Any] {
        let response = try request(command, arguments, timeout: timeout)
        guard response.bool("ok") == true, let result = response.object("result") else {
            throw TestSupportError("'\(command)' failed: \(jsonText(response))")
        }
        return result
    }

    /// Reads events (lines with "event") for `timeout` seconds or until `count` arrived; responses
    /// are skipped. Appends to and returns `events`.
    @discardableResult
    public func collectEvents(timeout: Double, until count: Int = .max) -> [(received: Double, message: [String: Any])] {
        let deadline = monotonicSeconds() + timeout
        while events.count < count {
            let left = deadline - monotonicSeconds()
            guard left > 0, let line = readLine(timeout: left) else { break }
            if let message = parseJSONObject(line), message["event"] != nil, message["id"] == nil {
                keep(message)
            }
        }
        return events
    }

    private func keep(_ message: [String: Any]) {
        let event = (received: monotonicSeconds(), message: message)
        if setsAsideStartCorrections, let previous = events.last(where: { $0.message.string("event") == "nowPlaying" }),
           isStartCorrection(message, after: previous.message) {
            startCorrections.append(event)
        } else {
            events.append(event)
        }
    }
}

/// Whether a Now Playing event is the daemon's correction of the publication before it: a
/// partial `seek` of the same item to the same elapsed time at rate 1, stamped later than it by
/// more than the start tolerance (40 ms) and less than a second.
public func isStartCorrection(_ message: [String: Any], after previous: [String: Any]) -> Bool {
    guard message.string("event") == "nowPlaying", let data = message.object("data"),
          data.string("reason") == "seek", data.bool("replace") == false,
          let info = data.object("info"), let before = previous.object("data")?.object("info"),
          info.double("rate") == 1, before.double("rate") == 1,
          info.string("title") == before.string("title"), info.int("queueIndex") == before.int("queueIndex"),
          let elapsed = info.double("elapsed"), let was = before.double("elapsed"),
          let stamp = info.double("timestamp"), let wasStamped = before.double("timestamp")
    else { return false }
    let later = stamp - wasStamped
    return abs(elapsed - was) < 0.001 && later > 0.04 && later < 1
}

/// The bytes as a JSON object, or nil.
public func parseJSONObject(_ bytes: [UInt8]) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) as? [String: Any]
}

/// The text as a JSON object, or nil.
public func parseJSONObject(_ text: String) -> [String: Any]? { parseJSONObject(Array(text.utf8)) }

/// Compact JSON for a failure message.
public func jsonText(_ value: Any) -> String {
    guard JSONSerialization.isValidJSONObject(value),
          let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]) else { return "\(value)" }
    return String(decoding: data, as: UTF8.self)
}

/// Typed access to a parsed JSON object.
extension Dictionary where Key == String, Value == Any {
    public func string(_ key: String) -> String? { self[key] as? String }
    public func double(_ key: String) -> Double? { (self[key] as? NSNumber)?.doubleValue }
    public func int(_ key: String) -> Int? { (self[key] as? NSNumber)?.intValue }
    public func bool(_ key: String) -> Bool? { self[key] as? Bool }
    public func object(_ key: String) -> [String: Any]? { self[key] as? [String: Any] }
    public func array(_ key: String) -> [Any]? { self[key] as? [Any] }
    /// True when the key is present with JSON null.
    public func isNull(_ key: String) -> Bool { self[key] is NSNull }
}

// MARK: The daemon as a child process

/// A `tonearmd` under test: its own socket and state directory, stderr in a log file per launch.
///
/// `start()` returns once the daemon answers `status` on its socket; `terminate()` is SIGTERM
/// (the graceful path), `kill()` SIGKILL (a power cut, as far as the daemon can tell). It can be
/// started again on the same state directory. Killed when released.
public final class DaemonProcess: @unchecked Sendable {
    public let directory: String
    public let socketPath: String
    public let stateDirectory: String
    public var device: String
    /// Added to the test process's environment (ALSA_CONFIG_PATH, JACK_DEFAULT_SERVER…).
    public var environment: [String: String]
    /// More tonearmd arguments (--config, --music-dir…).
    public var arguments: [String]
    /// A command tonearmd is started through, which execs it in its own process (setpriv, to
    /// run it as another user); empty: started directly.
    public var launcher: [String] = []
    public private(set) var process: RunningProcess?
    public private(set) var launches = 0

    /// Prepares paths under `directory` (socket `tonearmd.sock`, state in `state/`) and, when
    /// `start` is true, starts the daemon.
    public init(directory: String, device: String, environment: [String: String], arguments: [String] = [],
                stateDirectory: String? = nil, start: Bool = true) throws {
        self.directory = directory
        socketPath = directory + "/tonearmd.sock"
        self.stateDirectory = stateDirectory ?? directory + "/state"
        self.device = device
        self.environment = environment
        self.arguments = arguments
        if start { try self.start() }
    }

    /// The log of launch `n` (1-based); the current one by default.
    public func logPath(launch n: Int? = nil) -> String { directory + "/tonearmd.\(n ?? launches).log" }

    /// What the current (or last) launch wrote to stderr.
    public var log: String { readText(logPath()) }

    public var pid: Int32? { process?.pid }
    public var isRunning: Bool { process?.isRunning ?? false }

    /// Starts the daemon and waits until it answers `status` (at most `timeout` seconds).
    /// Throws, with its log, when it exits or does not answer in time.
    public func start(timeout: Double = 10) throws {
        if let process, process.isRunning { throw TestSupportError("tonearmd is already running (pid \(process.pid))") }
        launches += 1
        let log = logPath()
        // The MPD server (6600) and the web remote (8080) are on by default: off unless the test
        // asks for them, so daemons of other tests (and a real mpd) never meet on a port.
        let mpd = arguments.contains("--mpd-port") ? [] : ["--mpd-port", "0"]
        let web = arguments.contains("--web-port") ? [] : ["--web-port", "0"]
        let command = launcher + [try tonearmdBinary(), "--device", device, "--socket", socketPath, "--state-dir", stateDirectory]
            + mpd + web + arguments
        let child = try RunningProcess(command[0], Array(command.dropFirst()), environment: environment, stdoutPath: log, stderrPath: log)
        process = child
        let deadline = monotonicSeconds() + timeout
        var lastError = "nothing tried"
        while monotonicSeconds() < deadline {
            guard child.isRunning else {
                let result = child.wait(timeout: 1)
                throw TestSupportError("tonearmd exited while starting (\(result.status)):\n\(readText(log))")
            }
            do {
                let socket = try ControlSocket(path: socketPath)
                _ = try socket.result("status", timeout: max(0.5, deadline - monotonicSeconds()))
                return
            } catch {
                lastError = "\(error)"
            }
            sleepSeconds(0.02)
        }
        child.send(SIGKILL)
        child.wait(timeout: 5)
        throw TestSupportError("tonearmd did not answer on \(socketPath) within \(timeout) s (\(lastError)):\n\(readText(log))")
    }

    /// SIGTERM and wait; nil when it was not running.
    @discardableResult
    public func terminate(timeout: Double = 10) -> ProcessResult? {
        guard let process else { return nil }
        process.send(SIGTERM)
        let result = process.wait(timeout: timeout)
        self.process = nil
        return result
    }

    /// SIGKILL and wait for the process to be gone.
    @discardableResult
    public func kill() -> ProcessResult? {
        guard let process else { return nil }
        process.send(SIGKILL)
        let result = process.wait(timeout: 10)
        self.process = nil
        return result
    }

    /// A fresh connection to the daemon.
    public func connect() throws -> ControlSocket { try ControlSocket(path: socketPath) }

    /// One request on a fresh connection; its `result` (throws on failure).
    public func result(_ command: String, _ arguments: [String: Any] = [:], timeout: Double = 5) throws -> [String: Any] {
        try connect().result(command, arguments, timeout: timeout)
    }

    /// `status` over the socket.
    public func status(timeout: Double = 5) throws -> [String: Any] { try result("status", timeout: timeout) }

    /// `tonearm --socket SOCKET arguments…` with the daemon's environment.
    public func cli(_ arguments: [String], timeout: Double = 15) throws -> ProcessResult {
        try runProcess(try tonearmBinary(), ["--socket", socketPath] + arguments, environment: environment, timeout: timeout)
    }

    /// The saved state (`state.json`'s "state" object), or nil when there is none or it is not JSON.
    public func savedState() -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: stateDirectory + "/state.json") else { return nil }
        return parseJSONObject(Array(data))?.object("state")
    }

    deinit {
        if let process, process.isRunning {
            process.send(SIGKILL)
            process.wait(timeout: 5)
        }
    }
}

/// Polls `condition` every `interval` seconds until it holds or `timeout` seconds pass; returns
/// whether it held.
@discardableResult
public func waitUntil(timeout: Double, interval: Double = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = monotonicSeconds() + timeout
    while true {
        if try condition() { return true }
        if monotonicSeconds() >= deadline { return false }
        sleepSeconds(interval)
    }
}
