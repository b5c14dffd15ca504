import TonearmSession
import XCTest

/// The tables, row by row, against the seed's category table and Apple's documented rules.
final class CategoryTableTests: XCTestCase {
    func testEveryCategoryRow() {
        let all: SessionOptions = [.mixWithOthers, .duckOthers, .interruptSpokenAudioAndMixWithOthers]
        let expected: [SessionCategory: CategoryRules] = [
            .ambient: CategoryRules(
                mixableByDefault: true, silencedByMute: true, acceptedOptions: [],
                interruptsOthers: false, input: false, output: true),
            .soloAmbient: CategoryRules(
                mixableByDefault: false, silencedByMute: true, acceptedOptions: [],
                interruptsOthers: true, input: false, output: true),
            .playback: CategoryRules(
                mixableByDefault: false, silencedByMute: false, acceptedOptions: all,
                interruptsOthers: true, input: false, output: true),
            .record: CategoryRules(
                mixableByDefault: false, silencedByMute: false, acceptedOptions: [],
                interruptsOthers: true, input: true, output: false),
            .playAndRecord: CategoryRules(
                mixableByDefault: false, silencedByMute: false, acceptedOptions: all,
                interruptsOthers: true, input: true, output: true),
            .multiRoute: CategoryRules(
                mixableByDefault: false, silencedByMute: false, acceptedOptions: all,
                interruptsOthers: true, input: false, output: true),
        ]
        XCTAssertEqual(expected.count, SessionCategory.allCases.count)
        for category in SessionCategory.allCases {
            XCTAssertEqual(SessionPolicy.rules(for: category), expected[category], "\(category)")
        }
    }

    func testEveryModeRow() {
        let every = Set(SessionCategory.allCases)
        let expected: [SessionMode: Set<SessionCategory>] = [
            .default: every,
            .spokenAudio: every,
            .voicePrompt: every,
            .voiceChat: [.playAndRecord],
            .videoChat: [.playAndRecord],
            .gameChat: [.playAndRecord],
            .measurement: [.playback, .record, .playAndRecord],
            .moviePlayback: [.playback],
            .videoRecording: [.record, .playAndRecord],
        ]
        XCTAssertEqual(expected.count, SessionMode.allCases.count)
        for mode in SessionMode.allCases {
            XCTAssertEqual(SessionPolicy.categories(for: mode), expected[mode], "\(mode)")
        }
    }

    func testMixabilityOfEveryConfiguration() {
        // (category, options) → mixable, eligible for Now Playing with an enabled command.
        let cases: [(SessionCategory, SessionOptions, Bool, Bool)] = [
            (.ambient, [], true, false),
            (.soloAmbient, [], false, true),
            (.playback, [], false, true),
            (.playback, [.mixWithOthers], true, false),
            (.playback, [.duckOthers], true, false),
            (.playback, [.interruptSpokenAudioAndMixWithOthers], true, false),
            (.record, [], false, true),
            (.playAndRecord, [], false, true),
            (.playAndRecord, [.mixWithOthers, .duckOthers], true, false),
            (.multiRoute, [], false, true),
            (.multiRoute, [.mixWithOthers], true, false),
        ]
        for (category, options, mixable, eligible) in cases {
            let state = SessionState(
                id: 1, owner: player, category: category, options: options, hasEnabledCommand: true)
            XCTAssertEqual(state.isMixable, mixable, "\(category) \(options)")
            XCTAssertEqual(state.isNowPlayingEligible, eligible, "\(category) \(options)")
            var withoutCommands = state
            withoutCommands.hasEnabledCommand = false
            XCTAssertFalse(withoutCommands.isNowPlayingEligible, "\(category) \(options)")
        }
    }

    func testOptionNames() {
        XCTAssertEqual(SessionOptions(name: "mixWithOthers"), .mixWithOthers)
        XCTAssertEqual(SessionOptions(name: "duckOthers"), .duckOthers)
        XCTAssertEqual(
            SessionOptions(name: "interruptSpokenAudioAndMixWithOthers"),
            .interruptSpokenAudioAndMixWithOthers)
        XCTAssertNil(SessionOptions(name: "allowBluetooth"))
        XCTAssertNil(SessionOptions(name: "MixWithOthers"))
        XCTAssertEqual(SessionOptions([.duckOthers, .mixWithOthers]).names, ["mixWithOthers", "duckOthers"])
        XCTAssertEqual(SessionOptions().description, "[]")
        XCTAssertEqual(
            SessionOptions([.interruptSpokenAudioAndMixWithOthers, .mixWithOthers]).description,
            "[mixWithOthers, interruptSpokenAudioAndMixWithOthers]")
        XCTAssertEqual(SessionCategory(rawValue: "playAndRecord"), .playAndRecord)
        XCTAssertEqual(SessionMode(rawValue: "spokenAudio"), .spokenAudio)
        XCTAssertEqual(SessionMode.default.description, "default")
    }

    func testLinearGain() {
        XCTAssertEqual(OutputGain.mixing.linearGain(duckGain: 0.178), 1)
        XCTAssertEqual(OutputGain.mixing.linearGain(volume: 0.5, duckGain: 0.178), 0.5)
        XCTAssertEqual(OutputGain.duckedBy(2).linearGain(duckGain: 0.25), 0.25)
        XCTAssertEqual(OutputGain.duckedBy(2).linearGain(volume: 0.5, duckGain: 0.25), 0.125)
        XCTAssertEqual(OutputGain.silent.linearGain(duckGain: 0.25), 0)
        XCTAssertEqual(OutputGain(mixes: false, silencedByMute: true).linearGain(duckGain: 0.25), 0)
        XCTAssertEqual(OutputGain.interruptedSilent.linearGain(duckGain: 0.25), 0)
    }
}
