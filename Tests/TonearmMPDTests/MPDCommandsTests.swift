import TestSupport
import TonearmAudio
import TonearmControlPlane
@testable import TonearmMPD
import TonearmJSON
import TonearmPlayer
import XCTest

/// MPD commands against a test control plane: what each sends, and how the answers are worded.
final class MPDCommandsTests: XCTestCase {
    private func state(playing: Bool = true) -> ControlState {
        var state = ControlState()
        state.queue = QueueState(version: 7, items: [
            QueueItem(id: 3, path: "/music/A/01.flac", metadata: TrackMetadata(title: "One", artist: "Ann", duration: 61.5)),
            QueueItem(id: 9, path: "/music/A/02.flac", metadata: TrackMetadata(title: "Two", artist: "Ann", trackNumber: 2, duration: 30)),
        ], currentItemID: 9, currentIndex: 1)
        state.transport = playing ? .playing : .paused
        state.nowPlaying = NowPlayingInfo(title: "Two", duration: 30, elapsed: 12.25, rate: playing ? 1 : 0, timestamp: 1e12)
        state.volume = 42
        state.repeatMode = .all
        return state
    }

    private func answer(_ plane: TestControlPlane, _ lines: [String], list: Bool = false, listOK: Bool = false,
                        client: Int = 1, commands: MPDCommands? = nil, authorized: Bool = true) async throws -> [String] {
        let commands = commands ?? MPDCommands(plane: plane, settings: MPDSettings(musicDirectory: "/music"))
        let parsed = try lines.map { line -> MPDCommand in
            let words = try MPDTokens.split(Array(line.utf8))
            return MPDCommand(words[0], Array(words.dropFirst()))
        }
        let (bytes, _) = await commands.answer(MPDRequest(clientID: client, commands: parsed, isList: list, listOK: listOK, authorized: authorized))
        let text = String(decoding: bytes, as: UTF8.self)
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    /// The answer to `lines` is `expected`, line by line.
    private func expect(_ plane: TestControlPlane, _ lines: [String], _ expected: [String], list: Bool = false, listOK: Bool = false,
                        client: Int = 1, commands: MPDCommands? = nil, file: StaticString = #filePath, line: UInt = #line) async throws {
        let got = try await answer(plane, lines, list: list, listOK: listOK, client: client, commands: commands)
        XCTAssertEqual(got, expected, file: file, line: line)
    }

    func testStatusSaysWhatMPDSays() async throws {
        let plane = TestControlPlane(state())
        let lines = try await answer(plane, ["status"])
        XCTAssertEqual(Array(lines.prefix(12)), [
            "volume: 42", "repeat: 1", "random: 0", "single: 0", "consume: 0", "partition: default", "playlist: 7",
            "playlistlength: 2", "mixrampdb: 0.000000", "state: play", "song: 1", "songid: 9",
        ])
        XCTAssertTrue(lines.contains("duration: 30.000"), "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("elapsed: ") }, "\(lines)")
        // Repeat all wraps: the next song is the first.
        XCTAssertTrue(lines.contains("nextsong: 0") && lines.contains("nextsongid: 3"), "\(lines)")
        XCTAssertEqual(lines.last, "OK")

        let stopped = TestControlPlane(ControlState())
        let empty = try await answer(stopped, ["status"])
        XCTAssertTrue(empty.contains("state: stop"))
        XCTAssertFalse(empty.contains { $0.hasPrefix("song") || $0.hasPrefix("time") || $0.hasPrefix("elapsed") }, "\(empty)")
    }

    func testStatusAndCurrentSongAloneAreAnsweredWhereTheyWereReadAndAsInAList() async throws {
        let plane = TestControlPlane(state(playing: false))
        let commands = MPDCommands(plane: plane, settings: MPDSettings(musicDirectory: "/music"))
        func request(_ names: [String], list: Bool = false, authorized: Bool = true) -> MPDRequest {
            MPDRequest(clientID: 1, commands: names.map { MPDCommand($0) }, isList: list, authorized: authorized)
        }
        let alone = try XCTUnwrap(commands.answerAtOnce(request(["status"])))
        let listed = try await answer(plane, ["status"], list: true)
        XCTAssertEqual(String(decoding: alone, as: UTF8.self), listed.joined(separator: "\n") + "\n")
        let song = try XCTUnwrap(commands.answerAtOnce(request(["currentsong"])))
        let listedSong = try await answer(plane, ["currentsong"], list: true, commands: commands)
        XCTAssertEqual(String(decoding: song, as: UTF8.self), listedSong.joined(separator: "\n") + "\n")
        XCTAssertTrue(listedSong.contains("file: A/02.flac"), "\(listedSong)")
        XCTAssertEqual(plane.snapshotsRead, 0, "status and currentsong wait for no snapshot")
        // A client with tags of its own is answered the long way, with them.
        _ = try await answer(plane, ["tagtypes clear"], commands: commands)
        XCTAssertNil(commands.answerAtOnce(request(["currentsong"])))
        XCTAssertNotNil(commands.answerAtOnce(MPDRequest(clientID: 2, commands: [MPDCommand("currentsong")])))
        _ = try await answer(plane, ["tagtypes all"], commands: commands)
        XCTAssertNotNil(commands.answerAtOnce(request(["currentsong"])))
        // Anything else goes the long way: another command, a list, arguments, no password.
        XCTAssertNil(commands.answerAtOnce(request(["stats"])))
        XCTAssertNil(commands.answerAtOnce(request(["status"], list: true)))
        XCTAssertNil(commands.answerAtOnce(MPDRequest(clientID: 1, commands: [MPDCommand("status", ["x"])])))
        XCTAssertNil(commands.answerAtOnce(request(["status"], authorized: false)))
        let refused = try await answer(plane, ["status"], authorized: false)
        XCTAssertEqual(refused, ["ACK [4@0] {status} you don't have permission for \"status\""])
    }

    func testStatusShowsAScanFromTheUpdateThatQueuedItUntilItIsDone() async throws {
        var queued = ControlState()
        queued.library.scan.job = 4
        queued.library.scan.finishedJob = 3
        let waiting = try await answer(TestControlPlane(queued), ["status"])
        XCTAssertEqual(waiting.filter { $0.hasPrefix("updating_db") }, ["updating_db: 4"])

        var running = queued
        running.library.scan.isScanning = true
        let scanning = try await answer(TestControlPlane(running), ["status"])
        XCTAssertEqual(scanning.filter { $0.hasPrefix("updating_db") }, ["updating_db: 4"])

        var done = queued
        done.library.scan.finishedJob = 4
        let finished = try await answer(TestControlPlane(done), ["status"])
        XCTAssertEqual(finished.filter { $0.hasPrefix("updating_db") }, [])
        XCTAssertEqual(finished.last, "OK")
    }

    func testCurrentSongAndQueueListingsNameFilesRelativeToTheMusicDirectory() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["currentsong"], [
            "file: A/02.flac", "Artist: Ann", "Title: Two", "Track: 2", "Time: 30", "duration: 30.000", "Pos: 1", "Id: 9", "OK",
        ])
        try await expect(plane, ["playlist"], ["0:file: A/01.flac", "1:file: A/02.flac", "OK"])
        let info = try await answer(plane, ["playlistinfo 0"])
        XCTAssertEqual(info.first, "file: A/01.flac")
        XCTAssertTrue(info.contains("Time: 62") && info.contains("duration: 61.500") && info.contains("Id: 3"), "\(info)")
        try await expect(plane, ["playlistinfo 5"], ["ACK [2@0] {playlistinfo} Bad song index"])
        try await expect(plane, ["plchangesposid 6"], ["cpos: 0", "Id: 3", "cpos: 1", "Id: 9", "OK"])
        try await expect(plane, ["plchanges 7"], ["OK"])
        // Only what moved or changed after the version asked about.
        var moved = state()
        moved.queue.itemVersions = [3: 4, 9: 7]
        let changes = TestControlPlane(moved)
        try await expect(changes, ["plchangesposid 5"], ["cpos: 1", "Id: 9", "OK"])
        try await expect(changes, ["plchangesposid 3"], ["cpos: 0", "Id: 3", "cpos: 1", "Id: 9", "OK"])
        try await expect(changes, ["plchangesposid 99"], ["cpos: 0", "Id: 3", "cpos: 1", "Id: 9", "OK"])  // never seen: all
    }

