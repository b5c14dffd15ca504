import Logging
import TestSupport
@testable import TonearmDaemon
import TonearmConfig
import TonearmControlPlane
import TonearmPlayer
import TonearmSession
import XCTest

/// Links at the control plane: a client speaks for the program behind sessions of a name, and
/// while such a session owns Now Playing, that program's Now Playing and commands are the
/// daemon's. No device: the player keeps its state while the output waits for one.
final class DaemonLinkTests: XCTestCase {
    var directory: TemporaryDirectory!
    var daemon: PlayerDaemon!
    let source = CommandSource("test", client: 3)
    /// When the linked program's positions were read.
    let readAt = monotonicNow()

    override func setUp() async throws {
        directory = try TemporaryDirectory(prefix: "tonearm-link")
        var config = DaemonConfig()
        config.output.device = "tonearm_no_such_device"
        config.daemon.stateDirectory = directory.file("state")
        config.daemon.socket = directory.file("control.sock")
        config.player.skipForwardSeconds = 20
        daemon = try PlayerDaemon(settings: DaemonSettings(config: config),
                                  logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        await daemon.start()
    }

    override func tearDown() async throws {
        await daemon.stop()
    }

    private func playTracks() async throws {
        let paths = try (1...2).map { n in
            try FLACFixture(frames: 44100, tags: [("TITLE", "Track \(n)")]).write(to: directory.file("t\(n).flac"))
        }
        _ = await daemon.send(.queue(.add(paths: paths, at: nil)), from: source)
        _ = await daemon.send(.remote(CommandRequest(.play)), from: source)
    }

    private func radio(_ title: String?, transport: TransportState = .playing, elapsed: Double = 3, reason: PublicationReason = .trackChanged,
                       artwork: LinkedArtwork? = nil) -> LinkCommand {
        let enabled: [RemoteCommand: Bool] = [.pause: true, .togglePlayPause: true, .nextTrack: true, .skipForward: true, .play: false]
        let playing = title.map {
            LinkedNowPlaying(transport: transport, info: NowPlayingInfo(title: $0, artist: "Phone", duration: 200, elapsed: elapsed,
                                                                         rate: transport == .playing ? 1 : 0, timestamp: readAt),
                             enabledCommands: enabled, artwork: artwork, reason: reason)
        }
        return .publish(LinkedPlayer(sessionName: "radio", player: "org.mpris.MediaPlayer2.Radio on the session bus", playing: playing))
    }

    /// The Now Playing publications of the next batches, until one comes.
    private func publications(_ iterator: inout ChangeSubscription.AsyncIterator) async -> [NowPlayingPublication] {
        while let batch = await iterator.next() {
            if !batch.publications.isEmpty { return batch.publications }
        }
        return []
    }

    private func remoteNotices(_ iterator: inout ChangeSubscription.AsyncIterator, count: Int) async -> [Notice] {
        var notices: [Notice] = []
        while notices.count < count, let batch = await iterator.next() {
            notices += batch.notices.filter { if case .remoteCommand = $0 { true } else { false } }
        }
        return notices
    }

    func testALinkedProgramIsNowPlayingWhileItsSessionOwnsItAndTakesEveryCommand() async throws {
        try await playTracks()
        let link = CommandSource("link", client: daemon.newClient())
        let claimed = await daemon.send(.link(radio("Song A")), from: link)
        XCTAssertEqual(claimed, CommandResult(status: .success))
        var state = await daemon.snapshot()
        XCTAssertEqual(state.links, [LinkState(sessionName: "radio", player: "org.mpris.MediaPlayer2.Radio on the session bus",
                                               client: link.client!, present: true)])
        XCTAssertNil(state.nowPlayingLink, "no session of that name owns Now Playing yet")
        XCTAssertEqual(state.nowPlaying.title, "Track 1")
        // The output's wait for a device is told before the subscription (its Now Playing, the
        // clock stopped, is the player's own), not in the activation's batch.
        let deadline = monotonicSeconds() + 10
        while state.output.heard == "ok" && monotonicSeconds() < deadline {
            try await Task.sleep(for: .milliseconds(10))
            state = await daemon.snapshot()
        }
        XCTAssertNotEqual(state.output.heard, "ok", "the output waits for its device")
        // The engine counts the interruption just after it shows in its status.
        try await Task.sleep(for: .milliseconds(50))
        state = await daemon.snapshot()

        let changes = daemon.subscribe([.player])
        var iterator = changes.makeAsyncIterator()
        let app = CommandSource("app", client: daemon.newClient())
        let opened = await daemon.send(.session(.open(SessionSetup(category: .playback), remoteCommands: true, name: "radio")), from: app)
        guard case .session(let report) = opened.payload else { return XCTFail("\(opened)") }
        let session = report.state.id
        _ = await daemon.send(.session(.activate(session)), from: app)
        state = await daemon.snapshot()
        XCTAssertEqual(state.sessions.nowPlayingOwner, session)
        XCTAssertEqual(state.nowPlayingLink?.sessionName, "radio")
        XCTAssertEqual(state.nowPlaying.title, "Song A")
        XCTAssertEqual(state.nowPlaying.artist, "Phone")
        XCTAssertEqual(state.transport, .playing)
        XCTAssertEqual(state.enabledCommands[.nextTrack], true)
        XCTAssertEqual(state.enabledCommands[.play], false)
        XCTAssertEqual(state.queue.items.count, 2, "the queue is the player's still")
        var published = await publications(&iterator)
        XCTAssertEqual(published.last?.info.title, "Song A")
        XCTAssertEqual(published.last?.reason, .trackChanged)
        XCTAssertEqual(published.last?.isReplacement, true, "a change of owner is one full replacement")
        XCTAssertFalse(published.contains { $0.info.title == "Track 1" }, "the interrupted player's pause is not what plays: \(published)")

        // Every source's command goes to the link's client; what the program does not take is refused.
        let notices = daemon.subscribe([])
        var noticeIterator = notices.makeAsyncIterator()
        for name in ["socket client 1", "button next (gpiochip0 line 17)", "MPD"] {
            let result = await daemon.send(.remote(CommandRequest(.nextTrack)), from: CommandSource(name))
            XCTAssertEqual(result, CommandResult(status: .success, forwardedTo: session), name)
        }
        let play = await daemon.send(.remote(CommandRequest(.play)), from: source)
        XCTAssertEqual(play, CommandResult(status: .disabled))
        let scan = await daemon.send(.remote(CommandRequest(.seekForward, scanning: .begin)), from: source)
        XCTAssertEqual(scan,
                       CommandResult(status: .disabled))
        _ = await daemon.send(.remote(CommandRequest(.skipForward)), from: source)
        let told = await remoteNotices(&noticeIterator, count: 4)
        XCTAssertEqual(told, Array(repeating: .remoteCommand(owner: link.client!, session: session, CommandRequest(.nextTrack)), count: 3)
            + [.remoteCommand(owner: link.client!, session: session, CommandRequest(.skipForward, interval: 20))],
                       "to the link's client, not the session's; a skip with the profile's interval")
        let player = await daemon.snapshot()
        XCTAssertEqual(player.queue.currentIndex, 0, "the player did not move")

        // A seek is published as one, a new track as a replacement.
        _ = await daemon.send(.link(radio("Song A", elapsed: 42, reason: .seek)), from: link)
        published = await publications(&iterator)
        XCTAssertEqual(published.map(\.reason), [.seek])
        XCTAssertEqual(published.first?.info.elapsed, 42)
        XCTAssertEqual(published.first?.isReplacement, false)
        _ = await daemon.send(.link(radio("Song A", elapsed: 42, reason: .metadataChanged)), from: link)
        _ = await daemon.send(.link(radio("Song B")), from: link)
        published = await publications(&iterator)
        XCTAssertEqual(published.map(\.reason), [.trackChanged], "nothing for a publication that changed nothing")
        XCTAssertEqual(published.first?.info.title, "Song B")

        // Its picture, named by its bytes and served as any cover.
        let bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 1, 2, 3]
        _ = await daemon.send(.link(radio("Song B", artwork: LinkedArtwork(mimeType: "image/png", width: 3, height: 1, bytes: bytes))), from: link)
        published = await publications(&iterator)
        let artwork = try XCTUnwrap(published.last?.info.artwork)
        XCTAssertTrue(artwork.id.hasPrefix("link-"), artwork.id)
        XCTAssertEqual(artwork.byteCount, 7)
        XCTAssertEqual(published.last?.artworkChanged, true)
        let picture = await daemon.send(.artwork(id: artwork.id), from: source)
        XCTAssertEqual(picture.payload, .artwork(id: artwork.id, mimeType: "image/png", bytes: bytes))

        // The program goes: its session is as any unlinked one — the player's Now Playing, the
        // commands to the session's own client.
        _ = await daemon.send(.link(radio(nil)), from: link)
        state = await daemon.snapshot()
        XCTAssertNil(state.nowPlayingLink)
        XCTAssertEqual(state.links.first?.present, false)
        XCTAssertEqual(state.nowPlaying.title, "Track 1")
        published = await publications(&iterator)
        XCTAssertEqual(published.last?.info.title, "Track 1")
        XCTAssertEqual(published.last?.isReplacement, true)
        let unlinkedNext = await daemon.send(.remote(CommandRequest(.nextTrack)), from: source)
        XCTAssertEqual(unlinkedNext, CommandResult(status: .success, forwardedTo: session))
        let unlinked = await remoteNotices(&noticeIterator, count: 1)
        XCTAssertEqual(unlinked, [.remoteCommand(owner: app.client!, session: session, CommandRequest(.nextTrack))])
        let gone = await daemon.send(.artwork(id: artwork.id), from: source)
        XCTAssertEqual(gone.failure?.code, .notFound, "a picture no program shows any more")

        // Back, then the session closes: the player's own Now Playing returns.
        _ = await daemon.send(.link(radio("Song C")), from: link)
        state = await daemon.snapshot()
        XCTAssertEqual(state.nowPlaying.title, "Song C")
        _ = await publications(&iterator)
        _ = await daemon.send(.session(.close(session)), from: app)
        state = await daemon.snapshot()
        XCTAssertNil(state.nowPlayingLink)
        XCTAssertEqual(state.nowPlaying.title, "Track 1")
        XCTAssertEqual(state.links.first?.present, true, "the link stays for the next session of that name")
        published = await publications(&iterator)
        XCTAssertEqual(published.last?.info.title, "Track 1")
        XCTAssertEqual(published.last?.isReplacement, true)
    }

