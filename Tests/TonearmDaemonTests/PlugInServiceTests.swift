import Logging
import Synchronization
@testable import TonearmDaemon
import TonearmControlPlane
import TonearmSession
import XCTest

/// A control plane that answers every command with success and records it.
final class RecordingPlane: ControlPlane {
    let feed = ChangeFeed()
    let sent = Mutex<[(Command, String)]>([])

    func send(_ command: Command, from source: CommandSource) async -> CommandResult {
        sent.withLock { $0.append((command, source.name)) }
        return CommandResult(status: .success)
    }

    func snapshot() async -> ControlState { ControlState() }
    var published: ControlState { ControlState() }
    func subscribe(_ subsystems: Set<Subsystem>) -> ChangeSubscription { feed.subscribe(subsystems) }
    func newClient() -> ClientID { 7 }
    func clientLeft(_ client: ClientID) async {}
}

struct PlugInFailure: Error, CustomStringConvertible {
    var description: String { "the device is gone" }
}

/// Fails its first `failures` runs, then runs until cancelled.
final class FlakyPlugIn: PlugIn {
    let name = "flaky"
    let isRequired: Bool
    let failures: Int
    let runs = Atomic<Int>(0)

    init(failures: Int, required: Bool = false) {
        self.failures = failures
        isRequired = required
    }

    func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let run = runs.add(1, ordering: .relaxed).newValue
        if run <= failures { throw PlugInFailure() }
        _ = await plane.send(.remote(.init(.play)), from: CommandSource(name))
        while !Task.isCancelled { try await Task.sleep(for: .seconds(10)) }
    }
}

final class PlugInServiceTests: XCTestCase {
    func logger() -> Logger {
        Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    func testAFailingPlugInIsStartedAgainWithBackOffAndStopsWithItsTask() async throws {
        let plane = RecordingPlane()
        let plugIn = FlakyPlugIn(failures: 2)
        var service = PlugInService(plugIn: plugIn, plane: plane, logger: logger())
        service.firstDelay = 0.05
        let running = Task { [service] in try await service.run() }
        let deadline = ContinuousClock.now + .seconds(10)
        while plane.sent.withLock({ $0.count }) == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        // Two failures, two waits (0.05 s, then 0.1 s), and the third run is the one that lives.
        XCTAssertEqual(plugIn.runs.load(ordering: .relaxed), 3)
        XCTAssertEqual(plane.sent.withLock { $0.map(\.1) }, ["flaky"])
        running.cancel()
        try await running.value
        XCTAssertEqual(plugIn.runs.load(ordering: .relaxed), 3, "a plug-in whose task is cancelled is not started again")
    }

    func testARequiredPlugInThatFailsStopsTheDaemon() async throws {
        let plugIn = FlakyPlugIn(failures: 1, required: true)
        let service = PlugInService(plugIn: plugIn, plane: RecordingPlane(), logger: logger())
        do {
            try await service.run()
            XCTFail("the daemon ran on without its required plug-in")
        } catch {
            XCTAssertTrue("\(error)".contains("the device is gone"), "\(error)")
        }
        XCTAssertEqual(plugIn.runs.load(ordering: .relaxed), 1, "a required plug-in is not started again")
    }
}
