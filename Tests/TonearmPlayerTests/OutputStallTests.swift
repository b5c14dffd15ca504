import TonearmPlayer
import XCTest

/// The engine's output stops being heard (device lost, stalled, not there at play start) and
/// comes back: the transport stays playing, Now Playing says rate 0 with the elapsed time heard,
/// then rate 1 from where it carries on.
final class OutputStallTests: XCTestCase {
    /// A device lost 10 s into a track, noticed a second later: elapsed freezes at what was
    /// heard (8.9 s), not at what the clock says; it runs again from where audio resumes.
    func testLossFreezesElapsedAtWhatWasHeardAndResumeRunsItAgain() {
        var core = playing()
        let stalled = core.engineOutputStalled(itemID: 1, at: 8.9, now: 10)
        XCTAssertEqual(stalled.map(\.reason), [.rateChanged])
        XCTAssertEqual(stalled.first?.isReplacement, false, "a partial update, not a new item")
        XCTAssertEqual(core.state, .playing, "nobody paused")
        XCTAssertTrue(core.outputStalled)
        XCTAssertEqual(core.nowPlaying.rate, 0)
        XCTAssertEqual(core.nowPlaying.elapsed, 8.9)
        XCTAssertEqual(core.nowPlaying.timestamp, 10)
        XCTAssertEqual(core.nowPlaying.elapsed(at: 13), 8.9, "does not run on through the outage")
        XCTAssertEqual(core.position(at: 13), 8.9)
        XCTAssertTrue(core.isEnabled(.pause), "still playing as far as the commands go")

        XCTAssertEqual(core.engineOutputStalled(itemID: 1, at: 8.9, now: 11), [], "one stall, one publication")

        let resumed = core.engineOutputResumed(itemID: 1, at: 8.95, now: 13)
        XCTAssertEqual(resumed.map(\.reason), [.rateChanged])
        XCTAssertFalse(core.outputStalled)
        XCTAssertEqual(core.nowPlaying.rate, 1)
        XCTAssertEqual(core.nowPlaying.elapsed, 8.95)
        XCTAssertEqual(core.nowPlaying.timestamp, 13)
        XCTAssertEqual(core.nowPlaying.elapsed(at: 14), 9.95, accuracy: 1e-9)
        XCTAssertEqual(core.engineOutputResumed(itemID: 1, at: 9.95, now: 14), [], "resumed once")
    }

    /// No device when play is pressed: playing, rate 0, elapsed 0 until the device appears and
    /// the item is heard from its start.
    func testNoDeviceAtPlayStartHoldsElapsedAtTheStart() {
        var core = PlayerCore(randomSeed: 1)
        _ = core.add(tracks(2), now: 0)
        let play = core.handle(CommandRequest(.play), now: 1)
        XCTAssertEqual(play.publications.first?.info.rate, 1)
        // The engine cannot open the device; it has not started the item (nothing to report).
        let stalled = core.engineOutputStalled(itemID: nil, at: nil, now: 1.05)
        XCTAssertEqual(stalled.map(\.reason), [.rateChanged])
        XCTAssertEqual(core.state, .playing)
        XCTAssertEqual(core.nowPlaying.rate, 0)
        XCTAssertEqual(core.nowPlaying.elapsed, 0, "nothing of the play was heard")
        XCTAssertEqual(core.nowPlaying.elapsed(at: 30), 0)

        // The device appears: the item starts, then frames flow.
        XCTAssertEqual(core.engineStartedItem(1, at: 0, heardAt: 30, now: 30), [], "the start agrees with the anchor")
        XCTAssertEqual(core.nowPlaying.rate, 0, "not heard until frames flow")
        let resumed = core.engineOutputResumed(itemID: 1, at: 0.02, now: 30.05)
        XCTAssertEqual(resumed.map(\.reason), [.rateChanged])
        XCTAssertEqual(core.nowPlaying.rate, 1)
        XCTAssertEqual(core.nowPlaying.elapsed, 0.02)
        XCTAssertEqual(core.nowPlaying.elapsed(at: 31.05), 1.02, accuracy: 1e-9)
    }