    /// While another program's session owns Now Playing (a `[[link]]`), `currentsong` and
    /// `status` show what it plays: not a queue song, so no position or id.
    func testALinkedProgramsItemIsTheCurrentSong() async throws {
        var linked = state()
        linked.nowPlayingLink = LinkState(sessionName: "shairport-sync", player: "org.mpris.MediaPlayer2.ShairportSync on the system bus",
                                          client: 5, present: true)
        linked.nowPlaying = NowPlayingInfo(title: "Over AirPlay", artist: "Ann, Bob", album: "Phone", trackNumber: 4, duration: 200,
                                           elapsed: 50, rate: 0, timestamp: 1e12)
        linked.transport = .paused
        let plane = TestControlPlane(linked)
        try await expect(plane, ["currentsong"], [
            "file: shairport-sync", "Artist: Ann, Bob", "Album: Phone", "Title: Over AirPlay", "Track: 4",
            "Name: org.mpris.MediaPlayer2.ShairportSync on the system bus", "Time: 200", "duration: 200.000", "OK",
        ])
        let status = try await answer(plane, ["status"])
        XCTAssertTrue(status.contains("state: pause"), "\(status)")
        XCTAssertTrue(status.contains("time: 50:200") && status.contains("elapsed: 50.000") && status.contains("duration: 200.000"), "\(status)")
        XCTAssertFalse(status.contains { $0.hasPrefix("song") || $0.hasPrefix("nextsong") }, "not a queue song: \(status)")
        XCTAssertTrue(status.contains("playlistlength: 2"), "the queue is still the player's")

        linked.nowPlaying = NowPlayingInfo(title: "Live", rate: 1, timestamp: 1e12)
        linked.transport = .playing
        plane.publish(linked)
        try await expect(plane, ["currentsong"], ["file: shairport-sync", "Title: Live", "Name: org.mpris.MediaPlayer2.ShairportSync on the system bus", "OK"])
        try await expect(plane, ["tagtypes clear", "currentsong"], ["file: shairport-sync", "OK"], list: true)
    }

