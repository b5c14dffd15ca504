import Dispatch
import NIOPosix
import TonearmNetwork
import TonearmSystem
import XCTest

/// The engine's doorbell as the event loop watches it: every wake after the handler ran calls
/// the handler again (a wake taken but not reset would silence the bell for good).
final class DoorbellWatchTests: XCTestCase {
    func testEachWakeAfterTheHandlerRanIsHeardAndWakesMeanwhileAreOne() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bell = Doorbell()
        let heard = DispatchSemaphore(value: 0)
        let channel = try await bell.watch(on: group) { heard.signal() }
        func hear() async -> Bool {
            await Task.detached { heard.wait(timeout: .now() + 10) == .success }.value
        }
        for round in 1...5 {
            bell.wake()
            let result = await hear()
            XCTAssertTrue(result, "wake \(round) is heard")
        }
        // Woken three times before the loop looks: heard at least once, and the next wake too.
        bell.wake()
        bell.wake()
        bell.wake()
        let burst = await hear()
        XCTAssertTrue(burst)
        while heard.wait(timeout: .now() + 0.2) == .success {}
        bell.wake()
        let after = await hear()
        XCTAssertTrue(after, "a wake after the burst is heard")
        try await channel.close()
        try await group.shutdownGracefully()
    }
}
