import TonearmPlayer
import XCTest

final class NowPlayingTests: XCTestCase {
    /// add 3 tracks, play, pause, resume, seek, next, skip, skip past the end, end of queue.
    func testScriptedSessionPublishesOnlyAtTheRightMoments() {
        var core = PlayerCore(randomSeed: 1)
        var log: [NowPlayingPublication] = []
        func record(_ publications: [NowPlayingPublication], file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertLessThanOrEqual(publications.count, 1, file: file, line: line)
            log += publications
            if let last = publications.last {
                XCTAssertEqual(core.nowPlaying, last.info, "nowPlaying is what was published", file: file, line: line)
            }
        }

        record(core.add(tracks(3, artworks: [coverOne, coverOne, coverTwo]), now: 0).publications)
        XCTAssertEqual(core.nowPlaying, NowPlayingInfo(queueCount: 3))

        var outcome = core.handle(CommandRequest(.play), now: 1)
        XCTAssertEqual(outcome.actions, [.play(itemID: 1, from: 0)])
        record(outcome.publications)
        record(core.engineStartedItem(1, at: 0, heardAt: 1.01, now: 1.1))
        let started = NowPlayingInfo(
            title: "Track 1", artist: "Artist", album: "Album", albumArtist: "Artist", trackNumber: 1,
            duration: 200, elapsed: 0, rate: 1, defaultRate: 1, queueIndex: 0, queueCount: 3,
            isLiveStream: false, artwork: coverOne, timestamp: 1)
        XCTAssertEqual(core.nowPlaying, started)
        XCTAssertEqual(core.nowPlaying.elapsed(at: 6), 5, "extrapolated while playing")

        record(core.handle(CommandRequest(.pause), now: 11).publications)
        var paused = started
        paused.elapsed = 10
        paused.rate = 0
        paused.timestamp = 11
        XCTAssertEqual(core.nowPlaying, paused, "a partial update keeps every other key")
        XCTAssertEqual(core.nowPlaying.elapsed(at: 11), 10)
        XCTAssertEqual(core.nowPlaying.elapsed(at: 100), 10, "frozen while paused")

        outcome = core.handle(CommandRequest(.play), now: 20)
        XCTAssertEqual(outcome.actions, [.resume])
        record(outcome.publications)
        var resumed = paused
        resumed.rate = 1
        resumed.timestamp = 20
        XCTAssertEqual(core.nowPlaying, resumed)
        XCTAssertEqual(core.nowPlaying.elapsed(at: 25), 15)

        record(core.handle(CommandRequest(.changePlaybackPosition, position: 100), now: 25).publications)
        var sought = resumed
        sought.elapsed = 100
        sought.timestamp = 25
        XCTAssertEqual(core.nowPlaying, sought)
        XCTAssertEqual(core.nowPlaying.elapsed(at: 30), 105)

        outcome = core.handle(CommandRequest(.nextTrack), now: 30)
        XCTAssertEqual(outcome.actions, [.play(itemID: 2, from: 0)])
        record(outcome.publications)
        record(core.engineStartedItem(2, at: 0, heardAt: 30.01, now: 30.2))
        XCTAssertEqual(core.nowPlaying.title, "Track 2")
        XCTAssertEqual(core.nowPlaying.trackNumber, 2)
        XCTAssertEqual(core.nowPlaying.queueIndex, 1)
        XCTAssertEqual(core.nowPlaying.elapsed, 0)
        XCTAssertEqual(core.nowPlaying.timestamp, 30)
        XCTAssertEqual(core.nowPlaying.artwork, coverOne)

        record(core.handle(CommandRequest(.skipForward), now: 40).publications)
        XCTAssertEqual(core.nowPlaying.elapsed, 25)
        XCTAssertEqual(core.nowPlaying.title, "Track 2")

        outcome = core.handle(CommandRequest(.skipForward, interval: 200), now: 50)
        XCTAssertEqual(outcome.actions, [.play(itemID: 3, from: 0)])
        record(outcome.publications)
        record(core.engineStartedItem(3, at: 0, heardAt: 50.01, now: 50.1))
        XCTAssertEqual(core.nowPlaying.artwork, coverTwo, "the new cover is in the replacement itself")

        record(core.engineReachedEndOfQueue(now: 250))
        XCTAssertEqual(core.nowPlaying.rate, 0)
        XCTAssertEqual(core.nowPlaying.elapsed, 0)
        XCTAssertEqual(core.nowPlaying.timestamp, 250)
        XCTAssertEqual(core.nowPlaying.title, "Track 3")
        XCTAssertEqual(core.nowPlaying.artwork, coverTwo)

        XCTAssertEqual(log.map(\.reason), [
            .queueChanged, .playbackStarted, .paused, .resumed, .seek, .trackChanged, .seek, .trackChanged, .stopped,
        ])
        XCTAssertEqual(log.map(\.isReplacement), [false, true, false, false, false, true, false, true, false])
        XCTAssertEqual(log.map(\.artworkChanged), [false, true, false, false, false, false, false, true, false])
        XCTAssertEqual(log.map(\.info.rate), [0, 1, 0, 1, 1, 1, 1, 1, 0])
        XCTAssertEqual(log.map(\.info.defaultRate), Array(repeating: 1, count: 9))
    }

