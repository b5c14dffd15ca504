import Foundation

/// A fresh directory under /tmp, removed with everything in it when the value is released, or
/// when the process exits if it is still held then (XCTest keeps every test case object, and
/// with it a directory kept in a property, until the end of the run).
///
/// Set `TONEARM_KEEP_TEST_FILES` (to anything) to keep it for a post-mortem; its path is
/// printed when it is kept.
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String

    public init(prefix: String = "tonearm-test") throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> Bool in
            mkdtemp(buffer.baseAddress!) != nil
        }
        guard made else {
            throw TestSupportError("cannot create a directory under /tmp: \(String(cString: strerror(errno)))")
        }
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        LiveDirectories.shared.insert(path)
    }

    /// `path/name`.
    public func file(_ name: String) -> String { path + "/" + name }

    /// `path/name` as a URL.
    public func url(_ name: String) -> URL { URL(fileURLWithPath: file(name)) }

    deinit { LiveDirectories.shared.release(path) }
}

/// The temporary directories not yet released, removed at exit.
private final class LiveDirectories: @unchecked Sendable {
    static let shared = LiveDirectories()
    private let lock = NSLock()
    private var paths: Set<String> = []

    private init() {
        atexit {
            let shared = LiveDirectories.shared
            for path in shared.lock.withLock({ shared.paths }) { shared.release(path) }
        }
    }

    func insert(_ path: String) { lock.withLock { _ = paths.insert(path) } }

    /// Removes `path` and everything in it, or keeps it and says where when
    /// `TONEARM_KEEP_TEST_FILES` is set.
    func release(_ path: String) {
        guard lock.withLock({ paths.remove(path) }) != nil else { return }
        if ProcessInfo.processInfo.environment["TONEARM_KEEP_TEST_FILES"] != nil {
            FileHandle.standardError.write(Data("kept test files in \(path)\n".utf8))
        } else {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}

/// A failure inside the test support code, with a message meant for the test log.
public struct TestSupportError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
