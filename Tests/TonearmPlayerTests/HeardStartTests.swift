import TonearmPlayer
import XCTest

/// Elapsed time is anchored when audio is heard, not when it was asked for or when the report
/// was collected: the device takes a while to open, fill and start, and the daemon collects the
/// engine's reports on a heartbeat.
final class HeardStartTests: XCTestCase {
    /// A play heard 0.1 s after the command: one seek-like correction, anchored at the heard
    /// start (snd-dummy in a guest took that long, and elapsed ran 0.1 s ahead for the track).
    func testAPlayHeardLateIsCorrectedOnceAtTheHeardTime() {
        var core = PlayerCore(randomSeed: 1)
        _ = core.add(tracks(3), now: 0)
        let play = core.handle(CommandRequest(.play), now: 21.579)
        XCTAssertEqual(play.actions, [.play(itemID: 1, from: 0)])
        XCTAssertEqual(play.publications.first?.info.timestamp, 21.579)

        let corrections = core.engineStartedItem(1, at: 0, heardAt: 21.684, now: 21.7)
        XCTAssertEqual(corrections.map(\.reason), [.seek])
        XCTAssertEqual(corrections.map(\.isReplacement), [false])
        XCTAssertEqual(corrections.first?.info.elapsed, 0)
        XCTAssertEqual(corrections.first?.info.timestamp, 21.684)
        XCTAssertEqual(corrections.first?.info.rate, 1)
        XCTAssertEqual(core.position(at: 51.684), 30, accuracy: 1e-9, "30 s after the heard start")
    }

    /// A seek whose new place is heard 0.1 s after the command: the same correction.
    func testASeekHeardLateIsCorrectedAtTheHeardTime() {
        var core = playing(3)
        let seek = core.handle(CommandRequest(.changePlaybackPosition, position: 60), now: 10)
        XCTAssertEqual(seek.actions, [.seek(to: 60)])
        let corrections = core.engineStartedItem(1, at: 60, heardAt: 10.1, now: 10.12)
        XCTAssertEqual(corrections.map(\.reason), [.seek])
        XCTAssertEqual(core.nowPlaying.elapsed, 60)
        XCTAssertEqual(core.nowPlaying.timestamp, 10.1)
    }

    /// Heard 0.02 s after the command: within what the publication may be off by, so nothing
    /// more is published (a fast host with a quick device sees no extra publication).
    func testAPlayHeardPromptlyPublishesNothingMore() {
        var core = PlayerCore(randomSeed: 1)
        _ = core.add(tracks(3), now: 0)
        let play = core.handle(CommandRequest(.play), now: 5)
        XCTAssertEqual(play.publications.map(\.reason), [.playbackStarted])
        XCTAssertEqual(core.engineStartedItem(1, at: 0, heardAt: 5.02, now: 5.05), [])
        XCTAssertEqual(core.nowPlaying.timestamp, 5)
    }

    /// The heartbeat collected the report 0.3 s after the start was heard (and 0.4 s after the
    /// command): the anchor is the heard time, not the collection time.
    func testAReportCollectedLateStillAnchorsAtTheHeardTime() {
        var core = PlayerCore(randomSeed: 1)
        _ = core.add(tracks(3), now: 0)
        _ = core.handle(CommandRequest(.play), now: 5)
        let corrections = core.engineStartedItem(1, at: 0, heardAt: 5.1, now: 5.4)
        XCTAssertEqual(corrections.map(\.reason), [.seek])
        XCTAssertEqual(core.nowPlaying.timestamp, 5.1)
        XCTAssertEqual(core.position(at: 5.4), 0.3, accuracy: 1e-9)
    }

    /// A gapless track change is one replacement, anchored when its first frame is heard: after
    /// the device buffer, and before the heartbeat collected it.
    func testAGaplessChangeIsAnchoredWhenHeard() {
        var core = playing(3)
        let changes = core.engineStartedItem(2, at: 0, heardAt: 200.021, now: 200.05)
        XCTAssertEqual(changes.map(\.reason), [.trackChanged])
        XCTAssertEqual(changes.map(\.isReplacement), [true])
        XCTAssertEqual(changes.first?.info.title, "Track 2")
        XCTAssertEqual(changes.first?.info.elapsed, 0)
        XCTAssertEqual(changes.first?.info.timestamp, 200.021)
        XCTAssertEqual(core.position(at: 200.05), 0.029, accuracy: 1e-9)
    }

    /// A gapless change still in the device buffer when collected: anchored ahead, so elapsed
    /// reaches 0 only when it is heard.
    func testAGaplessChangeStillInTheBufferIsAnchoredAhead() {
        var core = playing(3)
        let changes = core.engineStartedItem(2, at: 0, heardAt: 200.02, now: 200.005)
        XCTAssertEqual(changes.first?.info.timestamp, 200.02)
        XCTAssertEqual(core.position(at: 200.02), 0)
        XCTAssertEqual(core.position(at: 201.02), 1, accuracy: 1e-9)
    }

    /// A repeat-one restart of the item is anchored when heard, too.
    func testARepeatOneRestartIsAnchoredWhenHeard() {
        var core = playing(3)
        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .one), now: 1)
        let changes = core.engineStartedItem(1, at: 0, heardAt: 200.03, now: 200.04)
        XCTAssertEqual(changes.map(\.reason), [.trackChanged])
        XCTAssertEqual(core.nowPlaying.timestamp, 200.03)
    }
}
