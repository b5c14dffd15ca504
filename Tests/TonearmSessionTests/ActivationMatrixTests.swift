import TonearmSession
import XCTest

/// Every pair of configurations: A is active, then B activates. Both have an enabled command.
final class ActivationMatrixTests: XCTestCase {
    struct Configuration {
        var name: String
        var category: SessionCategory
        var mode: SessionMode = .default
        var options: SessionOptions = []
    }

    static let configurations: [Configuration] = [
        Configuration(name: "amb", category: .ambient),
        Configuration(name: "solo", category: .soloAmbient),
        Configuration(name: "play", category: .playback),
        Configuration(name: "play+mix", category: .playback, options: [.mixWithOthers]),
        Configuration(name: "play+duck", category: .playback, options: [.duckOthers]),
        Configuration(
            name: "play+isa", category: .playback, mode: .voicePrompt,
            options: [.interruptSpokenAudioAndMixWithOthers]),
        Configuration(name: "pod", category: .playback, mode: .spokenAudio),
        Configuration(name: "pod+mix", category: .playback, mode: .spokenAudio, options: [.mixWithOthers]),
        Configuration(name: "rec", category: .record),
        Configuration(name: "pnr", category: .playAndRecord, mode: .voiceChat),
        Configuration(name: "pnr+mix", category: .playAndRecord, options: [.mixWithOthers]),
        Configuration(name: "pnr+duck", category: .playAndRecord, options: [.duckOthers]),
        Configuration(name: "multi", category: .multiRoute),
        Configuration(name: "multi+mix", category: .multiRoute, options: [.mixWithOthers]),
    ]

    /// Row: A (already active); column: B (activating), in the order of `configurations`.
    /// Each cell is three characters: A after B's activation, B, and the Now Playing owner.
    ///   M mixes · D mixes, ducked by the other · I interrupted (a non-mixable activation)
    ///   S interrupted (spoken audio interrupted) · - sounding but without output (record)
    ///   owner: A, B, or - for none.
    static let matrix: [String: [String]] = [
        //            amb    solo   play   p+mix  p+duck p+isa  pod    pod+mx rec    pnr    pnr+mx pnr+dk multi  mu+mix
        "amb":       ["MM-", "MMB", "MMB", "MM-", "DM-", "MM-", "MMB", "MM-", "M-B", "MMB", "MM-", "DM-", "MMB", "MM-"],
        "solo":      ["MMA", "IMB", "IMB", "MMA", "DMA", "MMA", "IMB", "MMA", "I-B", "IMB", "MMA", "DMA", "IMB", "MMA"],
        "play":      ["MMA", "IMB", "IMB", "MMA", "DMA", "MMA", "IMB", "MMA", "I-B", "IMB", "MMA", "DMA", "IMB", "MMA"],
        "play+mix":  ["MM-", "MMB", "MMB", "MM-", "DM-", "MM-", "MMB", "MM-", "M-B", "MMB", "MM-", "DM-", "MMB", "MM-"],
        "play+duck": ["MD-", "MDB", "MDB", "MD-", "DD-", "MD-", "MDB", "MD-", "M-B", "MDB", "MD-", "DD-", "MDB", "MD-"],
        "play+isa":  ["MM-", "MMB", "MMB", "MM-", "DM-", "MM-", "MMB", "MM-", "M-B", "MMB", "MM-", "DM-", "MMB", "MM-"],
        "pod":       ["MMA", "IMB", "IMB", "MMA", "DMA", "SMA", "IMB", "MMA", "I-B", "IMB", "MMA", "DMA", "IMB", "MMA"],
        "pod+mix":   ["MM-", "MMB", "MMB", "MM-", "DM-", "SM-", "MMB", "MM-", "M-B", "MMB", "MM-", "DM-", "MMB", "MM-"],
        "rec":       ["-MA", "IMB", "IMB", "-MA", "-MA", "-MA", "IMB", "-MA", "I-B", "IMB", "-MA", "-MA", "IMB", "-MA"],
        "pnr":       ["MMA", "IMB", "IMB", "MMA", "DMA", "MMA", "IMB", "MMA", "I-B", "IMB", "MMA", "DMA", "IMB", "MMA"],
        "pnr+mix":   ["MM-", "MMB", "MMB", "MM-", "DM-", "MM-", "MMB", "MM-", "M-B", "MMB", "MM-", "DM-", "MMB", "MM-"],
        "pnr+duck":  ["MD-", "MDB", "MDB", "MD-", "DD-", "MD-", "MDB", "MD-", "M-B", "MDB", "MD-", "DD-", "MDB", "MD-"],
        "multi":     ["MMA", "IMB", "IMB", "MMA", "DMA", "MMA", "IMB", "MMA", "I-B", "IMB", "MMA", "DMA", "IMB", "MMA"],
        "multi+mix": ["MM-", "MMB", "MMB", "MM-", "DM-", "MM-", "MMB", "MM-", "M-B", "MMB", "MM-", "DM-", "MMB", "MM-"],
    ]

    /// A alone, after B deactivated with notifyOthersOnDeactivation: M or - (record), and
    /// whether A then owns Now Playing.
    static let alone: [String: (code: Character, owns: Bool)] = [
        "amb": ("M", false), "solo": ("M", true), "play": ("M", true), "play+mix": ("M", false),
        "play+duck": ("M", false), "play+isa": ("M", false), "pod": ("M", true),
        "pod+mix": ("M", false), "rec": ("-", true), "pnr": ("M", true), "pnr+mix": ("M", false),
        "pnr+duck": ("M", false), "multi": ("M", true), "multi+mix": ("M", false),
    ]

