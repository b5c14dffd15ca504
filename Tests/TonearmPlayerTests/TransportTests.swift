import TonearmPlayer
import XCTest

final class TransportTests: XCTestCase {
    func testPreviousRestartsOnlyAfterTheThreshold() {
        var core = Fixture(count: 3, current: 2, state: .playing).make().core
        var outcome = core.handle(CommandRequest(.previousTrack), now: 3.5)
        XCTAssertEqual(outcome.actions, [.seek(to: 0)])
        XCTAssertEqual(outcome.publications.map(\.reason), [.seek])
        XCTAssertEqual(outcome.publications.first?.info.elapsed, 0)
        XCTAssertEqual(outcome.publications.first?.info.timestamp, 3.5)
        // Just restarted: a second press within 3 s goes back.
        outcome = core.handle(CommandRequest(.previousTrack), now: 4)
        XCTAssertEqual(outcome.actions, [.play(itemID: 1, from: 0)])
        XCTAssertEqual(core.currentItemID, 1)

        var patient = PlayerCore(previousRestartThreshold: 10, randomSeed: 1)
        _ = patient.add(tracks(3), now: 0)
        _ = patient.send(CommandRequest(.play), now: 0)
        _ = patient.send(CommandRequest(.nextTrack), now: 0)
        XCTAssertEqual(patient.currentItemID, 2)
        XCTAssertEqual(patient.handle(CommandRequest(.previousTrack), now: 9).actions, [.play(itemID: 1, from: 0)])
    }

    /// Reports of audio queued before a seek are stale: a gapless step into the next item, or
    /// the old position, must not undo the seek (the daemon once showed track 2, then track 1).
    func testReportsFromBeforeASeekAreIgnoredUntilTheEngineConfirmsIt() {
        var (core, now) = Fixture(count: 3, current: 1, state: .playing).make()
        XCTAssertEqual(core.handle(CommandRequest(.skipForward, interval: 5), now: now).actions, [.seek(to: 15)])
        XCTAssertEqual(core.engineStartedItem(2, at: 0, heardAt: now + 0.1, now: now + 0.1), [])
        XCTAssertEqual(core.currentItemID, 1)
        XCTAssertEqual(core.position(at: now + 0.1), 15.1, accuracy: 1e-9)
        // The engine confirms: from now on a report of item 2 is a real track change.
        XCTAssertEqual(core.engineStartedItem(1, at: 15, heardAt: now + 0.01, now: now + 0.2), [])
        XCTAssertEqual(core.engineStartedItem(2, at: 0, heardAt: now + 1, now: now + 1).map(\.reason), [.trackChanged])
        XCTAssertEqual(core.currentItemID, 2)
        now += 1
    }

    func testSkipUsesTheCarriedIntervalOverThePreferredOne() {
        var core = Fixture(count: 3, current: 1, state: .playing).make().core
        XCTAssertEqual(core.handle(CommandRequest(.skipForward, interval: 5), now: 10).actions, [.seek(to: 15)])
        core.preferredSkipForwardInterval = 30
        XCTAssertEqual(core.handle(CommandRequest(.skipForward), now: 10).actions, [.seek(to: 45)])
        XCTAssertEqual(core.handle(CommandRequest(.skipBackward, interval: 7), now: 10).actions, [.seek(to: 38)])
        XCTAssertEqual(core.handle(CommandRequest(.skipBackward), now: 10).actions, [.seek(to: 23)])
        core.preferredSkipBackwardInterval = 5
        XCTAssertEqual(core.handle(CommandRequest(.skipBackward), now: 12).actions, [.seek(to: 20)])
        XCTAssertEqual(core.handle(CommandRequest(.skipBackward, interval: 100), now: 12).actions, [.seek(to: 0)])
        XCTAssertEqual(core.nowPlaying.elapsed, 0)
        XCTAssertEqual(core.nowPlaying.timestamp, 12)
        XCTAssertEqual(core.nowPlaying.rate, 1)

        let before = core
        for bad in [0, -5, Double.nan, Double.infinity] {
            let outcome = core.handle(CommandRequest(.skipForward, interval: bad), now: 13)
            XCTAssertEqual(outcome, CommandOutcome(status: .commandFailed), "interval \(bad)")
        }
        XCTAssertEqual(core.nowPlaying, before.nowPlaying)
    }

