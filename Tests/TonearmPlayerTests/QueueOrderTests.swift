import TonearmPlayer
import XCTest

/// MPD's `shuffle` (the user's order at random) and `prio` (what random mode plays first).
final class QueueOrderTests: XCTestCase {
    func testShuffleKeepsTheItemsPutsTheCurrentFirstAndIsReproducible() {
        var core = playing(10, seed: 3)
        _ = core.send(CommandRequest(.nextTrack), now: 1)  // current: 2
        let outcome = core.shuffleQueue(nil, now: 2)
        XCTAssertEqual(outcome.status, .success)
        XCTAssertEqual(outcome.publications.map(\.reason), [.queueChanged])
        let ids = core.queue.map(\.id)
        XCTAssertEqual(ids.first, 2, "the current item goes first")
        XCTAssertEqual(ids.sorted(), Array(1...10))
        XCTAssertNotEqual(ids, [2, 1, 3, 4, 5, 6, 7, 8, 9, 10], "the rest moved")
        XCTAssertEqual(core.currentItemID, 2)
        XCTAssertEqual(core.state, .playing)
        XCTAssertEqual(core.upcoming(after: 2)?.id, ids[1], "what follows is the new order")

        var twin = playing(10, seed: 3)
        _ = twin.send(CommandRequest(.nextTrack), now: 1)
        _ = twin.shuffleQueue(nil, now: 2)
        XCTAssertEqual(twin.queue.map(\.id), ids, "one seed, one order")
    }

    func testShufflingARangeLeavesTheRestInPlace() {
        var core = playing(8, seed: 5)
        _ = core.shuffleQueue(4..<8, now: 1)
        let ids = core.queue.map(\.id)
        XCTAssertEqual(Array(ids[0..<4]), [1, 2, 3, 4])
        XCTAssertEqual(ids[4...].sorted(), [5, 6, 7, 8])
        XCTAssertEqual(core.shuffleQueue(6..<9, now: 1).status, .commandFailed, "past the end")
        XCTAssertEqual(core.shuffleQueue(3..<4, now: 1).actions, [], "one item: nothing moves")
    }

    func testPriorityOrdersWhatShufflePlaysNext() {
        var core = playing(10, seed: 9)
        _ = core.handle(CommandRequest(.changeShuffleMode, shuffle: true), now: 1)
        XCTAssertEqual(core.setPriority(200, of: [7], now: 2).status, .success)
        XCTAssertEqual(core.setPriority(100, of: [4, 9], now: 2).status, .success)
        let order = core.shuffleOrder
        XCTAssertEqual(order.first, 1, "the current item stays where it is")
        XCTAssertEqual(order[1], 7, "the highest priority plays next")
        XCTAssertEqual(Set(order[2...3]), [4, 9])
        XCTAssertEqual(core.upcoming(after: 1)?.id, 7)
        XCTAssertEqual(core.queue.first { $0.id == 7 }?.priority, 200)

        XCTAssertEqual(core.setPriority(256, of: [1], now: 3).status, .commandFailed)
        XCTAssertEqual(core.setPriority(1, of: [1, 99], now: 3).status, .noSuchContent)
        XCTAssertEqual(core.queue.first { $0.id == 1 }?.priority, 0, "nothing changed")

        // Without shuffle the priority is kept but the user's order plays.
        var ordered = playing(5)
        _ = ordered.setPriority(50, of: [5], now: 1)
        XCTAssertEqual(ordered.upcoming(after: 1)?.id, 2)
        _ = ordered.handle(CommandRequest(.changeShuffleMode, shuffle: true), now: 2)
        XCTAssertEqual(ordered.upcoming(after: 1)?.id, 5, "turning shuffle on honours it")
    }
}

/// MPD's `rangeid`: part of an item from its next play on.
final class PlayRangeCoreTests: XCTestCase {
    func testARangeAppliesFromTheItemsNextPlayAndNeverToTheOneHeld() {
        var core = playing(3)
        XCTAssertEqual(core.setRange(PlayRange(start: 20, end: 40), of: 1, now: 1).status, .disabled, "the item the engine holds")
        let outcome = core.setRange(PlayRange(start: 20, end: 40), of: 2, now: 1)
        XCTAssertEqual(outcome.status, .success)
        XCTAssertEqual(outcome.actions, [.upcomingChanged], "item 2 was queued to follow: it is queued again")
        XCTAssertEqual(core.queue[1].range, PlayRange(start: 20, end: 40))
        XCTAssertEqual(core.setRange(PlayRange(start: 5), of: 3, now: 1).actions, [], "not what follows now")
        XCTAssertEqual(core.setRange(PlayRange(start: 5, end: 5), of: 3, now: 1).status, .commandFailed)
        XCTAssertEqual(core.setRange(PlayRange(start: -1), of: 3, now: 1).status, .commandFailed)
        XCTAssertEqual(core.setRange(nil, of: 99, now: 1).status, .noSuchContent)

        // A command that moves to the item plays it from its range's start.
        let next = core.handle(CommandRequest(.nextTrack), now: 2)
        XCTAssertEqual(next.actions, [.play(itemID: 2, from: 20)])
        XCTAssertEqual(core.nowPlaying.elapsed, 20)
        XCTAssertEqual(core.setRange(nil, of: 1, now: 3).status, .success, "no longer held")
    }
}