    func testDecodersListsEachPlugInWithItsSuffixesAndMIMETypesAsMPDDoes() async throws {
        let got = try await answer(TestControlPlane(state()), ["decoders"])
        XCTAssertEqual(got.last, "OK")
        XCTAssertEqual(Array(got.prefix(4)), ["plugin: flac", "suffix: flac", "mime_type: audio/flac", "mime_type: audio/x-flac"])
        // Each plug-in is a block: its name, then its suffixes, then its MIME types.
        var names: [String] = []
        var kind = 0
        for line in got.dropLast() {
            let order = line.hasPrefix("plugin: ") ? 0 : line.hasPrefix("suffix: ") ? 1 : line.hasPrefix("mime_type: ") ? 2 : -1
            XCTAssertGreaterThanOrEqual(order, 0, "an unexpected line: \(line)")
            if order == 0 { names.append(String(line.dropFirst(8))) } else { XCTAssertGreaterThanOrEqual(order, kind, "out of order: \(line)") }
            kind = order
        }
        XCTAssertEqual(Set(names).count, names.count, "each plug-in once: \(names)")
        // WAV and AIFF are one library's in mpd (libsndfile): one entry with both.
        let sndfile = got.drop { $0 != "plugin: sndfile" }.dropFirst().prefix { !$0.hasPrefix("plugin: ") && $0 != "OK" }
        for line in ["suffix: wav", "suffix: aiff", "mime_type: audio/wav", "mime_type: audio/aiff"] {
            XCTAssertTrue(sndfile.contains(line), "\(line) in \(Array(sndfile))")
        }
    }

    func testTransportAndOptionsBecomeControlPlaneCommands() async throws {
        let plane = TestControlPlane(state())
        for line in ["play", "play 0", "playid 9", "pause", "pause 1", "pause 0", "stop", "next", "previous",
                     "setvol 55", "volume -5", "repeat 0", "random 1", "seekcur 20", "deleteid 3", "delete 0:2",
                     "moveid 9 0", "clear", "add \"B/x.flac\" 1"] {
            let lines = try await answer(plane, [line])
            XCTAssertEqual(lines, ["OK"], line)
        }
        XCTAssertEqual(plane.commands, [
            .remote(CommandRequest(.play)), .queue(.play(itemID: 3)), .queue(.play(itemID: 9)),
            .remote(CommandRequest(.togglePlayPause)), .remote(CommandRequest(.pause)),
            .remote(CommandRequest(.stop)), .remote(CommandRequest(.nextTrack)), .remote(CommandRequest(.previousTrack)),
            .volume(.set(55)), .volume(.step(-5)), .remote(CommandRequest(.changeRepeatMode, repeatMode: .off)),
            .remote(CommandRequest(.changeShuffleMode, shuffle: true)), .remote(CommandRequest(.changePlaybackPosition, position: 20)),
            .queue(.remove(itemIDs: [3])), .queue(.remove(itemIDs: [3, 9])), .queue(.move(itemID: 9, to: 0)), .queue(.clear),
            .queue(.add(paths: ["/music/B/x.flac"], at: 1)),
        ])
        XCTAssertTrue(plane.received.allSatisfy { $0.source == "mpd" })
    }

