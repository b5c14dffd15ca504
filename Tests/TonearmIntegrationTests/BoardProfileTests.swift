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

    /// The four boards the project promises, each with its wiring table, and the generic profile
    /// the Debian package chooses.
    func testTheShippedProfilesAreTheFourBoards() throws {
        let profiles = try FileManager.default.contentsOfDirectory(atPath: boardDirectory.path).filter { $0.hasSuffix(".toml") }.sorted()
        XCTAssertEqual(profiles, ["car-box.toml", "desktop.toml", "generic.toml", "raspberry-pi-4.toml", "raspberry-pi-zero-2w-i2s-dac.toml"])
        for profile in profiles where profile != "desktop.toml" && profile != "generic.toml" {
            let text = try String(contentsOfFile: boardDirectory.appendingPathComponent(profile).path, encoding: .utf8)
            XCTAssertTrue(text.contains("# Wiring"), "\(profile) carries its wiring as a comment table")
        }
    }

    /// The service unit keeps systemd's exposure rating at 3.0 or under (Debian's mpd unit: 7.5).
    func testTheServiceUnitIsHardened() throws {
        guard toolsAvailable("systemd-analyze") else { throw XCTSkip("systemd-analyze is not installed") }
        let unit = boardDirectory.appendingPathComponent("tonearmd.service").path
        let result = try runProcess(try which("systemd-analyze"), ["security", "--offline=yes", "--threshold=30", "--no-pager", unit], timeout: 30)
        assertExit(result, 0)
        let overall = result.stdout.split(separator: "\n").first { $0.contains("Overall exposure level") }
        XCTAssertNotNil(overall, result.stdout)
        let score = overall.flatMap { line in line.split(separator: " ").compactMap { Double($0) }.first }
        XCTAssertLessThanOrEqual(try XCTUnwrap(score, "\(String(describing: overall))"), 3.0)
    }

    /// With the drop-in `tonearmd --network-drop-in` writes for each profile, installed as the
    /// unit's comment says, the unit's rating stays at 2.5 or under, and it allows Internet
    /// sockets exactly when the profile listens on TCP: this machine only for a loopback bind,
    /// the private ranges for any other.
    func testEachProfilesNetworkDropInKeepsTheUnitHardened() throws {
        guard toolsAvailable("systemd-analyze") else { throw XCTSkip("systemd-analyze is not installed") }
        let expected = [
            "car-box.toml": nil, "desktop.toml": "IPAddressAllow=localhost\n", "generic.toml": "IPAddressAllow=localhost\n",
            "raspberry-pi-4.toml": "IPAddressAllow=localhost 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 fe80::/10 fc00::/7\n",
            "raspberry-pi-zero-2w-i2s-dac.toml": "IPAddressAllow=localhost 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 fe80::/10 fc00::/7\n",
        ]
        let profiles = try FileManager.default.contentsOfDirectory(atPath: boardDirectory.path).filter { $0.hasSuffix(".toml") }.sorted()
        XCTAssertEqual(profiles, expected.keys.sorted(), "every profile has its expectation")
        for profile in profiles {
            let printed = try runProcess(try tonearmd(), ["--config", boardDirectory.appendingPathComponent(profile).path, "--network-drop-in"])
            assertExit(printed, 0)
            let allow = expected[profile] ?? nil
            if let allow {
                XCTAssertTrue(printed.stdout.contains("[Service]\n") && printed.stdout.contains(allow), "\(profile): \(printed.stdout)")
            } else {
                XCTAssertFalse(printed.stdout.contains("[Service]"), "\(profile) listens on no TCP port: \(printed.stdout)")
            }
            // An offline root holding the unit and the drop-in, as the install steps put them.
            let root = try TemporaryDirectory(prefix: "tonearm-unit")
            let system = root.file("etc/systemd/system")
            try FileManager.default.createDirectory(atPath: system + "/tonearmd.service.d", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: boardDirectory.appendingPathComponent("tonearmd.service").path,
                                             toPath: system + "/tonearmd.service")
            XCTAssertTrue(FileManager.default.createFile(atPath: system + "/tonearmd.service.d/network.conf", contents: Data(printed.stdout.utf8)))
            let result = try runProcess(try which("systemd-analyze"),
                                        ["security", "--offline=yes", "--root=" + root.path, "--threshold=30", "--no-pager", "tonearmd.service"],
                                        timeout: 30)
            assertExit(result, 0)
            let lines = result.stdout.split(separator: "\n")
            let overall = lines.first { $0.contains("Overall exposure level") }
            let score = overall.flatMap { line in line.split(separator: " ").compactMap { Double($0) }.first }
            XCTAssertLessThanOrEqual(try XCTUnwrap(score, "\(profile): \(result.stdout)"), allow == nil ? 1.0 : 2.5, profile)
            XCTAssertEqual(lines.contains { $0.contains("✗ RestrictAddressFamilies=~AF_(INET|INET6)") }, allow != nil,
                           "\(profile): IP allowed exactly when it listens on TCP")
        }
    }
}
