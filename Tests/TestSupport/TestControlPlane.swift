import Foundation
import Synchronization
import TonearmControlPlane
import TonearmSession

/// A control plane that drives one plug-in in a test: it records every command it is sent and
/// from whom, refuses the names the test disables (as the command center does), serves a
/// snapshot the test sets and publishes the test's changes through a real `ChangeFeed`.
public final class TestControlPlane: ControlPlane {
    public struct Received: Sendable, Equatable, CustomStringConvertible {
        public var command: Command
        public var source: String
        public var description: String { "\(source): \(command)" }
    }

    private struct State {
        var received: [Received] = []
        var snapshot: ControlState
        var snapshotsRead = 0
        var disabled: Set<CommandName> = []
        var refusal: (@Sendable (Command) -> CommandFailure?)?
        var answer: (@Sendable (Command) -> CommandResult?)?
        var left: [ClientID] = []
    }

    private let state: Mutex<State>
    private let clients = Atomic<Int>(1)
    public let feed = ChangeFeed()

    public let catalog: (any LibraryCatalog)?

    public init(_ snapshot: ControlState = ControlState(), catalog: (any LibraryCatalog)? = nil) {
        state = Mutex(State(snapshot: snapshot))
        self.catalog = catalog
    }

    public func send(_ command: Command, from source: CommandSource) async -> CommandResult {
        state.withLock { state in
            state.received.append(Received(command: command, source: source.name))
            if let name = command.name, state.disabled.contains(name) { return CommandResult(status: .disabled) }
            if let failure = state.refusal?(command) { return CommandResult(status: .commandFailed, failure: failure) }
            return state.answer?(command) ?? CommandResult(status: .success)
        }
    }

    public func snapshot() async -> ControlState {
        state.withLock { state in
            state.snapshotsRead += 1
            return state.snapshot
        }
    }

    public var published: ControlState { state.withLock { $0.snapshot } }

    public func subscribe(_ subsystems: Set<Subsystem>) -> ChangeSubscription { feed.subscribe(subsystems) }

    public func newClient() -> ClientID { ClientID(clients.add(1, ordering: .relaxed).oldValue) }

    public func clientLeft(_ client: ClientID) async { state.withLock { $0.left.append(client) } }

    /// The clients that left, in order.
    public var clientsLeft: [ClientID] { state.withLock { $0.left } }

    /// Answers the commands `answer` returns a result for with that result (a session's report,
    /// an inlet).
    public func answer(_ answer: @escaping @Sendable (Command) -> CommandResult?) { state.withLock { $0.answer = answer } }

    /// The state from now on, published as a change of `subsystems`.
    public func publish(_ snapshot: ControlState, _ subsystems: Set<Subsystem> = [.player]) {
        state.withLock { $0.snapshot = snapshot }
        feed.publish(ChangeBatch(subsystems: subsystems))
    }

    /// Commands with these names are refused as disabled from now on.
    public func disable(_ names: Set<CommandName>) { state.withLock { $0.disabled = names } }

    /// Answers the commands `refuse` returns a failure for with that failure.
    public func refuse(_ refuse: @escaping @Sendable (Command) -> CommandFailure?) { state.withLock { $0.refusal = refuse } }

    public var received: [Received] { state.withLock { $0.received } }
    public var commands: [Command] { received.map(\.command) }
    public var snapshotsRead: Int { state.withLock { $0.snapshotsRead } }

    /// The commands once there are `count` of them (or what came within `timeout`).
    @discardableResult
    public func waitForCommands(_ count: Int, timeout: Double = 3) -> [Command] {
        _ = waitUntil(timeout: timeout) { commands.count >= count }
        return commands
    }
}

/// A plug-in's log kept for a test, as "level: text" lines.
public final class TestLog: Sendable {
    private let entries = Mutex<[(level: PlugInLog.Level, text: String)]>([])

    public init() {}

    public var log: PlugInLog {
        PlugInLog { level, text in self.entries.withLock { $0.append((level, text)) } }
    }

    /// Every line but debug ones, as "warning: text".
    public var lines: [String] { entries.withLock { $0.filter { $0.level != .debug }.map { "\($0.level): \($0.text)" } } }
    /// The texts of every line but debug ones.
    public var texts: [String] { entries.withLock { $0.filter { $0.level != .debug }.map(\.text) } }

    public func texts(at level: PlugInLog.Level) -> [String] {
        entries.withLock { $0.filter { $0.level == level }.map(\.text) }
    }

    /// True once `count` lines (debug ones aside) contain `text`, within `timeout`.
    @discardableResult
    public func waitFor(_ text: String, count: Int = 1, timeout: Double = 3) -> Bool {
        waitUntil(timeout: timeout) { texts.filter { $0.contains(text) }.count >= count }
    }
}

/// A plug-in running in a task, as the daemon runs it, until `stop`.
public final class RunningPlugIn: Sendable {
    private let task: Task<Void, any Error>

    public init(_ plugIn: any PlugIn, on plane: any ControlPlane, log: PlugInLog) {
        task = Task { try await plugIn.run(plane, log: log) }
    }

    /// Cancels it and waits for `run` to return (its threads joined); the seconds that took,
    /// or infinity when it did not return within `timeout`.
    @discardableResult
    public func stop(timeout: Double = 5) -> Double {
        let started = Date()
        task.cancel()
        let done = DispatchSemaphore(value: 0)
        let task = self.task
        Task.detached {
            _ = await task.result
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout) == .success else { return .infinity }
        return Date().timeIntervalSince(started)
    }

    /// Waits for `run` to return by itself, within `timeout`; whether it did.
    public func waitForEnd(timeout: Double = 5) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let task = self.task
        Task.detached {
            _ = await task.result
            done.signal()
        }
        return done.wait(timeout: .now() + timeout) == .success
    }
}

/// The names of this process's threads (/proc/self/task/*/comm).
public func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { task in
        (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension Command {
    /// A command as a profile or a display writes it: "nextTrack", "skipForward 30",
    /// "seekForward begin", "volumeUp" (5 %).
    public init(_ text: String) {
        let words = text.split(separator: " ", maxSplits: 1).map(String.init)
        self = try! Command.parse(words[0], argument: words.count > 1 ? words[1] : nil).get()
    }
}