    func testSwapAndFindingInTheQueue() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["swap 0 1", "swapid 9 3"], ["OK"], list: true)
        XCTAssertEqual(plane.commands, [
            .queue(.move(itemID: 3, to: 1)), .queue(.move(itemID: 9, to: 0)),
            .queue(.move(itemID: 9, to: 0)), .queue(.move(itemID: 3, to: 1)),
        ])
        try await expect(plane, ["swap 0 7"], ["ACK [2@0] {swap} Bad song index"])
        // Without an index the queue's own metadata is matched.
        let found = try await answer(plane, ["playlistsearch title \"TW\""])
        XCTAssertEqual(found.first, "file: A/02.flac")
        XCTAssertTrue(found.contains("Pos: 1") && !found.contains("Pos: 0"), "\(found)")
        try await expect(plane, ["playlistfind title \"TW\""], ["OK"])
        let byArtist = try await answer(plane, ["playlistfind artist Ann"])
        XCTAssertEqual(byArtist.filter { $0.hasPrefix("Pos: ") }, ["Pos: 0", "Pos: 1"])
        let fallback = try await answer(plane, ["playlistfind albumartist Ann"])
        XCTAssertEqual(fallback.filter { $0.hasPrefix("Pos: ") }, ["Pos: 0", "Pos: 1"], "AlbumArtist falls back to Artist")
        try await expect(plane, ["playlistfind base A file \"A/01.flac\""], [
            "file: A/01.flac", "Artist: Ann", "Title: One", "Time: 62", "duration: 61.500", "Pos: 0", "Id: 3", "OK",
        ])
    }

    /// MPD answers OK when asked for the state the player is in; nothing is sent then.
    func testStopAndPauseInTheirOwnStateAreDone() async throws {
        var stopped = state()
        stopped.transport = .stopped
        let plane = TestControlPlane(stopped)
        try await expect(plane, ["stop", "pause 1"], ["OK"], list: true)
        try await expect(plane, ["pause 0"], ["OK"])
        XCTAssertEqual(plane.commands, [.remote(CommandRequest(.play))])
        let playing = TestControlPlane(state())
        try await expect(playing, ["pause 0"], ["OK"])
        XCTAssertEqual(playing.commands, [])
    }

    func testSingleConsumeAndReplayGainAreTheirPlayerModes() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["single 1", "single 0", "single oneshot", "consume 1", "consume 0"], ["OK"], list: true)
        try await expect(plane, ["consume oneshot"], ["ACK [2@0] {consume} Boolean (0/1) expected: oneshot"])
        try await expect(plane, ["single 2"], ["ACK [2@0] {single} Boolean (0/1) expected: 2"])
        try await expect(plane, ["replay_gain_mode auto"], ["OK"])
        try await expect(plane, ["replay_gain_mode loud"], ["ACK [2@0] {replay_gain_mode} Unrecognized replay gain mode"])
        try await expect(plane, ["replay_gain_status"], ["replay_gain_mode: off", "OK"])
        XCTAssertEqual(plane.commands, [
            .playerMode(.single(.on)), .playerMode(.single(.off)), .playerMode(.single(.oneshot)),
            .playerMode(.consume(true)), .playerMode(.consume(false)),
            .playerMode(.replayGain(mode: .auto, preamp: nil, missingPreamp: nil)),
        ])

        // Repeat one is MPD's repeat with single: single off leaves repeat all, repeat off leaves single.
        var one = state()
        one.repeatMode = .one
        let repeatOne = TestControlPlane(one)
        try await expect(repeatOne, ["single 0"], ["OK"])
        try await expect(repeatOne, ["repeat 0"], ["OK"])
        XCTAssertEqual(repeatOne.commands, [
            .remote(CommandRequest(.changeRepeatMode, repeatMode: .all)), .playerMode(.single(.off)),
            .playerMode(.single(.on)), .remote(CommandRequest(.changeRepeatMode, repeatMode: .off)),
        ])
        var modes = state()
        modes.single = .oneshot
        modes.consume = true
        modes.replayGain = ReplayGainSettings(mode: .album)
        let shown = TestControlPlane(modes)
        let status = try await answer(shown, ["status"])
        XCTAssertEqual(Array(status[1...4]), ["repeat: 1", "random: 0", "single: oneshot", "consume: 1"])
        try await expect(shown, ["replay_gain_status"], ["replay_gain_mode: album", "OK"])
        let repeatOneStatus = try await answer(TestControlPlane(one), ["status"])
        XCTAssertEqual(repeatOneStatus[3], "single: 1", "repeat one shows as single")
    }

    /// Tracks join gaplessly: crossfade and MixRamp can only be off, which is what they answer OK to.
    func testCrossfadeAndMixRampCanOnlyBeOff() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["crossfade 0", "mixrampdb 0", "mixrampdelay nan", "mixrampdelay -1"], ["OK"], list: true)
        try await expect(plane, ["crossfade 5"], ["ACK [2@0] {crossfade} crossfade is not supported: tracks join gaplessly"])
        try await expect(plane, ["crossfade x"], ["ACK [2@0] {crossfade} Integer expected: x"])
        try await expect(plane, ["mixrampdb -17"], ["ACK [2@0] {mixrampdb} MixRamp is not supported: tracks join gaplessly"])
        try await expect(plane, ["mixrampdelay 2"], ["ACK [2@0] {mixrampdelay} MixRamp is not supported: tracks join gaplessly"])
        XCTAssertEqual(plane.commands, [])
    }

    func testShufflePrioAndPrioid() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["shuffle", "shuffle 0:1", "prio 7 0:2", "prioid 255 9"], ["OK"], list: true)
        try await expect(plane, ["prio 256 0"], ["ACK [2@0] {prio} Number too large: 256"])
        try await expect(plane, ["prio 5 4:6"], ["ACK [2@0] {prio} Bad song index"])
        try await expect(plane, ["prioid 5"], ["ACK [2@0] {prioid} too few arguments for \"prioid\""])
        try await expect(plane, ["shuffle x"], ["ACK [2@0] {shuffle} Number expected: x"])
        let ids = state().queue.items.map(\.id)
        XCTAssertEqual(plane.commands, [
            .queue(.shuffle(range: nil)), .queue(.shuffle(range: 0..<1)), .queue(.priority(7, itemIDs: ids)),
            .queue(.priority(255, itemIDs: [9])),
        ])
        var prioritised = state()
        prioritised.queue.items[1].priority = 7
        let info = try await answer(TestControlPlane(prioritised), ["playlistinfo 1"])
        XCTAssertEqual(Array(info.suffix(4)), ["Pos: 1", "Id: 9", "Prio: 7", "OK"])
    }

    /// As Debian's mpd 0.23 answers: seconds either side, ":" for the whole song again; the
    /// current song cannot change while it plays; song blocks show the range and its length.
    func testRangeidPlaysPartOfASong() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["rangeid 3 0.5:1.25", "rangeid 3 1:", "rangeid 3 :2", "rangeid 3 :"], ["OK"], list: true)
        XCTAssertEqual(plane.commands, [
            .queue(.range(itemID: 3, PlayRange(start: 0.5, end: 1.25))), .queue(.range(itemID: 3, PlayRange(start: 1))),
            .queue(.range(itemID: 3, PlayRange(start: 0, end: 2))), .queue(.range(itemID: 3, nil)),
        ])
        for bad in ["2:1", "x", "1", "-1:2"] {
            try await expect(plane, ["rangeid 3 \(bad)"], ["ACK [2@0] {rangeid} Bad range"])
        }
        try await expect(plane, ["rangeid 9 1:2"], ["ACK [4@0] {rangeid} Cannot edit the current song"])
        var ranged = state()
        ranged.queue.items[1].range = PlayRange(start: 10, end: 22.5)
        let info = try await answer(TestControlPlane(ranged), ["playlistinfo 1"])
        XCTAssertEqual(info[1], "Range: 10.000-22.500", "\(info)")
        XCTAssertTrue(info.contains("duration: 12.500") && info.contains("Time: 13"), "\(info)")
    }

    /// Stored playlist edits become the control plane's, and its refusals MPD's words.
    func testStoredPlaylistEditsAndTheirRefusals() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["save mix", "playlistclear mix", "playlistdelete mix 2", "playlistdelete mix 1:3",
                                 "playlistmove mix 0 4", "rename mix other", "rm other"], ["OK"], list: true)
        XCTAssertEqual(plane.commands, [
            .playlist(.saveQueue(name: "mix", replacing: false)), .playlist(.clear(name: "mix")),
            .playlist(.delete(name: "mix", positions: 2..<3)), .playlist(.delete(name: "mix", positions: 1..<3)),
            .playlist(.move(name: "mix", from: 0, to: 4)), .playlist(.rename(name: "mix", to: "other")), .playlist(.remove(name: "other")),
        ])
        plane.refuse { command in
            guard case .playlist(let edit) = command else { return nil }
            switch edit {
            case .saveQueue(let name, _) where name.contains("/"): return CommandFailure(.badArgument, "'\(name)' cannot name a playlist: it has a '/'")
            case .saveQueue, .rename: return CommandFailure(.exists, "a stored playlist is named 'x' already")
            case .remove: return CommandFailure(.notFound, "no stored playlist is named 'x'")
            case .delete, .move: return CommandFailure(.badArgument, "playlist 'x' has no position 9 (it holds 2)")
            default: return CommandFailure(.unavailable, "stored playlists in '/p' are unavailable: Read-only file system")
            }
        }
        try await expect(plane, ["save x"], ["ACK [56@0] {save} Playlist already exists"])
        try await expect(plane, ["rename x y"], ["ACK [56@0] {rename} Playlist exists already"])
        try await expect(plane, ["rm x"], ["ACK [50@0] {rm} No such playlist"])
        try await expect(plane, ["save a/b"], ["ACK [2@0] {save} Bad playlist name"])
        try await expect(plane, ["playlistdelete x 9"], ["ACK [2@0] {playlistdelete} Bad song index"])
        try await expect(plane, ["playlistmove x 9 0"], ["ACK [2@0] {playlistmove} Bad range"])
        try await expect(plane, ["playlistclear x"],
                         ["ACK [52@0] {playlistclear} stored playlists in '/p' are unavailable: Read-only file system"])
        try await expect(plane, ["playlistmove x a 0"], ["ACK [2@0] {playlistmove} Number expected: a"])
        try await expect(plane, ["searchaddpl x"], ["ACK [2@0] {searchaddpl} too few arguments for \"searchaddpl\""])
    }

    func testOutputZeroIsThePlayersDevice() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["disableoutput 0", "enableoutput 0", "toggleoutput 0"], ["OK"], list: true)
        try await expect(plane, ["enableoutput 1"], ["ACK [50@0] {enableoutput} No such audio output"])
        try await expect(plane, ["toggleoutput x"], ["ACK [2@0] {toggleoutput} Integer expected: x"])
        XCTAssertEqual(plane.commands, [.output(enabled: false), .output(enabled: true), .output(enabled: false)],
                       "toggle turns off what the snapshot shows on")
        var off = state()
        off.output.enabled = false
        off.output.device = "hw:DAC"
        let outputs = try await answer(TestControlPlane(off), ["outputs"])
        XCTAssertEqual(outputs, ["outputid: 0", "outputname: hw:DAC", "plugin: alsa", "outputenabled: 0", "OK"])
    }

    func testPicturesComeInTheClientsChunks() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["binarylimit 10"], ["ACK [2@0] {binarylimit} Value too small: 10"])
        try await expect(plane, ["binarylimit 128"], ["OK"])
        // The test plane has no picture for anything.
        try await expect(plane, ["albumart A/01.flac 0"], ["ACK [50@0] {albumart} No file exists"])
        try await expect(plane, ["readpicture A/01.flac 0"], ["OK"])
        XCTAssertEqual(plane.commands, [
            .picture(path: "/music/A/01.flac", embedded: false), .picture(path: "/music/A/01.flac", embedded: true),
        ])
    }

    func testQueuePatternsAreBoundedAsTheLibrarysAre() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["playlistsearch \"(title =~ '((a{1,100}){1,100}){1,100}')\""], [
            "ACK [2@0] {playlistsearch} regular expression refused: its repetitions expand it to 1000000 elements, more than 256",
        ])
        try await expect(plane, ["playlistfind \"(title =~ '(T)\\\\\\\\1')\""], [
            "ACK [2@0] {playlistfind} regular expression refused: back-references (\\1) are not supported",
        ])
        try await expect(plane, ["playlistsearch \"(artist =~ 'a{101}')\""], [
            "ACK [2@0] {playlistsearch} regular expression refused: the repetition count 101 is more than 100",
        ])
        // POSIX matching, found anywhere, case ignored in a search and not in a find.
        let found = try await answer(plane, ["playlistsearch \"(title =~ '^t[a-z]o$')\""])
        XCTAssertEqual(found.filter { $0.hasPrefix("Pos: ") }, ["Pos: 1"])
        try await expect(plane, ["playlistfind \"(title =~ '^t[a-z]o$')\""], ["OK"])
    }

    func testBadArgumentsAndDisabledCommandsGetMPDsErrors() async throws {
        let plane = TestControlPlane(state())
        plane.disable([.nextTrack])
        try await expect(plane, ["next"], ["ACK [55@0] {next} not possible now (the command is disabled)"])
        try await expect(plane, ["setvol 101"], ["ACK [2@0] {setvol} Invalid volume value: 101"])
        try await expect(plane, ["playid 77"], ["ACK [50@0] {playid} No such song"])
        try await expect(plane, ["repeat maybe"], ["ACK [2@0] {repeat} Boolean (0/1) expected: maybe"])
        try await expect(plane, ["frobnicate"], ["ACK [5@0] {} unknown command \"frobnicate\""])
        try await expect(plane, ["add \"ftp://radio/x\""], ["ACK [50@0] {add} Unsupported URI scheme"])
        // Internet radio: an http(s) URL is added as it is, as mpd adds a stream.
        try await expect(plane, ["add \"http://radio/x\""], ["OK"])
        try await expect(plane, ["lsinfo"], ["ACK [52@0] {lsinfo} there is no music library: no music directory is configured"])
    }

    func testACommandListStopsAtItsFirstErrorAndNamesIt() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["setvol 10", "ping", "setvol x", "setvol 20"], [
            "list_OK", "list_OK", "ACK [2@2] {setvol} Invalid volume value: x",
        ], list: true, listOK: true)
        XCTAssertEqual(plane.commands, [.volume(.set(10))])
        try await expect(plane, ["ping", "getvol"], ["volume: 42", "OK"], list: true)
    }

    func testAClientWithoutThePasswordMayUseOnlyTheOpenCommands() async throws {
        // The connection checks the password and says with each request whether it was given.
        let plane = TestControlPlane(state())
        let commands = MPDCommands(plane: plane, settings: MPDSettings(musicDirectory: "/music"))
        func stranger(_ lines: [String], list: Bool = false) async throws -> [String] {
            try await answer(plane, lines, list: list, listOK: list, commands: commands, authorized: false)
        }
        var got = try await stranger(["status"])
        XCTAssertEqual(got, ["ACK [4@0] {status} you don't have permission for \"status\""])
        got = try await stranger(["ping"])
        XCTAssertEqual(got, ["OK"])
        got = try await stranger(["commands"])
        XCTAssertEqual(got, ["command: close", "command: commands", "command: notcommands", "command: password", "command: ping",
                             "command: tagtypes", "OK"])
        got = try await stranger(["notcommands"])
        XCTAssertTrue(got.contains("command: status"))
        XCTAssertTrue(got.contains("command: idle"))
        XCTAssertFalse(got.contains("command: ping"))
        // In a list, the commands before the one refused are carried out (as mpd).
        got = try await stranger(["ping", "setvol 10", "ping"], list: true)
        XCTAssertEqual(got, ["list_OK", "ACK [4@1] {setvol} you don't have permission for \"setvol\""])
        try await expect(plane, ["getvol"], ["volume: 42", "OK"], commands: commands)
        got = try await answer(plane, ["commands"], commands: commands)
        XCTAssertTrue(got.contains("command: status"))
        got = try await answer(plane, ["notcommands"], commands: commands)
        XCTAssertEqual(got, ["OK"])
        XCTAssertEqual(plane.commands, [])
    }

    /// The table is what `commands` lists: sorted by name, each command once; the commands
    /// open before the password are its rows marked open.
    func testTheCommandTableIsWhatCommandsLists() async throws {
        let names = MPDCommands.table.map(\.name)
        XCTAssertEqual(names, names.sorted())
        XCTAssertEqual(Set(names).count, names.count)
        XCTAssertEqual(MPDCommands.openCommands, ["ping", "close", "password", "commands", "notcommands", "tagtypes"])
        let listed = try await answer(TestControlPlane(state()), ["commands"])
        XCTAssertEqual(listed, names.map { "command: \($0)" } + ["OK"])
    }

    /// The table's counts are checked before a handler runs, with MPD's error 2.
    func testAWrongNumberOfArgumentsIsRefusedBeforeTheCommandRuns() async throws {
        let plane = TestControlPlane(state())
        try await expect(plane, ["ping 1"], ["ACK [2@0] {ping} too many arguments"])
        try await expect(plane, ["setvol"], ["ACK [2@0] {setvol} too few arguments"])
        try await expect(plane, ["playlistmove mix 0"], ["ACK [2@0] {playlistmove} too few arguments"])
        try await expect(plane, ["list"], ["ACK [2@0] {list} too few arguments for \"list\""])
        try await expect(plane, ["find"], ["ACK [2@0] {find} too few arguments for \"find\""])
        try await expect(plane, ["prio 1"], ["ACK [2@0] {prio} too few arguments for \"prio\""])
        // Connection commands in a command list are no commands of the list's.
        try await expect(plane, ["ping", "idle"], ["list_OK", "ACK [5@1] {} unknown command \"idle\""], list: true, listOK: true)
        XCTAssertEqual(plane.commands, [])
    }

    func testTagTypesAreChosenPerConnection() async throws {
        let plane = TestControlPlane(state())
        let commands = MPDCommands(plane: plane, settings: MPDSettings(musicDirectory: "/music"))
        let all = try await answer(plane, ["tagtypes"], commands: commands)
        XCTAssertEqual(all.first, "tagtype: Artist")
        XCTAssertEqual(all.dropLast().last, "tagtype: MUSICBRAINZ_WORKID")
        try await expect(plane, ["tagtypes clear", "tagtypes enable title Track"], ["OK"], list: true, commands: commands)
        try await expect(plane, ["tagtypes"], ["tagtype: Title", "tagtype: Track", "OK"], commands: commands)
        try await expect(plane, ["currentsong"], [
            "file: A/02.flac", "Title: Two", "Track: 2", "Time: 30", "duration: 30.000", "Pos: 1", "Id: 9", "OK",
        ], commands: commands)
        try await expect(plane, ["tagtypes enable colour"], ["ACK [2@0] {tagtypes} Unknown tag type: colour"], commands: commands)
        let others = try await answer(plane, ["tagtypes"], client: 2, commands: commands)
        XCTAssertEqual(others.count, MPDSong.tagOrder.count + 1)
    }

    func testFiltersInBothForms() throws {
        let (legacy, rest) = try MPDFilter.parse(["artist", "Ann", "ALBUM", "x y", "window", "0:5"])
        XCTAssertEqual(legacy, [TagFilter(.tag(.artist), "Ann"), TagFilter(.tag(.album), "x y")])
        XCTAssertEqual(rest, ["window", "0:5"])
        let (expression, _) = try MPDFilter.parse([#"((artist == 'A \'B\'') AND (album contains "y") AND (base 'Dir'))"#])
        XCTAssertEqual(expression, [
            TagFilter(.tag(.artist), "A 'B'", matching: .exact), TagFilter(.tag(.album), "y", matching: .substring),
            TagFilter(.base, "Dir"),
        ])
        let (operators, _) = try MPDFilter.parse([
            "(artist != 'x')", "(!(artist == 'y'))", "(title starts_with 'Th')", "(title =~ '^T.o$')", "(title !~ 'x+')",
            "(!(title !~ 'z'))",
        ])
        XCTAssertEqual(operators, [
            TagFilter(.tag(.artist), "x", matching: .exact, negated: true), TagFilter(.tag(.artist), "y", matching: .exact, negated: true),
            TagFilter(.tag(.title), "Th", matching: .prefix), TagFilter(.tag(.title), "^T.o$", matching: .regularExpression),
            TagFilter(.tag(.title), "x+", matching: .regularExpression, negated: true),
            TagFilter(.tag(.title), "z", matching: .regularExpression),
        ])
        XCTAssertThrowsError(try MPDFilter.parse(["(!((artist == 'x') AND (album == 'y')))"]), "negating an AND group")
        XCTAssertThrowsError(try MPDFilter.parse(["(artist ~~ 'x')"]))
        XCTAssertThrowsError(try MPDFilter.parse(["(artist == 'x'"]))
        XCTAssertThrowsError(try MPDFilter.parse(["((artist == 'x') OR (album == 'y'))"]))
        XCTAssertThrowsError(try MPDFilter.parse(["colour", "red"]))
        XCTAssertThrowsError(try MPDFilter.parse(["artist"]))
        XCTAssertEqual(try MPDFilter.range("3"), 3..<4)
        XCTAssertEqual(try MPDFilter.range("2:5"), 2..<5)
        XCTAssertEqual(try MPDFilter.range("2:"), 2..<Int.max)
        XCTAssertThrowsError(try MPDFilter.range("5:2"))
    }

    func testTimesAndValuesAreWordedAsMPDWordsThem() {
        XCTAssertEqual(MPDSong.decimal(0), "0.000")
        XCTAssertEqual(MPDSong.decimal(61.5), "61.500")
        XCTAssertEqual(MPDSong.decimal(2.0005), "2.001")
        XCTAssertEqual(MPDSong.time(0), "1970-01-01T00:00:00Z")
        XCTAssertEqual(MPDSong.time(1_700_000_000), "2023-11-14T22:13:20Z")
        for (format, bits) in [("S24_3LE", "24"), ("FLOAT_LE", "f"), ("S16_LE", "16"), ("S32_LE", "32"), ("U8", "8"), ("FLOAT64_LE", "f"), ("MU_LAW", "MU_LAW")] {
            var out: [UInt8] = []
            MPDSong.appendBits(format, to: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), bits, format)
        }
        XCTAssertEqual(MPDSong.oneLine("a\nb"), "a b")
        XCTAssertEqual(MPDSong.oneLine("\nä\n\nb\n"), " ä  b ")
        XCTAssertEqual(MPDSong.decimal(-3), "0.000")
        XCTAssertEqual(MPDSong.decimal(0.0094), "0.009")
        XCTAssertEqual(MPDSong.decimal(12_345.0706), "12345.071")
        XCTAssertEqual(MPDSong.time(951_782_400), "2000-02-29T00:00:00Z")
        XCTAssertEqual(MPDSong.time(4_102_444_799), "2099-12-31T23:59:59Z")
    }

    func testASongIsWrittenLineByLineInMPDsOrder() {
        let song = LibrarySong(path: "A/B/01 - x.flac", tags: [(.artist, "A"), (.title, "one\ntwo"), (.genre, "G")],
                               duration: 187.4996, sampleRate: 44_100, bitsPerSample: 16, channels: 2, modified: 1_000_000_000)
        XCTAssertEqual(MPDSong.block(song, tags: [.title, .artist]), """
            file: A/B/01 - x.flac
            Last-Modified: 2001-09-09T01:46:40Z
            Format: 44100:16:2
            Artist: A
            Title: one two
            Time: 187
            duration: 187.500

            """)
        XCTAssertEqual(MPDSong.block(LibrarySong(path: "x.flac"), tags: MPDSong.tagOrder), "file: x.flac\nLast-Modified: 1970-01-01T00:00:00Z\n")
        // A value with a Windows line end, and text that is not ASCII.
        let windows = LibrarySong(path: "Ä/ß.flac", tags: [(.title, "one\r\ntwo"), (.album, "東京\n")], duration: 0)
        XCTAssertEqual(MPDSong.block(windows, tags: [.title, .album]),
                       "file: Ä/ß.flac\nLast-Modified: 1970-01-01T00:00:00Z\nTitle: one\r two\nAlbum: 東京 \nTime: 0\nduration: 0.000\n")
        XCTAssertEqual(MPDSong.oneLine("one\r\ntwo"), "one\r two")
    }

    /// The numbers of a song's block, written digit by digit, against Swift's and Foundation's
    /// own wording of them.
    func testNumbersAndTimesAreWrittenAsTheLibrariesWriteThem() {
        var generator = SystemRandomNumberGenerator()
        var numbers = [0, 1, -1, 9, 10, 99, 100, 44_100, Int(Int32.max), Int.max, Int.min, Int.min + 1]
        for _ in 0..<2_000 { numbers.append(Int.random(in: Int.min...Int.max, using: &generator) >> Int.random(in: 0..<63)) }
        for n in numbers {
            var out: [UInt8] = []
            out.appendDigits(n)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(n))
        }
        let iso = ISO8601DateFormatter()
        iso.timeZone = TimeZone(identifier: "UTC")
        for epoch in [0, 59, 3_599, 86_399, 951_782_400, 4_102_444_799] + (0..<2_000).map({ _ in Int.random(in: 0...4_102_444_799) }) {
            XCTAssertEqual(MPDSong.time(epoch), iso.string(from: Date(timeIntervalSince1970: TimeInterval(epoch))))
        }
        for _ in 0..<2_000 {
            let seconds = Double.random(in: 0...100_000)
            let millis = Int((seconds * 1000).rounded())
            let fraction = String(millis % 1000)
            XCTAssertEqual(MPDSong.decimal(seconds), "\(millis / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)")
        }
    }
}
