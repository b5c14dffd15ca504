import TonearmPlayer
import XCTest

final class QueueTests: XCTestCase {
    func testAddGivesFreshIdsThatAreNeverReused() {
        var core = PlayerCore(randomSeed: 1)
        XCTAssertEqual(core.add([], now: 0), CommandOutcome(status: .noSuchContent))
        var outcome = core.add(tracks(2), now: 0)
        XCTAssertEqual(outcome.status, .success)
        XCTAssertEqual(outcome.actions, [])
        XCTAssertEqual(outcome.publications.map(\.reason), [.queueChanged])
        XCTAssertEqual(outcome.publications.first?.info.queueCount, 2)
        XCTAssertEqual(core.queue.map(\.id), [1, 2])
        XCTAssertEqual(core.queue.map(\.path), ["/music/Album/1.flac", "/music/Album/2.flac"])
        XCTAssertNil(core.currentItemID, "adding does not pick a current item")
        _ = core.remove(itemID: 2, now: 1)
        outcome = core.add(tracks(1), now: 2)
        XCTAssertEqual(core.queue.map(\.id), [1, 3])
        _ = core.clear(now: 3)
        _ = core.add(tracks(1), now: 4)
        XCTAssertEqual(core.queue.map(\.id), [4])
    }

    func testAddingAfterTheLastItemChangesTheUpcomingOne() {
        var core = Fixture(count: 3, current: 3, state: .playing).make().core
        let outcome = core.add(tracks(1), now: 10)
        XCTAssertEqual(outcome.actions, [.upcomingChanged])
        XCTAssertEqual(outcome.publications.map(\.reason), [.queueChanged])
        XCTAssertEqual(outcome.publications.map(\.isReplacement), [false])
        XCTAssertEqual(core.nowPlaying.queueCount, 4)
        XCTAssertEqual(core.nowPlaying.elapsed, 0, "the anchor did not move")
        XCTAssertEqual(core.upcoming(after: 3)?.id, 4)
        XCTAssertTrue(core.isEnabled(.nextTrack))

        core = Fixture(count: 3, current: 1, state: .playing).make().core
        XCTAssertEqual(core.add(tracks(1), now: 10).actions, [])
        core = Fixture(count: 3, current: 3, state: .stopped).make().core
        XCTAssertEqual(core.add(tracks(1), now: 10).actions, [], "nothing is pre-queued when stopped")
    }

    func testRemovingOtherItems() {
        var core = playing(3)
        var outcome = core.remove(itemID: 2, now: 5)
        XCTAssertEqual(outcome.status, .success)
        XCTAssertEqual(outcome.actions, [.upcomingChanged])
        XCTAssertEqual(outcome.publications.map(\.reason), [.queueChanged])
        XCTAssertEqual(core.nowPlaying.queueCount, 2)
        XCTAssertEqual(core.upcoming(after: 1)?.id, 3)
        XCTAssertEqual(core.remove(itemID: 2, now: 5), CommandOutcome(status: .noSuchContent))

        core = Fixture(count: 3, current: 2, state: .playing).make().core
        outcome = core.remove(itemID: 1, now: 10)
        XCTAssertEqual(outcome.actions, [], "the item after the current one is unchanged")
        XCTAssertEqual(outcome.publications.first?.info.queueIndex, 0)
        XCTAssertEqual(outcome.publications.first?.info.queueCount, 2)
        XCTAssertEqual(core.currentIndex, 0)
    }

