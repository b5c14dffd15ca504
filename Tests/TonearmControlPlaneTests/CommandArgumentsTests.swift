import TonearmControlPlane
import TonearmPlayer
import XCTest

/// The one parser of the vocabulary's arguments, in its two forms: the word a profile or a
/// display writes after the name ("setVolume 40"), and the keys of a control request
/// (`{"command":"setVolume","percent":40}`).
final class CommandArgumentsTests: XCTestCase {
    /// An argument as each form gives it; nil: not given.
    private struct Given {
        var word: String?
        var keyed: ArgumentValue?

        init(_ word: String?, _ keyed: ArgumentValue?) {
            self.word = word
            self.keyed = keyed
        }

        static let none = Given(nil, nil)
    }

    private struct Cases {
        /// Given either way, this command.
        var good: [(Given, Command)]
        /// Refused either way; the keyed form says which problem it is (nil: the word form only,
        /// as the keyed form does not look at keys a command does not take).
        var bad: [(Given, ArgumentProblem.Problem?)]
    }

    private func remote(_ command: RemoteCommand, interval: Double? = nil, position: Double? = nil, repeatMode: RepeatMode? = nil,
                        shuffle: Bool? = nil, scanning: ScanPhase? = nil) -> Command {
        .remote(CommandRequest(command, interval: interval, position: position, repeatMode: repeatMode, shuffle: shuffle, scanning: scanning))
    }

    /// Every name's good and bad arguments; the switch has a case for every name.
    private func cases(_ name: CommandName) -> Cases {
        let noArgument: (Command) -> Cases = { Cases(good: [(.none, $0)], bad: [(Given("now", nil), nil), (Given("0", nil), nil)]) }
        switch name {
        case .play: return noArgument(remote(.play))
        case .pause: return noArgument(remote(.pause))
        case .togglePlayPause: return noArgument(remote(.togglePlayPause))
        case .stop: return noArgument(remote(.stop))
        case .nextTrack: return noArgument(remote(.nextTrack))
        case .previousTrack: return noArgument(remote(.previousTrack))
        case .toggleMute: return noArgument(.mute(.toggle))
        case .muteOn: return noArgument(.mute(.on))
        case .muteOff: return noArgument(.mute(.off))
        case .ignitionOn: return noArgument(.ignition(on: true))
        case .ignitionOff: return noArgument(.ignition(on: false))
        case .skipForward, .skipBackward:
            let command = name == .skipForward ? RemoteCommand.skipForward : .skipBackward
            return Cases(
                good: [
                    (.none, remote(command)),
                    (Given("30", .number(30)), remote(command, interval: 30)),
                    (Given("2.5", .number(2.5)), remote(command, interval: 2.5)),
                ],
                bad: [
                    (Given("0", .number(0)), .outOfRange), (Given("-15", .number(-15)), .outOfRange),
                    (Given("inf", .number(.infinity)), .outOfRange), (Given("nan", .number(.nan)), .outOfRange),
                    (Given("soon", .string("30")), .wrongKind), (Given("true", .bool(true)), .wrongKind),
                    (Given("[]", .other), .wrongKind),
                ])
        case .changePlaybackPosition:
            return Cases(
                good: [
                    (Given("0", .number(0)), remote(.changePlaybackPosition, position: 0)),
                    (Given("42.5", .number(42.5)), remote(.changePlaybackPosition, position: 42.5)),
                ],
                bad: [
                    (.none, .missing), (Given("-1", .number(-1)), .outOfRange), (Given("nan", .number(.nan)), .outOfRange),
                    (Given("soon", .string("12")), .wrongKind), (Given("on", .bool(true)), .wrongKind),
                ])
        case .seekForward, .seekBackward:
            let command = name == .seekForward ? RemoteCommand.seekForward : .seekBackward
            return Cases(
                good: ScanPhase.allCases.map { (Given($0.rawValue, .string($0.rawValue)), remote(command, scanning: $0)) },
                bad: [
                    (Given("middle", .string("middle")), .outOfRange), (Given("Begin", .string("Begin")), .outOfRange),
                    (Given("1", .number(1)), .wrongKind), (Given("on", .bool(true)), .wrongKind),
                ])
        case .changeRepeatMode:
            return Cases(
                good: [(.none, remote(.changeRepeatMode))]
                    + RepeatMode.allCases.map { (Given($0.rawValue, .string($0.rawValue)), remote(.changeRepeatMode, repeatMode: $0)) },
                bad: [
                    (Given("twice", .string("twice")), .outOfRange), (Given("All", .string("All")), .outOfRange),
                    (Given("2", .number(2)), .wrongKind), (Given("on", .bool(true)), .wrongKind),
                ])
        case .changeShuffleMode:
            return Cases(
                good: [
                    (.none, remote(.changeShuffleMode)),
                    (Given("on", .bool(true)), remote(.changeShuffleMode, shuffle: true)),
                    (Given("off", .bool(false)), remote(.changeShuffleMode, shuffle: false)),
                ],
                bad: [
                    (Given("yes", .string("on")), .wrongKind), (Given("1", .number(1)), .wrongKind), (Given("true", .other), .wrongKind),
                ])
        case .volumeUp, .volumeDown:
            let sign: Double = name == .volumeUp ? 1 : -1
            return Cases(
                good: [
                    (.none, .volume(.step(5 * sign))),
                    (Given("10", .number(10)), .volume(.step(10 * sign))),
                    (Given("0.5", .number(0.5)), .volume(.step(0.5 * sign))),
                    (Given("100", .number(100)), .volume(.step(100 * sign))),
                ],
                bad: [
                    (Given("0", .number(0)), .outOfRange), (Given("101", .number(101)), .outOfRange),
                    (Given("-5", .number(-5)), .outOfRange), (Given("loud", .string("10")), .wrongKind),
                ])
        case .setVolume:
            return Cases(
                good: [
                    (Given("0", .number(0)), .volume(.set(0))),
                    (Given("40", .number(40)), .volume(.set(40))),
                    (Given("12.5", .number(12.5)), .volume(.set(12.5))),
                    (Given("100", .number(100)), .volume(.set(100))),
                ],
                bad: [
                    (.none, .missing), (Given("101", .number(101)), .outOfRange), (Given("-1", .number(-1)), .outOfRange),
                    (Given("100.5", .number(100.5)), .outOfRange), (Given("nan", .number(.nan)), .outOfRange),
                    (Given("loud", .string("40")), .wrongKind), (Given("on", .bool(true)), .wrongKind),
                ])
        }
    }

