import Foundation
import TestSupport
import TonearmControlPlane
import TonearmInput
import TonearmPlayer
import XCTest

// Event types and codes, written out here rather than taken from TonearmInput, so a wrong
// constant there is caught.
let evSyn: UInt16 = 0
let evKey: UInt16 = 1
let evRel: UInt16 = 2
let evAbs: UInt16 = 3
let evMsc: UInt16 = 4

let keyA: UInt16 = 30
let keyF1: UInt16 = 59
let keyF2: UInt16 = 60
let keyMute: UInt16 = 113
let keyVolumeDown: UInt16 = 114
let keyVolumeUp: UInt16 = 115
let keyPause: UInt16 = 119
let keyStop: UInt16 = 128
let keyNextSong: UInt16 = 163
let keyPlayPause: UInt16 = 164
let keyPreviousSong: UInt16 = 165
let keyStopCD: UInt16 = 166
let keyRewind: UInt16 = 168
let keyPlay: UInt16 = 207
let keyFastForward: UInt16 = 208

/// One `struct input_event` exactly as a 64-bit kernel writes it: tv_sec (Int64), tv_usec
/// (Int64), type (UInt16), code (UInt16), value (Int32), little-endian. The timestamp is not
/// zero, so a decoder reading at the wrong offset sees garbage.
func record(type: UInt16, code: UInt16, value: Int32, seconds: Int64 = 1_700_000_123, microseconds: Int64 = 654_321) -> [UInt8] {
    var bytes: [UInt8] = []
    withUnsafeBytes(of: seconds.littleEndian) { bytes += $0 }
    withUnsafeBytes(of: microseconds.littleEndian) { bytes += $0 }
    withUnsafeBytes(of: type.littleEndian) { bytes += $0 }
    withUnsafeBytes(of: code.littleEndian) { bytes += $0 }
    withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    precondition(bytes.count == 24)
    return bytes
}

/// What a USB keyboard sends for one key event: the scan code, the key, a report boundary.
func key(_ code: UInt16, _ value: Int32) -> [UInt8] {
    record(type: evMsc, code: 4, value: 0x000C_00CD) + record(type: evKey, code: code, value: value)
        + record(type: evSyn, code: 0, value: 0)
}

func press(_ code: UInt16) -> [UInt8] { key(code, 1) + key(code, 0) }

/// Commands a source sent to its control plane and the lines it logged, with waits that give
/// up; and the source running.
final class Recorder: Sendable {
    let plane = TestControlPlane()
    let log = TestLog()

    /// Runs `source` against the plane until the returned plug-in is stopped.
    func start(_ source: InputEventSource) -> RunningPlugIn { RunningPlugIn(source, on: plane, log: log.log) }

    var commands: [Command] { plane.commands }
    var logs: [String] { log.texts }

    func logs(at level: PlugInLog.Level) -> [String] { log.texts(at: level) }

    /// The commands once there are `count` of them (or what came within `timeout`).
    @discardableResult
    func waitForCommands(_ count: Int, timeout: Double = 2) -> [Command] { plane.waitForCommands(count, timeout: timeout) }

    /// True once a log line contains `text`.
    @discardableResult
    func waitForLog(containing text: String, count: Int = 1, timeout: Double = 2) -> Bool {
        log.waitFor(text, count: count, timeout: timeout)
    }
}

/// A FIFO in a test directory, and writers for it.
struct FIFO {
    let path: String

    init(_ path: String) throws {
        guard mkfifo(path, 0o644) == 0 else {
            throw TestSupportError("mkfifo \(path): \(String(cString: strerror(errno)))")
        }
        self.path = path
    }
}

/// The writing end of a FIFO, opened once a reader has it open (the source), so a test never
/// blocks for ever on a source that does not open it.
final class FIFOWriter {
    private var fd: Int32

    init(_ path: String, timeout: Double = 2) throws {
        let deadline = monotonicSeconds() + timeout
        while true {
            fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if fd >= 0 { break }
            guard errno == ENXIO, monotonicSeconds() < deadline else {
                throw TestSupportError("no reader opened \(path) within \(timeout) s (\(String(cString: strerror(errno))))")
            }
            usleep(2_000)
        }
    }

    func write(_ bytes: [UInt8]) throws {
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            throw TestSupportError("write to FIFO: \(written) of \(bytes.count) bytes (\(String(cString: strerror(errno))))")
        }
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    deinit { close() }
}

extension Command {
    static func seek(_ name: CommandName, _ phase: ScanPhase) -> Command { Command("\(name.rawValue) \(phase.rawValue)") }
}

/// A FIFO source's usual set-up: a directory, a FIFO, a started source (retrying every
/// 0.1 s so reopening tests stay quick) and a writer.
final class FIFOFixture {
    let directory: TemporaryDirectory
    let fifo: FIFO
    let recorder = Recorder()
    let source: InputEventSource
    let running: RunningPlugIn

    init(keyMap: InputKeyMap = InputKeyMap(), retryInterval: Double = 0.1) throws {
        directory = try TemporaryDirectory(prefix: "tonearm-input")
        fifo = try FIFO(directory.file("event-kbd"))
        source = InputEventSource(path: fifo.path, keyMap: keyMap, retryInterval: retryInterval)
        running = recorder.start(source)
    }

    func writer() throws -> FIFOWriter { try FIFOWriter(fifo.path) }

    deinit { running.stop() }
}
