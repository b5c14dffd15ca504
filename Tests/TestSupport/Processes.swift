import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How a child process ended.
public struct ProcessResult: Sendable, CustomStringConvertible {
    /// The exit status; for a child killed by a signal, 128 + the signal number (as a shell
    /// reports it).
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// Wall time from launch to exit.
    public var seconds: Double
    /// True when the hard timeout expired and the child was killed.
    public var timedOut: Bool
    /// The signal that ended the child, if one did.
    public var signal: Int32?

    /// Standard error split into lines, without empty ones.
    public var stderrLines: [String] {
        stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    public var description: String {
        var text = "exit \(status)"
        if let signal { text += " (signal \(signal))" }
        if timedOut { text += " after the timeout" }
        text += String(format: " in %.2f s", seconds)
        if !stdout.isEmpty { text += "\n--- stdout ---\n" + stdout }
        if !stderr.isEmpty { text += "\n--- stderr ---\n" + stderr }
        return text
    }
}

/// A child process whose output goes to files, so it can never block on a full pipe.
public final class RunningProcess: @unchecked Sendable {
    public let executable: String
    public let arguments: [String]
    private let process = Process()
    private let stdoutPath: String
    private let stderrPath: String
    private let started: Double
    private var result: ProcessResult?
    private var killedForTimeout = false
    /// Signalled once, by Foundation, when the child has exited: waiting on it costs nothing,
    /// where polling `isRunning` or `waitUntilExit` (which spins when this thread's run loop has
    /// no sources) takes CPU from the very child being waited for on a busy machine.
    private let exited = DispatchSemaphore(value: 0)
    private var launched = false

    /// Starts `executable` (a path, or a name looked up on PATH) with `environment` added to
    /// this process's own environment. Standard input is /dev/null unless `stdinPath` is given;
    /// standard output goes to `stdoutPath` when given (e.g. to capture binary output).
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                stdinPath: String? = nil, stdoutPath: String? = nil, stderrPath: String? = nil) throws {
        let resolved = executable.contains("/") ? executable : try which(executable)
        self.executable = resolved
        self.arguments = arguments
        let scratch = NSTemporaryDirectory() + "tonearm-proc-\(getpid())-\(UUID().uuidString)"
        self.stdoutPath = stdoutPath ?? scratch + ".out"
        self.stderrPath = stderrPath ?? scratch + ".err"
        Self.startAnew(self.stdoutPath)
        if self.stderrPath != self.stdoutPath { Self.startAnew(self.stderrPath) }
        process.executableURL = URL(fileURLWithPath: resolved)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = FileHandle(forReadingAtPath: stdinPath ?? "/dev/null")
        let outHandle = FileHandle(forWritingAtPath: self.stdoutPath)
        process.standardOutput = outHandle
        process.standardError = self.stderrPath == self.stdoutPath ? outHandle : FileHandle(forWritingAtPath: self.stderrPath)
        self.ownsStdout = stdoutPath == nil
        self.ownsStderr = stderrPath == nil
        started = monotonicSeconds()
        process.terminationHandler = { [exited] _ in exited.signal() }
        do {
            try process.run()
            launched = true
        } catch {
            throw TestSupportError("cannot start \(resolved): \(error)")
        }
    }

    /// Empties a log file, or makes it. Anything else (/dev/null, a FIFO) is left as it is:
    /// `createFile` would replace it with a regular file.
    private static func startAnew(_ path: String) {
        var st = stat()
        if stat(path, &st) == 0 && st.st_mode & S_IFMT != S_IFREG { return }
        _ = FileManager.default.createFile(atPath: path, contents: nil)
    }

    private let ownsStdout: Bool
    private let ownsStderr: Bool

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// Sends `signal` (SIGINT, SIGTERM, SIGKILL…) to the child.
    public func send(_ signal: Int32) {
        if process.isRunning { _ = kill(process.processIdentifier, signal) }
    }

    /// Waits for the child to exit; after `timeout` seconds it is killed (SIGKILL) and the
    /// result says `timedOut`.
    @discardableResult
    public func wait(timeout: Double) -> ProcessResult {
        if let result { return result }
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            killedForTimeout = true
            _ = kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
        let seconds = monotonicSeconds() - started
        var status = process.terminationStatus
        var signal: Int32?
        if process.terminationReason == .uncaughtSignal {
            signal = status
            status = 128 + status
        }
        let out = ownsStdout ? readText(stdoutPath) : ""
        let err = ownsStderr ? readText(stderrPath) : ""
        if ownsStdout { try? FileManager.default.removeItem(atPath: stdoutPath) }
        if ownsStderr { try? FileManager.default.removeItem(atPath: stderrPath) }
        let finished = ProcessResult(status: status, stdout: out, stderr: err, seconds: seconds,
                                     timedOut: killedForTimeout, signal: signal)
        result = finished
        return finished
    }

    deinit {
        if launched && result == nil {
            if process.isRunning { _ = kill(process.processIdentifier, SIGKILL) }
            exited.wait()
        }
        if result == nil {
            if ownsStdout { try? FileManager.default.removeItem(atPath: stdoutPath) }
            if ownsStderr { try? FileManager.default.removeItem(atPath: stderrPath) }
        }
    }
}

/// Runs a program to completion, killing it after `timeout` seconds.
public func runProcess(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                       timeout: Double = 60, stdinPath: String? = nil, stdoutPath: String? = nil) throws -> ProcessResult {
    try RunningProcess(executable, arguments, environment: environment, stdinPath: stdinPath, stdoutPath: stdoutPath)
        .wait(timeout: timeout)
}

