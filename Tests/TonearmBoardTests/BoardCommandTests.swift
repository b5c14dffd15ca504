import TonearmBoard
import XCTest

final class BoardCommandTests: XCTestCase {
    func testNamesAndDescriptions() {
        XCTAssertEqual(BoardCommand(named: "nextTrack"), BoardCommand(.nextTrack))
        XCTAssertNil(BoardCommand(named: "next"), "one vocabulary: the remote command center's names")
        XCTAssertEqual(BoardCommand(.skipForward, value: 30).description, "skipForward 30")
        XCTAssertEqual(BoardCommand(.setVolume, value: 42.5).description, "setVolume 42.5")
        XCTAssertEqual(BoardCommand(.seekForward, phase: .begin).description, "seekForward begin")
        XCTAssertEqual(BoardCommand(.changeRepeatMode, mode: "all").description, "changeRepeatMode all")
        XCTAssertTrue(BoardCommand.names.contains("volumeUp"))
        XCTAssertEqual(Set(BoardCommand.names).count, BoardCommand.names.count)
    }

    func testDisplayStateExtrapolatesWithinTheDuration() {
        let state = BoardDisplayState(transport: .playing, duration: 100, elapsed: 10, rate: 1, timestamp: 1000)
        XCTAssertEqual(state.elapsed(at: 1005), 15)
        XCTAssertEqual(state.elapsed(at: 2000), 100)
        let paused = BoardDisplayState(transport: .paused, duration: 100, elapsed: 10, rate: 0, timestamp: 1000)
        XCTAssertEqual(paused.elapsed(at: 1005), 10)
        XCTAssertFalse(paused.isEnabled(.play))
    }
}
