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
    private var daemon: PrivateBus!
    private var address = ""
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        guard toolsAvailable("dbus-daemon", "busctl") else { throw XCTSkip("dbus-daemon and busctl are not installed; run ./scripts/setup") }
        directory = try TemporaryDirectory(prefix: "tonearm-dbus")
        address = "unix:path=" + directory.file("bus")
        daemon = try PrivateBus(address: address, log: directory.file("bus-log"))
    }

    override func tearDown() {
        daemon?.stop()
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
        let seen = Box<[DBusMessage]>([])
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

    /// Processes both connections on this thread until `done` (at most 10 s); false on timeout.
    private func pump(_ connections: [DBusConnection], until done: () -> Bool) -> Bool {
        let deadline = monotonicSeconds() + 10
        while !done() {
            guard monotonicSeconds() < deadline else { return false }
            var fds = connections.map { pollfd(fd: $0.descriptor, events: $0.events, revents: 0) }
            _ = poll(&fds, nfds_t(fds.count), 50)
            for connection in connections { try? connection.process() }
        }
        return true
    }

    func testCallsToAnotherPeerAndItsSignalsWithEveryType() throws {
        let server = try DBusConnection(.address(address))
        try server.requestName("org.tonearm.Server")
        // What BlueZ's GetManagedObjects answers: a{oa{sa{sv}}}, with the basic types in it.
        let objects = DBusValue.array(element: "{oa{sa{sv}}}", [
            .entry(.objectPath("/org/bluez/hci0"), .array(element: "{sa{sv}}", [
                .entry(.string("org.bluez.Adapter1"), .dictionary([
                    ("Address", .string("00:AA:01:00:00:23")), ("Class", .uint32(0x7c0000)), ("Powered", .boolean(true)),
                    ("Appearance", .uint16(0x0340)), ("RSSI", .int16(-60)), ("TxPower", .byte(4)), ("Count", .uint64(1 << 40)),
                    ("UUIDs", .array(element: "s", [.string("0000110e-0000-1000-8000-00805f9b34fb")])),
                    ("Data", .array(element: "{qv}", [.entry(.uint16(76), .variant(.array(element: "y", [.byte(1), .byte(2)])))])),
                    ("Pair", .structure([.int32(1), .string("two")])), ("Type", .signature("a{sv}")),
                ])),
                .entry(.string("org.bluez.Media1"), .dictionary([])),
            ])),
        ])
        try server.serve("/org/tonearm/Server") { call in
            switch call.member {
            case "Objects": .values([objects])
            case "Echo": .values(call.arguments)
            default: .error(name: "org.tonearm.Error.Nope", message: "no \(call.member) here")
            }
        }
        let client = try DBusConnection(.address(address))
        let heard = Box<[DBusMessage]>([])
        try client.subscribe("type='signal',interface='org.tonearm.Server',member='Changed'") { message in
            heard.value.withLock { $0.append(message) }
        }
        let answers = Box<[String: Result<[DBusValue], DBusError>]>([:])
        func ask(_ key: String, _ destination: String, _ member: String, _ arguments: [DBusValue] = []) throws {
            try client.call(destination, "/org/tonearm/Server", "org.tonearm.Server", member, arguments) { result in
                answers.value.withLock { $0[key] = result }
            }
        }
        try ask("objects", "org.tonearm.Server", "Objects")
        try ask("echo", "org.tonearm.Server", "Echo", [objects, .variant(.int64(-5)), .objectPath("/a")])
        try ask("refused", "org.tonearm.Server", "Other")
        try ask("nobody", "org.tonearm.Nobody", "Objects")
        XCTAssertTrue(pump([server, client]) { answers.value.withLock { $0.count } == 4 }, "every call answered")
        let got = answers.value.withLock { $0 }
        XCTAssertEqual(try got["objects"]?.get(), [objects])
        XCTAssertEqual(try got["echo"]?.get(), [objects, .variant(.int64(-5)), .objectPath("/a")])
        XCTAssertEqual(AVRCPAdapters(in: try got["objects"]?.get().first), ["/org/bluez/hci0"])
        guard case .failure(let refused)? = got["refused"], case .failure(let nobody)? = got["nobody"] else {
            return XCTFail("\(got)")
        }
        XCTAssertEqual(refused.name, "org.tonearm.Error.Nope")
        XCTAssertEqual(refused.description, "D-Bus \(address): cannot call org.tonearm.Server /org/tonearm/Server org.tonearm.Server.Other: no Other here (org.tonearm.Error.Nope)")
        XCTAssertTrue(nobody.isNoSuchPeer, "\(nobody)")
        XCTAssertFalse(refused.isNoSuchPeer)

        try server.emit("/org/tonearm/Server", interface: "org.tonearm.Server", member: "Changed", [.string("x"), .uint32(3)])
        try server.emit("/org/tonearm/Server", interface: "org.tonearm.Server", member: "Other", [])
        server.flush()
        XCTAssertTrue(pump([server, client]) { heard.value.withLock { !$0.isEmpty } })
        let signal = heard.value.withLock { $0 }
        XCTAssertEqual(signal.map(\.member), ["Changed"], "only what matched")
        XCTAssertEqual(signal.first?.arguments, [.string("x"), .uint32(3)])
        XCTAssertEqual(signal.first?.sender, server.uniqueName)
        XCTAssertTrue(server.uniqueName.hasPrefix(":"))
    }

    func testAnotherPeersPropertiesAndWhoOwnsItsName() throws {
        let client = try DBusConnection(.address(address))
        let owners = Box<[String?]>([])
        try client.followOwner(of: "org.tonearm.Player") { owner in owners.value.withLock { $0.append(owner) } }
        XCTAssertTrue(pump([client]) { owners.value.withLock { $0.count } == 1 }, "told who owns it now")
        XCTAssertEqual(owners.value.withLock { $0 }, [nil], "nobody yet")

        let server = try DBusConnection(.address(address))
        let volume = Box(0.5)
        try server.serve("/org/tonearm/Player") { call in
            guard call.interface == DBusConnection.propertiesInterface else { return .error(name: DBusReply.unknownMethod, message: "no") }
            switch (call.member, call.arguments.first?.string, call.arguments.dropFirst().first?.string) {
            case ("GetAll", "org.tonearm.Player"?, _):
                return .values([.dictionary([("Volume", .double(volume.value.withLock { $0 })), ("Name", .string("test"))])])
            case ("GetAll", _, _):
                return .values([.dictionary([])])
            case ("Get", "org.tonearm.Player"?, "Volume"?):
                return .values([.variant(.double(volume.value.withLock { $0 }))])
            case ("Get", _, "Broken"?):
                return .values([.string("not a variant")])
            case ("Set", "org.tonearm.Player"?, "Volume"?):
                guard case .variant(.double(let value))? = call.arguments.last else { return .error(name: DBusReply.invalidArgs, message: "a double") }
                volume.value.withLock { $0 = value }
                return .values([])
            default:
                return .error(name: DBusReply.unknownProperty, message: "no such property")
            }
        }
        try server.requestName("org.tonearm.Player")
        XCTAssertTrue(pump([client, server]) { owners.value.withLock { $0.count } == 2 })
        XCTAssertEqual(owners.value.withLock { $0.last }, server.uniqueName)

        let answers = Box<[String: String]>([:])
        func note(_ key: String) -> (Result<DBusValue, DBusError>) -> Void {
            { result in answers.value.withLock { $0[key] = (try? result.get()).map { "\($0)" } ?? "\(result)" } }
        }
        try client.getAllProperties("org.tonearm.Player", "/org/tonearm/Player", "org.tonearm.Player") { result in
            answers.value.withLock { $0["all"] = (try? result.get()).map { $0.map { "\($0.0)=\($0.1)" }.joined(separator: " ") } ?? "\(result)" }
        }
        try client.getProperty("org.tonearm.Player", "/org/tonearm/Player", "org.tonearm.Player", "Volume", reply: note("volume"))
        try client.getProperty("org.tonearm.Player", "/org/tonearm/Player", "org.tonearm.Player", "Colour", reply: note("unknown"))
        try client.getProperty("org.tonearm.Player", "/org/tonearm/Player", "org.tonearm.Player", "Broken", reply: note("broken"))
        try client.setProperty("org.tonearm.Player", "/org/tonearm/Player", "org.tonearm.Player", "Volume", .double(0.75)) { result in
            answers.value.withLock { $0["set"] = (try? result.get()) != nil ? "ok" : "\(result)" }
        }
        XCTAssertTrue(pump([client, server]) { answers.value.withLock { $0.count } == 5 }, "\(answers.value.withLock { $0 })")
        let got = answers.value.withLock { $0 }
        XCTAssertEqual(got["all"], "Volume=double(0.5) Name=string(\"test\")")
        XCTAssertEqual(got["volume"], "double(0.5)")
        XCTAssertTrue(got["unknown"]?.contains("no such property") ?? false, got["unknown"] ?? "")
        XCTAssertTrue(got["broken"]?.contains("Get answered s, not a variant") ?? false, got["broken"] ?? "")
        XCTAssertEqual(got["set"], "ok")
        XCTAssertEqual(volume.value.withLock { $0 }, 0.75)

        server.releaseName("org.tonearm.Player")
        XCTAssertTrue(pump([client, server]) { owners.value.withLock { $0.count } == 3 })
        XCTAssertEqual(owners.value.withLock { $0.last }, .some(nil), "gone")
    }

    func testMatchRulesQuoteTheirValues() {
        XCTAssertEqual(DBusConnection.matchRule(path: "/a", member: "Seeked"), "type='signal',path='/a',member='Seeked'")
        XCTAssertEqual(DBusConnection.matchRule(sender: "org.x", interface: "i", arg0: "it's"),
                       "type='signal',sender='org.x',interface='i',arg0='it'\\''s'")
    }

    func testANameOwnedElsewhereIsWaitedForInTheQueue() throws {
        let first = try DBusConnection(.address(address))
        XCTAssertEqual(try first.requestName("org.tonearm.Queue", queue: true), .owned)
        let second = try DBusConnection(.address(address))
        let acquired = Box(false)
        try second.subscribe("type='signal',sender='org.freedesktop.DBus',member='NameAcquired',arg0='org.tonearm.Queue'") { _ in
            acquired.value.withLock { $0 = true }
        }
        XCTAssertEqual(try second.requestName("org.tonearm.Queue", queue: true), .queued(ownerPID: getpid()), "the owner is this process")
        try second.process()
        XCTAssertFalse(acquired.value.withLock { $0 }, "not while the first holds it")
        first.releaseName("org.tonearm.Queue")
        XCTAssertTrue(pump([first, second]) { acquired.value.withLock { $0 } }, "the name passed to the next in line")
        // The bus's own answer (busctl status reads credentials that a chroot may not give).
        let owner = try busctl(["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                "GetNameOwner", "s", "org.tonearm.Queue"])
        XCTAssertEqual(owner.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "s \"\(second.uniqueName)\"",
                       owner.stdout + owner.stderr)
    }
}

/// The adapters in a GetManagedObjects answer: the path keys whose interfaces hold Media1.
private func AVRCPAdapters(in objects: DBusValue?) -> [String] {
    guard let objects else { return [] }
    return objects.keys.filter { objects[$0]?["org.bluez.Media1"] != nil }
}

/// A value closures on several threads share.
private final class Box<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}
