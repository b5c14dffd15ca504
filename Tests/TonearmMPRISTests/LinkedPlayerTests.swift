import Foundation
import TestSupport
import TonearmControlPlane
import TonearmDBus
@testable import TonearmMPRIS
import TonearmPlayer
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A linked player's properties into Now Playing, and remote commands into its methods: pure,
/// on whatever players send.
final class LinkedPlayerTests: XCTestCase {
    private func metadata(_ entries: [(String, DBusValue)]) -> LinkedMetadata {
        LinkedMetadata(.dictionary(entries))
    }

    // MARK: Metadata

    func testTheSpecsTypes() {
        let read = metadata([
            ("mpris:trackid", .objectPath("/org/gnome/ShairportSync/123")), ("xesam:title", .string("Blue in Green")),
            ("xesam:artist", .array(element: "s", [.string("Miles Davis")])), ("xesam:album", .string("Kind of Blue")),
            ("xesam:albumArtist", .array(element: "s", [.string("Miles Davis")])), ("xesam:trackNumber", .int32(3)),
            ("mpris:length", .int64(337_000_000)), ("mpris:artUrl", .string("file:///tmp/cover.jpg")),
            ("xesam:genre", .array(element: "s", [.string("Jazz")])), ("xesam:url", .string("https://example.com")),
        ])
        XCTAssertEqual(read, LinkedMetadata(trackID: "/org/gnome/ShairportSync/123", title: "Blue in Green", artist: "Miles Davis",
                                            album: "Kind of Blue", albumArtist: "Miles Davis", trackNumber: 3, duration: 337,
                                            artURL: "file:///tmp/cover.jpg"))
    }

    func testNothingKnownFromWhatIsNotADictionary() {
        for odd: DBusValue? in [nil, .string("title"), .array(element: "s", [.string("a")]), .int32(5), .variant(.boolean(true)),
                                .dictionary([]), .array(element: "{sv}", [])] {
            XCTAssertEqual(LinkedMetadata(odd), LinkedMetadata(), "\(String(describing: odd))")
        }
    }

    func testMissingFieldsAreUnknown() {
        XCTAssertEqual(metadata([("xesam:title", .string("Only a title"))]), LinkedMetadata(title: "Only a title"))
        XCTAssertEqual(metadata([("mpris:trackid", .objectPath("/a/1"))]), LinkedMetadata(trackID: "/a/1"))
        XCTAssertEqual(metadata([("xesam:comment", .array(element: "s", [.string("x")]))]), LinkedMetadata())
    }

    func testArtistsOneOrMany() {
        let many = metadata([("xesam:artist", .array(element: "s", [.string("Ann"), .string("Bob"), .string("Cy")]))])
        XCTAssertEqual(many.artist, "Ann, Bob, Cy")
        XCTAssertEqual(metadata([("xesam:artist", .string("Bare String"))]).artist, "Bare String", "a string where the spec says as")
        XCTAssertNil(metadata([("xesam:artist", .array(element: "s", []))]).artist, "none")
        XCTAssertEqual(metadata([("xesam:artist", .array(element: "s", [.string(""), .string("Ann"), .string("  ")]))]).artist, "Ann",
                       "empty names are passed over")
        XCTAssertEqual(metadata([("xesam:artist", .array(element: "v", [.variant(.string("Ann")), .variant(.int32(3)), .variant(.string("Bob"))]))]).artist,
                       "Ann, Bob", "variants of names, and what is not a name passed over")
        XCTAssertNil(metadata([("xesam:artist", .array(element: "i", [.int32(1)]))]).artist)
        XCTAssertNil(metadata([("xesam:artist", .int32(1))]).artist)
        XCTAssertEqual(metadata([("xesam:albumArtist", .array(element: "s", [.string("X"), .string("Y")]))]).albumArtist, "X, Y")
    }

