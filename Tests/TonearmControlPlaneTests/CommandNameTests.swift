import TonearmControlPlane
import TonearmPlayer
import XCTest

final class CommandNameTests: XCTestCase {
    func testEveryRemoteCommandIsANameOfItsOwn() {
        for remote in RemoteCommand.allCases {
            XCTAssertEqual(CommandName(named: remote.rawValue)?.remote, remote)
        }
    }

    func testAliasesNameCommandsOfTheVocabulary() {
        XCTAssertEqual(CommandName(named: "toggle"), .togglePlayPause)
        XCTAssertEqual(CommandName(named: "next"), .nextTrack)
        XCTAssertEqual(CommandName(named: "previous"), .previousTrack)
        XCTAssertEqual(CommandName(named: "seek"), .changePlaybackPosition)
        XCTAssertEqual(CommandName(named: "repeat"), .changeRepeatMode)
        XCTAssertEqual(CommandName(named: "shuffle"), .changeShuffleMode)
        XCTAssertEqual(CommandName(named: "skip"), .skipForward)
        XCTAssertNil(CommandName(named: "nextSong"))
        // An alias is never also a name, so a name means one thing.
        for alias in CommandName.aliases.keys { XCTAssertNil(CommandName(rawValue: alias), alias) }
    }

    func testParseWithArguments() throws {
        XCTAssertEqual(try Command.parse("skipForward", argument: "30").get(), .remote(CommandRequest(.skipForward, interval: 30)))
        XCTAssertEqual(try Command.parse("skipBackward").get(), .remote(CommandRequest(.skipBackward)))
        XCTAssertEqual(try Command.parse("seekForward").get(), .remote(CommandRequest(.seekForward, scanning: .begin)))
        XCTAssertEqual(try Command.parse("seekBackward", argument: "end").get(), .remote(CommandRequest(.seekBackward, scanning: .end)))
        XCTAssertEqual(try Command.parse("changeRepeatMode", argument: "all").get(), .remote(CommandRequest(.changeRepeatMode, repeatMode: .all)))
        XCTAssertEqual(try Command.parse("changeShuffleMode", argument: "off").get(), .remote(CommandRequest(.changeShuffleMode, shuffle: false)))
        XCTAssertEqual(try Command.parse("volumeUp").get(), .volume(.step(5)))
        XCTAssertEqual(try Command.parse("volumeDown", argument: "10").get(), .volume(.step(-10)))
        XCTAssertEqual(try Command.parse("setVolume", argument: "40").get(), .volume(.set(40)))
        XCTAssertEqual(try Command.parse("toggleMute").get(), .mute(.toggle))
        XCTAssertEqual(try Command.parse("ignitionOff").get(), .ignition(on: false))
        XCTAssertEqual(try Command.parse("next").get(), .remote(CommandRequest(.nextTrack)))
    }

    func testParseRefusesWhatIsWrongAndSaysWhy() {
        func message(_ name: String, _ argument: String?) -> String? {
            if case .failure(let failure) = Command.parse(name, argument: argument) { return failure.message }
            return nil
        }
        XCTAssertEqual(message("skipForward", "0"), "skipForward takes seconds, more than 0 (optional), not '0'")
        XCTAssertEqual(message("setVolume", "101"), "setVolume takes percent, 0 to 100, not '101'")
        XCTAssertEqual(message("setVolume", nil), "setVolume takes percent, 0 to 100, not ''")
        XCTAssertEqual(message("play", "now"), "play takes no argument, not 'now'")
        XCTAssertEqual(message("changeRepeatMode", "twice"), "changeRepeatMode takes off, one or all (optional), not 'twice'")
        XCTAssertEqual(message("seekForward", "nan"), "seekForward takes begin or end (optional), not 'nan'")
        XCTAssertTrue(message("fly", nil)?.hasPrefix("unknown command 'fly' (one of play, pause,") ?? false)
    }

    func testEveryNameParsesAndPrintsBack() throws {
        let arguments: [CommandName: String] = [.changePlaybackPosition: "12", .setVolume: "30"]
        for name in CommandName.allCases {
            let command = try Command.parse(name, argument: arguments[name]).get()
            XCTAssertEqual(command.name, name)
            XCTAssertEqual(command.description.split(separator: " ").first.map(String.init), name.rawValue)
        }
    }

    func testScanningPhase() {
        let held = Command.remote(CommandRequest(.seekForward, scanning: .begin))
        XCTAssertEqual(held.scanning(.end), .remote(CommandRequest(.seekForward, scanning: .end)))
        XCTAssertEqual(Command.volume(.step(5)).scanning(.end), .volume(.step(5)))
    }
}