    let a: SessionID = 1
    let b: SessionID = 2

    func code(_ gain: OutputGain?, _ state: SessionState?, _ category: SessionCategory) -> Character {
        guard let gain, let state else { return "?" }
        if state.interrupted { return gain.mixes ? "!" : "I" }
        if !gain.mixes { return category == .record ? "-" : "0" }
        return gain.ducked ? "D" : "M"
    }

    func board(_ first: Configuration, _ second: Configuration) throws -> Board {
        var board = Board()
        try board.start(a, first.category, mode: first.mode, options: first.options, commands: true)
        try board.apply(
            .open(
                b, owner: carPlayClient, category: second.category, mode: second.mode,
                options: second.options, hasEnabledCommand: true))
        return board
    }

    func testMatrixIsComplete() {
        XCTAssertEqual(Self.matrix.count, Self.configurations.count)
        for row in Self.matrix.values { XCTAssertEqual(row.count, Self.configurations.count) }
    }

    func testEveryPairActivates() throws {
        for first in Self.configurations {
            for (column, second) in Self.configurations.enumerated() {
                let cell = Array(Self.matrix[first.name]![column])
                let label = "A \(first.name), B \(second.name) activates"
                var board = try board(first, second)
                let decision = try board.apply(.activate(b))

                var gotA = code(decision.outputs[a], decision.session(a), first.category)
                if gotA == "I" && decision.interruptionsBegan.first?.reason == .spokenAudioInterrupted {
                    gotA = "S"
                }
                let gotB = code(decision.outputs[b], decision.session(b), second.category)
                XCTAssertEqual(String([gotA, gotB]), String(cell[0...1]), label)

                let owner: SessionID? = cell[2] == "A" ? a : cell[2] == "B" ? b : nil
                XCTAssertEqual(decision.nowPlayingOwner, owner, label)

                switch cell[0] {
                case "I", "S":
                    let reason: InterruptionReason = cell[0] == "I" ? .nonMixableActivated : .spokenAudioInterrupted
                    XCTAssertEqual(
                        decision.interruptionsBegan,
                        [InterruptionBegan(session: a, owner: player, interrupter: b, reason: reason)], label)
                    XCTAssertEqual(decision.session(a)?.interruptedBy, [b], label)
                    XCTAssertEqual(decision.outputs[a], .interruptedSilent, label)
                case "D":
                    XCTAssertEqual(decision.interruptionsBegan, [], label)
                    XCTAssertEqual(decision.outputs[a], .duckedBy(b), label)
                default:
                    XCTAssertEqual(decision.interruptionsBegan, [], label)
                }
                if cell[1] == "D" { XCTAssertEqual(decision.outputs[b], .duckedBy(a), label) }
                XCTAssertEqual(decision.interruptionsEnded, [], label)
                XCTAssertEqual(decision.session(a)?.active, true, label)
                XCTAssertEqual(decision.session(b)?.active, true, label)
                XCTAssertEqual(decision.session(b)?.interrupted, false, label)
                XCTAssertEqual(decision.session(a)?.activationOrder, 1, label)
                XCTAssertEqual(decision.session(b)?.activationOrder, 2, label)
            }
        }
    }

    func testEveryPairThenBDeactivatesNotifyingOthers() throws {
        for first in Self.configurations {
            for (column, second) in Self.configurations.enumerated() {
                let cell = Array(Self.matrix[first.name]![column])
                let label = "A \(first.name), B \(second.name) leaves with notifyOthers"
                var board = try board(first, second)
                try board.apply(.activate(b))
                let decision = try board.apply(.deactivate(b, notifyOthers: true))

                let expected = Self.alone[first.name]!
                XCTAssertEqual(code(decision.outputs[a], decision.session(a), first.category), expected.code, label)
                XCTAssertEqual(decision.nowPlayingOwner, expected.owns ? a : nil, label)
                XCTAssertEqual(decision.outputs[b], .silent, label)
                XCTAssertEqual(decision.interruptionsBegan, [], label)
                if cell[0] == "I" || cell[0] == "S" {
                    XCTAssertEqual(
                        decision.interruptionsEnded,
                        [InterruptionEnded(session: a, owner: player, endedBy: b, shouldResume: true)], label)
                } else {
                    XCTAssertEqual(decision.interruptionsEnded, [], label)
                }
                XCTAssertEqual(decision.session(a)?.interruptedBy, [], label)
            }
        }
    }

    func testEveryPairThenBDeactivatesSilently() throws {
        for first in Self.configurations {
            for (column, second) in Self.configurations.enumerated() {
                let cell = Array(Self.matrix[first.name]![column])
                let label = "A \(first.name), B \(second.name) leaves without notifyOthers"
                var board = try board(first, second)
                try board.apply(.activate(b))
                let decision = try board.apply(.deactivate(b, notifyOthers: false))

                XCTAssertEqual(decision.interruptionsBegan, [], label)
                XCTAssertEqual(decision.interruptionsEnded, [], label)
                XCTAssertEqual(decision.session(a)?.interruptedBy, [], label)
                if cell[0] == "I" || cell[0] == "S" {
                    // Stays interrupted until its owner activates it again.
                    XCTAssertEqual(decision.outputs[a], .interruptedSilent, label)
                    XCTAssertEqual(decision.session(a)?.interrupted, true, label)
                } else {
                    let expected = Self.alone[first.name]!.code
                    XCTAssertEqual(code(decision.outputs[a], decision.session(a), first.category), expected, label)
                }
                // Now Playing returns to A if eligible, interrupted or not.
                XCTAssertEqual(decision.nowPlayingOwner, Self.alone[first.name]!.owns ? a : nil, label)
            }
        }
    }
}
