import TonearmSession
import XCTest

/// Session ids used across the tests.
let music: SessionID = 1
let navigation: SessionID = 2
let call: SessionID = 3
let podcast: SessionID = 4
let chime: SessionID = 5
let recorder: SessionID = 6

/// The built-in player's client id, and two socket clients.
let player: ClientID = 0
let carPlayClient: ClientID = 10
let phoneClient: ClientID = 20

/// The sessions and the mute input as the daemon would hold them, moved on by
/// `SessionPolicy.evaluate` one request at a time.
struct Board {
    var sessions: [SessionState] = []
    var muted = false
    private(set) var last: PolicyDecision?

    @discardableResult
    mutating func apply(_ request: SessionRequest) throws -> PolicyDecision {
        let decision = try SessionPolicy.evaluate(sessions: sessions, request: request, muted: muted)
        sessions = decision.sessions
        muted = decision.muted
        last = decision
        return decision
    }

    /// Opens and activates a session; returns the activation's decision.
    @discardableResult
    mutating func start(
        _ id: SessionID, owner: ClientID = player, _ category: SessionCategory,
        mode: SessionMode = .default, options: SessionOptions = [], commands: Bool = false
    ) throws -> PolicyDecision {
        try apply(
            .open(
                id, owner: owner, category: category, mode: mode, options: options,
                hasEnabledCommand: commands))
        return try apply(.activate(id))
    }

    func state(_ id: SessionID, file: StaticString = #filePath, line: UInt = #line) -> SessionState? {
        let found = sessions.first { $0.id == id }
        if found == nil { XCTFail("no session \(id)", file: file, line: line) }
        return found
    }

    func output(_ id: SessionID) -> OutputGain? {
        last?.outputs[id]
    }

    var nowPlayingOwner: SessionID? { last?.nowPlayingOwner }
}

/// Asserts that `request` on `board` is refused with exactly `expected`.
func assertRefused(
    _ request: SessionRequest, on board: Board, _ expected: SessionError,
    file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertThrowsError(
        try SessionPolicy.evaluate(sessions: board.sessions, request: request, muted: board.muted),
        file: file, line: line
    ) { error in
        XCTAssertEqual(error as? SessionError, expected, file: file, line: line)
    }
}

extension OutputGain {
    static let mixing = OutputGain(mixes: true)
    static let silent = OutputGain(mixes: false)
    static let interruptedSilent = OutputGain(mixes: false, interrupted: true)
    static func duckedBy(_ ids: SessionID...) -> OutputGain { OutputGain(mixes: true, duckedBy: ids) }
}