    private func keyed(_ name: CommandName, _ given: Given) -> CommandArguments {
        guard let key = name.argumentKey, let value = given.keyed else { return [:] }
        return [key: value]
    }

    func testBothFormsGiveTheSameCommandForEveryName() {
        for name in CommandName.allCases {
            let good = cases(name).good
            XCTAssertFalse(good.isEmpty, name.rawValue)
            for (given, command) in good {
                let what = "\(name.rawValue) \(given.word ?? "") / \(String(describing: given.keyed))"
                XCTAssertEqual(try Command.parse(name, argument: given.word).get(), command, what)
                XCTAssertEqual(try Command.parse(name, arguments: keyed(name, given)).get(), command, what)
                XCTAssertEqual(command.name, name, what)
            }
        }
    }

    func testBothFormsRefuseEveryBadArgumentOfEveryName() {
        for name in CommandName.allCases {
            let bad = cases(name).bad
            XCTAssertFalse(bad.isEmpty, name.rawValue)
            for (given, problem) in bad {
                let what = "\(name.rawValue) \(given.word ?? "") / \(String(describing: given.keyed))"
                let takes = name.argument ?? "no argument"
                XCTAssertEqual(failure(Command.parse(name, argument: given.word))?.message,
                               "\(name.rawValue) takes \(takes), not '\(given.word ?? "")'", what)
                XCTAssertEqual(failure(Command.parse(name, argument: given.word))?.code, .badArgument, what)
                guard let problem else { continue }
                let refusal = failure(Command.parse(name, arguments: keyed(name, given)))
                XCTAssertEqual(refusal?.argument?.key, name.argumentKey, what)
                XCTAssertEqual(refusal?.argument?.problem, problem, what)
            }
        }
    }

    /// A request's other keys are not looked at, whatever they hold.
    func testTheKeyedFormLooksOnlyAtTheKeyItsCommandTakes() {
        for name in CommandName.allCases {
            guard let first = cases(name).good.first else { return XCTFail(name.rawValue) }
            var arguments = keyed(name, first.0)
            for key in ArgumentKey.allCases where key != name.argumentKey { arguments[key] = .other }
            XCTAssertEqual(try Command.parse(name, arguments: arguments).get(), first.1, name.rawValue)
        }
    }

    func testTheWordGoesUnderTheKeyItsCommandTakes() {
        XCTAssertEqual(CommandArguments(word: "30", for: .skipForward), CommandArguments([.interval: .word("30")]))
        XCTAssertEqual(CommandArguments(word: "all", for: .changeRepeatMode), CommandArguments([.mode: .word("all")]))
        XCTAssertEqual(CommandArguments(word: nil, for: .setVolume), CommandArguments())
        XCTAssertNil(CommandArguments(word: "now", for: .play))
        // A bare seekForward is a held control's press; a request without a phase has none,
        // and the player refuses it.
        XCTAssertEqual(CommandArguments(word: nil, for: .seekBackward), CommandArguments([.phase: .word("begin")]))
        XCTAssertEqual(try Command.parse(.seekForward, argument: nil).get(), remote(.seekForward, scanning: .begin))
        XCTAssertEqual(try Command.parse(.seekForward, arguments: [:]).get(), remote(.seekForward))
        for name in CommandName.allCases {
            XCTAssertEqual(name.argumentKey == nil, name.argument == nil, name.rawValue)
        }
    }

