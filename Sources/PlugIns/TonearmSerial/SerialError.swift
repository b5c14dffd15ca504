import SystemPackage

/// A serial port that could not be had, or display settings that cannot work, naming the
/// port and the cause: "cannot open serial port /dev/ttyUSB0: No such file or directory",
/// "baud rate 14400 is not supported on /dev/ttyAMA0 (use one of 1200, 2400, …)".
public struct SerialError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The port's path, as the settings give it.
    public var port: String
    /// The whole message.
    public var message: String
    /// The errno value when a system call failed, for callers that tell a missing device
    /// (ENOENT, ENXIO, ENODEV) from a refused one (EACCES, EBUSY).
    public var code: Int32?

    public init(port: String, message: String, code: Int32? = nil) {
        self.port = port
        self.message = message
        self.code = code
    }

    public var description: String { message }

    /// "cannot open serial port PATH: No such file or directory".
    static func failed(_ what: String, _ port: String, _ error: Errno) -> SerialError {
        SerialError(port: port, message: "\(what) serial port \(port): \(error)", code: error.rawValue)
    }
}
