import TonearmSession
import XCTest

/// The mute input silences ambient and soloAmbient output, and nothing else.
final class MuteTests: XCTestCase {
    func testMuteOnEveryCategoryAlone() throws {
        // category → (mixes while unmuted, mixes while muted, silenced by mute)
        let expected: [(SessionCategory, Bool, Bool, Bool)] = [
            (.ambient, true, false, true),
            (.soloAmbient, true, false, true),
            (.playback, true, true, false),
            (.record, false, false, false),
            (.playAndRecord, true, true, false),
            (.multiRoute, true, true, false),
        ]
        for (category, unmuted, muted, silenced) in expected {
            var board = Board()
            let started = try board.start(1, category)
            XCTAssertEqual(started.outputs[1], OutputGain(mixes: unmuted), "\(category)")

            let on = try board.apply(.setMute(true))
            XCTAssertTrue(on.muted)
            XCTAssertEqual(on.outputs[1], OutputGain(mixes: muted, silencedByMute: silenced), "\(category)")
            XCTAssertEqual(on.interruptionsBegan, [], "\(category)")
            XCTAssertEqual(on.sessions, started.sessions, "mute changes no session: \(category)")

            let off = try board.apply(.setMute(false))
            XCTAssertFalse(off.muted)
            XCTAssertEqual(off.outputs[1], OutputGain(mixes: unmuted), "\(category)")
        }
    }

    func testChimeOverMusic() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        let both = try board.start(chime, owner: carPlayClient, .ambient)
        XCTAssertEqual(both.outputs, [music: .mixing, chime: .mixing])

        let muted = try board.apply(.setMute(true))
        XCTAssertEqual(
            muted.outputs, [music: .mixing, chime: OutputGain(mixes: false, silencedByMute: true)])
        XCTAssertEqual(muted.session(chime)?.active, true)
        XCTAssertEqual(muted.nowPlayingOwner, music)

        let unmuted = try board.apply(.setMute(false))
        XCTAssertEqual(unmuted.outputs, [music: .mixing, chime: .mixing])
    }

    func testMutedSoloAmbientStillInterruptsAndIsInterrupted() throws {
        // Mute silences; it does not change who interrupts whom.
        var board = Board()
        board.muted = true
        try board.start(music, .playback, commands: true)
        let game = try board.start(chime, owner: carPlayClient, .soloAmbient)
        XCTAssertEqual(
            game.interruptionsBegan,
            [InterruptionBegan(session: music, owner: player, interrupter: chime, reason: .nonMixableActivated)])
        XCTAssertEqual(
            game.outputs, [music: .interruptedSilent, chime: OutputGain(mixes: false, silencedByMute: true)])

        let unmuted = try board.apply(.setMute(false))
        XCTAssertEqual(unmuted.outputs, [music: .interruptedSilent, chime: .mixing])
    }

    func testMuteIsReportedForInactiveAndDuckedSessions() throws {
        var board = Board()
        try board.apply(.open(chime, owner: carPlayClient, category: .ambient))
        try board.start(navigation, owner: carPlayClient, .playback, options: [.duckOthers])
        let on = try board.apply(.setMute(true))
        XCTAssertEqual(
            on.outputs, [chime: OutputGain(mixes: false, silencedByMute: true), navigation: .mixing])
        let started = try board.apply(.activate(chime))
        // Silent, so not reported as ducked.
        XCTAssertEqual(
            started.outputs, [chime: OutputGain(mixes: false, silencedByMute: true), navigation: .mixing])
        let off = try board.apply(.setMute(false))
        XCTAssertEqual(off.outputs, [chime: .duckedBy(navigation), navigation: .mixing])
    }

    func testMuteIsCarriedThroughOtherRequests() throws {
        var board = Board()
        board.muted = true
        let opened = try board.apply(.open(chime, owner: carPlayClient, category: .ambient))
        XCTAssertTrue(opened.muted)
        let again = try board.apply(.setMute(true))
        XCTAssertTrue(again.muted)
    }
}