    func testTheKeyedFormSaysWhatIsWrong() {
        func message(_ name: CommandName, _ arguments: CommandArguments) -> String? {
            failure(Command.parse(name, arguments: arguments))?.description
        }
        XCTAssertEqual(message(.setVolume, [.percent: .number(140)]), "'percent' must be between 0 and 100")
        XCTAssertEqual(message(.setVolume, [:]), "'percent' is required (a number)")
        XCTAssertEqual(message(.setVolume, [.percent: .string("40")]), "'percent' must be a number")
        XCTAssertEqual(message(.volumeUp, [.step: .number(0)]), "'step' must be more than 0 and at most 100")
        XCTAssertEqual(message(.skipForward, [.interval: .number(-1)]), "'interval' must be more than 0")
        XCTAssertEqual(message(.changePlaybackPosition, [.position: .number(-1)]), "'position' must be 0 or more")
        XCTAssertEqual(message(.changeRepeatMode, [.mode: .string("twice")]), "'mode' must be off, one or all")
        XCTAssertEqual(message(.changeRepeatMode, [.mode: .number(1)]), "'mode' must be a string")
        XCTAssertEqual(message(.seekForward, [.phase: .string("middle")]), "'phase' must be begin or end")
        XCTAssertEqual(message(.changeShuffleMode, [.on: .string("on")]), "'on' must be true or false")
    }

    /// An alias is its command, and keeps the arguments it has always required.
    func testAliasesKeepTheArgumentsTheyRequire() {
        let same: [(CommandAlias, CommandArguments)] = [
            (.toggle, [:]), (.next, [:]), (.previous, [:]),
            (.seek, [.position: .number(12)]), (.volume, [.percent: .number(40)]),
            (.repeat, [.mode: .string("all")]), (.shuffle, [.on: .bool(true)]),
        ]
        XCTAssertEqual(Set(same.map { $0.0.rawValue }).union(["skip"]), Set(CommandAlias.allCases.map(\.rawValue)))
        for (alias, arguments) in same {
            let command = try? Command.parse(alias, arguments: arguments).get()
            XCTAssertNotNil(command, alias.rawValue)
            XCTAssertEqual(command, try? Command.parse(alias.command, arguments: arguments).get(), alias.rawValue)
            XCTAssertEqual(command?.name, alias.command, alias.rawValue)
            XCTAssertEqual(CommandName(named: alias.rawValue), alias.command)
        }
        func message(_ alias: CommandAlias, _ arguments: CommandArguments) -> String? {
            failure(Command.parse(alias, arguments: arguments))?.description
        }
        XCTAssertEqual(message(.repeat, [:]), "'mode' is required (a string)")
        XCTAssertEqual(message(.repeat, [.mode: .string("twice")]), "'mode' must be off, one or all")
        XCTAssertEqual(message(.shuffle, [:]), "'on' is required (true or false)")
        XCTAssertEqual(message(.seek, [:]), "'position' is required (a number)")
        XCTAssertEqual(message(.volume, [.percent: .number(140)]), "'percent' must be between 0 and 100")
        // skip: seconds, below 0 backward.
        XCTAssertEqual(try Command.parse(.skip, arguments: [.seconds: .number(30)]).get(), remote(.skipForward, interval: 30))
        XCTAssertEqual(try Command.parse(.skip, arguments: [.seconds: .number(-15)]).get(), remote(.skipBackward, interval: 15))
        XCTAssertEqual(message(.skip, [:]), "'seconds' is required (a number)")
        XCTAssertEqual(message(.skip, [.seconds: .string("x")]), "'seconds' must be a number")
        XCTAssertEqual(message(.skip, [.seconds: .number(0)]), "'seconds' must be a number other than 0")
        XCTAssertEqual(message(.skip, [.interval: .number(30)]), "'seconds' is required (a number)")
    }

    func testARequestNamesACommandByNameOrAlias() {
        XCTAssertEqual(try Command.parse(named: "nextTrack", arguments: [:])?.get(), remote(.nextTrack))
        XCTAssertEqual(try Command.parse(named: "next", arguments: [:])?.get(), remote(.nextTrack))
        XCTAssertEqual(failure(Command.parse(named: "repeat", arguments: [:]))?.argument?.key, .mode, "the alias is strict")
        XCTAssertEqual(try Command.parse(named: "changeRepeatMode", arguments: [:])?.get(), remote(.changeRepeatMode))
        XCTAssertNil(Command.parse(named: "fly", arguments: [:]))
        XCTAssertNil(Command.parse(named: "Next", arguments: [:]))
    }

    func testChoicesAreTheCasesNames() {
        XCTAssertEqual(RepeatMode.choices, "off, one or all")
        XCTAssertEqual(ScanPhase.choices, "begin or end")
        XCTAssertEqual(OnOff.choices, "on or off")
        XCTAssertEqual(SingleMode.choices, "off, on or oneshot")
    }

    private func failure<Failure>(_ result: Result<Command, Failure>?) -> Failure? {
        guard case .failure(let failure)? = result else { return nil }
        return failure
    }
}
