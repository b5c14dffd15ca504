import TonearmPlayer
import XCTest

/// Every command in every state, against expectations written out by hand.
///
/// Tracks are 200 s long; items have ids 1, 2, 3. Playing fixtures get the command 10 s into the
/// current item; paused fixtures were paused at 10 s and get it 5 s later; stopped ones were
/// stopped at 10 s (which forgets the position) and get it 5 s later.
final class CommandTableTests: XCTestCase {
    struct Expect {
        var status: CommandStatus
        var actions: [EngineAction]
        /// nil: unchanged.
        var state: TransportState?
        var current: Int??

        static func ok(_ actions: [EngineAction], _ state: TransportState, _ current: Int?) -> Expect {
            Expect(status: .success, actions: actions, state: state, current: .some(current))
        }
        static let disabled = Expect(status: .disabled, actions: [], state: nil, current: nil)
        static let noItem = Expect(status: .noActionableNowPlayingItem, actions: [], state: nil, current: nil)
    }

    /// The request sent for each command.
    static let requests: [RemoteCommand: CommandRequest] = [
        .play: CommandRequest(.play),
        .pause: CommandRequest(.pause),
        .togglePlayPause: CommandRequest(.togglePlayPause),
        .stop: CommandRequest(.stop),
        .nextTrack: CommandRequest(.nextTrack),
        .previousTrack: CommandRequest(.previousTrack),
        .skipForward: CommandRequest(.skipForward),
        .skipBackward: CommandRequest(.skipBackward),
        .seekForward: CommandRequest(.seekForward, scanning: .begin),
        .seekBackward: CommandRequest(.seekBackward, scanning: .begin),
        .changePlaybackPosition: CommandRequest(.changePlaybackPosition, position: 50),
        .changeRepeatMode: CommandRequest(.changeRepeatMode, repeatMode: .all),
        .changeShuffleMode: CommandRequest(.changeShuffleMode, shuffle: false),
    ]