    func testRemovingTheCurrentItem() {
        var core = Fixture(count: 3, current: 2, state: .playing).make().core
        var outcome = core.remove(itemID: 2, now: 10)
        XCTAssertEqual(outcome.actions, [.play(itemID: 3, from: 0)])
        XCTAssertEqual(outcome.publications.map(\.reason), [.trackChanged])
        XCTAssertEqual(outcome.publications.map(\.isReplacement), [true])
        XCTAssertEqual(core.currentItemID, 3)
        XCTAssertEqual(core.nowPlaying.queueCount, 2)

        core = Fixture(count: 3, current: 3, state: .playing).make().core
        outcome = core.remove(itemID: 3, now: 10)
        XCTAssertEqual(outcome.actions, [.stop])
        XCTAssertEqual(outcome.publications.map(\.reason), [.stopped])
        XCTAssertEqual(outcome.publications.map(\.isReplacement), [true])
        XCTAssertEqual(core.state, .stopped)
        XCTAssertNil(core.currentItemID)
        XCTAssertNil(core.nowPlaying.title)
        XCTAssertEqual(core.nowPlaying.queueCount, 2)
        XCTAssertEqual(core.handle(CommandRequest(.nextTrack), now: 11).status, .noActionableNowPlayingItem)
        XCTAssertEqual(core.handle(CommandRequest(.play), now: 11).actions, [.play(itemID: 1, from: 0)])

        core = Fixture(count: 3, current: 3, state: .playing, repeatMode: .all).make().core
        XCTAssertEqual(core.remove(itemID: 3, now: 10).actions, [.play(itemID: 1, from: 0)])

        core = Fixture(count: 3, current: 1, state: .paused).make().core
        outcome = core.remove(itemID: 1, now: 15)
        XCTAssertEqual(outcome.actions, [.stop])
        XCTAssertEqual(core.state, .paused)
        XCTAssertEqual(core.currentItemID, 2)

        core = Fixture(count: 3, current: 1, state: .stopped).make().core
        outcome = core.remove(itemID: 1, now: 15)
        XCTAssertEqual(outcome.actions, [])
        XCTAssertEqual(outcome.publications.map(\.reason), [.trackChanged])
        XCTAssertEqual(core.state, .stopped)
        XCTAssertEqual(core.currentItemID, 2)
    }

    /// MPD's `playid`: any item, from its start, from any state.
    func testPlayItem() {
        var core = playing(3)
        XCTAssertEqual(core.playItem(9, now: 1), CommandOutcome(status: .noSuchContent))
        var outcome = core.playItem(3, now: 1)
        XCTAssertEqual(outcome.status, .success)
        XCTAssertEqual(core.currentItemID, 3)
        XCTAssertEqual(core.state, .playing)
        XCTAssertTrue(outcome.actions.contains(.play(itemID: 3, from: 0)), "\(outcome.actions)")
        XCTAssertEqual(outcome.publications.map(\.reason), [.trackChanged])

        _ = core.handle(CommandRequest(.stop), now: 2)
        outcome = core.playItem(2, now: 3)
        XCTAssertEqual(core.state, .playing)
        XCTAssertEqual(core.currentItemID, 2)
        XCTAssertTrue(outcome.actions.contains(.play(itemID: 2, from: 0)), "\(outcome.actions)")

        _ = core.handle(CommandRequest(.pause), now: 4)
        outcome = core.playItem(2, now: 5)
        XCTAssertEqual(core.state, .playing)
        XCTAssertTrue(outcome.actions.contains(.play(itemID: 2, from: 0)), "the same item starts again: \(outcome.actions)")
    }

    func testMove() {
        var core = playing(3)
        XCTAssertEqual(core.move(itemID: 9, to: 0, now: 1), CommandOutcome(status: .noSuchContent))
        XCTAssertEqual(core.move(itemID: 3, to: 3, now: 1), CommandOutcome(status: .commandFailed))
        XCTAssertEqual(core.move(itemID: 3, to: -1, now: 1), CommandOutcome(status: .commandFailed))
        XCTAssertEqual(core.move(itemID: 3, to: 2, now: 1), CommandOutcome(status: .success))

        var outcome = core.move(itemID: 3, to: 1, now: 1)
        XCTAssertEqual(core.queue.map(\.id), [1, 3, 2])
        XCTAssertEqual(outcome.actions, [.upcomingChanged])
        XCTAssertEqual(outcome.publications, [], "the current item's index did not change")
        XCTAssertEqual(core.upcoming(after: 1)?.id, 3)

        outcome = core.move(itemID: 1, to: 2, now: 2)
        XCTAssertEqual(core.queue.map(\.id), [3, 2, 1])
        XCTAssertEqual(outcome.actions, [.upcomingChanged])
        XCTAssertEqual(outcome.publications.map(\.reason), [.queueChanged])
        XCTAssertEqual(core.nowPlaying.queueIndex, 2)
        XCTAssertEqual(core.currentIndex, 2)
        XCTAssertFalse(core.isEnabled(.nextTrack))
    }

