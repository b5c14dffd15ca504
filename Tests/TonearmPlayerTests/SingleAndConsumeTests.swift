import TonearmPlayer
import XCTest

/// MPD's single and consume as player modes, and the album test ReplayGain's auto mode uses.
final class SingleAndConsumeTests: XCTestCase {
    func testSingleStopsAfterTheItemOrRepeatsItWithRepeat() {
        var core = playing(3)
        let outcome = core.setSingle(.on)
        XCTAssertEqual(outcome.actions, [.upcomingChanged], "track 2 was queued after track 1")
        XCTAssertNil(core.upcoming(after: 1), "the queue ends after the current item")
        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .all), now: 1)
        XCTAssertEqual(core.upcoming(after: 1)?.id, 1, "single with repeat: the item again")
        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .off), now: 1)
        XCTAssertEqual(core.setSingle(.off).actions, [.upcomingChanged])
        XCTAssertEqual(core.upcoming(after: 1)?.id, 2)
        XCTAssertEqual(core.setSingle(.off).actions, [], "no change, nothing to do")
    }

    func testSingleStopsAtTheEndAndKeepsTheQueue() {
        var core = playing(3)
        _ = core.setSingle(.on)
        _ = core.engineReachedEndOfQueue(now: 200)
        XCTAssertEqual(core.state, .stopped)
        XCTAssertEqual(core.queue.count, 3)
        XCTAssertEqual(core.single, .on, "single stays on")
    }

    func testOneshotStopsOnceThenTurnsItselfOff() {
        var core = playing(3)
        _ = core.setSingle(.oneshot)
        XCTAssertNil(core.upcoming(after: 1))
        _ = core.engineReachedEndOfQueue(now: 200)
        XCTAssertEqual(core.state, .stopped)
        XCTAssertEqual(core.single, .off)
        XCTAssertEqual(core.upcoming(after: 1)?.id, 2)
    }

    func testOneshotWithRepeatRepeatsOnceThenGoesOn() {
        var core = playing(3)
        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .all), now: 0)
        _ = core.setSingle(.oneshot)
        XCTAssertEqual(core.upcoming(after: 1)?.id, 1)
        // The engine went round to the item's start by itself.
        let publications = core.engineStartedItem(1, at: 0, heardAt: 200, now: 200)
        XCTAssertEqual(publications.map(\.reason), [.trackChanged])
        XCTAssertEqual(core.single, .off)
        XCTAssertEqual(core.upcoming(after: 1)?.id, 2)
    }

    func testConsumeRemovesWhatPlayedOnATrackChangeANextAndTheEnd() {
        var core = playing(4)
        _ = core.setConsume(true)
        XCTAssertTrue(core.consume)
        XCTAssertEqual(core.queue.count, 4, "turning consume on removes nothing")
        _ = core.engineStartedItem(2, at: 0, heardAt: 200, now: 200)
        XCTAssertEqual(core.queue.map(\.id), [2, 3, 4], "track 1 played and went")
        XCTAssertEqual(core.currentItemID, 2)
        XCTAssertEqual(core.nowPlaying.queueIndex, 0)
        XCTAssertEqual(core.nowPlaying.queueCount, 3)

        _ = core.send(CommandRequest(.nextTrack), now: 210)
        XCTAssertEqual(core.queue.map(\.id), [3, 4], "next consumes the item it leaves")
        XCTAssertEqual(core.currentItemID, 3)

        _ = core.send(CommandRequest(.previousTrack), now: 211)
        XCTAssertEqual(core.queue.map(\.id), [3, 4], "previous restarts, it consumes nothing")

        _ = core.send(CommandRequest(.nextTrack), now: 220)
        _ = core.engineReachedEndOfQueue(now: 420)
        XCTAssertEqual(core.queue.map(\.id), [], "the last item went at the end")
        XCTAssertNil(core.currentItemID)
        XCTAssertEqual(core.state, .stopped)
    }

    func testConsumeOffKeepsEverything() {
        var core = playing(2)
        _ = core.engineStartedItem(2, at: 0, heardAt: 200, now: 200)
        _ = core.engineReachedEndOfQueue(now: 400)
        XCTAssertEqual(core.queue.count, 2)
        XCTAssertEqual(core.currentItemID, 2)
    }

    func testAlbumInOrderNeedsANeighbourOfTheSameAlbumAndNoShuffle() {
        var core = PlayerCore(randomSeed: 1)
        var items = tracks(3)
        items.append((path: "/music/Other/1.flac", metadata: TrackMetadata(title: "Lone", album: "Other")))
        items.append((path: "/music/none.flac", metadata: TrackMetadata(title: "No album")))
        _ = core.add(items, now: 0)
        XCTAssertEqual((1...5).map { core.albumInOrder($0) }, [true, true, true, false, false])
        XCTAssertFalse(core.albumInOrder(99))
        _ = core.handle(CommandRequest(.changeShuffleMode, shuffle: true), now: 0)
        XCTAssertEqual((1...5).map { core.albumInOrder($0) }, [false, false, false, false, false])
    }
}
