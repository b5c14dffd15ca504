import Foundation
import TestSupport
import XCTest

/// Every profile shipped in Board/ passes `tonearmd --check`, and a broken one is refused
/// with the file, the line and the key.
final class BoardProfileTests: XCTestCase {
    private var boardDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Board")
    }

    private func tonearmd() throws -> String {
        URL(fileURLWithPath: try tonearmBinary()).deletingLastPathComponent().appendingPathComponent("tonearmd").path
    }

    func testEveryShippedProfilePassesTheCheck() throws {
        let profiles = try FileManager.default.contentsOfDirectory(atPath: boardDirectory.path).filter { $0.hasSuffix(".toml") }
        XCTAssertFalse(profiles.isEmpty, "no profiles in \(boardDirectory.path)")
        for profile in profiles {
            let path = boardDirectory.appendingPathComponent(profile).path
            let result = try runProcess(try tonearmd(), ["--config", path, "--check"], timeout: 10)
            assertExit(result, 0)
            XCTAssertEqual(result.stdout, "\(path): ok\n")
        }
    }

    func testABrokenProfileIsRefusedWithItsLineAndKey() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-board")
        let path = directory.file("broken.toml")
        try "[output]\ndevice = \"null\"\nperiod_frame = 256\n".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runProcess(try tonearmd(), ["--config", path, "--check"], timeout: 10)
        assertExit(result, 1)
        XCTAssertEqual(result.stderrLines, ["tonearmd: \(path):3: unknown key 'period_frame' in [output]"])
    }
}
