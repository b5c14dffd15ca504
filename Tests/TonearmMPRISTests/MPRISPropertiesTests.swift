import TonearmControlPlane
import TonearmDBus
@testable import TonearmMPRIS
import TonearmPlayer
import XCTest

/// The MPRIS properties from the published state, without a bus.
final class MPRISPropertiesTests: XCTestCase {
    private func state() -> ControlState {
        var state = ControlState()
        state.transport = .playing
        state.nowPlaying = NowPlayingInfo(title: "Two", duration: 30, elapsed: 10, rate: 1, timestamp: 100)
        state.queue = QueueState(version: 3, items: [
            QueueItem(id: 3, path: "/music/A/01.flac", metadata: TrackMetadata(title: "One")),
            QueueItem(id: 9, path: "/music/A b/ä.flac", metadata: TrackMetadata(
                title: "Two", artist: "Ann", album: "A", albumArtist: "Ann & Co", trackNumber: 2, discNumber: 1, duration: 30)),
        ], currentItemID: 9, currentIndex: 1)
        state.volume = 42
        state.enabledCommands = [.nextTrack: false, .previousTrack: true, .play: true, .pause: true, .changePlaybackPosition: true]
        return state
    }

    private func value(_ name: String, _ properties: [(String, DBusValue)]) -> DBusValue? {
        properties.first { $0.0 == name }?.1
    }

    func testPlayerPropertiesFollowTheState() {
        var s = state()
        let p = MPRISProperties.playerProperties(s)
        XCTAssertEqual(value("PlaybackStatus", p), .string("Playing"))
        XCTAssertEqual(value("Volume", p), .double(0.42))
        XCTAssertEqual(value("CanGoNext", p), .boolean(false), "from the command center")
        XCTAssertEqual(value("CanGoPrevious", p), .boolean(true))
        XCTAssertNil(value("Position", p), "computed when read, never in the signalled set")
        s.nowPlaying.rate = 0
        XCTAssertEqual(MPRISProperties.playbackStatus(s), "Paused", "playing but not heard")
        s.transport = .stopped
        XCTAssertEqual(MPRISProperties.playbackStatus(s), "Stopped")
        for mode in RepeatMode.allCases {
            XCTAssertEqual(MPRISProperties.repeatMode(MPRISProperties.loopStatus(mode)), mode)
        }
        XCTAssertNil(MPRISProperties.repeatMode("Forever"))
        XCTAssertEqual(MPRISProperties.position(state(), now: 102.5), 12_500_000)
    }

    func testMetadataOfTheCurrentItem() {
        let m = MPRISProperties.metadata(state())
        XCTAssertEqual(value("mpris:trackid", m), .objectPath("/org/tonearm/track/9"))
        XCTAssertEqual(value("mpris:length", m), .int64(30_000_000))
        XCTAssertEqual(value("xesam:artist", m), .array(element: "s", [.string("Ann")]))
        XCTAssertEqual(value("xesam:albumArtist", m), .array(element: "s", [.string("Ann & Co")]))
        XCTAssertEqual(value("xesam:trackNumber", m), .int32(2))
        XCTAssertEqual(value("xesam:url", m), .string("file:///music/A%20b/%C3%A4.flac"))
        var none = state()
        none.queue.currentItemID = nil
        XCTAssertEqual(MPRISProperties.metadata(none).map(\.0), ["mpris:trackid"])
        XCTAssertEqual(MPRISProperties.trackID(none), "/org/mpris/MediaPlayer2/TrackList/NoTrack")
    }

    func testOnlyWhatChangedIsSignalled() {
        let before = MPRISProperties.playerProperties(state())
        var paused = state()
        paused.transport = .paused
        paused.enabledCommands[.pause] = false
        let changed = MPRISProperties.changed(from: before, to: MPRISProperties.playerProperties(paused))
        XCTAssertEqual(changed.map(\.0), ["PlaybackStatus", "CanPause"])
        XCTAssertEqual(MPRISProperties.changed(from: before, to: before).count, 0)
    }
}
