import Foundation
import Synchronization
import TestSupport
import TonearmControlPlane
import TonearmDBus
@testable import TonearmMPRIS
import TonearmPlayer
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The link plug-in against a test control plane and a player served on a private bus by this
/// test (with the wrapper's own serving side): what it publishes, and what the commands the
/// control plane sends it become.
final class MPRISLinkPlugInTests: XCTestCase {
    private var bus: PrivateBus!
    private var address = ""
    private var directory: TemporaryDirectory!
    private static let name = "org.mpris.MediaPlayer2.Fake"

    override func setUpWithError() throws {
        guard toolsAvailable("dbus-daemon") else { throw XCTSkip("dbus-daemon is not installed; run ./scripts/setup") }
        directory = try TemporaryDirectory(prefix: "tonearm-link")
        address = "unix:path=" + directory.file("bus")
        bus = try PrivateBus(address: address, log: directory.file("bus-log"))
    }

    override func tearDown() {
        bus?.stop()
    }

    /// A player this test drives by hand: its properties, and the calls it was made.
    private final class FakePlayer: @unchecked Sendable {
        let connection: DBusConnection
        var properties: [(String, DBusValue)]
        let calls = Mutex<[String]>([])

        /// `serving: false` leaves the object to `serve()`, later.
        init(address: String, properties: [(String, DBusValue)], serving: Bool = true) throws {
            connection = try DBusConnection(.address(address))
            self.properties = properties
            if serving { try serve() }
        }

        func serve() throws {
            try connection.serve("/org/mpris/MediaPlayer2") { [unowned self] call in
                switch (call.interface, call.member) {
                case (DBusConnection.propertiesInterface, "GetAll"):
                    return .values([.dictionary(self.properties)])
                case (DBusConnection.propertiesInterface, "Get"):
                    let name = call.arguments.last?.string ?? ""
                    guard let value = self.properties.first(where: { $0.0 == name })?.1 else {
                        return .error(name: DBusReply.unknownProperty, message: "no \(name)")
                    }
                    return .values([.variant(value)])
                case (DBusConnection.propertiesInterface, "Set"):
                    let value = LinkedMetadata.boolean(call.arguments[2]).map(String.init) ?? call.arguments[2].string ?? "?"
                    self.calls.withLock { $0.append("Set \(call.arguments[1].string ?? "") \(value)") }
                    return .values([])
                default:
                    self.calls.withLock { $0.append(([call.member] + call.arguments.map { "\($0)" }).joined(separator: " ")) }
                    return .values([])
                }
            }
        }

        func set(_ name: String, _ value: DBusValue) {
            properties.removeAll { $0.0 == name }
            properties.append((name, value))
        }

        /// Says `names` changed; their values with them unless `invalidated`.
        func signal(_ names: [String], invalidated: Bool = false) throws {
            let changed = invalidated ? [] : properties.filter { names.contains($0.0) }
            try connection.emit("/org/mpris/MediaPlayer2", interface: DBusConnection.propertiesInterface, member: "PropertiesChanged",
                                [.string(MPRISProperties.player), .dictionary(changed), .array(element: "s", invalidated ? names.map { .string($0) } : [])])
            connection.flush()
        }
    }

    /// Processes the fake player's bus until `done`, within 20 s.
    private func pump(_ player: FakePlayer, until done: () -> Bool) -> Bool {
        let deadline = monotonicSeconds() + 20
        while !done() {
            guard monotonicSeconds() < deadline else { return false }
            var ready = pollfd(fd: player.connection.descriptor, events: player.connection.events, revents: 0)
            _ = poll(&ready, 1, 20)
            try? player.connection.process()
        }
        return true
    }

    /// What the plug-in has published, in order.
    private func published(_ plane: TestControlPlane) -> [LinkedPlayer] {
        plane.commands.compactMap { command in
            if case .link(.publish(let linked)) = command { linked } else { nil }
        }
    }

    private static let metadata: DBusValue = .dictionary([
        ("mpris:trackid", .objectPath("/fake/1")), ("xesam:title", .string("First")),
        ("xesam:artist", .array(element: "s", [.string("A"), .string("B")])), ("mpris:length", .int64(60_000_000)),
    ])