    func testSkippingPastTheEnd() {
        // 190 + 15 ≥ 200: the next item.
        var core = Fixture(count: 3, current: 1, state: .playing, elapsed: 190).make().core
        var outcome = core.handle(CommandRequest(.skipForward), now: 190)
        XCTAssertEqual(outcome.actions, [.play(itemID: 2, from: 0)])
        XCTAssertEqual(outcome.publications.map(\.reason), [.trackChanged])
        XCTAssertEqual(outcome.publications.map(\.isReplacement), [true])

        // Landing exactly on the end counts as past it; one second before does not.
        core = Fixture(count: 3, current: 1, state: .playing, elapsed: 185).make().core
        XCTAssertEqual(core.handle(CommandRequest(.skipForward), now: 185).actions, [.play(itemID: 2, from: 0)])
        core = Fixture(count: 3, current: 1, state: .playing, elapsed: 184).make().core
        XCTAssertEqual(core.handle(CommandRequest(.skipForward), now: 184).actions, [.seek(to: 199)])

        // Backward never leaves the item.
        core = Fixture(count: 3, current: 2, state: .playing, elapsed: 190).make().core
        XCTAssertEqual(core.handle(CommandRequest(.skipBackward), now: 190).actions, [.seek(to: 175)])

        // Paused: the next item, still paused, the engine released.
        core = Fixture(count: 3, current: 1, state: .paused, elapsed: 190).make().core
        outcome = core.handle(CommandRequest(.skipForward), now: 195)
        XCTAssertEqual(outcome.actions, [.stop])
        XCTAssertEqual(core.state, .paused)
        XCTAssertEqual(core.currentItemID, 2)
        XCTAssertEqual(core.position(at: 300), 0)
        // Resuming then starts the engine on the new item.
        XCTAssertEqual(core.handle(CommandRequest(.play), now: 300).actions, [.play(itemID: 2, from: 0)])

        // The last item: end of queue.
        core = Fixture(count: 3, current: 3, state: .playing, elapsed: 190).make().core
        outcome = core.handle(CommandRequest(.skipForward), now: 190)
        XCTAssertEqual(outcome.actions, [.stop])
        XCTAssertEqual(outcome.publications.map(\.reason), [.stopped])
        XCTAssertEqual(outcome.publications.first?.info.rate, 0)
        XCTAssertEqual(outcome.publications.first?.info.title, "Track 3")

        // Unknown duration: seek anyway.
        core = playing(2, duration: nil)
        XCTAssertEqual(core.handle(CommandRequest(.skipForward, interval: 1000), now: 10).actions, [.seek(to: 1010)])
        XCTAssertEqual(core.position(at: 11), 1011)
        XCTAssertTrue(core.nowPlaying.isLiveStream)
    }

    func testChangePlaybackPositionBounds() {
        var core = Fixture(count: 3, current: 1, state: .playing).make().core
        let before = core
        for bad in [nil, -1, 200.01, Double.nan, -Double.infinity] as [Double?] {
            let outcome = core.handle(CommandRequest(.changePlaybackPosition, position: bad), now: 10)
            XCTAssertEqual(outcome, CommandOutcome(status: .commandFailed), "position \(String(describing: bad))")
        }
        XCTAssertEqual(core.nowPlaying, before.nowPlaying)
        XCTAssertEqual(core.handle(CommandRequest(.changePlaybackPosition, position: 0), now: 10).actions, [.seek(to: 0)])
        XCTAssertEqual(core.handle(CommandRequest(.changePlaybackPosition, position: 200), now: 10).actions, [.seek(to: 200)])
        let outcome = core.handle(CommandRequest(.changePlaybackPosition, position: 123.5), now: 11)
        XCTAssertEqual(outcome.actions, [.seek(to: 123.5)])
        XCTAssertEqual(outcome.publications.map(\.reason), [.seek])
        XCTAssertEqual(core.position(at: 12), 124.5)

        var live = playing(1, duration: nil)
        XCTAssertEqual(live.handle(CommandRequest(.changePlaybackPosition, position: 5000), now: 1).actions, [.seek(to: 5000)])
        XCTAssertEqual(live.handle(CommandRequest(.changePlaybackPosition, position: -0.5), now: 1).status, .commandFailed)
    }

