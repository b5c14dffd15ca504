import TonearmControlPlane
import TonearmDBus
@testable import TonearmMPRIS
import TonearmPlayer
import TonearmSystem
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
                title: "Two", artist: "Ann", album: "A", albumArtist: "Ann & Co", trackNumber: 2, discNumber: 1, genre: "Jazz",
                duration: 30)),
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
        XCTAssertEqual(value("xesam:genre", m), .array(element: "s", [.string("Jazz")]))
        XCTAssertEqual(value("xesam:url", m), .string("file:///music/A%20b/%C3%A4.flac"))
        XCTAssertNil(value("mpris:artUrl", m), "no cover file")
        let withCover = MPRISProperties.metadata(state(), artURL: "file:///run/tonearm/covers-tonearm/flac-1.jpg")
        XCTAssertEqual(value("mpris:artUrl", withCover), .string("file:///run/tonearm/covers-tonearm/flac-1.jpg"))
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

    func testFileURLsBothWays() {
        // A name that is not UTF-8 (Latin-1 "é" = 0xE9) keeps its byte.
        let latin1 = FileName.string([UInt8(ascii: "/"), UInt8(ascii: "m"), 0xE9, UInt8(ascii: "."), UInt8(ascii: "f")])
        XCTAssertEqual(MPRISProperties.fileURL(latin1), "file:///m%E9.f")
        for path in ["/music/A b/ä.flac", "/a/#?%/x.flac", latin1, "/"] {
            XCTAssertEqual(MPRISProperties.filePath(MPRISProperties.fileURL(path)), path, path)
        }
        XCTAssertEqual(MPRISProperties.filePath("file://localhost/music/x.flac"), "/music/x.flac")
        XCTAssertEqual(MPRISProperties.filePath("FILE:/music/x%2eflac"), "/music/x.flac")
        for refused in ["http://host/x.flac", "file://otherhost/x.flac", "file:music/x.flac", "file:///x%2", "file:///x%zz",
                        "file:///x%00y", "file:///x.flac?query", "/music/x.flac", "file:", ""] {
            XCTAssertNil(MPRISProperties.filePath(refused), refused)
        }
    }

    func testCoverFileNames() {
        XCTAssertEqual(CoverFiles.fileName("flac-00ff", mimeType: "image/jpeg"), "flac-00ff.jpg")
        XCTAssertEqual(CoverFiles.fileName("file-1", mimeType: "IMAGE/PNG"), "file-1.png")
        XCTAssertEqual(CoverFiles.fileName("../x/é", mimeType: "image/x-weird"), "___x__.img", "nothing but a plain name")
    }
}
