import SystemPackage

/// Wakes a thread asleep in poll(2) beside its devices (GPIO lines, input devices, a serial
/// port, the control socket's clients): a non-blocking pipe whose read end the thread polls. A
/// pipe rather than an eventfd, which Glibc's Swift module does not declare. A full pipe
/// already wakes, so `wake` never blocks.
public final class WakePipe: Sendable {
    private let reader: FileDescriptor?
    private let writer: FileDescriptor?
    /// Why there is no pipe (the system's words); nil when there is one.
    public let failure: String?

    public init() {
        do throws(Errno) {
            let ends = try FileDescriptor.pipe(options: [.nonBlocking, .closeOnExec])
            (reader, writer, failure) = (ends.readEnd, ends.writeEnd, nil)
        } catch {
            (reader, writer, failure) = (nil, nil, error.description)
        }
    }

    deinit {
        try? reader?.close()
        try? writer?.close()
    }

    /// The end to poll for POLLIN; -1 when no pipe could be made (see `failure`).
    public var descriptor: Int32 { reader?.rawValue ?? -1 }

    public func wake() {
        guard let writer else { return }
        _ = try? [1 as UInt8].withUnsafeBytes { try writer.writeAvailable($0) }
    }

    /// Empties the pipe, once the poll said it is readable.
    public func drain() {
        guard let reader else { return }
        var bytes = [UInt8](repeating: 0, count: 32)
        while case let count? = try? bytes.withUnsafeMutableBytes({ try reader.readAvailable(into: $0) }), count > 0 {}
    }
}
