import TonearmSession
import XCTest

/// Now Playing belongs to the most recently activated eligible session (non-mixable, with an
/// enabled command); it returns to the previous one when that one deactivates.
final class NowPlayingOwnershipTests: XCTestCase {
    func testHandoverAndReturn() throws {
        var board = Board()
        try board.start(music, owner: player, .playback, commands: true)
        XCTAssertEqual(board.nowPlayingOwner, music)

        try board.start(podcast, owner: carPlayClient, .playback, mode: .spokenAudio, commands: true)
        XCTAssertEqual(board.nowPlayingOwner, podcast)

        // Music is still interrupted (no notifyOthers), yet it owns the display again.
        let done = try board.apply(.deactivate(podcast))
        XCTAssertEqual(done.nowPlayingOwner, music)
        XCTAssertEqual(done.session(music)?.interrupted, true)

        try board.apply(.deactivate(music))
        XCTAssertNil(board.nowPlayingOwner)
    }

    func testMostRecentOfThreeWins() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(podcast, owner: carPlayClient, .soloAmbient, commands: true)
        try board.start(call, owner: phoneClient, .playAndRecord, commands: true)
        XCTAssertEqual(board.nowPlayingOwner, call)

        // The middle one leaving changes nothing; the latest leaving returns to the first.
        try board.apply(.deactivate(podcast, notifyOthers: true))
        XCTAssertEqual(board.nowPlayingOwner, call)
        try board.apply(.deactivate(call, notifyOthers: true))
        XCTAssertEqual(board.nowPlayingOwner, music)
        XCTAssertEqual(board.last?.outputs[music], .mixing)
    }

    func testClosingTheOwnerHandsBack() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(podcast, owner: carPlayClient, .multiRoute, commands: true)
        let closed = try board.apply(.close(podcast))
        XCTAssertEqual(closed.nowPlayingOwner, music)
    }

    func testIneligibleSessionsNeverTakeOwnership() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        // Mixable (with commands) and non-mixable without commands.
        try board.start(chime, owner: carPlayClient, .ambient, commands: true)
        XCTAssertEqual(board.nowPlayingOwner, music)
        try board.start(navigation, owner: carPlayClient, .playback, options: [.mixWithOthers], commands: true)
        XCTAssertEqual(board.nowPlayingOwner, music)
        try board.start(7, owner: carPlayClient, .playback, options: [.duckOthers], commands: true)
        XCTAssertEqual(board.nowPlayingOwner, music)
        try board.start(8, owner: carPlayClient, .multiRoute, options: [.interruptSpokenAudioAndMixWithOthers], commands: true)
        XCTAssertEqual(board.nowPlayingOwner, music)
        // A call without commands interrupts the music but leaves it the display.
        try board.start(call, owner: phoneClient, .playAndRecord, mode: .voiceChat, commands: false)
        XCTAssertEqual(board.nowPlayingOwner, music)
        XCTAssertEqual(board.last?.outputs[music], .interruptedSilent)
    }

    func testOnlyActiveSessionsOwn() throws {
        var board = Board()
        try board.apply(.open(music, owner: player, category: .playback, hasEnabledCommand: true))
        XCTAssertNil(board.nowPlayingOwner)
        try board.apply(.activate(music))
        XCTAssertEqual(board.nowPlayingOwner, music)
    }

    func testEnabledCommandsDecide() throws {
        var board = Board()
        try board.start(music, .playback)
        XCTAssertNil(board.nowPlayingOwner)
        try board.start(podcast, owner: carPlayClient, .playback, options: [.mixWithOthers], commands: true)
        XCTAssertNil(board.nowPlayingOwner)

        let enabled = try board.apply(.setHasEnabledCommand(music, true))
        XCTAssertEqual(enabled.nowPlayingOwner, music)
        XCTAssertEqual(enabled.session(music)?.hasEnabledCommand, true)

        let disabled = try board.apply(.setHasEnabledCommand(music, false))
        XCTAssertNil(disabled.nowPlayingOwner)
    }

    func testCategoryChangeDecides() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(podcast, owner: carPlayClient, .playback, options: [.mixWithOthers], commands: true)
        XCTAssertEqual(board.nowPlayingOwner, music)
        // Dropping mixWithOthers makes it eligible, and the more recently activated.
        let changed = try board.apply(.setCategory(podcast, .playback, mode: .spokenAudio))
        XCTAssertEqual(changed.nowPlayingOwner, podcast)
        XCTAssertEqual(changed.outputs[music], .interruptedSilent)
    }

    func testReactivationMakesASessionTheMostRecent() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(podcast, owner: carPlayClient, .playback, commands: true)
        XCTAssertEqual(board.nowPlayingOwner, podcast)
        let resumed = try board.apply(.activate(music))
        XCTAssertEqual(resumed.nowPlayingOwner, music)
        XCTAssertEqual(resumed.outputs, [music: .mixing, podcast: .interruptedSilent])
    }
}