    func testNothingIsPublishedWithoutAnEvent() {
        var core = playing(3)
        // Time passing, repeated commands and engine confirmations publish nothing.
        XCTAssertEqual(core.handle(CommandRequest(.play), now: 50).publications, [])
        XCTAssertEqual(core.handle(CommandRequest(.changeRepeatMode, repeatMode: .all), now: 60).publications, [])
        XCTAssertEqual(core.setVolume(30, now: 70).publications, [])
        XCTAssertEqual(core.engineStartedItem(1, at: 79.8, heardAt: 80, now: 80), [])
        XCTAssertEqual(core.nowPlaying.timestamp, 0)
        XCTAssertEqual(core.nowPlaying.elapsed(at: 80), 80)
    }

    func testGaplessTransitionIsOneReplacement() {
        var core = playing(3, artworks: [coverOne, coverOne, coverTwo])
        var publications = core.engineStartedItem(2, at: 0, heardAt: 200, now: 200)
        XCTAssertEqual(publications.map(\.reason), [.trackChanged])
        XCTAssertEqual(publications.map(\.isReplacement), [true])
        XCTAssertEqual(publications.map(\.artworkChanged), [false], "same cover: no artwork change")
        XCTAssertEqual(core.currentItemID, 2)
        XCTAssertEqual(core.state, .playing)
        XCTAssertEqual(core.nowPlaying.elapsed, 0)
        XCTAssertEqual(core.nowPlaying.timestamp, 200)
        publications = core.engineStartedItem(3, at: 0.25, heardAt: 400, now: 400)
        XCTAssertEqual(publications.map(\.artworkChanged), [true])
        XCTAssertEqual(publications.first?.info.artwork, coverTwo)
        XCTAssertEqual(publications.first?.info.elapsed, 0.25)
        XCTAssertEqual(core.position(at: 401), 1.25)
    }

    func testEngineReportsFarFromTheAnchorArePublishedAsASeek() {
        var core = PlayerCore(randomSeed: 1)
        _ = core.add(tracks(2), now: 0)
        _ = core.handle(CommandRequest(.play), now: 0)
        // A slow start: two seconds before the device played.
        let publications = core.engineStartedItem(1, at: 0, heardAt: 2, now: 2)
        XCTAssertEqual(publications.map(\.reason), [.seek])
        XCTAssertEqual(publications.map(\.isReplacement), [false])
        XCTAssertEqual(core.nowPlaying.elapsed, 0)
        XCTAssertEqual(core.nowPlaying.timestamp, 2)
        XCTAssertEqual(core.position(at: 3), 1)
        // Within the tolerance: kept as it is.
        XCTAssertEqual(core.engineStartedItem(1, at: 1.4, heardAt: 3, now: 3), [])
        XCTAssertEqual(core.nowPlaying.timestamp, 2)
    }

