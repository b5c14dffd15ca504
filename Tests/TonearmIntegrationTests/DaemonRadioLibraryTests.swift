import Foundation
import TestSupport
import XCTest

/// libcurl is loaded when the first station plays: a daemon that plays files never maps it.
final class DaemonRadioLibraryTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    /// The shared objects mapped into process `pid` whose file name contains `name`.
    private func mapped(_ pid: Int32, _ name: String) throws -> [String] {
        // Read to its end: /proc says a size of 0.
        let handle = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/\(pid)/maps"), "no process \(pid)")
        defer { try? handle.close() }
        let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        let paths = maps.split(separator: "\n").compactMap { $0.split(separator: " ", omittingEmptySubsequences: true).last }
        return Set(paths.map(String.init).filter { $0.hasPrefix("/") && $0.contains(name) }).sorted()
    }

    func testLibcurlIsMappedOnlyOnceAStationPlays() throws {
        let world = try DaemonBench()
        let daemon = world.daemon
        let pid = try XCTUnwrap(daemon.pid)
        XCTAssertFalse(try mapped(pid, "libc.so").isEmpty, "the maps name the libraries")
        XCTAssertEqual(try mapped(pid, "libcurl"), [], "an idle daemon has no libcurl")
        let track = try world.fixture("local.flac", taggedFixture(1, seconds: 30))
        try world.ok("add", track)
        try world.ok("play")
        try world.waitForStatus(timeout: 20, "the file plays") {
            $0.string("state") == "playing" && $0.object("device")?.string("state") == "open"
        }
        XCTAssertEqual(try mapped(pid, "libcurl"), [], "a daemon playing a file has no libcurl")

        let file = try world.fixture("station.flac", taggedFixture(2, seconds: 10))
        let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
        let radio = try RadioStation(file: file, arguments: ["--rate", String(size / 10)])
        try world.ok("clear")
        try world.ok("add", radio.url())
        try world.ok("play")
        try world.waitForStatus(timeout: 20, "the station plays") {
            $0.object("stream")?.string("state") == "playing" && $0.double("rate") == 1
        }
        let curl = try mapped(pid, "libcurl")
        XCTAssertEqual(curl.count, 1, "\(curl)")
        XCTAssertTrue(curl.first?.contains("/libcurl.so.4") == true, "\(curl)")

        // Kept for the next station: still mapped after the stream stops.
        try world.ok("stop")
        try world.waitForStatus(timeout: 10, "stopped") { $0.string("state") == "stopped" }
        XCTAssertEqual(try mapped(pid, "libcurl").count, 1)
        XCTAssertTrue(daemon.isRunning, daemonReport(daemon))
    }
}
