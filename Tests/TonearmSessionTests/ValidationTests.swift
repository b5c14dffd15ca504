import TonearmSession
import XCTest

/// Every category × every option combination × every mode, through `validate`, `open` and
/// `setCategory`, against expectations written out here.
final class ValidationTests: XCTestCase {
    static let mix = SessionOptions.mixWithOthers
    static let duck = SessionOptions.duckOthers
    static let spoken = SessionOptions.interruptSpokenAudioAndMixWithOthers

    /// Every combination of options, and what a session holds once it is accepted
    /// (duckOthers and interruptSpokenAudioAndMixWithOthers imply mixWithOthers).
    static let combinations: [(given: SessionOptions, held: SessionOptions)] = [
        ([], []),
        ([mix], [mix]),
        ([duck], [mix, duck]),
        ([spoken], [mix, spoken]),
        ([mix, duck], [mix, duck]),
        ([mix, spoken], [mix, spoken]),
        ([duck, spoken], [mix, duck, spoken]),
        ([mix, duck, spoken], [mix, duck, spoken]),
    ]

    /// The categories that take options (the seed's option table).
    static let takeOptions: Set<SessionCategory> = [.playback, .playAndRecord, .multiRoute]

    /// The categories each mode allows (Apple's documentation of each mode).
    static let modeAllows: [SessionMode: Set<SessionCategory>] = [
        .default: [.ambient, .soloAmbient, .playback, .record, .playAndRecord, .multiRoute],
        .spokenAudio: [.ambient, .soloAmbient, .playback, .record, .playAndRecord, .multiRoute],
        .voicePrompt: [.ambient, .soloAmbient, .playback, .record, .playAndRecord, .multiRoute],
        .voiceChat: [.playAndRecord],
        .videoChat: [.playAndRecord],
        .gameChat: [.playAndRecord],
        .measurement: [.playback, .record, .playAndRecord],
        .moviePlayback: [.playback],
        .videoRecording: [.record, .playAndRecord],
    ]

    func expectation(
        _ category: SessionCategory, _ mode: SessionMode, _ given: SessionOptions,
        _ held: SessionOptions
    ) -> Result<SessionOptions, SessionError> {
        if !given.isEmpty && !Self.takeOptions.contains(category) {
            return .failure(.optionsNotAccepted(category, given))
        }
        if !Self.modeAllows[mode]!.contains(category) {
            return .failure(.modeNotAccepted(mode, category))
        }
        return .success(held)
    }

    func testEveryCategoryOptionsAndMode() throws {
        var accepted = 0
        var checked = 0
        for category in SessionCategory.allCases {
            for (given, held) in Self.combinations {
                for mode in SessionMode.allCases {
                    let label = "\(category) \(mode) \(given)"
                    let expected = expectation(category, mode, given, held)
                    checked += 1

                    let validated = Result { () throws(SessionError) -> SessionOptions in
                        try SessionPolicy.validate(category: category, mode: mode, options: given)
                    }
                    XCTAssertEqual(validated, expected, label)

                    // Opening a session in that configuration.
                    let open = SessionRequest.open(
                        7, owner: carPlayClient, category: category, mode: mode, options: given)
                    switch expected {
                    case .success(let options):
                        accepted += 1
                        let decision = try SessionPolicy.evaluate(sessions: [], request: open, muted: false)
                        XCTAssertEqual(
                            decision.sessions,
                            [SessionState(id: 7, owner: carPlayClient, category: category, mode: mode, options: options)],
                            label)
                    case .failure(let error):
                        assertRefused(open, on: Board(), error)
                    }

                    // Changing an existing, sounding session to it.
                    var board = Board()
                    try board.start(7, owner: carPlayClient, .playback, options: [.duckOthers])
                    let change = SessionRequest.setCategory(7, category, mode: mode, options: given)
                    switch expected {
                    case .success(let options):
                        let decision = try board.apply(change)
                        XCTAssertEqual(decision.sessions[0].category, category, label)
                        XCTAssertEqual(decision.sessions[0].mode, mode, label)
                        XCTAssertEqual(decision.sessions[0].options, options, label)
                        XCTAssertTrue(decision.sessions[0].active, label)
                    case .failure(let error):
                        assertRefused(change, on: board, error)
                    }
                }
            }
        }
        XCTAssertEqual(checked, 6 * 8 * 9)
        // Accepted: options-free categories take only [] with their modes (ambient 3 modes,
        // soloAmbient 3, record 5); option-taking ones take all 8 combinations with their
        // modes (playback 5 modes, playAndRecord 8, multiRoute 3).
        XCTAssertEqual(accepted, 3 + 3 + 5 + 8 * (5 + 8 + 3))
    }