/// Runs a program and throws, with its output, unless it exits 0.
@discardableResult
public func runChecked(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                       timeout: Double = 60, stdinPath: String? = nil, stdoutPath: String? = nil) throws -> ProcessResult {
    let result = try runProcess(executable, arguments, environment: environment, timeout: timeout,
                                stdinPath: stdinPath, stdoutPath: stdoutPath)
    guard result.status == 0 else {
        throw TestSupportError("\(executable) \(arguments.joined(separator: " ")) failed: \(result)")
    }
    return result
}

/// The full path of a program on PATH.
public func which(_ name: String) throws -> String {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    for dir in path.split(separator: ":") {
        let candidate = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    throw TestSupportError("'\(name)' is not on PATH; run ./scripts/setup to install the test tools")
}

/// True when every named program is on PATH.
public func toolsAvailable(_ names: String...) -> Bool {
    names.allSatisfy { (try? which($0)) != nil }
}

/// CLOCK_MONOTONIC in seconds.
public func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Sleeps for `seconds`.
public func sleepSeconds(_ seconds: Double) {
    guard seconds > 0 else { return }
    usleep(UInt32(seconds * 1e6))
}

/// Sends every byte on a blocking socket; false once the peer has closed the connection.
@discardableResult
public func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
        if sent <= 0 { return false }
        offset += sent
    }
    return true
}

func readText(_ path: String) -> String {
    guard let data = FileManager.default.contents(atPath: path) else { return "" }
    return String(decoding: data, as: UTF8.self)
}

// MARK: The binaries under test

private final class BinaryDirectoryCache: @unchecked Sendable {
    let lock = NSLock()
    var directory: Result<String, TestSupportError>?
}
private let binaryDirectoryCache = BinaryDirectoryCache()

/// The package root (this file is Tests/TestSupport/Processes.swift).
public let packageRoot: String = {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
}()

/// The directory holding the built `tonearm` and `tonearmd`.
///
/// `TONEARM_BIN` (the `tonearm` binary itself, or its directory) wins. Otherwise the test
/// runner's own directory, which is the build's bin path for this configuration; last,
/// `swift build --show-bin-path` (not tried first: it would wait for the build lock that
/// `swift test` may still hold).
public func binDirectory() throws -> String {
    binaryDirectoryCache.lock.lock()
    defer { binaryDirectoryCache.lock.unlock() }
    if let cached = binaryDirectoryCache.directory { return try cached.get() }
    let found = locateBinDirectory()
    binaryDirectoryCache.directory = found
    return try found.get()
}

private func locateBinDirectory() -> Result<String, TestSupportError> {
    let fm = FileManager.default
    if let bin = ProcessInfo.processInfo.environment["TONEARM_BIN"], !bin.isEmpty {
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: bin, isDirectory: &isDirectory) else {
            return .failure(TestSupportError("TONEARM_BIN=\(bin) does not exist"))
        }
        return .success(isDirectory.boolValue ? bin : URL(fileURLWithPath: bin).deletingLastPathComponent().path)
    }
    var candidates: [String] = []
    if let runner = Bundle.main.executableURL {
        // .build/<triple>/debug/TonearmPackageTests.xctest (an executable on Linux)
        candidates.append(runner.deletingLastPathComponent().path)
    }
    candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path)
    for dir in candidates where fm.isExecutableFile(atPath: dir + "/tonearm") {
        return .success(dir)
    }
    do {
        let result = try runProcess("swift", ["build", "--package-path", packageRoot, "--show-bin-path"], timeout: 300)
        let dir = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        if result.status == 0, fm.isExecutableFile(atPath: dir + "/tonearm") { return .success(dir) }
        return .failure(TestSupportError(
            "the tonearm binary is not built (looked in \((candidates + [dir]).joined(separator: ", "))); "
                + "run `swift build` first or set TONEARM_BIN"))
    } catch {
        return .failure(TestSupportError("cannot find the tonearm binary: \(error); run `swift build` or set TONEARM_BIN"))
    }
}

/// The `tonearm` CLI under test.
public func tonearmBinary() throws -> String { try binDirectory() + "/tonearm" }

/// The `tonearmd` daemon under test.
public func tonearmdBinary() throws -> String {
    let path = try binDirectory() + "/tonearmd"
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw TestSupportError("\(path) is not built; run `swift build`")
    }
    return path
}

/// A Python with `requirement` (a PyPI package pinned, "selenium==4.27.1"), in a virtual
/// environment made once and kept in ~/.cache/tonearm-test.
public func pythonWith(_ requirement: String) throws -> String {
    let home = ProcessInfo.processInfo.environment["HOME"] ?? "/root"
    let venv = home + "/.cache/tonearm-test/" + requirement.replacingOccurrences(of: "==", with: "-")
    let python = venv + "/bin/python"
    if !FileManager.default.fileExists(atPath: venv + "/ready") {
        try? FileManager.default.removeItem(atPath: venv)
        let made = try runProcess("/usr/bin/python3", ["-m", "venv", venv], timeout: 120)
        guard made.status == 0 else { throw TestSupportError("python3 -m venv: \(made)") }
        let installed = try runProcess(venv + "/bin/pip", ["install", "--quiet", requirement], timeout: 300)
        guard installed.status == 0 else { throw TestSupportError("pip install \(requirement): \(installed)") }
        _ = FileManager.default.createFile(atPath: venv + "/ready", contents: nil)
    }
    return python
}
