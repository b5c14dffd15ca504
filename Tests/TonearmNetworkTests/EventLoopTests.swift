import NIOCore
import TonearmNetwork
import XCTest

final class EventLoopTests: XCTestCase {
    func testOneThread() throws {
        let group = NetworkEdge.makeEventLoopGroup()
        defer { try? group.syncShutdownGracefully() }
        XCTAssertEqual(Array(group.makeIterator()).count, 1)
    }
}
