import TonearmSession
import XCTest

/// Requests that name no open session, or open one twice, are refused and change nothing.
final class RequestErrorTests: XCTestCase {
    func testUnknownSessionForEveryRequest() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        let refused: [SessionRequest] = [
            .close(9), .activate(9), .deactivate(9), .deactivate(9, notifyOthers: true),
            .setCategory(9, .playback), .setHasEnabledCommand(9, true),
        ]
        for request in refused {
            assertRefused(request, on: board, .unknownSession(9))
        }
    }

    func testUnknownSessionIsCheckedBeforeTheConfiguration() throws {
        assertRefused(
            .setCategory(9, .ambient, options: [.mixWithOthers]), on: Board(), .unknownSession(9))
    }

    func testOpeningAnOpenIdIsRefused() throws {
        var board = Board()
        try board.start(music, .playback)
        assertRefused(.open(music, owner: carPlayClient, category: .ambient), on: board, .sessionExists(music))
    }

    func testClosedIdCanBeNamedNoMore() throws {
        var board = Board()
        try board.start(music, .playback)
        try board.apply(.close(music))
        XCTAssertEqual(board.sessions, [])
        XCTAssertEqual(board.last?.outputs, [:])
        assertRefused(.activate(music), on: board, .unknownSession(music))
    }

    func testRefusedOpenOfAnInvalidConfiguration() {
        assertRefused(
            .open(1, owner: carPlayClient, category: .record, options: [.duckOthers]), on: Board(),
            .optionsNotAccepted(.record, [.duckOthers]))
        assertRefused(
            .open(1, owner: carPlayClient, category: .multiRoute, mode: .moviePlayback), on: Board(),
            .modeNotAccepted(.moviePlayback, .multiRoute))
    }

    func testSameInputSameDecision() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(navigation, owner: carPlayClient, .playback, options: [.duckOthers])
        try board.apply(.open(call, owner: phoneClient, category: .playAndRecord))
        let first = try SessionPolicy.evaluate(sessions: board.sessions, request: .activate(call), muted: false)
        let second = try SessionPolicy.evaluate(sessions: board.sessions, request: .activate(call), muted: false)
        XCTAssertEqual(first, second)
        XCTAssertEqual(board.state(call)?.active, false)
    }
}