    func testClear() {
        var core = PlayerCore(randomSeed: 1)
        XCTAssertEqual(core.clear(now: 0), CommandOutcome(status: .success))
        _ = core.add(tracks(2), now: 0)
        var outcome = core.clear(now: 1)
        XCTAssertEqual(outcome.actions, [])
        XCTAssertEqual(outcome.publications.map(\.reason), [.queueChanged])
        XCTAssertEqual(outcome.publications.map(\.isReplacement), [false])

        core = Fixture(count: 3, current: 2, state: .paused).make().core
        outcome = core.clear(now: 20)
        XCTAssertEqual(outcome.actions, [.stop])
        XCTAssertEqual(outcome.publications.map(\.reason), [.stopped])
        XCTAssertEqual(core.queue, [])
        XCTAssertEqual(core.state, .stopped)
        XCTAssertFalse(core.enabledCommands.values.contains(true))
    }

    func testVolume() {
        var core = PlayerCore(randomSeed: 1)
        XCTAssertEqual(core.volume, 100)
        XCTAssertEqual(core.setVolume(40, now: 0), CommandOutcome(status: .success, actions: [.setVolume(40)]))
        XCTAssertEqual(core.setVolume(40, now: 0), CommandOutcome(status: .success))
        XCTAssertEqual(core.setVolume(-3, now: 0).actions, [.setVolume(0)])
        XCTAssertEqual(core.setVolume(150, now: 0).actions, [.setVolume(100)])
        XCTAssertEqual(core.setVolume(.nan, now: 0), CommandOutcome(status: .commandFailed))
        XCTAssertEqual(core.volume, 100)
    }

    func testAFailedCurrentItemMovesOn() {
        var core = PlayerCore(randomSeed: 1)
        _ = core.add(tracks(3), now: 0)
        XCTAssertEqual(core.handle(CommandRequest(.play), now: 0).actions, [.play(itemID: 1, from: 0)])
        var outcome = core.engineFailedItem(1, now: 0.1)
        XCTAssertEqual(outcome.status, .success)
        XCTAssertEqual(outcome.actions, [.play(itemID: 2, from: 0)])
        XCTAssertEqual(outcome.publications.map(\.reason), [.trackChanged])
        XCTAssertEqual(core.currentItemID, 2)
        XCTAssertEqual(core.state, .playing)

        // Automatic transitions skip it from now on.
        _ = core.engineStartedItem(2, at: 0, heardAt: 0.2, now: 0.2)
        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .all), now: 1)
        XCTAssertEqual(core.upcoming(after: 3)?.id, 2)

        // The last playable item failing stops.
        _ = core.send(CommandRequest(.nextTrack), now: 2)
        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .off), now: 2)
        outcome = core.engineFailedItem(3, now: 3)
        XCTAssertEqual(outcome.actions, [.stop])
        XCTAssertEqual(outcome.publications.map(\.reason), [.stopped])
        XCTAssertEqual(core.state, .stopped)
        XCTAssertEqual(core.currentItemID, 3)
        XCTAssertEqual(core.engineFailedItem(42, now: 4), CommandOutcome(status: .noSuchContent))
    }

    func testAFailedUpcomingItemIsSkipped() {
        var core = playing(3)
        var outcome = core.engineFailedItem(2, now: 5)
        XCTAssertEqual(outcome, CommandOutcome(status: .success, actions: [.upcomingChanged]))
        XCTAssertEqual(core.currentItemID, 1)
        XCTAssertEqual(core.upcoming(after: 1)?.id, 3)
        // Chosen explicitly, it is tried again, and playing clears it.
        XCTAssertEqual(core.handle(CommandRequest(.nextTrack), now: 6).actions, [.play(itemID: 2, from: 0)])
        _ = core.engineStartedItem(2, at: 0, heardAt: 6, now: 6)
        _ = core.send(CommandRequest(.previousTrack), now: 7)
        XCTAssertEqual(core.upcoming(after: 1)?.id, 2)

        // With repeat all and everything failing, it stops.
        core = playing(2)
        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .all), now: 0)
        outcome = core.engineFailedItem(1, now: 1)
        XCTAssertEqual(outcome.actions, [.play(itemID: 2, from: 0)])
        outcome = core.engineFailedItem(2, now: 1.1)
        XCTAssertEqual(outcome.actions, [.stop])
        XCTAssertEqual(core.state, .stopped)
        XCTAssertNil(core.upcoming(after: 1))
    }
}