    static let table: [(Fixture, [RemoteCommand: Expect])] = [
        (Fixture(count: 0, current: nil, state: .stopped), [
            .play: .disabled, .pause: .disabled, .togglePlayPause: .disabled, .stop: .disabled,
            .nextTrack: .disabled, .previousTrack: .disabled,
            .skipForward: .disabled, .skipBackward: .disabled,
            .seekForward: .disabled, .seekBackward: .disabled,
            .changePlaybackPosition: .disabled,
            .changeRepeatMode: .disabled, .changeShuffleMode: .disabled,
        ]),
        (Fixture(count: 3, current: nil, state: .stopped), [
            .play: .ok([.play(itemID: 1, from: 0)], .playing, 1),
            .pause: .disabled,
            .togglePlayPause: .ok([.play(itemID: 1, from: 0)], .playing, 1),
            .stop: .disabled,
            .nextTrack: .noItem, .previousTrack: .noItem,
            .skipForward: .disabled, .skipBackward: .disabled,
            .seekForward: .disabled, .seekBackward: .disabled,
            .changePlaybackPosition: .disabled,
            .changeRepeatMode: .ok([], .stopped, nil),
            .changeShuffleMode: .ok([], .stopped, nil),
        ]),

        // Stopped: the current item is kept; the engine holds nothing.
        (Fixture(count: 1, current: 1, state: .stopped), [
            .play: .ok([.play(itemID: 1, from: 0)], .playing, 1),
            .pause: .disabled,
            .togglePlayPause: .ok([.play(itemID: 1, from: 0)], .playing, 1),
            .stop: .disabled,
            .nextTrack: .disabled,
            .previousTrack: .ok([], .stopped, 1),
            .skipForward: .disabled, .skipBackward: .disabled,
            .seekForward: .disabled, .seekBackward: .disabled,
            .changePlaybackPosition: .disabled,
            .changeRepeatMode: .ok([], .stopped, 1),
            .changeShuffleMode: .ok([], .stopped, 1),
        ]),
        (Fixture(count: 3, current: 1, state: .stopped), [
            .play: .ok([.play(itemID: 1, from: 0)], .playing, 1),
            .pause: .disabled,
            .togglePlayPause: .ok([.play(itemID: 1, from: 0)], .playing, 1),
            .stop: .disabled,
            .nextTrack: .ok([], .stopped, 2),
            .previousTrack: .ok([], .stopped, 1),
            .skipForward: .disabled, .skipBackward: .disabled,
            .seekForward: .disabled, .seekBackward: .disabled,
            .changePlaybackPosition: .disabled,
            .changeRepeatMode: .ok([], .stopped, 1),
            .changeShuffleMode: .ok([], .stopped, 1),
        ]),
        (Fixture(count: 3, current: 2, state: .stopped), [
            .play: .ok([.play(itemID: 2, from: 0)], .playing, 2),
            .pause: .disabled,
            .togglePlayPause: .ok([.play(itemID: 2, from: 0)], .playing, 2),
            .stop: .disabled,
            .nextTrack: .ok([], .stopped, 3),
            .previousTrack: .ok([], .stopped, 1),
            .skipForward: .disabled, .skipBackward: .disabled,
            .seekForward: .disabled, .seekBackward: .disabled,
            .changePlaybackPosition: .disabled,
            .changeRepeatMode: .ok([], .stopped, 2),
            .changeShuffleMode: .ok([], .stopped, 2),
        ]),
        (Fixture(count: 3, current: 3, state: .stopped), [
            .play: .ok([.play(itemID: 3, from: 0)], .playing, 3),
            .pause: .disabled,
            .togglePlayPause: .ok([.play(itemID: 3, from: 0)], .playing, 3),
            .stop: .disabled,
            .nextTrack: .disabled,
            .previousTrack: .ok([], .stopped, 2),
            .skipForward: .disabled, .skipBackward: .disabled,
            .seekForward: .disabled, .seekBackward: .disabled,
            .changePlaybackPosition: .disabled,
            .changeRepeatMode: .ok([], .stopped, 3),
            .changeShuffleMode: .ok([], .stopped, 3),
        ]),

        // Playing, 10 s in.
        (Fixture(count: 1, current: 1, state: .playing), [
            .play: .ok([], .playing, 1),
            .pause: .ok([.pause], .paused, 1),
            .togglePlayPause: .ok([.pause], .paused, 1),
            .stop: .ok([.stop], .stopped, 1),
            .nextTrack: .disabled,
            .previousTrack: .ok([.seek(to: 0)], .playing, 1),
            .skipForward: .ok([.seek(to: 25)], .playing, 1),
            .skipBackward: .ok([.seek(to: 0)], .playing, 1),
            .seekForward: .ok([.scan(rate: 4)], .playing, 1),
            .seekBackward: .ok([.scan(rate: -4)], .playing, 1),
            .changePlaybackPosition: .ok([.seek(to: 50)], .playing, 1),
            .changeRepeatMode: .ok([.upcomingChanged], .playing, 1),
            .changeShuffleMode: .ok([], .playing, 1),
        ]),
        (Fixture(count: 3, current: 1, state: .playing), [
            .play: .ok([], .playing, 1),
            .pause: .ok([.pause], .paused, 1),
            .togglePlayPause: .ok([.pause], .paused, 1),
            .stop: .ok([.stop], .stopped, 1),
            .nextTrack: .ok([.play(itemID: 2, from: 0)], .playing, 2),
            .previousTrack: .ok([.seek(to: 0)], .playing, 1),
            .skipForward: .ok([.seek(to: 25)], .playing, 1),
            .skipBackward: .ok([.seek(to: 0)], .playing, 1),
            .seekForward: .ok([.scan(rate: 4)], .playing, 1),
            .seekBackward: .ok([.scan(rate: -4)], .playing, 1),
            .changePlaybackPosition: .ok([.seek(to: 50)], .playing, 1),
            .changeRepeatMode: .ok([], .playing, 1),
            .changeShuffleMode: .ok([], .playing, 1),
        ]),
        (Fixture(count: 3, current: 2, state: .playing), [
            .play: .ok([], .playing, 2),
            .pause: .ok([.pause], .paused, 2),
            .togglePlayPause: .ok([.pause], .paused, 2),
            .stop: .ok([.stop], .stopped, 2),
            .nextTrack: .ok([.play(itemID: 3, from: 0)], .playing, 3),
            .previousTrack: .ok([.seek(to: 0)], .playing, 2),
            .skipForward: .ok([.seek(to: 25)], .playing, 2),
            .skipBackward: .ok([.seek(to: 0)], .playing, 2),
            .seekForward: .ok([.scan(rate: 4)], .playing, 2),
            .seekBackward: .ok([.scan(rate: -4)], .playing, 2),
            .changePlaybackPosition: .ok([.seek(to: 50)], .playing, 2),
            .changeRepeatMode: .ok([], .playing, 2),
            .changeShuffleMode: .ok([], .playing, 2),
        ]),
        (Fixture(count: 3, current: 3, state: .playing), [
            .play: .ok([], .playing, 3),
            .pause: .ok([.pause], .paused, 3),
            .togglePlayPause: .ok([.pause], .paused, 3),
            .stop: .ok([.stop], .stopped, 3),
            .nextTrack: .disabled,
            .previousTrack: .ok([.seek(to: 0)], .playing, 3),
            .skipForward: .ok([.seek(to: 25)], .playing, 3),
            .skipBackward: .ok([.seek(to: 0)], .playing, 3),
            .seekForward: .ok([.scan(rate: 4)], .playing, 3),
            .seekBackward: .ok([.scan(rate: -4)], .playing, 3),
            .changePlaybackPosition: .ok([.seek(to: 50)], .playing, 3),
            .changeRepeatMode: .ok([.upcomingChanged], .playing, 3),
            .changeShuffleMode: .ok([], .playing, 3),
        ]),

        // Paused at 10 s; the engine holds the item.
        (Fixture(count: 1, current: 1, state: .paused), [
            .play: .ok([.resume], .playing, 1),
            .pause: .disabled,
            .togglePlayPause: .ok([.resume], .playing, 1),
            .stop: .ok([.stop], .stopped, 1),
            .nextTrack: .disabled,
            .previousTrack: .ok([.seek(to: 0)], .paused, 1),
            .skipForward: .ok([.seek(to: 25)], .paused, 1),
            .skipBackward: .ok([.seek(to: 0)], .paused, 1),
            .seekForward: .ok([.scan(rate: 4)], .paused, 1),
            .seekBackward: .ok([.scan(rate: -4)], .paused, 1),
            .changePlaybackPosition: .ok([.seek(to: 50)], .paused, 1),
            .changeRepeatMode: .ok([.upcomingChanged], .paused, 1),
            .changeShuffleMode: .ok([], .paused, 1),
        ]),
        (Fixture(count: 3, current: 1, state: .paused), [
            .play: .ok([.resume], .playing, 1),
            .pause: .disabled,
            .togglePlayPause: .ok([.resume], .playing, 1),
            .stop: .ok([.stop], .stopped, 1),
            .nextTrack: .ok([.stop], .paused, 2),
            .previousTrack: .ok([.seek(to: 0)], .paused, 1),
            .skipForward: .ok([.seek(to: 25)], .paused, 1),
            .skipBackward: .ok([.seek(to: 0)], .paused, 1),
            .seekForward: .ok([.scan(rate: 4)], .paused, 1),
            .seekBackward: .ok([.scan(rate: -4)], .paused, 1),
            .changePlaybackPosition: .ok([.seek(to: 50)], .paused, 1),
            .changeRepeatMode: .ok([], .paused, 1),
            .changeShuffleMode: .ok([], .paused, 1),
        ]),
        (Fixture(count: 3, current: 2, state: .paused), [
            .play: .ok([.resume], .playing, 2),
            .pause: .disabled,
            .togglePlayPause: .ok([.resume], .playing, 2),
            .stop: .ok([.stop], .stopped, 2),
            .nextTrack: .ok([.stop], .paused, 3),
            .previousTrack: .ok([.seek(to: 0)], .paused, 2),
            .skipForward: .ok([.seek(to: 25)], .paused, 2),
            .skipBackward: .ok([.seek(to: 0)], .paused, 2),
            .seekForward: .ok([.scan(rate: 4)], .paused, 2),
            .seekBackward: .ok([.scan(rate: -4)], .paused, 2),
            .changePlaybackPosition: .ok([.seek(to: 50)], .paused, 2),
            .changeRepeatMode: .ok([], .paused, 2),
            .changeShuffleMode: .ok([], .paused, 2),
        ]),
        (Fixture(count: 3, current: 3, state: .paused), [
            .play: .ok([.resume], .playing, 3),
            .pause: .disabled,
            .togglePlayPause: .ok([.resume], .playing, 3),
            .stop: .ok([.stop], .stopped, 3),
            .nextTrack: .disabled,
            .previousTrack: .ok([.seek(to: 0)], .paused, 3),
            .skipForward: .ok([.seek(to: 25)], .paused, 3),
            .skipBackward: .ok([.seek(to: 0)], .paused, 3),
            .seekForward: .ok([.scan(rate: 4)], .paused, 3),
            .seekBackward: .ok([.scan(rate: -4)], .paused, 3),
            .changePlaybackPosition: .ok([.seek(to: 50)], .paused, 3),
            .changeRepeatMode: .ok([.upcomingChanged], .paused, 3),
            .changeShuffleMode: .ok([], .paused, 3),
        ]),
    ]

