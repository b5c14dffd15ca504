import Logging
import TestSupport
@testable import TonearmDaemon
import TonearmConfig
import TonearmControlPlane
import TonearmPlayer
import XCTest

/// The daemon as its plug-ins see it: commands in, one snapshot, changes grouped by subsystem.
/// The device is one alsa-lib does not have: the player stays playing while the output waits
/// for it (as it does for a DAC not plugged in yet), so nothing depends on how fast a device
/// plays; the commands and the state are the point.
final class DaemonControlPlaneTests: XCTestCase {
    var directory: TemporaryDirectory!
    var daemon: PlayerDaemon!
    let source = CommandSource("test", client: 3)

    override func setUp() async throws {
        directory = try TemporaryDirectory(prefix: "tonearm-plane")
        var config = DaemonConfig()
        config.output.device = "tonearm_no_such_device"
        config.daemon.stateDirectory = directory.file("state")
        config.daemon.socket = directory.file("control.sock")
        daemon = try PlayerDaemon(settings: DaemonSettings(config: config),
                                  logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        await daemon.start()
    }

    override func tearDown() async throws {
        await daemon.stop()
    }

    func tracks(_ count: Int) throws -> [String] {
        try (1...count).map { n in
            try FLACFixture(frames: 4410, tags: [("TITLE", "Track \(n)")]).write(to: directory.file("t\(n).flac"))
        }
    }

    /// The next batch of changes, within a few seconds.
    func next(_ iterator: inout ChangeSubscription.AsyncIterator) async -> ChangeBatch? {
        await iterator.next()
    }

    func testTheQueueHasAVersionThatChangesWithItAndIdsThatSurviveMoves() async throws {
        let changes = daemon.subscribe([.queue])
        var iterator = changes.makeAsyncIterator()
        let before = await daemon.snapshot().queue.version

        let added = await daemon.send(.queue(.add(paths: try tracks(3), at: nil)), from: source)
        XCTAssertEqual(added.payload, .added(count: 3, skipped: [], queueCount: 3))
        let afterAdd = await next(&iterator)
        XCTAssertEqual(afterAdd?.subsystems, [.queue])
        let queue = await daemon.snapshot().queue
        XCTAssertGreaterThan(queue.version, before)
        let ids = queue.items.map(\.id)

        let moved = await daemon.send(.queue(.move(itemID: ids[2], to: 0)), from: source)
        XCTAssertEqual(moved.status, .success)
        _ = await next(&iterator)
        let after = await daemon.snapshot().queue
        XCTAssertGreaterThan(after.version, queue.version)
        XCTAssertEqual(after.items.map(\.id), [ids[2], ids[0], ids[1]], "ids stay with their items")

        // Inserted at a position, in order.
        let inserted = await daemon.send(.queue(.add(paths: try tracks(1), at: 1)), from: source)
        XCTAssertEqual(inserted.status, .success)
        _ = await next(&iterator)
        let withInsert = await daemon.snapshot().queue
        XCTAssertEqual(withInsert.items.count, 4)
        XCTAssertEqual(withInsert.items[0].id, ids[2])
        XCTAssertFalse(ids.contains(withInsert.items[1].id), "the new item is second")

        // A command that changes nothing in the queue leaves the version alone.
        let version = withInsert.version
        _ = await daemon.send(.volume(.set(30)), from: source)
        let value1 = await daemon.snapshot().queue.version
        XCTAssertEqual(value1, version)

        let removed = await daemon.send(.queue(.remove(itemIDs: [ids[0]])), from: source)
        XCTAssertEqual(removed.payload, .queueCount(3))
        let afterRemove = await daemon.snapshot().queue
        XCTAssertGreaterThan(afterRemove.version, version)
        let unknown = await daemon.send(.queue(.remove(itemIDs: [999])), from: source)
        XCTAssertEqual(unknown.status, .noSuchContent)
        let value2 = await daemon.snapshot().queue.version
        XCTAssertEqual(value2, afterRemove.version)

        // What changed since a version: the removal moved every item after the first up one.
        XCTAssertEqual(afterRemove.items.map(\.id), [ids[2], withInsert.items[1].id, ids[1]])
        XCTAssertEqual(afterRemove.positionsChanged(since: afterRemove.version), [])
        XCTAssertEqual(afterRemove.positionsChanged(since: version), [2], "positions 0 and 1 kept their items")
        XCTAssertEqual(afterRemove.positionsChanged(since: queue.version), [0, 1, 2])
        XCTAssertEqual(afterRemove.positionsChanged(since: afterRemove.version + 5), [0, 1, 2], "a version it never had")
        let swapped = await daemon.send(.queue(.move(itemID: ids[1], to: 1)), from: source)
        XCTAssertEqual(swapped.status, .success)
        let afterSwap = await daemon.snapshot().queue
        XCTAssertEqual(afterSwap.positionsChanged(since: afterRemove.version), [1, 2], "the two that traded places")
    }

    func testThePublishedStateHoldsEachChangeBeforeItsResultAndItsBatch() async throws {
        _ = await daemon.send(.queue(.add(paths: try tracks(2), at: nil)), from: source)
        XCTAssertEqual(daemon.published.queue.items.count, 2, "a command's change, once its result is back")
        let snapshot = await daemon.snapshot()
        XCTAssertEqual(daemon.published.queue, snapshot.queue)
        _ = await daemon.send(.volume(.set(40)), from: source)
        XCTAssertEqual(daemon.published.volume, 40)

        // A subscriber woken by a batch finds its change published.
        let changes = daemon.subscribe([.options])
        var iterator = changes.makeAsyncIterator()
        _ = await daemon.send(.remote(CommandRequest(.changeRepeatMode, repeatMode: .all)), from: source)
        let batch = await next(&iterator)
        XCTAssertEqual(batch?.subsystems.contains(.options), true)
        XCTAssertEqual(daemon.published.repeatMode, .all)
        let now = await daemon.snapshot()
        XCTAssertEqual(daemon.published.volume, now.volume)
        XCTAssertEqual(daemon.published.transport, now.transport)
    }

    func testChangesComeGroupedBySubsystem() async throws {
        _ = await daemon.send(.queue(.add(paths: try tracks(2), at: nil)), from: source)
        let changes = daemon.subscribe(Set(Subsystem.allCases))
        var iterator = changes.makeAsyncIterator()

        _ = await daemon.send(.volume(.set(40)), from: source)
        let value3 = await next(&iterator)?.subsystems
        XCTAssertEqual(value3, [.mixer])
        _ = await daemon.send(.volume(.step(-5)), from: source)
        let value4 = await next(&iterator)?.subsystems
        XCTAssertEqual(value4, [.mixer])
        let value5 = await daemon.snapshot().volume
        XCTAssertEqual(value5, 35)

        _ = await daemon.send(.remote(CommandRequest(.changeRepeatMode, repeatMode: .all)), from: source)
        let value6 = await next(&iterator)?.subsystems.contains(.options)
        XCTAssertEqual(value6, true)

        _ = await daemon.send(.mute(.toggle), from: source)
        let muted = await next(&iterator)
        XCTAssertEqual(muted?.subsystems.contains(.mixer), true)
        XCTAssertEqual(muted?.subsystems.contains(.sessions), true)
        let value7 = await daemon.snapshot().muted
        XCTAssertTrue(value7)

        let play = await daemon.send(.remote(CommandRequest(.play)), from: source)
        XCTAssertEqual(play.status, .success)
        let started = await next(&iterator)
        XCTAssertEqual(started?.subsystems.contains(.player), true)
        XCTAssertEqual(started?.publications.first?.reason, .playbackStarted)
        let value8 = await daemon.snapshot().transport
        XCTAssertEqual(value8, .playing)
    }

    func testAButtonWithoutAMenuStepsRepeatAndTogglesShuffle() async throws {
        _ = await daemon.send(.queue(.add(paths: try tracks(2), at: nil)), from: source)
        for expected: RepeatMode in [.all, .one, .off] {
            _ = await daemon.send(.remote(CommandRequest(.changeRepeatMode)), from: source)
            let value9 = await daemon.snapshot().repeatMode
            XCTAssertEqual(value9, expected)
        }
        _ = await daemon.send(.remote(CommandRequest(.changeShuffleMode)), from: source)
        let value10 = await daemon.snapshot().shuffle
        XCTAssertTrue(value10)
        _ = await daemon.send(.remote(CommandRequest(.changeShuffleMode)), from: source)
        let value11 = await daemon.snapshot().shuffle
        XCTAssertFalse(value11)
    }

    func testBadCommandsFailWithWhatWasWrong() async throws {
        let volume = await daemon.send(.volume(.set(140)), from: source)
        XCTAssertEqual(volume.failure?.code, .badArgument)
        let missing = await daemon.send(.queue(.add(paths: [directory.file("nope.flac")], at: nil)), from: source)
        XCTAssertEqual(missing.failure?.code, .notFound)
        let artwork = await daemon.send(.artwork(id: "x"), from: source)
        XCTAssertEqual(artwork.failure, CommandFailure(.notFound, "no artwork with id 'x'"))
        let session = await daemon.send(.session(.activate(42)), from: CommandSource("a button"))
        XCTAssertEqual(session.failure?.message, "a button has no sessions of its own")
        let foreign = await daemon.send(.session(.activate(1)), from: source)
        XCTAssertEqual(foreign.failure?.message, "session 1 belongs to another client")
    }

    /// The seeds' rule, at the control plane: a remote command from any source goes to the client
    /// session that owns Now Playing, and to the player when none does.
    func testRemoteCommandsGoToTheNowPlayingOwnerWhateverTheirSource() async throws {
        _ = await daemon.send(.queue(.add(paths: try tracks(2), at: nil)), from: source)
        _ = await daemon.send(.remote(CommandRequest(.play)), from: source)
        let app = CommandSource("app", client: daemon.newClient())
        let opened = await daemon.send(.session(.open(SessionSetup(category: .playback), remoteCommands: true)), from: app)
        guard case .session(let report) = opened.payload else { return XCTFail("\(opened)") }
        let session = report.state.id
        let changes = daemon.subscribe([.sessions])
        var iterator = changes.makeAsyncIterator()
        _ = await daemon.send(.session(.activate(session)), from: app)
        let value12 = await daemon.snapshot().sessions.nowPlayingOwner
        XCTAssertEqual(value12, session)

        let sources = ["socket client 1", "button pause (gpiochip0 line 17)", "input /dev/input/event3", "display"]
        var notices: [Notice] = []
        for name in sources {
            let result = await daemon.send(.remote(CommandRequest(.pause)), from: CommandSource(name))
            XCTAssertEqual(result, CommandResult(status: .success, forwardedTo: session), name)
        }
        while notices.count < sources.count, let batch = await next(&iterator) {
            notices += batch.notices.filter { if case .remoteCommand = $0 { true } else { false } }
        }
        XCTAssertEqual(notices, Array(repeating: .remoteCommand(owner: app.client!, session: session, CommandRequest(.pause)), count: 4))

        _ = await daemon.send(.session(.close(session)), from: app)
        let value13 = await daemon.snapshot().sessions.nowPlayingOwner
        XCTAssertEqual(value13, 1)
        for name in sources {
            _ = await daemon.send(.remote(CommandRequest(.play)), from: CommandSource(name))
            let value14 = await daemon.snapshot().transport
            XCTAssertEqual(value14, .playing, name)
            let result = await daemon.send(.remote(CommandRequest(.pause)), from: CommandSource(name))
            XCTAssertEqual(result, CommandResult(status: .success), name)
            let value15 = await daemon.snapshot().transport
            XCTAssertEqual(value15, .paused, name)
        }
    }
}
