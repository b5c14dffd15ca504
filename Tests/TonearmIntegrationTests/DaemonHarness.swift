import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// One daemon test's world: a `Bench` (temporary directory, ALSA configuration, a private JACK
/// server on the dummy driver) and a `tonearmd` on its own socket and state directory.
final class DaemonBench {
    let bench: Bench
    let daemon: DaemonProcess

    /// `arguments` go to tonearmd after --device/--socket/--state-dir; `start: false` leaves the
    /// daemon to be started by the test (after it prepared the state directory, say);
    /// `stateDirectory` replaces the bench's own `state/`.
    init(jack: Bool = true, jackRunning: Bool = true, device: String = "paced", arguments: [String] = [],
         stateDirectory: String? = nil, start: Bool = true) throws {
        bench = try Bench(jack: jack, jackRunning: jackRunning)
        daemon = try DaemonProcess(directory: bench.directory.path, device: device, environment: bench.alsa.environment,
                                   arguments: arguments, stateDirectory: stateDirectory, start: start)
    }

    func path(_ name: String) -> String { bench.path(name) }

    /// Seconds of audio the daemon wrote to `pacedsplitcapture` so far, over every file it
    /// started (one per open of the device); the file plugin holds back at most a buffer. A
    /// file the plugin has just created, its header not yet written, holds nothing yet.
    func capturedSeconds() throws -> Double {
        var frames = 0
        var rate = 48000
        for path in bench.alsa.splitCaptureFiles() {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            if size < 44 { continue }
            let wav = try WAVFile(path: path)
            frames += wav.frames
            rate = wav.sampleRate
        }
        return Double(frames) / Double(rate)
    }

    /// How far the audio heard may run ahead of `capturedSeconds` over an interval, for the
    /// device in `status`: the file plugin holds back up to a buffer, and up to a buffer
    /// already written is heard after the interval began; a period more for the device's steps.
    static func captureSlack(_ status: [String: Any]) -> Double {
        let device = status.object("device") ?? [:]
        let frames = 2 * (device.int("bufferFrames") ?? 8192) + (device.int("periodFrames") ?? 1024)
        return Double(frames) / Double(device.int("rate") ?? 48000)
    }

    func fixture(_ name: String, _ fixture: FLACFixture) throws -> String { try bench.fixture(name, fixture) }

    /// `tonearm --socket … arguments`.
    func cli(_ arguments: String...) throws -> ProcessResult { try daemon.cli(arguments) }

    /// `tonearm … arguments`, which must exit 0.
    @discardableResult
    func ok(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) throws -> ProcessResult {
        try ok(arguments, file: file, line: line)
    }

    @discardableResult
    func ok(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> ProcessResult {
        let result = try daemon.cli(arguments)
        guard result.status == 0, !result.timedOut else {
            XCTFail("tonearm \(arguments.joined(separator: " ")): \(result)\n\(daemonReport(daemon))", file: file, line: line)
            throw TestSupportError("tonearm \(arguments.joined(separator: " ")) failed")
        }
        return result
    }

    /// `tonearm status --json`, parsed.
    func statusJSON(file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let result = try daemon.cli(["status", "--json"])
        guard result.status == 0, let status = parseJSONObject(result.stdout) else {
            XCTFail("tonearm status --json: \(result)\n\(daemonReport(daemon))", file: file, line: line)
            throw TestSupportError("tonearm status --json failed")
        }
        return status
    }

    /// `status` over the socket; a failure is reported here with the daemon's log.
    func status(file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        do {
            return try daemon.status()
        } catch {
            XCTFail("status: \(error)\n\(daemonReport(daemon))", file: file, line: line)
            throw error
        }
    }

    /// Polls `status` over the socket until `condition` holds; the last status either way.
    @discardableResult
    func waitForStatus(timeout: Double, file: StaticString = #filePath, line: UInt = #line, _ what: String,
                       _ condition: ([String: Any]) -> Bool) throws -> [String: Any] {
        var last: [String: Any] = [:]
        let held = try waitUntil(timeout: timeout) {
            last = try status(file: file, line: line)
            return condition(last)
        }
        if !held { XCTFail("\(what) not reached within \(timeout) s; last status: \(jsonText(last))", file: file, line: line) }
        return last
    }
}

/// A tagged fixture: TITLE "Track n", ARTIST, ALBUM, TRACKNUMBER n.
func taggedFixture(_ n: Int, seconds: Double, sampleRate: Int = 48000, channels: Int = 2, seed: UInt64 = 100) -> FLACFixture {
    FLACFixture(frames: Int(seconds * Double(sampleRate)), sampleRate: sampleRate, channels: channels,
                tones: [Tone(330 * Double(n), level: 0.3)], noiseLevel: 0.02, seed: seed + UInt64(n),
                tags: [("TITLE", "Track \(n)"), ("ARTIST", "The Testers"), ("ALBUM", "Daemon Sessions"), ("TRACKNUMBER", "\(n)")])
}

/// Skips unless jackd, flac and the ALSA jack plugin are installed.
func requirePacedDevice() throws {
    guard toolsAvailable("flac", "jackd", "jack_lsp") else {
        throw XCTSkip("jackd or flac is not installed; run ./scripts/setup")
    }
    let libraries = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? []
    let plugin = (["/usr/lib"] + libraries.map { "/usr/lib/\($0)" }).map { "\($0)/alsa-lib/libasound_module_pcm_jack.so" }
    guard plugin.contains(where: { FileManager.default.fileExists(atPath: $0) }) else {
        throw XCTSkip("the ALSA jack plugin (libasound2-plugins) is not installed; run ./scripts/setup")
    }
}

/// The daemon's own log lines (its Logger output), without libjack's chatter.
func daemonLogLines(_ log: String) -> [String] {
    log.split(separator: "\n").map(String.init).filter { $0.contains(" tonearmd:") || $0.contains("Program crashed") }
}

/// Whether the daemon still runs, and its log without libjack's chatter and without the
/// register dump of a crash report (the crashed thread's frames stay).
func daemonReport(_ daemon: DaemonProcess) -> String {
    var lines: [String] = []
    var skipping = false
    for line in daemon.log.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) {
        if line.hasPrefix("Registers:") || line.hasPrefix("Images") { skipping = true }
        if line.hasPrefix("Backtrace took") { skipping = false }
        if skipping || line.hasPrefix("Cannot ") || line.hasPrefix("Jack") || line.hasPrefix("CheckRes") { continue }
        lines.append(line)
    }
    let state = daemon.isRunning ? "running" : "NOT running"
    return "--- tonearmd (\(state), launch \(daemon.launches)) ---\n" + lines.suffix(60).joined(separator: "\n")
}