    /// Repeat modes and the 3-second rule, where they change the answer.
    static let navigation: [(Fixture, RemoteCommand, Expect)] = [
        // nextTrack at the last item: only repeat all wraps.
        (Fixture(count: 3, current: 3, state: .playing, repeatMode: .all), .nextTrack,
         .ok([.play(itemID: 1, from: 0)], .playing, 1)),
        (Fixture(count: 3, current: 3, state: .playing, repeatMode: .one), .nextTrack, .disabled),
        (Fixture(count: 3, current: 3, state: .paused, repeatMode: .all), .nextTrack, .ok([.stop], .paused, 1)),
        (Fixture(count: 3, current: 3, state: .stopped, repeatMode: .all), .nextTrack, .ok([], .stopped, 1)),
        (Fixture(count: 3, current: 3, state: .stopped, repeatMode: .one), .nextTrack, .disabled),
        // Repeat one still moves between items.
        (Fixture(count: 3, current: 1, state: .playing, repeatMode: .one), .nextTrack,
         .ok([.play(itemID: 2, from: 0)], .playing, 2)),
        (Fixture(count: 3, current: 2, state: .playing, repeatMode: .one, elapsed: 2), .previousTrack,
         .ok([.play(itemID: 1, from: 0)], .playing, 1)),
        // A single item with repeat all: next plays it again.
        (Fixture(count: 1, current: 1, state: .playing, repeatMode: .all), .nextTrack,
         .ok([.play(itemID: 1, from: 0)], .playing, 1)),
        (Fixture(count: 1, current: 1, state: .playing, repeatMode: .all, elapsed: 2), .previousTrack,
         .ok([.seek(to: 0)], .playing, 1)),
        // previousTrack within 3 s goes back; at the first item it restarts unless repeat all.
        (Fixture(count: 3, current: 2, state: .playing, elapsed: 2), .previousTrack,
         .ok([.play(itemID: 1, from: 0)], .playing, 1)),
        (Fixture(count: 3, current: 2, state: .playing, elapsed: 3), .previousTrack,
         .ok([.play(itemID: 1, from: 0)], .playing, 1)),
        (Fixture(count: 3, current: 2, state: .playing, elapsed: 3.01), .previousTrack,
         .ok([.seek(to: 0)], .playing, 2)),
        (Fixture(count: 3, current: 1, state: .playing, elapsed: 2), .previousTrack,
         .ok([.seek(to: 0)], .playing, 1)),
        (Fixture(count: 3, current: 1, state: .playing, repeatMode: .one, elapsed: 2), .previousTrack,
         .ok([.seek(to: 0)], .playing, 1)),
        (Fixture(count: 3, current: 1, state: .playing, repeatMode: .all, elapsed: 2), .previousTrack,
         .ok([.play(itemID: 3, from: 0)], .playing, 3)),
        (Fixture(count: 3, current: 3, state: .paused, elapsed: 1), .previousTrack, .ok([.stop], .paused, 2)),
        (Fixture(count: 3, current: 1, state: .stopped, repeatMode: .all), .previousTrack, .ok([], .stopped, 3)),
        // Skipping past the end of the last item.
        (Fixture(count: 3, current: 3, state: .playing, elapsed: 190), .skipForward, .ok([.stop], .stopped, 3)),
        (Fixture(count: 3, current: 3, state: .playing, repeatMode: .one, elapsed: 190), .skipForward,
         .ok([.stop], .stopped, 3)),
        (Fixture(count: 3, current: 3, state: .playing, repeatMode: .all, elapsed: 190), .skipForward,
         .ok([.play(itemID: 1, from: 0)], .playing, 1)),
        // Repeat changes that change the item after the current one.
        (Fixture(count: 3, current: 3, state: .playing, repeatMode: .all), .changeRepeatMode, .ok([], .playing, 3)),
        (Fixture(count: 3, current: 1, state: .playing, repeatMode: .one), .changeRepeatMode,
         .ok([.upcomingChanged], .playing, 1)),
        (Fixture(count: 3, current: 3, state: .stopped), .changeRepeatMode, .ok([], .stopped, 3)),
    ]

