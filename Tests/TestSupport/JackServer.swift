import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private JACK server on the dummy driver: a device that keeps real time.
///
/// Every server gets a unique name (pid, counter, random), so parallel test runs never share
/// one; clients find it through `JACK_DEFAULT_SERVER` (see `ALSAConfig.environment`).
/// Stopped when released.
public final class JackServer: @unchecked Sendable {
    public let name: String
    public let sampleRate: Int
    public let periodFrames: Int
    public let logPath: String
    private var process: RunningProcess?
    private var launches = 0

    private static let counter = Counter()

    /// Starts the server and waits until it accepts clients; with `startNow` false the name is
    /// chosen but the server is left for `start()` (a device that appears later).
    public init(directory: TemporaryDirectory, sampleRate: Int = 48000, periodFrames: Int = 256, startNow: Bool = true) throws {
        name = "tonearm-test-\(getpid())-\(Self.counter.next())-\(UInt32.random(in: 0..<0xFFFF_FFFF))"
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
        logPath = directory.file("jackd.log")
        if startNow { try start() }
    }

    /// True while the server process runs.
    public var isRunning: Bool { process?.isRunning ?? false }

    /// Starts the server (again) and waits until a client can connect: in a few tenths of a
    /// second on an idle machine; the bound is for a busy one (15 s was seen to pass by).
    public func start(timeout: Double = 60) throws {
        guard process == nil || !(process!.isRunning) else { return }
        launches += 1
        let log = logPath + (launches > 1 ? ".\(launches)" : "")
        let jackd = try RunningProcess("jackd", ["--no-realtime", "-n", name, "-d", "dummy",
                                                 "-r", "\(sampleRate)", "-p", "\(periodFrames)"],
                                       environment: ["JACK_NO_START_SERVER": "1"], stdoutPath: log, stderrPath: log)
        process = jackd
        let deadline = monotonicSeconds() + timeout
        var last: ProcessResult?
        while monotonicSeconds() < deadline {
            guard jackd.isRunning else {
                let result = jackd.wait(timeout: 1)
                throw TestSupportError("jackd \(name) exited while starting: \(result)\n\(readText(log))")
            }
            let probe = try runProcess("jack_lsp", ["-s", name], environment: ["JACK_NO_START_SERVER": "1"], timeout: 5)
            if probe.status == 0 && probe.stdout.contains("system:playback_1") { return }
            last = probe
            sleepSeconds(0.05)
        }
        jackd.send(SIGKILL)
        throw TestSupportError("jackd \(name) did not accept clients within \(timeout) s; last probe: \(last.map { "\($0)" } ?? "none")\n\(readText(log))")
    }

    /// SIGKILL, the way a wedged device vanishes: clients get no error, their writes stall.
    public func kill() {
        guard let process else { return }
        process.send(SIGKILL)
        process.wait(timeout: 5)
        self.process = nil
    }

    /// Kills the server (if running) and starts a new one under the same name.
    public func restart() throws {
        kill()
        try start()
    }

    /// SIGTERM, then SIGKILL if it lingers.
    public func stop() {
        guard let process else { return }
        process.send(SIGTERM)
        process.wait(timeout: 5)
        self.process = nil
    }

    /// The server's log so far (all launches).
    public var log: String {
        (1...max(1, launches)).map { readText(logPath + ($0 > 1 ? ".\($0)" : "")) }.joined(separator: "\n")
    }

    deinit {
        stop()
        // A server that had to be SIGKILLed left its slot in libjack's registry of 8.
        releaseJackRegistrySlot(serverName: name)
        // A SIGKILLed server leaves its socket and semaphores in /dev/shm; they carry this
        // server's unique name, so removing them touches nobody else's.
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm") {
            for entry in entries where entry.hasPrefix("jack_\(name)_") || (entry.hasPrefix("jack_sem.") && entry.contains("_\(name)_")) {
                try? FileManager.default.removeItem(atPath: "/dev/shm/" + entry)
            }
        }
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}
