import SystemPackage
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// Hardware (RTS/CTS lines) or software (XON/XOFF bytes) flow control, or none.
public enum SerialFlowControl: String, Sendable, CaseIterable {
    case none, rtscts, xonxoff
}

/// Which port, how fast, and whether the other end may pause us.
public struct SerialPortSettings: Sendable, Equatable {
    /// "/dev/ttyAMA0", "/dev/ttyUSB0", "/dev/serial/by-id/…".
    public var path: String
    /// Bits per second; one of `baudRates`.
    public var baudRate: Int
    public var flowControl: SerialFlowControl

    public init(path: String, baudRate: Int = 9600, flowControl: SerialFlowControl = .none) {
        self.path = path
        self.baudRate = baudRate
        self.flowControl = flowControl
    }

    /// The standard rates termios names (B1200…B230400) that displays use. Others (14400,
    /// 460800, 1000000) need BOTHER, which a backpack or Nextion never requires.
    public static let baudRates = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115_200, 230_400]

    /// Refuses a rate termios cannot set, before any port is opened.
    public func validate() throws(SerialError) {
        guard Self.speed(for: baudRate) != nil else {
            let rates = Self.baudRates.map(String.init).joined(separator: ", ")
            throw SerialError(
                port: path, message: "baud rate \(baudRate) is not supported on serial port \(path): use one of \(rates)")
        }
    }

    static func speed(for baudRate: Int) -> speed_t? {
        switch baudRate {
        case 1200: speed_t(B1200)
        case 2400: speed_t(B2400)
        case 4800: speed_t(B4800)
        case 9600: speed_t(B9600)
        case 19200: speed_t(B19200)
        case 38400: speed_t(B38400)
        case 57600: speed_t(B57600)
        case 115_200: speed_t(B115200)
        case 230_400: speed_t(B230400)
        default: nil
        }
    }
}

/// A serial port opened as a board opens /dev/ttyAMA0: non-blocking, not our controlling
/// terminal, raw 8N1 at a standard rate, modem lines ignored (CLOCAL), receiver on (CREAD),
/// flow control only when the settings ask for it. Used from one thread.
///
/// `read` and `write` never wait: the owner `poll`s `descriptor`. A port that went away
/// (a USB adapter unplugged, a pty whose other end closed) throws from either.
public final class SerialPort {
    public let settings: SerialPortSettings
    /// For `poll`; nil once closed.
    public private(set) var file: FileDescriptor?

    public var path: String { settings.path }
    /// The descriptor's number; -1 once closed.
    public var descriptor: Int32 { file?.rawValue ?? -1 }

    public init(_ settings: SerialPortSettings) throws(SerialError) {
        try settings.validate()
        self.settings = settings
        let path = settings.path
        do throws(Errno) {
            // O_NOCTTY: swift-system has no name for it.
            file = try FileDescriptor.open(path, .readWrite, options: [.nonBlocking, .closeOnExec, .init(rawValue: O_NOCTTY)])
        } catch {
            throw .failed("cannot open", path, error)
        }
        do {
            try configure(descriptor)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Idempotent.
    public func close() {
        try? file?.close()
        file = nil
    }

    private func configure(_ descriptor: Int32) throws(SerialError) {
        let path = settings.path
        var options = termios()
        guard tcgetattr(descriptor, &options) == 0 else {
            let error = Errno(rawValue: errno)
            let why = error == .inappropriateIOCTLForDevice ? "\(error) (not a terminal)" : "\(error)"
            throw SerialError(port: path, message: "cannot configure serial port \(path): \(why)", code: error.rawValue)
        }
        // Raw: no line editing, echo, signals or newline translation; VMIN 1 and VTIME 0, so
        // an empty port reads EAGAIN and end of file means the port hung up.
        cfmakeraw(&options)
        options.c_cflag &= ~tcflag_t(CSIZE | PARENB | CSTOPB)
        options.c_cflag &= ~tcflag_t(CRTSCTS)
        options.c_cflag |= tcflag_t(CS8 | CLOCAL | CREAD)
        options.c_iflag &= ~tcflag_t(IXON | IXOFF | IXANY)
        switch settings.flowControl {
        case .none: break
        case .rtscts: options.c_cflag |= tcflag_t(CRTSCTS)
        case .xonxoff: options.c_iflag |= tcflag_t(IXON | IXOFF)
        }
        let speed = SerialPortSettings.speed(for: settings.baudRate)!
        cfsetispeed(&options, speed)
        cfsetospeed(&options, speed)
        guard tcsetattr(descriptor, TCSANOW, &options) == 0 else { throw .failed("cannot configure", path, Errno(rawValue: errno)) }
        // tcsetattr succeeds if any one change took; check the rate did.
        var applied = termios()
        guard tcgetattr(descriptor, &applied) == 0 else { throw .failed("cannot configure", path, Errno(rawValue: errno)) }
        guard cfgetospeed(&applied) == speed else {
            throw SerialError(port: path, message: "serial port \(path) refused baud rate \(settings.baudRate)")
        }
        // What arrived before we were listening belongs to nobody.
        _ = tcflush(descriptor, TCIOFLUSH)
    }

    /// Reads what has arrived into `buffer`, without waiting; 0 when nothing has. Throws when
    /// the port is gone (EIO, ENXIO, or end of file: the port hung up).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SerialError) -> Int {
        guard let file else { throw closedError }
        let read: Int?
        do throws(Errno) {
            read = try file.readAvailable(into: buffer)
        } catch {
            throw .failed("cannot read from", path, error)
        }
        guard let count = read else { return 0 }
        guard count > 0 else { throw SerialError(port: path, message: "serial port \(path) hung up") }
        return count
    }

    /// Writes as much of `bytes` as the port takes now; 0 when its buffer is full (or the
    /// other end paused us with flow control). Throws when the port is gone.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(SerialError) -> Int {
        guard let file else { throw closedError }
        do throws(Errno) {
            return try file.writeAvailable(bytes)
        } catch {
            throw .failed("cannot write to", path, error)
        }
    }

    private var closedError: SerialError {
        SerialError(port: path, message: "serial port \(path) is closed", code: Errno.badFileDescriptor.rawValue)
    }
}
