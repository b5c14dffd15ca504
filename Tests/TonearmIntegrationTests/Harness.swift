import Foundation
import TestSupport
import XCTest

/// One test's world: a temporary directory, an ALSA configuration pointing into it, and
/// optionally a private JACK server.
final class Bench {
    let directory: TemporaryDirectory
    let alsa: ALSAConfig
    let jack: JackServer?

    /// `jackRunning: false` names the JACK server in the ALSA configuration but leaves it to
    /// the test to start: a device that is not there yet.
    init(jack withJack: Bool = false, jackRunning: Bool = true) throws {
        directory = try TemporaryDirectory(prefix: "tonearm-it")
        jack = withJack ? try JackServer(directory: directory, startNow: jackRunning) : nil
        alsa = try ALSAConfig(directory: directory, jackServerName: jack?.name)
    }

    /// Writes `fixture` as `name` in the test directory and returns its path.
    func fixture(_ name: String, _ fixture: FLACFixture) throws -> String {
        try fixture.write(to: directory.file(name))
    }

    func path(_ name: String) -> String { directory.file(name) }

    /// `tonearm play [arguments] files` with this bench's ALSA environment.
    func play(_ files: [String], device: String, _ arguments: [String] = [], timeout: Double = 30) throws -> ProcessResult {
        try runProcess(try tonearmBinary(), ["play", "--device", device] + arguments + files,
                       environment: alsa.environment, timeout: timeout)
    }

    /// Starts `tonearm play` and returns at once.
    func startPlaying(_ files: [String], device: String, _ arguments: [String] = []) throws -> RunningProcess {
        try RunningProcess(try tonearmBinary(), ["play", "--device", device] + arguments + files,
                           environment: alsa.environment)
    }

    func info(_ files: [String], timeout: Double = 10) throws -> ProcessResult {
        try runProcess(try tonearmBinary(), ["info", "--json"] + files, environment: alsa.environment, timeout: timeout)
    }

    /// The `capture` PCM's WAV file.
    func capture() throws -> WAVFile { try WAVFile(path: alsa.capturePath) }
}

/// Fails unless `actual` equals `expected` sample for sample, with a short message.
func assertSamplesEqual(_ actual: [Int32], _ expected: [Int32], channels: Int, _ what: String,
                        file: StaticString = #filePath, line: UInt = #line) {
    if let mismatch = sampleMismatch(actual, expected, channels: channels) {
        XCTFail("\(what): \(mismatch)", file: file, line: line)
    }
}

/// Fails unless the process ended by itself with `status`; the message carries its output.
func assertExit(_ result: ProcessResult, _ status: Int32, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertFalse(result.timedOut, "did not end by itself: \(result)", file: file, line: line)
    XCTAssertEqual(result.status, status, "\(result)", file: file, line: line)
}

/// The lines tonearm itself wrote: status lines, its errors, its log, the summary; without
/// libjack's chatter while a server is away.
func tonearmLines(_ stderr: String) -> [String] {
    stderr.split(separator: "\n").map(String.init).filter {
        $0.hasPrefix("tonearm:") || $0.hasPrefix("[") || $0.hasPrefix("played ") || $0.contains(" tonearm: ")
    }
}

/// The ALSA sample format tonearm picks for a source depth on a device that takes anything.
func expectedContainer(bits: Int) -> (name: String, bits: Int) {
    switch bits {
    case ...16: return ("S16_LE", 16)
    case 17...24: return ("S24_3LE", 24)
    default: return ("S32_LE", 32)
    }
}