    func testWrongTypesAndEmptyTexts() {
        let read = metadata([
            ("xesam:title", .int32(7)), ("xesam:album", .array(element: "s", [.string("An album in an array")])),
            ("mpris:artUrl", .boolean(true)), ("mpris:trackid", .int64(12)), ("xesam:trackNumber", .string("3")),
            ("mpris:length", .string("337000000")),
        ])
        XCTAssertEqual(read, LinkedMetadata())
        XCTAssertNil(metadata([("xesam:title", .string(""))]).title)
        XCTAssertNil(metadata([("xesam:title", .string(" \t\n"))]).title)
        XCTAssertEqual(metadata([("xesam:title", .string(" spaced "))]).title, " spaced ", "kept as it is")
        XCTAssertEqual(metadata([("xesam:title", .variant(.variant(.string("Nested"))))]).title, "Nested", "variants inside variants")
        XCTAssertEqual(metadata([("mpris:trackid", .string("/as/a/string"))]).trackID, "/as/a/string", "an id sent as a string")
        XCTAssertNil(metadata([("mpris:trackid", .string(""))]).trackID)
        XCTAssertNil(metadata([("mpris:trackid", .objectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack"))]).trackID, "the spec's none")
        XCTAssertEqual(LinkedMetadata(.array(element: "{ss}", [.entry(.string("xesam:title"), .string("a{ss}"))])).title, "a{ss}",
                       "a dictionary of strings read as far as it goes")
    }

    func testNumbersInAnyType() {
        for value: DBusValue in [.byte(4), .int16(4), .uint16(4), .int32(4), .uint32(4), .int64(4), .uint64(4), .double(4)] {
            XCTAssertEqual(metadata([("xesam:trackNumber", value)]).trackNumber, 4, "\(value)")
        }
        for odd: DBusValue in [.double(4.5), .double(.nan), .double(.infinity), .int32(0), .int32(-2), .boolean(true)] {
            XCTAssertNil(metadata([("xesam:trackNumber", odd)]).trackNumber, "\(odd)")
        }
        XCTAssertEqual(metadata([("mpris:length", .uint64(90_000_000))]).duration, 90)
        XCTAssertEqual(metadata([("mpris:length", .int32(1_500_000))]).duration, 1.5)
        XCTAssertEqual(metadata([("mpris:length", .double(2_500_000.5))]).duration ?? 0, 2.5000005, accuracy: 1e-9)
        XCTAssertEqual(metadata([("mpris:length", .uint64(.max))]).duration ?? 0, Double(Int.max) / 1_000_000, accuracy: 1e6,
                       "clamped, not wrapped")
        for odd: DBusValue in [.int64(0), .int64(-5_000_000), .double(-1), .double(.nan), .double(.infinity), .string("long")] {
            XCTAssertNil(metadata([("mpris:length", odd)]).duration, "\(odd)")
        }
    }

    func testAnotherItemByItsIdOrByWhatNamesIt() {
        let one = LinkedMetadata(trackID: "/t/1", title: "A")
        XCTAssertTrue(LinkedMetadata(trackID: "/t/2", title: "A").isAnotherItem(than: one))
        XCTAssertTrue(LinkedMetadata(trackID: "/t/1", title: "B").isAnotherItem(than: one), "one id for every item, as some players keep")
        XCTAssertFalse(LinkedMetadata(trackID: "/t/1", title: "A", artURL: "file:///c.jpg").isAnotherItem(than: one), "a cover that came later")
        XCTAssertTrue(LinkedMetadata(title: "A").isAnotherItem(than: one), "an id that went")
        XCTAssertTrue(LinkedMetadata(title: "B").isAnotherItem(than: LinkedMetadata(title: "A")))
        XCTAssertTrue(LinkedMetadata(title: "A", duration: 3).isAnotherItem(than: LinkedMetadata(title: "A")))
        XCTAssertFalse(LinkedMetadata(title: "A", artURL: "file:///b").isAnotherItem(than: LinkedMetadata(title: "A")))
    }

    // MARK: The mirror

    private func playing(_ mirror: inout LinkedPlayerMirror, at now: Double) -> LinkedPlayerMirror.Change {
        mirror.replaceAll([
            ("PlaybackStatus", .string("Playing")), ("Rate", .double(1)), ("Position", .int64(10_000_000)),
            ("Metadata", .dictionary([("mpris:trackid", .objectPath("/t/1")), ("xesam:title", .string("One")), ("mpris:length", .int64(100_000_000))])),
            ("CanGoNext", .boolean(true)), ("CanGoPrevious", .boolean(false)), ("CanPlay", .boolean(true)), ("CanPause", .boolean(true)),
            ("CanSeek", .boolean(true)), ("CanControl", .boolean(true)), ("LoopStatus", .string("None")), ("Shuffle", .boolean(false)),
        ], now: now)
    }

    func testNowPlayingFromTheProperties() {
        var mirror = LinkedPlayerMirror()
        XCTAssertEqual(playing(&mirror, at: 50), LinkedPlayerMirror.Change(reason: .trackChanged, readPosition: false),
                       "GetAll carries the position")
        let now = mirror.nowPlaying(reason: .trackChanged, artwork: nil)
        XCTAssertEqual(now.transport, .playing)
        XCTAssertEqual(now.info, NowPlayingInfo(title: "One", duration: 100, elapsed: 10, rate: 1, timestamp: 50))
        XCTAssertEqual(now.enabledCommands, [
            .play: true, .pause: true, .togglePlayPause: true, .stop: true, .nextTrack: true, .previousTrack: false,
            .skipForward: true, .skipBackward: true, .changePlaybackPosition: true, .seekForward: false, .seekBackward: false,
            .changeRepeatMode: true, .changeShuffleMode: true,
        ])
        XCTAssertEqual(mirror.elapsed(at: 55), 15, "extrapolated with the rate")
        XCTAssertEqual(mirror.elapsed(at: 500), 100, "never past the end")
    }

    func testAPlayerThatSaysLittle() {
        var mirror = LinkedPlayerMirror()
        XCTAssertEqual(mirror.replaceAll([("PlaybackStatus", .string("Playing"))], now: 1),
                       LinkedPlayerMirror.Change(reason: .trackChanged, readPosition: true), "no Position: read it")
        let now = mirror.nowPlaying(reason: .trackChanged, artwork: nil)
        XCTAssertEqual(now.info, NowPlayingInfo(rate: 1, timestamp: 1), "nothing known, at 0, running")
        XCTAssertFalse(now.info.isLiveStream, "no item")
        XCTAssertEqual(now.enabledCommands.filter(\.value).keys.sorted { $0.rawValue < $1.rawValue },
                       [.changePlaybackPosition, .nextTrack, .pause, .play, .previousTrack, .skipBackward, .skipForward, .stop, .togglePlayPause],
                       "what it does not say is not disabled; no loop or shuffle without the properties")
        XCTAssertEqual(mirror.call(for: CommandRequest(.changeShuffleMode), now: 1), .set("Shuffle", .boolean(true)))

        _ = mirror.replaceAll([("CanControl", .boolean(false)), ("CanPlay", .boolean(true)), ("LoopStatus", .string("None"))], now: 2)
        XCTAssertEqual(mirror.nowPlaying(reason: .trackChanged, artwork: nil).enabledCommands.filter(\.value), [:],
                       "CanControl false disables everything")
        XCTAssertEqual(mirror.transport, .stopped, "no PlaybackStatus")

        for (status, transport) in [("Paused", TransportState.paused), ("Stopped", .stopped), ("playing", .stopped), ("", .stopped)] {
            _ = mirror.replaceAll([("PlaybackStatus", .string(status))], now: 3)
            XCTAssertEqual(mirror.transport, transport, status)
        }
        _ = mirror.replaceAll([("PlaybackStatus", .int32(1)), ("Rate", .string("fast"))], now: 4)
        XCTAssertEqual(mirror.transport, .stopped)
        _ = mirror.replaceAll([("PlaybackStatus", .string("Playing")), ("Rate", .double(-2))], now: 4)
        XCTAssertEqual(mirror.rate, 1, "an unusable rate")
        _ = mirror.replaceAll([("PlaybackStatus", .variant(.string("Playing"))), ("Rate", .variant(.double(0.5)))], now: 4)
        XCTAssertEqual(mirror.rate, 0.5)
        _ = mirror.replaceAll([("Metadata", .dictionary([("xesam:title", .string("Radio"))]))], now: 5)
        XCTAssertTrue(mirror.nowPlaying(reason: .trackChanged, artwork: nil).info.isLiveStream, "an item without a length")
    }

    func testChangesSayWhatToReadAndWhy() {
        var mirror = LinkedPlayerMirror()
        _ = playing(&mirror, at: 0)
        // A pause: read the position, and meanwhile stand where extrapolation says.
        XCTAssertEqual(mirror.apply([("PlaybackStatus", .string("Paused"))], now: 4), LinkedPlayerMirror.Change(reason: .paused, readPosition: true))
        XCTAssertEqual(mirror.elapsed(at: 100), 14, "stopped where it was at the pause")
        XCTAssertEqual(mirror.nowPlaying(reason: .paused, artwork: nil).info.rate, 0)
        mirror.setPosition(microseconds: 13_900_000, at: 4.1)
        XCTAssertEqual(mirror.elapsed(at: 100), 13.9, "as the player said")
        XCTAssertEqual(mirror.apply([("PlaybackStatus", .string("Playing"))], now: 10), LinkedPlayerMirror.Change(reason: .resumed, readPosition: true))
        XCTAssertEqual(mirror.apply([("Rate", .double(2))], now: 10), LinkedPlayerMirror.Change(reason: .rateChanged, readPosition: true))
        XCTAssertEqual(mirror.elapsed(at: 11), 15.9, "twice as fast from where it was")
        XCTAssertEqual(mirror.apply([("CanGoNext", .boolean(false))], now: 11), LinkedPlayerMirror.Change(reason: .metadataChanged))
        XCTAssertEqual(mirror.enabledCommands[.nextTrack], false)
        XCTAssertEqual(mirror.apply([], now: 11), LinkedPlayerMirror.Change(), "nothing")
        let sameItem: DBusValue = .dictionary([("mpris:trackid", .objectPath("/t/1")), ("xesam:title", .string("One")),
                                               ("mpris:length", .int64(100_000_000)), ("mpris:artUrl", .string("file:///late.jpg")),
                                               ("xesam:trackNumber", .int32(4))])
        XCTAssertEqual(mirror.apply([("Metadata", sameItem)], now: 12), LinkedPlayerMirror.Change(reason: .metadataChanged),
                       "more about the same item (its cover, its number): no new position")
        XCTAssertEqual(mirror.metadata.artURL, "file:///late.jpg")
        let next: DBusValue = .dictionary([("mpris:trackid", .objectPath("/t/2")), ("xesam:title", .string("Two"))])
        XCTAssertEqual(mirror.apply([("Metadata", next)], now: 20), LinkedPlayerMirror.Change(reason: .trackChanged, readPosition: true))
        XCTAssertEqual(mirror.elapsed(at: 20), 0, "a new item starts at 0 until the player says")
        XCTAssertEqual(mirror.apply([("PlaybackStatus", .string("Stopped"))], now: 30), LinkedPlayerMirror.Change(reason: .stopped, readPosition: false))
        XCTAssertEqual(mirror.elapsed(at: 40), 0)
        XCTAssertEqual(mirror.apply([("PlaybackStatus", .string("Playing"))], now: 50).reason, .playbackStarted)
        // A player that signals its position (the spec says not to): taken as read.
        _ = mirror.apply([("Position", .int64(7_000_000))], now: 60)
        XCTAssertEqual(mirror.elapsed(at: 60), 7)
        XCTAssertNil(mirror.properties["Position"], "not kept as a property")
    }

    func testCommandsBecomeItsMethods() {
        var mirror = LinkedPlayerMirror()
        _ = playing(&mirror, at: 0)
        let calls: [(CommandRequest, PlayerCall?)] = [
            (CommandRequest(.play), .method("Play", [])), (CommandRequest(.pause), .method("Pause", [])),
            (CommandRequest(.togglePlayPause), .method("PlayPause", [])), (CommandRequest(.stop), .method("Stop", [])),
            (CommandRequest(.nextTrack), .method("Next", [])), (CommandRequest(.previousTrack), .method("Previous", [])),
            (CommandRequest(.skipForward, interval: 30), .method("Seek", [.int64(30_000_000)])),
            (CommandRequest(.skipBackward, interval: 7.5), .method("Seek", [.int64(-7_500_000)])),
            (CommandRequest(.skipBackward), .method("Seek", [.int64(-15_000_000)])),
            (CommandRequest(.changePlaybackPosition, position: 42), .method("SetPosition", [.objectPath("/t/1"), .int64(42_000_000)])),
            (CommandRequest(.changePlaybackPosition, position: -3), .method("SetPosition", [.objectPath("/t/1"), .int64(0)])),
            (CommandRequest(.changePlaybackPosition), nil),
            (CommandRequest(.changeRepeatMode, repeatMode: .one), .set("LoopStatus", .string("Track"))),
            (CommandRequest(.changeRepeatMode), .set("LoopStatus", .string("Playlist"))),
            (CommandRequest(.changeShuffleMode, shuffle: false), .set("Shuffle", .boolean(false))),
            (CommandRequest(.changeShuffleMode), .set("Shuffle", .boolean(true))),
            (CommandRequest(.seekForward, scanning: .begin), nil), (CommandRequest(.seekBackward, scanning: .end), nil),
        ]
        for (request, call) in calls {
            XCTAssertEqual(mirror.call(for: request, now: 0), call, "\(request)")
        }
        // Without a usable track id, a position is reached by the difference.
        _ = mirror.apply([("Metadata", .dictionary([("mpris:trackid", .string("not a path")), ("xesam:title", .string("One"))]))], now: 0)
        mirror.setPosition(microseconds: 10_000_000, at: 0)
        XCTAssertEqual(mirror.call(for: CommandRequest(.changePlaybackPosition, position: 25), now: 5), .method("Seek", [.int64(10_000_000)]))
        _ = mirror.apply([("LoopStatus", .string("Playlist"))], now: 0)
        XCTAssertEqual(mirror.call(for: CommandRequest(.changeRepeatMode), now: 0), .set("LoopStatus", .string("Track")), "steps on")
    }

    func testObjectPaths() {
        for good in ["/", "/a", "/org/mpris/MediaPlayer2/Track/42", "/a_b/C9"] { XCTAssertTrue(LinkedPlayerMirror.isObjectPath(good), good) }
        for bad in ["", "a", "//", "/a/", "/a//b", "/a-b", "/ä", "/a b"] { XCTAssertFalse(LinkedPlayerMirror.isObjectPath(bad), bad) }
    }

    // MARK: Tonearm's own MPRIS while a link owns Now Playing

    func testTonearmsOwnPlayerShowsTheLinkedItem() {
        var state = ControlState()
        state.queue = QueueState(version: 1, items: [QueueItem(id: 3, path: "/m/a.flac", metadata: TrackMetadata(title: "Local"))],
                                 currentItemID: 3, currentIndex: 0)
        state.transport = .playing
        state.nowPlaying = NowPlayingInfo(title: "From the phone", artist: "Ann, Bob", album: "Pocket", duration: 61.5, elapsed: 3, rate: 1,
                                          artwork: Artwork(id: "link-00ff", mimeType: "image/png", width: 1, height: 1, byteCount: 9))
        XCTAssertEqual(MPRISProperties.metadata(state).first { $0.0 == "xesam:title" }?.1, .string("Local"), "unlinked: the queue's item")
        state.nowPlayingLink = LinkState(sessionName: "bluealsa-aplay", player: "org.mpris.MediaPlayer2.bluez on the system bus",
                                         client: 4, present: true)
        let linked = MPRISProperties.metadata(state, artURL: "file:///run/tonearm/covers/link-00ff.png")
        let fields = Dictionary(uniqueKeysWithValues: linked.map { ($0.0, $0.1) })
        XCTAssertEqual(fields["xesam:title"], .string("From the phone"))
        XCTAssertEqual(fields["xesam:artist"], .array(element: "s", [.string("Ann, Bob")]))
        XCTAssertEqual(fields["xesam:album"], .string("Pocket"))
        XCTAssertEqual(fields["mpris:length"], .int64(61_500_000))
        XCTAssertEqual(fields["mpris:artUrl"], .string("file:///run/tonearm/covers/link-00ff.png"))
        XCTAssertNil(fields["xesam:url"], "not a file of the queue")
        guard case .objectPath(let track)? = fields["mpris:trackid"] else { return XCTFail("\(linked)") }
        XCTAssertTrue(track.hasPrefix(MPRISProperties.linkedTrackPrefix) && LinkedPlayerMirror.isObjectPath(track), track)
        XCTAssertEqual(MPRISProperties.trackID(state), track)
        XCTAssertEqual(MPRISProperties.artwork(state)?.id, "link-00ff")
        XCTAssertEqual(MPRISProperties.duration(state), 61.5)
        XCTAssertNil(MPRISProperties.currentItem(state))
        var later = state
        later.nowPlaying.elapsed = 40
        XCTAssertEqual(MPRISProperties.trackID(later), track, "the same item while it plays on")
        later.nowPlaying.title = "Next one"
        XCTAssertNotEqual(MPRISProperties.trackID(later), track, "another item, another id")
        later.nowPlaying = NowPlayingInfo()
        XCTAssertEqual(MPRISProperties.trackID(later), MPRISProperties.noTrack)
    }

    // MARK: Covers

    func testCoversAreLocalJPEGsAndPNGsOnly() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-linked-cover")
        let png = try XCTUnwrap(LinkedPlayerTests.onePixelPNG)
        try Data(png).write(to: URL(fileURLWithPath: directory.file("cover art.png")))
        let read = LinkedCover.read("file://" + directory.file("cover%20art.png"))
        XCTAssertEqual(read, .picture(LinkedArtwork(mimeType: "image/png", width: 1, height: 1, bytes: png)))

        for url in ["https://i.scdn.co/image/ab67", "http://127.0.0.1/cover.jpg", "data:image/png;base64,iVBORw0KGgo=",
                    "file://otherhost/tmp/x.png", "cover.png", ""] {
            XCTAssertEqual(LinkedCover.read(url), .notLocal, url)
        }
        try Data("root:x:0:0:root:/root:/bin/bash\n".utf8).write(to: URL(fileURLWithPath: directory.file("passwd")))
        XCTAssertEqual(LinkedCover.read("file://" + directory.file("passwd")),
                       .refused("the cover \(directory.file("passwd")) is neither a JPEG nor a PNG"), "only pictures leave the daemon")
        XCTAssertEqual(LinkedCover.read("file://" + directory.file("missing.png")),
                       .refused("cannot read the cover \(directory.file("missing.png")): No such file or directory"))
        XCTAssertEqual(mkfifo(directory.file("fifo"), 0o644), 0)
        XCTAssertEqual(LinkedCover.read("file://" + directory.file("fifo")),
                       .refused("cannot read the cover \(directory.file("fifo")): not a regular file"), "never waited on")
        XCTAssertEqual(LinkedCover.read("file://" + directory.path), .refused("cannot read the cover \(directory.path): not a regular file"))
        try Data(png + [UInt8](repeating: 0, count: LinkedCover.largest)).write(to: URL(fileURLWithPath: directory.file("huge.png")))
        XCTAssertEqual(LinkedCover.read("file://" + directory.file("huge.png")),
                       .refused("cannot read the cover \(directory.file("huge.png")): larger than 4 MB"))
        XCTAssertNil(LinkedCover.picture([0xFF, 0xD8, 0xFF, 0xE0]), "a JPEG signature with nothing readable after it")
    }

    /// A 1 × 1 PNG, as any encoder writes it.
    static let onePixelPNG: [UInt8]? = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
        .map { [UInt8]($0) }
}
