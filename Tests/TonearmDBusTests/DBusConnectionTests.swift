import Foundation
import Synchronization
import TestSupport
import TonearmDBus
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The sd-bus wrapper on a private bus (a dbus-daemon of its own), against `busctl`: a name
/// owned, calls answered with values of every type MPRIS uses, errors by name, signals.
final class DBusConnectionTests: XCTestCase {
    private var daemon: RunningProcess!
    private var address = ""
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        guard toolsAvailable("dbus-daemon", "busctl") else { throw XCTSkip("dbus-daemon and busctl are not installed; run ./scripts/setup") }
        directory = try TemporaryDirectory(prefix: "tonearm-dbus")
        let socket = directory.file("bus")
        address = "unix:path=" + socket
        daemon = try RunningProcess("/usr/bin/dbus-daemon", ["--config-file=/usr/share/dbus-1/session.conf", "--nofork", "--address=" + address],
                                    stdoutPath: directory.file("out"), stderrPath: directory.file("err"))
        XCTAssertTrue(waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: socket) }, "the bus is up")
    }

    override func tearDown() {
        daemon?.send(SIGTERM)
        daemon?.wait(timeout: 5)
    }

    /// Serves until `done` on a thread of its own, as a plug-in's thread would.
    private func serving(_ connection: DBusConnection, until done: @escaping @Sendable () -> Bool) -> Thread {
        nonisolated(unsafe) let bus = connection
        let thread = Thread {
            while !done() {
                var ready = pollfd(fd: bus.descriptor, events: bus.events, revents: 0)
                _ = poll(&ready, 1, min(50, bus.timeoutMilliseconds < 0 ? 50 : bus.timeoutMilliseconds))
                try? bus.process()
            }
        }
        thread.start()
        return thread
    }

    private func busctl(_ arguments: [String]) throws -> ProcessResult {
        try runProcess("/usr/bin/busctl", ["--address=" + address] + arguments, timeout: 10)
    }

    func testCallsAreAnsweredWithTypedValuesAndErrorsByName() throws {
        let connection = try DBusConnection(.address(address))
        try connection.requestName("org.tonearm.Test")
        let seen = Box<[DBusCall]>([])
        try connection.serve("/org/tonearm/Test") { call in
            seen.value.withLock { $0.append(call) }
            switch call.member {
            case "Echo": return .values(call.arguments)
            case "Everything":
                return .values([.dictionary([
                    ("s", .string("Ünïcode")), ("o", .objectPath("/a/b")), ("b", .boolean(true)), ("i", .int32(-3)),
                    ("x", .int64(1 << 40)), ("u", .uint32(7)), ("d", .double(0.5)),
                    ("as", .array(element: "s", [.string("x"), .string("y")])),
                ])])
            default: return .error(name: DBusReply.unknownMethod, message: "no method \(call.member)")
            }
        }
        let finished = Box(false)
        _ = serving(connection) { finished.value.withLock { $0 } }
        defer { finished.value.withLock { $0 = true } }

        let echo = try busctl(["call", "org.tonearm.Test", "/org/tonearm/Test", "org.tonearm.Test", "Echo", "sxbd", "hello", "42", "true", "1.5"])
        XCTAssertEqual(echo.status, 0, "\(echo)")
        XCTAssertEqual(echo.stdout, "sxbd \"hello\" 42 true 1.5\n")
        let variant = try busctl(["call", "org.tonearm.Test", "/org/tonearm/Test", "org.tonearm.Test", "Echo", "v", "u", "9"])
        XCTAssertEqual(variant.stdout, "v u 9\n")

        let everything = try busctl(["--json=short", "call", "org.tonearm.Test", "/org/tonearm/Test", "org.tonearm.Test", "Everything"])
        XCTAssertEqual(everything.status, 0, "\(everything)")
        let reply = parseJSONObject(everything.stdout)
        XCTAssertEqual(reply?["type"] as? String, "a{sv}")
        let data = ((reply?["data"] as? [Any])?.first as? [String: Any]) ?? [:]
        XCTAssertEqual((data["s"] as? [String: Any])?["data"] as? String, "Ünïcode")
        XCTAssertEqual((data["o"] as? [String: Any])?["type"] as? String, "o")
        XCTAssertEqual((data["x"] as? [String: Any])?["data"] as? Int, 1 << 40)
        XCTAssertEqual((data["as"] as? [String: Any])?["type"] as? String, "as")

        let unknown = try busctl(["call", "org.tonearm.Test", "/org/tonearm/Test", "org.tonearm.Test", "Nope"])
        XCTAssertNotEqual(unknown.status, 0)
        XCTAssertTrue(unknown.stderr.contains("no method Nope"), "\(unknown)")
        XCTAssertEqual(seen.value.withLock { $0.map(\.interface) }.first, "org.tonearm.Test")

        // The name is taken: a second connection is refused, saying so.
        let other = try DBusConnection(.address(address))
        XCTAssertThrowsError(try other.requestName("org.tonearm.Test")) { error in
            XCTAssertTrue("\(error)".contains("cannot own the name org.tonearm.Test"), "\(error)")
        }
    }

    func testSignalsReachAMonitor() throws {
        let connection = try DBusConnection(.address(address))
        let monitor = try RunningProcess("/usr/bin/busctl", ["--address=" + address, "monitor", "--json=short"],
                                         stdoutPath: directory.file("monitor"), stderrPath: directory.file("monitor.err"))
        defer {
            monitor.send(SIGTERM)
            monitor.wait(timeout: 5)
        }
        sleepSeconds(0.5)
        try connection.emit("/org/tonearm/Test", interface: "org.tonearm.Test", member: "Changed",
                            [.string("Volume"), .dictionary([("Volume", .double(0.25))])])
        connection.flush()
        let heard = waitUntil(timeout: 5) {
            (try? String(contentsOfFile: self.directory.file("monitor"), encoding: .utf8))?.contains("\"member\":\"Changed\"") ?? false
        }
        XCTAssertTrue(heard, (try? String(contentsOfFile: directory.file("monitor"), encoding: .utf8)) ?? "")
    }
}

/// A value closures on several threads share.
private final class Box<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}