    func check(_ fixture: Fixture, _ command: RemoteCommand, _ expect: Expect, file: StaticString = #filePath, line: UInt = #line) {
        var (core, now) = fixture.make()
        let before = core
        let what = "\(command) when \(fixture)"
        XCTAssertEqual(core.isEnabled(command), expect.status != .disabled, "isEnabled: \(what)", file: file, line: line)
        XCTAssertEqual(core.enabledCommands[command], expect.status != .disabled, "enabledCommands: \(what)", file: file, line: line)
        let outcome = core.handle(Self.requests[command]!, now: now)
        XCTAssertEqual(outcome.status, expect.status, "status: \(what)", file: file, line: line)
        XCTAssertEqual(outcome.actions, expect.actions, "actions: \(what)", file: file, line: line)
        XCTAssertEqual(core.state, expect.state ?? before.state, "state: \(what)", file: file, line: line)
        XCTAssertEqual(core.currentItemID, expect.current ?? before.currentItemID, "current: \(what)", file: file, line: line)
        XCTAssertEqual(core.nowPlaying, outcome.publications.last?.info ?? before.nowPlaying, "nowPlaying is the last publication: \(what)", file: file, line: line)
        XCTAssertLessThanOrEqual(outcome.publications.count, 1, "one publication at most: \(what)", file: file, line: line)
        if expect.status != .success {
            XCTAssertEqual(outcome.publications, [], "no publication: \(what)", file: file, line: line)
            XCTAssertEqual(core.queue, before.queue, file: file, line: line)
            XCTAssertEqual(core.repeatMode, before.repeatMode, file: file, line: line)
            XCTAssertEqual(core.position(at: now), before.position(at: now), file: file, line: line)
        }
    }