    func testOptionsAreCheckedBeforeTheMode() {
        XCTAssertThrowsError(
            try SessionPolicy.validate(category: .ambient, mode: .voiceChat, options: [.duckOthers])
        ) { error in
            XCTAssertEqual(error as? SessionError, .optionsNotAccepted(.ambient, [.duckOthers]))
        }
    }

    func testMessagesNameCategoryAndOption() {
        XCTAssertEqual(
            SessionError.optionsNotAccepted(.ambient, [.mixWithOthers]).description,
            "category ambient does not accept option mixWithOthers"
                + " (accepted only by playback, playAndRecord and multiRoute)")
        XCTAssertEqual(
            SessionError.optionsNotAccepted(.record, [.duckOthers, .mixWithOthers]).description,
            "category record does not accept options mixWithOthers, duckOthers"
                + " (accepted only by playback, playAndRecord and multiRoute)")
        XCTAssertEqual(
            SessionError.optionsNotAccepted(.soloAmbient, [.interruptSpokenAudioAndMixWithOthers])
                .description,
            "category soloAmbient does not accept option interruptSpokenAudioAndMixWithOthers"
                + " (accepted only by playback, playAndRecord and multiRoute)")
        XCTAssertEqual(
            SessionError.modeNotAccepted(.voiceChat, .playback).description,
            "mode voiceChat cannot be used with category playback (only with playAndRecord)")
        XCTAssertEqual(
            SessionError.modeNotAccepted(.measurement, .ambient).description,
            "mode measurement cannot be used with category ambient"
                + " (only with playback, record and playAndRecord)")
        XCTAssertEqual(
            SessionError.modeNotAccepted(.videoRecording, .multiRoute).description,
            "mode videoRecording cannot be used with category multiRoute"
                + " (only with record and playAndRecord)")
        XCTAssertEqual(SessionError.unknownSession(9).description, "no open session 9")
        XCTAssertEqual(SessionError.sessionExists(1).description, "session 1 is already open")
    }

    func testNewSessionIsSoloAmbientByDefault() throws {
        var board = Board()
        let decision = try board.apply(.open(1, owner: carPlayClient))
        XCTAssertEqual(
            decision.sessions,
            [SessionState(id: 1, owner: carPlayClient, category: .soloAmbient, mode: .default, options: [])])
        XCTAssertEqual(decision.outputs, [1: .silent])
        XCTAssertNil(decision.nowPlayingOwner)
    }

    func testOptionsAreNotSticky() throws {
        var board = Board()
        try board.apply(.open(1, owner: carPlayClient, category: .playback, mode: .voicePrompt, options: [.duckOthers]))
        XCTAssertEqual(board.state(1)?.options, [.mixWithOthers, .duckOthers])

        try board.apply(.setCategory(1, .playback))
        XCTAssertEqual(board.state(1)?.options, [])
        XCTAssertEqual(board.state(1)?.mode, .default)

        try board.apply(.setCategory(1, .playAndRecord, mode: .voiceChat, options: [.mixWithOthers]))
        try board.apply(.setCategory(1, .playAndRecord, mode: .voiceChat))
        XCTAssertEqual(board.state(1)?.options, [])
        XCTAssertEqual(board.state(1)?.mode, .voiceChat)

        // Moving to a category that takes no options needs the options dropped explicitly.
        assertRefused(
            .setCategory(1, .ambient, options: [.mixWithOthers]), on: board,
            .optionsNotAccepted(.ambient, [.mixWithOthers]))
        try board.apply(.setCategory(1, .ambient))
        XCTAssertEqual(board.state(1)?.category, .ambient)
        XCTAssertEqual(board.state(1)?.options, [])
    }

    func testRefusedChangeLeavesTheSessionAsItWas() throws {
        var board = Board()
        try board.start(1, .playback, options: [.duckOthers])
        let before = board.sessions
        assertRefused(
            .setCategory(1, .playback, mode: .videoChat), on: board, .modeNotAccepted(.videoChat, .playback))
        XCTAssertEqual(board.sessions, before)
    }
}