    /// A seek during the outage moves the frozen elapsed to its target; the engine's report of
    /// the old place (a loss noticed after the seek) does not undo it.
    func testSeekDuringOutageHoldsTheTarget() {
        var core = playing()
        _ = core.engineOutputStalled(itemID: 1, at: 9, now: 10)
        let seek = core.handle(CommandRequest(.changePlaybackPosition, position: 50), now: 12)
        XCTAssertEqual(seek.actions, [.seek(to: 50)])
        XCTAssertEqual(seek.publications.first?.info.elapsed, 50)
        XCTAssertEqual(seek.publications.first?.info.rate, 0)
        XCTAssertEqual(core.nowPlaying.elapsed(at: 20), 50)
        // The engine comes back still describing the old place before it took the seek.
        _ = core.engineOutputResumed(itemID: 1, at: 9.02, now: 20)
        XCTAssertEqual(core.nowPlaying.elapsed, 50, "a report from before the seek is stale")
        XCTAssertEqual(core.nowPlaying.rate, 1)
        XCTAssertEqual(core.engineStartedItem(1, at: 50, heardAt: 20, now: 20.1), [], "the seek lands where published")
    }

    /// Pause and play during the outage: the rate stays 0 until the output is heard again.
    func testPlayDuringOutageKeepsRateZeroUntilHeard() {
        var core = playing()
        _ = core.engineOutputStalled(itemID: 1, at: 9, now: 10)
        let pause = core.handle(CommandRequest(.pause), now: 12)
        XCTAssertEqual(pause.publications.first?.info.elapsed, 9)
        XCTAssertEqual(pause.publications.first?.info.rate, 0)
        let play = core.handle(CommandRequest(.play), now: 14)
        XCTAssertEqual(play.actions, [.resume])
        XCTAssertEqual(play.publications.map(\.reason), [.resumed])
        XCTAssertEqual(play.publications.first?.info.rate, 0, "still nothing heard")
        XCTAssertEqual(core.nowPlaying.elapsed(at: 20), 9)
        _ = core.engineOutputResumed(itemID: 1, at: 9.01, now: 20)
        XCTAssertEqual(core.nowPlaying.rate, 1)
        XCTAssertEqual(core.nowPlaying.elapsed, 9.01)
    }

    /// A stall and a return while paused change nothing published; playing later runs at once.
    func testOutageWhilePausedPublishesNothing() {
        var core = playing()
        _ = core.handle(CommandRequest(.pause), now: 10)
        let before = core.nowPlaying
        XCTAssertEqual(core.engineOutputStalled(itemID: 1, at: 10, now: 11), [])
        XCTAssertEqual(core.engineOutputResumed(itemID: 1, at: 10, now: 12), [])
        XCTAssertEqual(core.nowPlaying, before)
        _ = core.handle(CommandRequest(.play), now: 13)
        XCTAssertEqual(core.nowPlaying.rate, 1)
    }

    /// A report of another item (a gapless step the core has not heard of yet) is not taken as
    /// the current item's position: elapsed freezes where the published clock says.
    func testStallReportOfAnotherItemFreezesTheClock() {
        var core = playing()
        _ = core.engineOutputStalled(itemID: 2, at: 0.5, now: 10)
        XCTAssertEqual(core.nowPlaying.title, "Track 1")
        XCTAssertEqual(core.nowPlaying.elapsed, 10)
        XCTAssertEqual(core.nowPlaying.rate, 0)
    }

    /// Without any stall the resume input does nothing; a stopped player only remembers the
    /// stall, and plays at rate 0 until the output is heard.
    func testStallWhileStoppedAppliesToTheNextPlay() {
        var core = PlayerCore(randomSeed: 1)
        _ = core.add(tracks(1), now: 0)
        XCTAssertEqual(core.engineOutputResumed(itemID: nil, at: nil, now: 0.5), [])
        XCTAssertEqual(core.engineOutputStalled(itemID: nil, at: nil, now: 1), [])
        let play = core.handle(CommandRequest(.play), now: 2)
        XCTAssertEqual(play.publications.first?.info.rate, 0)
        XCTAssertEqual(core.position(at: 5), 0)
        _ = core.engineStartedItem(1, at: 0, heardAt: 5, now: 5)
        _ = core.engineOutputResumed(itemID: 1, at: 0, now: 5)
        XCTAssertEqual(core.position(at: 6), 1)
    }
}
