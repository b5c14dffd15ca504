import TonearmPlayer
import XCTest

/// Internet radio in the core: a live stream has no length and no place to seek to
/// (MPNowPlayingInfoPropertyIsLiveStream); a title arriving later is one merged update.
final class LiveStreamTests: XCTestCase {
    private func radioAndTrack() -> PlayerCore {
        var core = PlayerCore(randomSeed: 1)
        _ = core.add([(path: "http://radio.example/stream", metadata: TrackMetadata(isLiveStream: true)),
                      (path: "/music/a.flac", metadata: TrackMetadata(title: "A", duration: 100))], now: 0)
        _ = core.handle(CommandRequest(.play), now: 0)
        _ = core.engineStartedItem(1, at: 0, heardAt: 0, now: 0)
        return core
    }

    func testSeekingAndSkippingWithinAreDisabledForALiveStreamOnly() {
        var core = radioAndTrack()
        XCTAssertTrue(core.nowPlaying.isLiveStream)
        XCTAssertNil(core.nowPlaying.duration)
        for command in [RemoteCommand.skipForward, .skipBackward, .seekForward, .seekBackward, .changePlaybackPosition] {
            XCTAssertFalse(core.isEnabled(command), "\(command)")
        }
        XCTAssertTrue(core.isEnabled(.pause))
        XCTAssertTrue(core.isEnabled(.nextTrack))
        let refused = core.handle(CommandRequest(.changePlaybackPosition, position: 30), now: 5)
        XCTAssertEqual(refused.status, .disabled)
        XCTAssertEqual(refused.actions, [])

        _ = core.handle(CommandRequest(.nextTrack), now: 6)
        XCTAssertFalse(core.nowPlaying.isLiveStream)
        XCTAssertTrue(core.isEnabled(.changePlaybackPosition), "the file after it seeks")
    }

    func testATitleFromTheStationIsOneMergedUpdate() {
        var core = radioAndTrack()
        let update = core.updateMetadata(itemID: 1, TrackMetadata(title: "Artist - Song", album: "Test FM", isLiveStream: true), now: 3)
        XCTAssertEqual(update.map(\.reason), [.metadataChanged])
        XCTAssertEqual(update.map(\.isReplacement), [false])
        XCTAssertEqual(core.nowPlaying.title, "Artist - Song")
        XCTAssertEqual(core.nowPlaying.album, "Test FM")
        XCTAssertEqual(core.nowPlaying.elapsed + core.nowPlaying.rate * (3 - core.nowPlaying.timestamp), 3, accuracy: 1e-9,
                       "elapsed counts from the start of listening")
    }
}
