import TonearmPlayer
import XCTest

final class ShuffleAndRepeatTests: XCTestCase {
    func testUpcomingFollowsRepeat() {
        var core = playing(3)
        XCTAssertEqual(core.upcoming(after: 1)?.id, 2)
        XCTAssertEqual(core.upcoming(after: 2)?.id, 3)
        XCTAssertNil(core.upcoming(after: 3))
        XCTAssertNil(core.upcoming(after: 99))
        XCTAssertEqual(core.upcoming(after: 1)?.path, "/music/Album/2.flac")

        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .one), now: 1)
        XCTAssertEqual(core.upcoming(after: 1)?.id, 1)
        XCTAssertEqual(core.upcoming(after: 3)?.id, 3)
        XCTAssertNil(core.upcoming(after: 99))

        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .all), now: 1)
        XCTAssertEqual(core.upcoming(after: 1)?.id, 2)
        XCTAssertEqual(core.upcoming(after: 3)?.id, 1)
        XCTAssertNil(core.upcoming(after: 99))

        var single = playing(1)
        XCTAssertNil(single.upcoming(after: 1))
        _ = single.handle(CommandRequest(.changeRepeatMode, repeatMode: .all), now: 1)
        XCTAssertEqual(single.upcoming(after: 1)?.id, 1)
    }

    func testShuffleIsDeterministicForASeedAndKeepsTheCurrentItem() {
        func shuffled(seed: UInt64) -> (PlayerCore, CommandOutcome) {
            var core = playing(10, seed: seed)
            _ = core.send(CommandRequest(.nextTrack), now: 1)
            _ = core.send(CommandRequest(.nextTrack), now: 2)
            let outcome = core.handle(CommandRequest(.changeShuffleMode, shuffle: true), now: 3)
            return (core, outcome)
        }
        let (core, outcome) = shuffled(seed: 42)
        let (twin, _) = shuffled(seed: 42)
        let order = core.shuffleOrder
        XCTAssertEqual(order, twin.shuffleOrder)
        XCTAssertEqual(order.count, 10)
        XCTAssertEqual(order.first, 3)
        XCTAssertEqual(order.sorted(), Array(1...10))
        XCTAssertTrue(core.shuffle)
        XCTAssertEqual(core.currentItemID, 3)
        XCTAssertEqual(core.state, .playing)
        XCTAssertEqual(core.queue.map(\.id), Array(1...10), "the user's order does not change")
        XCTAssertEqual(core.currentIndex, 2)
        XCTAssertEqual(outcome.status, .success)
        XCTAssertEqual(outcome.actions, order[1] == 4 ? [] : [.upcomingChanged])
        XCTAssertEqual(outcome.publications.map(\.reason), [.queueChanged])
        XCTAssertEqual(outcome.publications.map(\.isReplacement), [false])
        XCTAssertEqual(core.nowPlaying.queueIndex, 0, "first in play order")
        XCTAssertEqual(core.nowPlaying.elapsed, 0, "the position did not move")
        XCTAssertEqual(core.nowPlaying.timestamp, 2)

        let orders = Set((1...6).map { shuffled(seed: $0).0.shuffleOrder })
        XCTAssertGreaterThan(orders.count, 1, "different seeds give different orders")
        for other in orders { XCTAssertEqual(other.first, 3) }
    }

    func testPlayOrderFollowsTheShuffle() {
        var core = playing(6, seed: 9)
        _ = core.handle(CommandRequest(.changeShuffleMode, shuffle: true), now: 1)
        let order = core.shuffleOrder
        XCTAssertEqual(order.first, 1)
        XCTAssertEqual(core.upcoming(after: 1)?.id, order[1])
        XCTAssertEqual(core.upcoming(after: order[4])?.id, order[5])
        XCTAssertNil(core.upcoming(after: order[5]))
        XCTAssertEqual(core.send(CommandRequest(.nextTrack), now: 2).actions, [.play(itemID: order[1], from: 0)])
        XCTAssertEqual(core.nowPlaying.queueIndex, 1)
        XCTAssertEqual(core.send(CommandRequest(.previousTrack), now: 3).actions, [.play(itemID: 1, from: 0)])
        // At the head of the shuffle, previous restarts.
        XCTAssertEqual(core.send(CommandRequest(.previousTrack), now: 4).actions, [.seek(to: 0)])
        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .all), now: 5)
        XCTAssertEqual(core.upcoming(after: order[5])?.id, order[0])

        // Off: back to the user's order, the current item unchanged.
        let outcome = core.handle(CommandRequest(.changeShuffleMode, shuffle: false), now: 6)
        XCTAssertEqual(outcome.status, .success)
        XCTAssertEqual(outcome.actions, order[1] == 2 ? [] : [.upcomingChanged])
        XCTAssertFalse(core.shuffle)
        XCTAssertEqual(core.shuffleOrder, [])
        XCTAssertEqual(core.currentItemID, 1)
        XCTAssertEqual(core.upcoming(after: 1)?.id, 2)
        XCTAssertEqual(core.upcoming(after: 6)?.id, 1)
        // Turning it off again is no news.
        XCTAssertEqual(core.handle(CommandRequest(.changeShuffleMode, shuffle: false), now: 7), CommandOutcome(status: .success))
    }

    func testShuffleWithoutACurrentItemStartsAtTheHeadOfTheShuffle() {
        var core = PlayerCore(randomSeed: 3)
        _ = core.add(tracks(5), now: 0)
        let outcome = core.handle(CommandRequest(.changeShuffleMode, shuffle: true), now: 0)
        XCTAssertEqual(outcome.actions, [])
        XCTAssertEqual(outcome.publications, [], "nothing visible changed")
        let order = core.shuffleOrder
        XCTAssertEqual(order.sorted(), [1, 2, 3, 4, 5])
        XCTAssertEqual(core.handle(CommandRequest(.play), now: 1).actions, [.play(itemID: order[0], from: 0)])
        XCTAssertEqual(core.nowPlaying.queueIndex, 0)
    }

    func testItemsAddedWhileShuffledComeAfterTheCurrentOne() {
        var core = playing(4, seed: 5)
        _ = core.send(CommandRequest(.nextTrack), now: 1)
        _ = core.handle(CommandRequest(.changeShuffleMode, shuffle: true), now: 2)
        _ = core.send(CommandRequest(.nextTrack), now: 3)
        let current = core.currentItemID!
        let played = Array(core.shuffleOrder.prefix(2))
        XCTAssertEqual(played, [2, current])
        _ = core.add(tracks(3), now: 4)
        let order = core.shuffleOrder
        XCTAssertEqual(Array(order.prefix(2)), played)
        XCTAssertEqual(order.sorted(), Array(1...7))
        XCTAssertEqual(Set(order.dropFirst(2)), Set([1, 3, 4, 5, 6, 7]).subtracting([current]))
    }

    func testItemsAddedWhileShuffledAreSpreadOverWhatIsLeft() {
        var core = playing(10, seed: 11)
        _ = core.handle(CommandRequest(.changeShuffleMode, shuffle: true), now: 1)
        _ = core.add(tracks(10), now: 2)
        let order = core.shuffleOrder
        XCTAssertEqual(order.first, 1)
        XCTAssertEqual(order.sorted(), Array(1...20))
        XCTAssertNotEqual(Set(order.suffix(10)), Set(11...20), "not simply appended")
        XCTAssertNotEqual(Set(order.dropFirst().prefix(9)), Set(2...10), "not simply after the old ones")
    }

    func testRepeatOneLoopsOnlyTheAutomaticTransition() {
        var core = playing(3)
        XCTAssertEqual(core.handle(CommandRequest(.changeRepeatMode, repeatMode: .one), now: 1).actions, [.upcomingChanged])
        XCTAssertEqual(core.upcoming(after: 1)?.id, 1)
        XCTAssertEqual(core.send(CommandRequest(.nextTrack), now: 2).actions, [.play(itemID: 2, from: 0)])
        XCTAssertEqual(core.upcoming(after: 2)?.id, 2)
        // Same mode again: nothing to re-ask.
        XCTAssertEqual(core.handle(CommandRequest(.changeRepeatMode, repeatMode: .one), now: 3).actions, [])
        XCTAssertEqual(core.handle(CommandRequest(.changeRepeatMode, repeatMode: .off), now: 3).actions, [.upcomingChanged])
        XCTAssertEqual(core.upcoming(after: 2)?.id, 3)
    }
}
