import TonearmPlayer
import XCTest

final class RestoreTests: XCTestCase {
    let saved: [QueueItem] = tracks(3).enumerated().map {
        QueueItem(id: $0.offset + 5, path: $0.element.path, metadata: $0.element.metadata)
    }

    func testRestorePausedAtThePosition() {
        var core = PlayerCore(randomSeed: 1)
        let outcome = core.restore(
            queue: saved, currentItemID: 6, position: 42, volume: 30, repeatMode: .all, shuffle: false,
            shuffleOrder: nil, resumePlaying: false, now: 100)
        XCTAssertEqual(outcome.status, .success)
        XCTAssertEqual(outcome.actions, [.setVolume(30)])
        XCTAssertEqual(outcome.publications.map(\.reason), [.paused])
        XCTAssertEqual(outcome.publications.map(\.isReplacement), [true])
        XCTAssertEqual(outcome.publications.map(\.artworkChanged), [true])
        XCTAssertEqual(core.state, .paused)
        XCTAssertEqual(core.currentItemID, 6)
        XCTAssertEqual(core.currentIndex, 1)
        XCTAssertEqual(core.volume, 30)
        XCTAssertEqual(core.repeatMode, .all)
        XCTAssertEqual(core.position(at: 500), 42)
        XCTAssertEqual(core.nowPlaying.title, "Track 2")
        XCTAssertEqual(core.nowPlaying.elapsed, 42)
        XCTAssertEqual(core.nowPlaying.rate, 0)
        XCTAssertEqual(core.nowPlaying.timestamp, 100)
        XCTAssertEqual(core.nowPlaying.queueIndex, 1)
        XCTAssertEqual(core.upcoming(after: 7)?.id, 5)

        // The engine holds nothing yet: resuming plays from the position.
        let resumed = core.handle(CommandRequest(.play), now: 110)
        XCTAssertEqual(resumed.actions, [.play(itemID: 6, from: 42)])
        XCTAssertEqual(resumed.publications.map(\.reason), [.resumed])
        XCTAssertEqual(core.engineStartedItem(6, at: 42, heardAt: 110.01, now: 110.1), [])
        XCTAssertEqual(core.position(at: 120), 52)

        _ = core.add(tracks(1), now: 130)
        XCTAssertEqual(core.queue.map(\.id), [5, 6, 7, 8], "ids continue after the restored ones")
    }

    func testRestorePlaying() {
        var core = PlayerCore(randomSeed: 1)
        let outcome = core.restore(
            queue: saved, currentItemID: 6, position: 42, volume: 30, repeatMode: .off, shuffle: false,
            shuffleOrder: nil, resumePlaying: true, now: 100)
        XCTAssertEqual(outcome.actions, [.setVolume(30), .play(itemID: 6, from: 42)])
        XCTAssertEqual(outcome.publications.map(\.reason), [.playbackStarted])
        XCTAssertEqual(core.state, .playing)
        XCTAssertEqual(core.nowPlaying.rate, 1)
        XCTAssertEqual(core.position(at: 110), 52)
        XCTAssertEqual(core.engineStartedItem(6, at: 42, heardAt: 100.01, now: 100.2), [])
    }

    func testRestoreShuffleOrder() {
        var core = PlayerCore(randomSeed: 1)
        _ = core.restore(
            queue: saved, currentItemID: 5, position: 0, volume: 50, repeatMode: .off, shuffle: true,
            shuffleOrder: [7, 5, 6], resumePlaying: false, now: 0)
        XCTAssertTrue(core.shuffle)
        XCTAssertEqual(core.shuffleOrder, [7, 5, 6])
        XCTAssertEqual(core.upcoming(after: 5)?.id, 6)
        XCTAssertNil(core.upcoming(after: 6))
        XCTAssertEqual(core.nowPlaying.queueIndex, 1)
        XCTAssertEqual(core.handle(CommandRequest(.previousTrack), now: 1).actions, [], "paused and idle: only selects")
        XCTAssertEqual(core.currentItemID, 7)

        // Not a permutation of the queue: a fresh one, current first.
        for bad in [[7, 5], [7, 5, 5], [7, 5, 9], nil] as [[Int]?] {
            _ = core.restore(
                queue: saved, currentItemID: 6, position: 0, volume: 50, repeatMode: .off, shuffle: true,
                shuffleOrder: bad, resumePlaying: false, now: 0)
            XCTAssertEqual(core.shuffleOrder.first, 6, "\(String(describing: bad))")
            XCTAssertEqual(core.shuffleOrder.sorted(), [5, 6, 7])
        }
        _ = core.restore(
            queue: saved, currentItemID: 6, position: 0, volume: 50, repeatMode: .off, shuffle: false,
            shuffleOrder: [7, 5, 6], resumePlaying: false, now: 0)
        XCTAssertEqual(core.shuffleOrder, [])
        XCTAssertEqual(core.upcoming(after: 6)?.id, 7)
    }

    func testRestoreCleansUpWhatItIsGiven() {
        var core = PlayerCore(randomSeed: 1)
        _ = core.restore(
            queue: saved, currentItemID: 7, position: 999, volume: 130, repeatMode: .off, shuffle: false,
            shuffleOrder: nil, resumePlaying: false, now: 0)
        XCTAssertEqual(core.position(at: 1), 200)
        XCTAssertEqual(core.volume, 100)
        _ = core.restore(
            queue: saved, currentItemID: 7, position: -5, volume: -1, repeatMode: .off, shuffle: false,
            shuffleOrder: nil, resumePlaying: false, now: 0)
        XCTAssertEqual(core.position(at: 1), 0)
        XCTAssertEqual(core.volume, 0)
        _ = core.restore(
            queue: saved, currentItemID: 7, position: .nan, volume: 20, repeatMode: .off, shuffle: false,
            shuffleOrder: nil, resumePlaying: false, now: 0)
        XCTAssertEqual(core.position(at: 1), 0)

        let outcome = core.restore(
            queue: saved + [saved[0]], currentItemID: 99, position: 42, volume: 20, repeatMode: .off,
            shuffle: false, shuffleOrder: nil, resumePlaying: true, now: 0)
        XCTAssertEqual(outcome.actions, [.setVolume(20)])
        XCTAssertEqual(outcome.publications.map(\.reason), [.stopped])
        XCTAssertEqual(core.state, .stopped)
        XCTAssertNil(core.currentItemID)
        XCTAssertEqual(core.queue.map(\.id), [5, 6, 7], "duplicate ids are dropped")
        XCTAssertEqual(core.nowPlaying, NowPlayingInfo(queueCount: 3))
    }
}
