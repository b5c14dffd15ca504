import Foundation
import Synchronization
import TonearmControl
import TonearmJSON
import TestSupport
import TonearmNetwork
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// What one client, or the process's limits, must not do to the others.
final class AbuseTests: XCTestCase {
    /// A client that sends requests as fast as it can (and reads its answers, so it is not
    /// dropped) must not make another wait for the flood to end: the loop reads a bounded
    /// amount from each client in turn, so every answer to the other client comes while the
    /// flood still goes on, and the flooder's answers keep coming between them. Counted in
    /// answers, not seconds: the flood lasts until the test has its answers.
    func testAClientFloodingRequestsDoesNotStarveAnother() throws {
        let running = try RunningServer()
        let flooder = Handover(value: try RawConnection(path: running.path))
        let done = Flag()
        let flooding = Flag()
        let flooded = Flag()
        let floodAnswers = SharedCount()
        let batch = String(repeating: #"{"id":0,"command":"echo","value":"flood"}"# + "\n", count: 200)
        let writer = Thread {
            // Until the test has its answers (or the server closes the connection).
            while !done.isSet {
                if !flooder.value.send(Array(batch.utf8)) { break }
                flooding.set()
            }
            flooded.set()
        }
        let reader = Thread {
            var chunk = [UInt8](repeating: 0, count: 65536)
            while !done.isSet {
                var entry = pollfd(fd: flooder.value.fd, events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 100) >= 0 else { break }
                guard entry.revents != 0 else { continue }
                let count = chunk.withUnsafeMutableBytes { recv(flooder.value.fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                floodAnswers.add(chunk[..<count].reduce(0) { $1 == 0x0A ? $0 + 1 : $0 })
            }
        }
        writer.start()
        reader.start()
        defer { done.set() }
        XCTAssertTrue(waitUntil(timeout: 30) { flooding.isSet && floodAnswers.value > 0 }, "the flood has begun")

        let client = try ControlClient(path: running.path)
        var floodAnsweredAt: [Int] = []
        for i in 0..<20 {
            XCTAssertEqual(try client.request("echo", [("value", .int(i))], timeout: 30), .int(i))
            floodAnsweredAt.append(floodAnswers.value)
        }
        XCTAssertFalse(flooded.isSet, "every answer came while the flood went on")
        XCTAssertGreaterThan(floodAnsweredAt.last ?? 0, floodAnsweredAt.first ?? 0,
                             "the flooder was answered too between the other client's answers: \(floodAnsweredAt)")
        XCTAssertEqual(running.server.clientCount, 2, "the flooder reads its answers and stays")
    }

    /// With no descriptor left to accept with, the server says so and pauses accepting (NIO's
    /// accept back-off) instead of spinning on the listening socket; once descriptors are
    /// free again, the waiting clients are served.
    func testRunningOutOfDescriptorsPausesAcceptingAndDoesNotSpin() throws {
        let logged = LockedLines()
        let running = try RunningServer { $0.log = { logged.append($0) } }
        // The clients' sockets are made first: connecting takes no descriptor.
        let sockets = (0..<2).map { _ in socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0) }
        let connections = sockets.map { RawConnection(adopting: $0) }

        var saved = rlimit()
        XCTAssertEqual(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved), 0)
        let lowestFree = dup(0)
        close(lowestFree)
        var lowered = saved
        lowered.rlim_cur = rlim_t(lowestFree)
        XCTAssertEqual(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &lowered), 0)
        var restored = false
        func restore() {
            if !restored { _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved) }
            restored = true
        }
        defer { restore() }

        for fd in sockets { XCTAssertEqual(connectUnix(fd, running.path), 0) }
        let before = cpuSeconds()
        usleep(600_000)
        let busy = cpuSeconds() - before
        restore()

        XCTAssertLessThan(busy, 0.2, "CPU seconds used in 0.6 s while the server could not accept")
        XCTAssertTrue(logged.lines.contains { $0.contains("cannot accept a client") && $0.contains("Too many open files") }, "\(logged.lines)")
        XCTAssertLessThanOrEqual(logged.lines.filter { $0.contains("cannot accept") }.count, 2, "a line per back-off, not per try: \(logged.lines.prefix(3))")
        for (i, connection) in connections.enumerated() {
            connection.send(#"{"id":\#(i),"command":"echo","value":"back"}"# + "\n")
            XCTAssertEqual(connection.readMessage(timeout: 3)?.serialized, #"{"id":\#(i),"ok":true,"result":"back"}"#)
        }
    }
}

/// User and system CPU time of this process.
private func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

private func connectUnix(_ fd: Int32, _ path: String) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// A count added to on one thread, read from any.
final class SharedCount: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .acquiring) }
    func add(_ n: Int) { count.add(n, ordering: .releasing) }
}

/// A flag set once, read from any thread.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