    func testItPublishesThePlayerAndCarriesOutTheCommands() throws {
        let plane = TestControlPlane()
        let log = TestLog()
        let running = RunningPlugIn(MPRISLinkPlugIn(sessionName: "fake", busName: Self.name, bus: .address(address)), on: plane, log: log.log)
        defer { running.stop() }
        // Claimed at once, nobody there.
        XCTAssertTrue(waitUntil(timeout: 10) { !self.published(plane).isEmpty })
        XCTAssertEqual(published(plane).first, LinkedPlayer(sessionName: "fake", player: "\(Self.name) on the bus \(address)", playing: nil))

        let player = try FakePlayer(address: address, properties: [
            ("PlaybackStatus", .string("Playing")), ("Metadata", Self.metadata), ("Position", .int64(2_000_000)),
            ("CanGoNext", .boolean(true)), ("CanSeek", .boolean(false)),
        ])
        try player.connection.requestName(Self.name)
        XCTAssertTrue(pump(player) { self.published(plane).last?.playing != nil }, "seen when it appears: \(plane.commands)")
        var playing = try XCTUnwrap(published(plane).last?.playing)
        XCTAssertEqual(playing.info.title, "First")
        XCTAssertEqual(playing.info.artist, "A, B")
        XCTAssertEqual(playing.info.elapsed, 2)
        XCTAssertEqual(playing.transport, .playing)
        XCTAssertEqual(playing.reason, .trackChanged)
        XCTAssertEqual(playing.enabledCommands[.changePlaybackPosition], false)

        // A remote command for this plug-in's client becomes the method; one for another
        // client is not its business.
        plane.feed.publish(ChangeBatch(notices: [
            .remoteCommand(owner: 99, session: 5, CommandRequest(.pause)),
            .remoteCommand(owner: 1, session: 5, CommandRequest(.nextTrack)),
            .remoteCommand(owner: 1, session: 5, CommandRequest(.changeShuffleMode)),
        ]))
        XCTAssertTrue(pump(player) { player.calls.withLock { $0.count } == 2 })
        XCTAssertEqual(player.calls.withLock { $0 }, ["Next", "Set Shuffle true"])

        // A new item said only by name (invalidated): read, then published, with a position read.
        player.set("Metadata", .dictionary([("mpris:trackid", .objectPath("/fake/2")), ("xesam:title", .string("Second"))]))
        player.set("Position", .int64(0))
        let before = published(plane).count
        try player.signal(["Metadata"], invalidated: true)
        XCTAssertTrue(pump(player) { self.published(plane).count > before && self.published(plane).last?.playing?.info.title == "Second" })
        playing = try XCTUnwrap(published(plane).last?.playing)
        XCTAssertEqual(playing.reason, .trackChanged)
        XCTAssertEqual(playing.info.elapsed, 0)

        // A pause: the position is read, then one publication says so.
        player.set("PlaybackStatus", .string("Paused"))
        player.set("Position", .int64(7_500_000))
        try player.signal(["PlaybackStatus"])
        XCTAssertTrue(pump(player) { self.published(plane).last?.playing?.reason == .paused })
        playing = try XCTUnwrap(published(plane).last?.playing)
        XCTAssertEqual(playing.info.elapsed, 7.5)
        XCTAssertEqual(playing.info.rate, 0)

        // A Seeked signal: no read, the signal says where.
        try player.connection.emit("/org/mpris/MediaPlayer2", interface: MPRISProperties.player, member: "Seeked", [.int64(30_000_000)])
        player.connection.flush()
        XCTAssertTrue(pump(player) { self.published(plane).last?.playing?.reason == .seek })
        XCTAssertEqual(published(plane).last?.playing?.info.elapsed, 30)

        // It goes: not there.
        player.connection.releaseName(Self.name)
        XCTAssertTrue(pump(player) { self.published(plane).last?.playing == nil })
        XCTAssertEqual(log.texts(at: .warning), [], "nothing went wrong")
        XCTAssertLessThan(running.stop(), 5, "stops, its thread joined")
    }

    /// A player whose name comes before its object (shairport-sync owns its name, then exports
    /// its player): the first read fails, and the player is seen once its object is there,
    /// though nothing signals that.
    func testAPlayerWhoseNameComesBeforeItsObjectIsSeenOnceItIsThere() throws {
        let plane = TestControlPlane()
        let log = TestLog()
        let running = RunningPlugIn(MPRISLinkPlugIn(sessionName: "fake", busName: Self.name, bus: .address(address)), on: plane, log: log.log)
        defer { running.stop() }
        let player = try FakePlayer(address: address, properties: [("PlaybackStatus", .string("Playing")), ("Metadata", Self.metadata)],
                                    serving: false)
        try player.connection.requestName(Self.name)
        XCTAssertTrue(pump(player) { log.texts(at: .warning).contains { $0.contains("cannot read the player's state") } }, "the first read fails")
        try player.serve()
        XCTAssertTrue(pump(player) { self.published(plane).last?.playing?.info.title == "First" }, "seen once it is there: \(plane.commands)")
        XCTAssertEqual(log.texts(at: .warning).count, 1, "one warning, however many reads failed: \(log.texts(at: .warning))")
    }
}
