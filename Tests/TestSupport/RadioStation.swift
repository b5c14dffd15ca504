import Foundation

/// Tests/Radio/radio_server.py run as a child: a radio station on 127.0.0.1 serving one file
/// (see the script for its paths). It can be killed and started again on the same port.
public final class RadioStation: @unchecked Sendable {
    public let file: String
    public let arguments: [String]
    public private(set) var port: Int
    private var process: RunningProcess?
    private let output: String
    public let scheme: String

    /// Starts the station serving `file`; `arguments` are the script's options (`--metaint`,
    /// `--titles`, `--rate`…). With `certificate` and `key` it speaks HTTPS.
    public init(file: String, arguments: [String] = [], certificate: String? = nil, key: String? = nil) throws {
        self.file = file
        var all = arguments
        if let certificate, let key { all += ["--cert", certificate, "--key", key] }
        self.arguments = all
        scheme = certificate == nil ? "http" : "https"
        output = NSTemporaryDirectory() + "tonearm-radio-\(getpid())-\(UUID().uuidString).out"
        port = 0
        try start()
    }

    deinit {
        process?.send(SIGKILL)
        try? FileManager.default.removeItem(atPath: output)
    }

    public func url(_ path: String = "/stream") -> String { "\(scheme)://127.0.0.1:\(port)\(path)" }

    /// Kills the station (SIGKILL: connections drop, new ones are refused).
    public func kill() {
        process?.send(SIGKILL)
        process?.wait(timeout: 10)
        process = nil
    }

    /// Starts it again on the same port.
    public func start() throws {
        let script = packageRoot + "/Tests/Radio/radio_server.py"
        process = try RunningProcess("python3", [script, "--port", String(port), "--file", file] + arguments,
                                     stdoutPath: output)
        let deadline = monotonicSeconds() + 20
        while monotonicSeconds() < deadline {
            if let line = lines.first(where: { $0.hasPrefix("PORT ") }), let n = Int(line.dropFirst(5)) {
                port = n
                return
            }
            guard process?.isRunning == true else { break }
            sleepSeconds(0.02)
        }
        throw TestSupportError("the radio station did not start: \(readText(output))")
    }

    /// The requests it answered, one line each: `REQUEST <path> icy=<0|1> ua=<agent>`.
    public var requests: [String] { lines.filter { $0.hasPrefix("REQUEST ") } }

    private var lines: [String] { readText(output).split(separator: "\n").map(String.init) }
}

/// Collects what a stream reports from its thread and lets a test wait for a condition on it.
public final class EventLog<Event: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var recorded: [Event] = []

    public init() {}

    public func record(_ event: Event) {
        condition.lock()
        recorded.append(event)
        condition.broadcast()
        condition.unlock()
    }

    public var events: [Event] {
        condition.lock()
        defer { condition.unlock() }
        return recorded
    }

    /// Waits until `done` holds for the events so far (each recording wakes it), at most
    /// `timeout` seconds; the result says whether it held.
    @discardableResult
    public func wait(timeout: Double = 30, until done: ([Event]) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !done(recorded) {
            if !condition.wait(until: deadline) { return done(recorded) }
        }
        return true
    }
}