    func testStaleEngineReportsAreIgnored() {
        var core = playing(3)
        XCTAssertEqual(core.handle(CommandRequest(.nextTrack), now: 10).actions, [.play(itemID: 2, from: 0)])
        XCTAssertEqual(core.handle(CommandRequest(.nextTrack), now: 10.1).actions, [.play(itemID: 3, from: 0)])
        let before = core.nowPlaying
        // The first .play reaching the device after the second was sent.
        XCTAssertEqual(core.engineStartedItem(2, at: 150, heardAt: 10.2, now: 10.2), [])
        XCTAssertEqual(core.currentItemID, 3)
        XCTAssertEqual(core.engineStartedItem(3, at: 0, heardAt: 10.11, now: 10.3), [])
        XCTAssertEqual(core.nowPlaying, before)
        XCTAssertEqual(core.engineStartedItem(99, at: 0, heardAt: 11, now: 11), [], "unknown item")
        _ = core.handle(CommandRequest(.stop), now: 12)
        XCTAssertEqual(core.engineStartedItem(3, at: 0, heardAt: 12.1, now: 12.1), [], "nothing plays when stopped")
        XCTAssertEqual(core.state, .stopped)
    }

    func testAGaplessStepRacingARestartIsStale() {
        // Near the end of item 2 the listener restarts it; the engine had already crossed into 3.
        var core = Fixture(count: 3, current: 2, state: .playing, elapsed: 199).make().core
        XCTAssertEqual(core.handle(CommandRequest(.previousTrack), now: 199).actions, [.seek(to: 0)])
        XCTAssertEqual(core.handle(CommandRequest(.changePlaybackPosition, position: 0), now: 199.1).actions, [.seek(to: 0)])
        // The engine carries out a seek by replacing what it queued: until it confirms item 2
        // at the new place, a report of 3 is the abandoned gapless step, stale.
        XCTAssertEqual(core.engineStartedItem(3, at: 0, heardAt: 199.2, now: 199.2), [])
        XCTAssertEqual(core.currentItemID, 2)
        XCTAssertEqual(core.engineStartedItem(2, at: 0, heardAt: 199.11, now: 199.3), [])
        XCTAssertEqual(core.engineStartedItem(3, at: 0, heardAt: 399.3, now: 399.3).map(\.reason), [.trackChanged])

        core = Fixture(count: 3, current: 2, state: .playing, elapsed: 199).make().core
        XCTAssertEqual(core.handle(CommandRequest(.nextTrack), now: 199).actions, [.play(itemID: 3, from: 0)])
        _ = core.handle(CommandRequest(.previousTrack), now: 199.5)
        XCTAssertEqual(core.currentItemID, 2)
        // While the .play of 2 is outstanding, the engine's gapless step into 3 is stale.
        XCTAssertEqual(core.engineStartedItem(3, at: 0.4, heardAt: 199.6, now: 199.6), [])
        XCTAssertEqual(core.currentItemID, 2)
        XCTAssertEqual(core.engineStartedItem(2, at: 0, heardAt: 199.51, now: 199.7), [])
        XCTAssertEqual(core.currentItemID, 2)
        XCTAssertEqual(core.nowPlaying.title, "Track 2")
    }

