import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Lines gathered from several threads.
final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    func append(_ line: String) { lock.withLock { storage.append(line) } }
    var lines: [String] { lock.withLock { storage } }
}