    func testEveryCommandInEveryState() {
        XCTAssertEqual(Self.table.count, 14)
        for (fixture, expectations) in Self.table {
            XCTAssertEqual(Set(expectations.keys), Set(RemoteCommand.allCases), "row for \(fixture) is complete")
            for command in RemoteCommand.allCases {
                check(fixture, command, expectations[command]!)
            }
        }
    }

    func testRepeatModesAndThePreviousRule() {
        for (fixture, command, expect) in Self.navigation {
            check(fixture, command, expect)
        }
    }

    func testFixturesAreWhatTheySay() {
        let (paused, pausedNow) = Fixture(count: 3, current: 2, state: .paused).make()
        XCTAssertEqual(paused.state, .paused)
        XCTAssertEqual(paused.position(at: pausedNow), 10)
        let (stopped, stoppedNow) = Fixture(count: 3, current: 2, state: .stopped).make()
        XCTAssertEqual(stopped.position(at: stoppedNow), 0)
        XCTAssertEqual(stopped.currentIndex, 1)
        let (playingCore, playingNow) = Fixture(count: 3, current: 3, state: .playing, repeatMode: .one).make()
        XCTAssertEqual(playingCore.position(at: playingNow), 10)
        XCTAssertEqual(playingCore.repeatMode, .one)
    }

    func testCommandsNeedingAnArgumentFailWithoutIt() {
        var (core, now) = Fixture(count: 3, current: 2, state: .playing).make()
        let before = core
        for request in [
            CommandRequest(.changePlaybackPosition), CommandRequest(.changeRepeatMode),
            CommandRequest(.changeShuffleMode), CommandRequest(.seekForward), CommandRequest(.seekBackward),
        ] {
            let outcome = core.handle(request, now: now)
            XCTAssertEqual(outcome, CommandOutcome(status: .commandFailed), "\(request.command)")
        }
        XCTAssertEqual(core.nowPlaying, before.nowPlaying)
        XCTAssertEqual(core.position(at: now), 10)
        now += 1
        XCTAssertEqual(core.position(at: now), 11)
    }
}
