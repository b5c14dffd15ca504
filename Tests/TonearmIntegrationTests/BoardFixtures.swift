import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// What the board tests feed the daemon: input events through a FIFO, a profile on disk.
extension XCTestCase {
    /// One `struct input_event` (64-bit layout: tv_sec, tv_usec, type, code, value).
    func record(type: UInt16, code: UInt16, value: Int32) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: type.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: code.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
        return bytes
    }

    /// A key event and the EV_SYN after it.
    func key(_ code: UInt16, _ value: Int32) -> [UInt8] {
        record(type: 1, code: code, value: value) + record(type: 0, code: 0, value: 0)
    }

    func press(_ code: UInt16) -> [UInt8] { key(code, 1) + key(code, 0) }

    /// The writing end of a FIFO, opened once the daemon reads it.
    func openWriter(_ path: String) throws -> Int32 {
        var fd: Int32 = -1
        XCTAssertTrue(waitUntil(timeout: 5) {
            fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            return fd >= 0
        }, "the daemon opens the FIFO")
        guard fd >= 0 else { throw TestSupportError("nobody reads \(path)") }
        return fd
    }

    func write(_ fd: Int32, _ bytes: [UInt8]) {
        XCTAssertEqual(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }, bytes.count)
    }

    func profile(_ world: DaemonBench, _ text: String) throws -> String {
        let path = world.path("board.toml")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