    func testAClaimIsItsClientsAloneAndEndsWithIt() async throws {
        let first = CommandSource("link 1", client: daemon.newClient())
        let second = CommandSource("link 2", client: daemon.newClient())
        let firstClaim = await daemon.send(.link(radio(nil)), from: first)
        XCTAssertEqual(firstClaim.status, .success)
        let taken = await daemon.send(.link(radio("Other")), from: second)
        XCTAssertEqual(taken.failure?.code, .exists)
        XCTAssertEqual(taken.failure?.message, "sessions named 'radio' are spoken for already, by org.mpris.MediaPlayer2.Radio on the session bus")
        let othersRelease = await daemon.send(.link(.release(sessionName: "radio")), from: second)
        XCTAssertEqual(othersRelease.failure?.code, .badArgument)
        let unknown = await daemon.send(.link(.release(sessionName: "tv")), from: first)
        XCTAssertEqual(unknown.failure?.code, .notFound)
        let nameless = await daemon.send(.link(.publish(LinkedPlayer(sessionName: "", player: "x", playing: nil))), from: first)
        XCTAssertEqual(nameless.failure?.code, .badArgument)
        let button = await daemon.send(.link(radio(nil)), from: CommandSource("button"))
        XCTAssertEqual(button.failure?.code, .badArgument, "a source without a client cannot speak for sessions")

        let changes = daemon.subscribe([.sessions])
        var iterator = changes.makeAsyncIterator()
        await daemon.clientLeft(first.client!)
        let batch = await iterator.next()
        XCTAssertEqual(batch?.subsystems, [.sessions])
        let links = await daemon.snapshot().links
        XCTAssertEqual(links, [])
        let reclaimed = await daemon.send(.link(radio("Other")), from: second)
        XCTAssertEqual(reclaimed.status, .success, "free again")
        let released = await daemon.send(.link(.release(sessionName: "radio")), from: second)
        XCTAssertEqual(released.status, .success)
        let none = await daemon.snapshot().links
        XCTAssertEqual(none, [])
    }
}

private func monotonicNow() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
