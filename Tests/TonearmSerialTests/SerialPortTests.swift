import TestSupport
import TonearmSerial
import XCTest

#if canImport(Glibc)
import Glibc
#endif

final class SerialPortTests: XCTestCase {
    /// The slave's settings as any process opening it sees them.
    private func attributes(of path: String) throws -> termios {
        let fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { throw TestSupportError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var options = termios()
        XCTAssertEqual(tcgetattr(fd, &options), 0)
        return options
    }

    func testOpensRawEightNOneAtTheRateAndFlowControlAsked() throws {
        let pty = try PseudoTerminal()
        let cases: [(Int, speed_t, SerialFlowControl)] = [
            (115_200, speed_t(B115200), .rtscts), (1200, speed_t(B1200), .xonxoff), (230_400, speed_t(B230400), .none),
            (9600, speed_t(B9600), .none),
        ]
        for (rate, speed, flow) in cases {
            let port = try SerialPort(SerialPortSettings(path: pty.slavePath, baudRate: rate, flowControl: flow))
            var options = try attributes(of: pty.slavePath)
            let context = "\(rate) baud, \(flow)"
            XCTAssertEqual(cfgetospeed(&options), speed, context)
            XCTAssertEqual(cfgetispeed(&options), speed, context)
            let cflag = options.c_cflag, iflag = options.c_iflag, lflag = options.c_lflag
            XCTAssertEqual(cflag & tcflag_t(CSIZE), tcflag_t(CS8), context)
            XCTAssertEqual(cflag & tcflag_t(PARENB | CSTOPB), 0, "no parity, one stop bit: \(context)")
            XCTAssertEqual(cflag & tcflag_t(CLOCAL | CREAD), tcflag_t(CLOCAL | CREAD), context)
            XCTAssertEqual(cflag & tcflag_t(CRTSCTS) != 0, flow == .rtscts, context)
            XCTAssertEqual(iflag & tcflag_t(IXON) != 0, flow == .xonxoff, context)
            XCTAssertEqual(iflag & tcflag_t(IXOFF) != 0, flow == .xonxoff, context)
            XCTAssertEqual(iflag & tcflag_t(ICRNL | INLCR | ISTRIP), 0, "raw input: \(context)")
            XCTAssertEqual(lflag & tcflag_t(ICANON | ECHO | ISIG | IEXTEN), 0, "raw: \(context)")
            XCTAssertEqual(options.c_oflag & tcflag_t(OPOST), 0, "raw output: \(context)")
            let flags = fcntl(port.descriptor, F_GETFL)
            XCTAssertNotEqual(flags & O_NONBLOCK, 0, "non-blocking")
            XCTAssertNotEqual(fcntl(port.descriptor, F_GETFD) & FD_CLOEXEC, 0, "close-on-exec")
            port.close()
        }
    }

    func testRefusesRatesTermiosCannotSet() throws {
        let pty = try PseudoTerminal()
        for rate in [14400, 0, -9600, 250_000, 460_800, 300] {
            XCTAssertThrowsError(try SerialPort(SerialPortSettings(path: pty.slavePath, baudRate: rate))) { error in
                let message = "\(error)"
                XCTAssertTrue(message.hasPrefix("baud rate \(rate) is not supported on serial port \(pty.slavePath)"), message)
                XCTAssertTrue(message.contains("1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400"), message)
            }
            let settings = SerialDisplaySettings(port: SerialPortSettings(path: pty.slavePath, baudRate: rate))
            XCTAssertThrowsError(try SerialDisplay(settings: settings), "the display refuses it before starting")
        }
        // The rate is checked before the port is touched.
        XCTAssertThrowsError(try SerialPort(SerialPortSettings(path: "/nonexistent/tty", baudRate: 14400))) { error in
            XCTAssertTrue("\(error)".hasPrefix("baud rate 14400"), "\(error)")
        }
    }

    func testErrorsNameThePortAndTheCause() throws {
        let directory = try TemporaryDirectory()
        let missing = directory.file("ttyUSB0")
        XCTAssertThrowsError(try SerialPort(SerialPortSettings(path: missing))) { error in
            XCTAssertEqual("\(error)", "cannot open serial port \(missing): No such file or directory")
            XCTAssertEqual((error as? SerialError)?.code, ENOENT)
        }
        let file = directory.file("notatty")
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        XCTAssertThrowsError(try SerialPort(SerialPortSettings(path: file))) { error in
            XCTAssertEqual("\(error)", "cannot configure serial port \(file): Inappropriate ioctl for device (not a terminal)")
        }
    }

    func testReadsWritesAndNoticesAHangUp() throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(SerialPortSettings(path: pty.slavePath))
        var buffer = [UInt8](repeating: 0, count: 64)
        XCTAssertEqual(try buffer.withUnsafeMutableBytes { try port.read(into: $0) }, 0, "nothing yet: no wait, no error")

        let bytes: [UInt8] = [0x00, 0x0A, 0x0D, 0x11, 0x13, 0x7F, 0xFF, 0xFE]  // no translation, no XON/XOFF
        XCTAssertEqual(try bytes.withUnsafeBytes { try port.write($0) }, bytes.count)
        XCTAssertEqual(pty.take(bytes.count), bytes)

        pty.write(bytes.reversed())
        XCTAssertTrue(waitUntil(timeout: 2) { (try? buffer.withUnsafeMutableBytes { try port.read(into: $0) }) == bytes.count })
        XCTAssertEqual(Array(buffer.prefix(bytes.count)), bytes.reversed())

        pty.close()
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try port.read(into: $0) }) { error in
            XCTAssertEqual("\(error)", "serial port \(pty.slavePath) hung up")
        }
        XCTAssertThrowsError(try bytes.withUnsafeBytes { try port.write($0) }) { error in
            XCTAssertEqual("\(error)", "cannot write to serial port \(pty.slavePath): Input/output error")
        }
    }
}