    func testSeekWhilePausedWithAnIdleEngineOnlyMovesThePosition() {
        var core = PlayerCore(randomSeed: 1)
        let items = tracks(2).enumerated().map { QueueItem(id: $0.offset + 1, path: $0.element.path, metadata: $0.element.metadata) }
        _ = core.restore(queue: items, currentItemID: 1, position: 20, volume: 50, repeatMode: .off, shuffle: false, shuffleOrder: nil, resumePlaying: false, now: 0)
        let outcome = core.handle(CommandRequest(.changePlaybackPosition, position: 50), now: 1)
        XCTAssertEqual(outcome.status, .success)
        XCTAssertEqual(outcome.actions, [])
        XCTAssertEqual(outcome.publications.map(\.reason), [.seek])
        XCTAssertEqual(core.handle(CommandRequest(.play), now: 2).actions, [.play(itemID: 1, from: 50)])
    }

    func testScanning() {
        var core = Fixture(count: 3, current: 1, state: .playing).make().core
        var outcome = core.handle(CommandRequest(.seekForward, scanning: .begin), now: 10)
        XCTAssertEqual(outcome.actions, [.scan(rate: 4)])
        XCTAssertEqual(outcome.publications.map(\.reason), [.rateChanged])
        XCTAssertEqual(core.nowPlaying.rate, 4)
        XCTAssertEqual(core.nowPlaying.elapsed, 10)
        XCTAssertEqual(core.scanRate, 4)
        XCTAssertEqual(core.position(at: 12), 18)
        XCTAssertEqual(core.nowPlaying.elapsed(at: 12), 18)
        XCTAssertEqual(core.position(at: 100), 200, "clamped at the end")
        // A second press is no news.
        XCTAssertEqual(core.handle(CommandRequest(.seekForward, scanning: .begin), now: 11), CommandOutcome(status: .success))

        outcome = core.handle(CommandRequest(.seekForward, scanning: .end), now: 12)
        XCTAssertEqual(outcome.actions, [.scan(rate: 0), .seek(to: 18)])
        XCTAssertEqual(outcome.publications.map(\.reason), [.rateChanged])
        XCTAssertEqual(core.nowPlaying.rate, 1)
        XCTAssertEqual(core.nowPlaying.elapsed, 18)
        XCTAssertEqual(core.nowPlaying.timestamp, 12)
        XCTAssertNil(core.scanRate)
        XCTAssertEqual(core.position(at: 13), 19)
        // A release without a scan changes nothing.
        XCTAssertEqual(core.handle(CommandRequest(.seekForward, scanning: .end), now: 13), CommandOutcome(status: .success))

        outcome = core.handle(CommandRequest(.seekBackward, scanning: .begin), now: 13)
        XCTAssertEqual(outcome.actions, [.scan(rate: -4)])
        XCTAssertEqual(core.nowPlaying.rate, -4)
        XCTAssertEqual(core.position(at: 14), 15)
        XCTAssertEqual(core.position(at: 20), 0, "clamped at the start")
        // Changing direction mid-scan.
        outcome = core.handle(CommandRequest(.seekForward, scanning: .begin), now: 14)
        XCTAssertEqual(outcome.actions, [.scan(rate: 4)])
        XCTAssertEqual(outcome.publications.first?.info.elapsed, 15)
        XCTAssertEqual(outcome.publications.first?.info.rate, 4)
        outcome = core.handle(CommandRequest(.seekBackward, scanning: .end), now: 15)
        XCTAssertEqual(outcome.actions, [.scan(rate: 0), .seek(to: 19)])
    }

