import Foundation
import TestSupport
import XCTest

/// The web remote in a real browser: headless Chromium, driven by Selenium
/// (`Tests/Web/page_test.py`), against the daemon playing on the paced device, with a
/// `[web] token` the page asks for and logs in with first. The page's screenshots are saved
/// for the README.
final class DaemonWebTests: XCTestCase {
    func testThePageInHeadlessChromium() throws {
        try requirePacedDevice()
        guard toolsAvailable("chromium", "chromedriver") else {
            throw XCTSkip("chromium and chromium-driver are not installed; run ./scripts/setup")
        }
        let python = try pythonWith("selenium==4.27.1")
        let world = try DaemonBench(start: false)
        let music = world.path("music")
        try FileManager.default.createDirectory(atPath: music + "/The Testers/Daemon Sessions", withIntermediateDirectories: true)
        let tracks = try (1...3).map { n in
            var fixture = taggedFixture(n, seconds: 90)
            fixture.tags += [("ALBUMARTIST", "The Testers"), ("GENRE", "Test Jazz")]
            // A cover far bigger than any page shows: it must reach the page scaled.
            fixture.picture = FixturePicture(width: 1600, height: 1600)
            return try fixture.write(to: music + "/The Testers/Daemon Sessions/\(n) Track \(n).flac")
        }
        let port = try freeTCPPort()
        world.daemon.environment["XDG_RUNTIME_DIR"] = world.path("run")
        try FileManager.default.createDirectory(atPath: world.path("run"), withIntermediateDirectories: true)
        let token = "page-test-token"
        let profile = world.path("web.toml")
        try "[web]\ntoken = \"\(token)\"\n".write(toFile: profile, atomically: true, encoding: .utf8)
        world.daemon.arguments = ["--music-dir", music, "--web-port", String(port), "--config", profile]
        try world.daemon.start()
        XCTAssertEqual(try world.daemon.cli(["update"], timeout: 60).status, 0)
        XCTAssertEqual(try world.daemon.cli(["add", tracks[0], tracks[1]]).status, 0)
        XCTAssertEqual(try world.daemon.cli(["play"]).status, 0)

        let screenshots = packageRoot() + "/.build/web-screenshots"
        try FileManager.default.createDirectory(atPath: screenshots, withIntermediateDirectories: true)
        let script = packageRoot() + "/Tests/Web/page_test.py"
        let result = try runProcess(python, [script, "--url", "http://127.0.0.1:\(port)", "--tonearm", try tonearmBinary(),
                                             "--socket", world.daemon.socketPath, "--screenshots", screenshots, "--token", token],
                                    environment: world.bench.alsa.environment, timeout: 240)
        print(result.stdout)
        XCTAssertEqual(result.status, 0, "\(result.stdout)\n\(result.stderr)\n\(daemonReport(world.daemon))")
        XCTAssertTrue(world.daemon.isRunning, daemonReport(world.daemon))
        for name in ["web-360x740.png", "web-1280x800.png"] {
            let size = (try? FileManager.default.attributesOfItem(atPath: screenshots + "/" + name)[.size] as? Int) ?? 0
            XCTAssertGreaterThan(size, 10_000, "\(name) was saved")
        }
    }

    private func packageRoot() -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }
}