    func testRepeatOneLoopIsANewPlayOfTheSameItem() {
        var core = playing(2)
        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .one), now: 1)
        let publications = core.engineStartedItem(1, at: 0, heardAt: 200, now: 200)
        XCTAssertEqual(publications.map(\.reason), [.trackChanged])
        XCTAssertEqual(publications.map(\.isReplacement), [true])
        XCTAssertEqual(publications.map(\.artworkChanged), [false])
        XCTAssertEqual(core.nowPlaying.elapsed, 0)
        XCTAssertEqual(core.nowPlaying.timestamp, 200)
    }

    func testScanStepsAreNotMistakenForARepeatOneLoop() {
        var core = playing(2)
        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .one), now: 1)
        _ = core.handle(CommandRequest(.seekForward, scanning: .begin), now: 10)
        // A step the daemon made at 11 (to 14), reported 0.3 s later.
        XCTAssertEqual(core.engineStartedItem(1, at: 14, heardAt: 11.3, now: 11.3), [])
        XCTAssertEqual(core.scanRate, 4)
        XCTAssertEqual(core.nowPlaying.rate, 4)
        XCTAssertEqual(core.position(at: 12), 18)
        // A gapless step into the next item while scanning is still a track change.
        _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: .off), now: 12)
        XCTAssertEqual(core.engineStartedItem(2, at: 0, heardAt: 60, now: 60).map(\.reason), [.trackChanged])
        XCTAssertEqual(core.nowPlaying.rate, 4)
    }

    func testAGaplessStepWhilePausingStaysPaused() {
        var core = playing(3)
        _ = core.handle(CommandRequest(.pause), now: 199.9)
        let publications = core.engineStartedItem(2, at: 0.3, heardAt: 200, now: 200)
        XCTAssertEqual(publications.map(\.reason), [.trackChanged])
        XCTAssertEqual(core.state, .paused)
        XCTAssertEqual(core.nowPlaying.rate, 0)
        XCTAssertEqual(core.position(at: 500), 0.3)
        XCTAssertEqual(core.handle(CommandRequest(.play), now: 501).actions, [.resume])
    }

    func testMetadataUpdatesMerge() {
        var core = playing(3)
        let before = core.nowPlaying
        var metadata = core.queue[0].metadata
        metadata.title = "Track 1 (Remastered)"
        var publications = core.updateMetadata(itemID: 1, metadata, now: 5)
        XCTAssertEqual(publications.map(\.reason), [.metadataChanged])
        XCTAssertEqual(publications.map(\.isReplacement), [false])
        XCTAssertEqual(publications.map(\.artworkChanged), [false])
        var expected = before
        expected.title = "Track 1 (Remastered)"
        XCTAssertEqual(core.nowPlaying, expected, "only the title changed")
        XCTAssertEqual(core.queue[0].metadata.title, "Track 1 (Remastered)")

        metadata.artwork = coverTwo
        publications = core.updateMetadata(itemID: 1, metadata, now: 6)
        XCTAssertEqual(publications.map(\.reason), [.artworkChanged])
        XCTAssertEqual(publications.map(\.artworkChanged), [true])
        expected.artwork = coverTwo
        XCTAssertEqual(core.nowPlaying, expected)

        metadata.artwork = coverOne
        metadata.artist = "Someone Else"
        publications = core.updateMetadata(itemID: 1, metadata, now: 7)
        XCTAssertEqual(publications.map(\.reason), [.metadataChanged])
        XCTAssertEqual(publications.map(\.artworkChanged), [true])

        XCTAssertEqual(core.updateMetadata(itemID: 1, metadata, now: 8), [], "unchanged")
        metadata.discNumber = 2
        XCTAssertEqual(core.updateMetadata(itemID: 1, metadata, now: 8), [], "not part of Now Playing")
        XCTAssertEqual(core.queue[0].metadata.discNumber, 2)
        var other = core.queue[1].metadata
        other.title = "Renamed"
        XCTAssertEqual(core.updateMetadata(itemID: 2, other, now: 8), [], "not the current item")
        XCTAssertEqual(core.queue[1].metadata.title, "Renamed")
        XCTAssertEqual(core.updateMetadata(itemID: 99, other, now: 8), [])
    }

    func testANewDurationKeepsElapsedWithinIt() {
        var core = playing(2)
        var metadata = core.queue[0].metadata
        metadata.duration = 100
        let publications = core.updateMetadata(itemID: 1, metadata, now: 150)
        XCTAssertEqual(publications.map(\.reason), [.metadataChanged])
        XCTAssertEqual(core.nowPlaying.duration, 100)
        XCTAssertEqual(core.nowPlaying.elapsed, 100)
        XCTAssertEqual(core.nowPlaying.timestamp, 150)
        XCTAssertEqual(core.position(at: 160), 100)
        metadata.duration = nil
        _ = core.updateMetadata(itemID: 1, metadata, now: 160)
        XCTAssertTrue(core.nowPlaying.isLiveStream)
        XCTAssertNil(core.nowPlaying.duration)
    }

    func testElapsedExtrapolation() {
        let info = NowPlayingInfo(duration: 100, elapsed: 10, rate: 1, timestamp: 5)
        XCTAssertEqual(info.elapsed(at: 5), 10)
        XCTAssertEqual(info.elapsed(at: 15), 20)
        XCTAssertEqual(info.elapsed(at: 500), 100)
        XCTAssertEqual(info.elapsed(at: 0), 5)
        XCTAssertEqual(NowPlayingInfo(duration: 100, elapsed: 10, rate: 0, timestamp: 5).elapsed(at: 500), 10)
        XCTAssertEqual(NowPlayingInfo(duration: 100, elapsed: 10, rate: -4, timestamp: 5).elapsed(at: 6), 6)
        XCTAssertEqual(NowPlayingInfo(duration: 100, elapsed: 10, rate: -4, timestamp: 5).elapsed(at: 50), 0)
        XCTAssertEqual(NowPlayingInfo(duration: nil, elapsed: 10, rate: 1, timestamp: 0).elapsed(at: 10_000), 10_010)
    }

    func testStoppedWithoutAnItem() {
        var core = PlayerCore(randomSeed: 1)
        XCTAssertEqual(core.nowPlaying, NowPlayingInfo())
        XCTAssertEqual(core.nowPlaying.rate, 0)
        XCTAssertNil(core.nowPlaying.title)
        XCTAssertEqual(core.position(at: 10), 0)
        _ = core.add(tracks(2), now: 0)
        _ = core.send(CommandRequest(.play), now: 1)
        let publications = core.clear(now: 5).publications
        XCTAssertEqual(publications.map(\.reason), [.stopped])
        XCTAssertEqual(publications.map(\.isReplacement), [true])
        XCTAssertEqual(publications.map(\.artworkChanged), [true])
        XCTAssertEqual(core.nowPlaying, NowPlayingInfo(queueCount: 0, timestamp: 5))
        XCTAssertEqual(core.state, .stopped)
        XCTAssertNil(core.currentItemID)
    }

    func testEligibility() {
        var core = PlayerCore(randomSeed: 1)
        XCTAssertEqual(core.enabledCommands.count, RemoteCommand.allCases.count)
        XCTAssertFalse(core.enabledCommands.values.contains(true))
        var verdict = core.eligibility(categoryIsMixable: false)
        XCTAssertFalse(verdict.eligible)
        XCTAssertEqual(verdict.reason, "no enabled command")
        verdict = core.eligibility(categoryIsMixable: true)
        XCTAssertFalse(verdict.eligible)
        XCTAssertEqual(verdict.reason, "mixable category, no enabled command")

        _ = core.add(tracks(1), now: 0)
        verdict = core.eligibility(categoryIsMixable: false)
        XCTAssertTrue(verdict.eligible)
        XCTAssertEqual(verdict.reason, "eligible")
        verdict = core.eligibility(categoryIsMixable: true)
        XCTAssertFalse(verdict.eligible)
        XCTAssertEqual(verdict.reason, "mixable category")
        XCTAssertEqual(core.enabledCommands[.play], true)
        XCTAssertEqual(core.enabledCommands[.pause], false)
    }
}