    func testOtherCommandsEndAScan() {
        var core = Fixture(count: 3, current: 1, state: .playing).make().core
        _ = core.handle(CommandRequest(.seekForward, scanning: .begin), now: 10)
        var outcome = core.handle(CommandRequest(.pause), now: 11)
        XCTAssertEqual(outcome.actions, [.scan(rate: 0), .seek(to: 14), .pause])
        XCTAssertEqual(outcome.publications.map(\.reason), [.paused])
        XCTAssertEqual(core.nowPlaying.elapsed, 14)
        XCTAssertEqual(core.nowPlaying.rate, 0)
        XCTAssertNil(core.scanRate)

        core = Fixture(count: 3, current: 1, state: .playing).make().core
        _ = core.handle(CommandRequest(.seekForward, scanning: .begin), now: 10)
        outcome = core.handle(CommandRequest(.nextTrack), now: 11)
        XCTAssertEqual(outcome.actions, [.scan(rate: 0), .play(itemID: 2, from: 0)])
        XCTAssertEqual(core.nowPlaying.rate, 1)

        core = Fixture(count: 3, current: 1, state: .playing).make().core
        _ = core.handle(CommandRequest(.seekBackward, scanning: .begin), now: 10)
        outcome = core.handle(CommandRequest(.play), now: 11)
        XCTAssertEqual(outcome.actions, [.scan(rate: 0), .seek(to: 6)])
        XCTAssertEqual(outcome.publications.map(\.reason), [.rateChanged])
        XCTAssertEqual(core.nowPlaying.rate, 1)

        core = Fixture(count: 3, current: 1, state: .playing).make().core
        _ = core.handle(CommandRequest(.seekForward, scanning: .begin), now: 10)
        outcome = core.handle(CommandRequest(.changePlaybackPosition, position: 100), now: 11)
        XCTAssertEqual(outcome.actions, [.scan(rate: 0), .seek(to: 100)])
        XCTAssertEqual(core.nowPlaying.rate, 1)

        core = Fixture(count: 3, current: 1, state: .playing).make().core
        _ = core.handle(CommandRequest(.seekForward, scanning: .begin), now: 10)
        XCTAssertEqual(core.handle(CommandRequest(.stop), now: 11).actions, [.scan(rate: 0), .stop])
        XCTAssertNil(core.scanRate)
    }

    func testScanningWhilePausedScrubsSilently() {
        var core = Fixture(count: 3, current: 1, state: .paused).make().core
        var outcome = core.handle(CommandRequest(.seekForward, scanning: .begin), now: 15)
        XCTAssertEqual(outcome.actions, [.scan(rate: 4)])
        XCTAssertEqual(core.state, .paused)
        XCTAssertEqual(core.nowPlaying.rate, 4)
        outcome = core.handle(CommandRequest(.seekForward, scanning: .end), now: 16)
        XCTAssertEqual(outcome.actions, [.scan(rate: 0), .seek(to: 14)])
        XCTAssertEqual(core.nowPlaying.rate, 0)
        XCTAssertEqual(core.position(at: 100), 14)
    }

    func testEndOfQueueStopsAndKeepsTheCurrentItem() {
        var core = Fixture(count: 3, current: 3, state: .playing).make().core
        let publications = core.engineReachedEndOfQueue(now: 200)
        XCTAssertEqual(publications.map(\.reason), [.stopped])
        XCTAssertEqual(publications.map(\.isReplacement), [false])
        XCTAssertEqual(core.state, .stopped)
        XCTAssertEqual(core.currentItemID, 3)
        XCTAssertEqual(core.queue.count, 3)
        XCTAssertEqual(core.nowPlaying.rate, 0)
        XCTAssertEqual(core.nowPlaying.elapsed, 0)
        XCTAssertEqual(core.nowPlaying.title, "Track 3")
        XCTAssertEqual(core.engineReachedEndOfQueue(now: 201), [], "already stopped")
        XCTAssertEqual(core.handle(CommandRequest(.play), now: 300).actions, [.play(itemID: 3, from: 0)])
    }

    func testAnEndOfQueueReportBeforeAPlayTookEffectIsStale() {
        var core = Fixture(count: 3, current: 3, state: .playing, elapsed: 1).make().core
        XCTAssertEqual(core.handle(CommandRequest(.previousTrack), now: 1).actions, [.play(itemID: 2, from: 0)])
        XCTAssertEqual(core.engineReachedEndOfQueue(now: 1.1), [])
        XCTAssertEqual(core.state, .playing)
        XCTAssertEqual(core.currentItemID, 2)
        XCTAssertEqual(core.engineStartedItem(2, at: 0, heardAt: 1.01, now: 1.2), [])
        XCTAssertEqual(core.engineReachedEndOfQueue(now: 200).map(\.reason), [.stopped])
    }
}
