import SystemPackage

/// Opening and reading or writing the non-blocking descriptors a device thread polls (input
/// devices, serial ports, wake pipes), with the error typed: swift-system throws an `Errno`
/// but does not say so, and "nothing now" (EAGAIN) is an answer, not an error.
extension FileDescriptor {
    /// `open(2)` of `path`; interrupted opens are tried again.
    public static func open(_ path: String, _ mode: AccessMode, options: OpenOptions) throws(Errno) -> FileDescriptor {
        do {
            return try FileDescriptor.open(FilePath(path), mode, options: options)
        } catch {
            throw Errno.from(error)
        }
    }

    /// Reads what has arrived into `buffer`, without waiting: how much, 0 at end of file, nil
    /// when nothing has arrived yet.
    public func readAvailable(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int? {
        do {
            return try read(into: buffer)
        } catch {
            let error = Errno.from(error)
            guard error == .resourceTemporarilyUnavailable || error == .wouldBlock else { throw error }
            return nil
        }
    }

    /// Writes as much of `bytes` as the descriptor takes now; 0 when it takes nothing (full,
    /// or paused by flow control).
    public func writeAvailable(_ bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        guard bytes.count > 0 else { return 0 }
        do {
            return try write(bytes)
        } catch {
            let error = Errno.from(error)
            guard error == .resourceTemporarilyUnavailable || error == .wouldBlock else { throw error }
            return 0
        }
    }
}

extension Errno {
    /// swift-system's calls throw nothing but `Errno`.
    static func from(_ error: any Error) -> Errno { error as? Errno ?? .ioError }
}
