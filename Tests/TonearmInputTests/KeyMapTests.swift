import Foundation
import TestSupport
import TonearmControlPlane
import TonearmInput
import XCTest

/// Key names, codes and the key map, with no device at all.
final class KeyMapTests: XCTestCase {
    /// The kernel's own header, where it is installed: the shipped table and the default
    /// codes must agree with it.
    private func headerCodes() throws -> [String: UInt16] {
        let path = "/usr/include/linux/input-event-codes.h"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw XCTSkip("\(path) is not installed (apt install linux-libc-dev)")
        }
        var codes: [String: UInt16] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 3, words[0] == "#define", words[1].hasPrefix("KEY_") || words[1].hasPrefix("BTN_") else { continue }
            let value = String(words[2])
            if value.hasPrefix("0x"), let code = UInt16(value.dropFirst(2), radix: 16) {
                codes[String(words[1])] = code
            } else if let code = UInt16(value) {
                codes[String(words[1])] = code
            } else if let code = codes[value] {
                codes[String(words[1])] = code
            }
        }
        for marker in ["KEY_RESERVED", "KEY_MAX", "KEY_CNT", "KEY_MIN_INTERESTING"] { codes[marker] = nil }
        return codes
    }

    func testTheTableIsTheKernelHeader() throws {
        let header = try headerCodes()
        XCTAssertGreaterThan(header.count, 600)
        let missing = header.keys.filter { InputKeyCodes.codesByName[$0] == nil }.sorted()
        XCTAssertEqual(missing, [], "names in the header but not in the table")
        let wrong = header.filter { InputKeyCodes.codesByName[$0.key] != nil && InputKeyCodes.codesByName[$0.key] != $0.value }
        XCTAssertEqual(wrong.keys.sorted(), [], "names whose code differs from the header")
        // A header older than the table's (6.12) lacks the newest names, and only those.
        let extra = InputKeyCodes.codesByName.keys.filter { header[$0] == nil }.sorted()
        let newest = ["KEY_ACCESSIBILITY", "KEY_CAMERA_ACCESS_DISABLE", "KEY_CAMERA_ACCESS_ENABLE",
                      "KEY_CAMERA_ACCESS_TOGGLE", "KEY_DO_NOT_DISTURB"]
        if try !headerVersion().lexicographicallyPrecedes([6, 12]) {
            XCTAssertEqual(extra, [], "names in the table but not in the header")
        } else {
            XCTAssertEqual(Set(extra).subtracting(newest).sorted(), [], "names in the table but not in the header")
        }
    }

    /// The kernel version of the installed headers, as [major, patch level].
    private func headerVersion() throws -> [Int] {
        let text = try String(contentsOfFile: "/usr/include/linux/version.h", encoding: .utf8)
        let value = { (name: String) -> Int? in
            text.split(separator: "\n").lazy.compactMap { line -> Int? in
                let words = line.split(separator: " ")
                return words.count == 3 && words[0] == "#define" && words[1] == name ? Int(words[2]) : nil
            }.first
        }
        return [try XCTUnwrap(value("LINUX_VERSION_MAJOR")), try XCTUnwrap(value("LINUX_VERSION_PATCHLEVEL"))]
    }

    func testTheDefaultsAreTheMediaKeys() throws {
        let header = try headerCodes()
        let expected: [String: CommandName] = [
            "KEY_PLAYPAUSE": .togglePlayPause, "KEY_PLAY": .play, "KEY_PAUSE": .pause, "KEY_STOP": .stop,
            "KEY_STOPCD": .stop, "KEY_NEXTSONG": .nextTrack, "KEY_PREVIOUSSONG": .previousTrack,
            "KEY_FASTFORWARD": .seekForward, "KEY_REWIND": .seekBackward, "KEY_VOLUMEUP": .volumeUp,
            "KEY_VOLUMEDOWN": .volumeDown, "KEY_MUTE": .toggleMute,
        ]
        var byCode: [UInt16: Command] = [:]
        for (name, command) in expected { byCode[try XCTUnwrap(header[name], name)] = Command(command.rawValue) }
        XCTAssertEqual(InputKeyMap.defaults, byCode)
        XCTAssertEqual(InputKeyMap().commands, byCode)
    }

    func testKeyNamesAndCodesResolve() throws {
        XCTAssertEqual(try InputKeyCodes.code(named: "KEY_F1"), 59)
        XCTAssertEqual(try InputKeyCodes.code(named: "KEY_F24"), 194)
        XCTAssertEqual(try InputKeyCodes.code(named: "KEY_A"), 30)
        XCTAssertEqual(try InputKeyCodes.code(named: "KEY_Z"), 44)
        XCTAssertEqual(try InputKeyCodes.code(named: "KEY_0"), 11)
        XCTAssertEqual(try InputKeyCodes.code(named: "KEY_NEXTSONG"), 163)
        XCTAssertEqual(try InputKeyCodes.code(named: "KEY_UP"), 103)
        XCTAssertEqual(try InputKeyCodes.code(named: "KEY_OK"), 0x160)
        XCTAssertEqual(try InputKeyCodes.code(named: "KEY_MODE"), 0x175, "Board/car-box.toml maps it")
        XCTAssertEqual(try InputKeyCodes.code(named: "KEY_SEARCH"), 217, "Board/car-box.toml maps it")
        XCTAssertEqual(try InputKeyCodes.code(named: "BTN_LEFT"), 0x110)
        XCTAssertEqual(try InputKeyCodes.code(named: "BTN_A"), 0x130, "an alias of BTN_SOUTH")
        XCTAssertEqual(try InputKeyCodes.code(named: "59"), 59)
        XCTAssertEqual(try InputKeyCodes.code(named: "767"), 767)
        XCTAssertEqual(InputKeyCodes.name(of: 163), "KEY_NEXTSONG")
        XCTAssertEqual(InputKeyCodes.name(of: 0x130), "BTN_SOUTH", "the header's first name, not its alias")
        XCTAssertEqual(InputKeyCodes.name(of: 0x110), "BTN_LEFT", "not the range marker BTN_MOUSE")
        XCTAssertEqual(InputKeyCodes.name(of: 0x100), "BTN_0", "not the range marker BTN_MISC")
        XCTAssertEqual(InputKeyCodes.name(of: 122), "KEY_HANGEUL", "not its misspelt alias")
        XCTAssertEqual(InputKeyCodes.name(of: 0x2F0), "752")
    }

    func testUnknownKeysAreRefusedClearly() {
        func message(_ key: String) -> String {
            do {
                let code = try InputKeyCodes.code(named: key)
                return "resolved to \(code)"
            } catch {
                XCTAssertEqual(error.key, key)
                return error.description
            }
        }
        let unknown = message("KEY_PLAYPAUS")
        XCTAssertTrue(unknown.hasPrefix("unknown key 'KEY_PLAYPAUS' in the input map"), unknown)
        XCTAssertTrue(unknown.contains("linux/input-event-codes.h"), unknown)
        XCTAssertTrue(unknown.contains("decimal key code"), unknown)
        XCTAssertEqual(message("key_f1"), "unknown key 'key_f1' in the input map; did you mean 'KEY_F1'?")
        XCTAssertEqual(message("768"), "key code 768 in the input map is out of range (1–767)")
        XCTAssertEqual(message("0"), "key code 0 in the input map is out of range (1–767)")
        XCTAssertEqual(message("99999999999999999999"), "key code 99999999999999999999 in the input map is out of range (1–767)")
        XCTAssertTrue(message("").hasPrefix("unknown key '' in the input map"))
        XCTAssertTrue(message("-5").hasPrefix("unknown key '-5'"))
        XCTAssertTrue(message("KEY_RESERVED").hasPrefix("unknown key 'KEY_RESERVED'"))
    }

    func testAProfileMapIsCheckedWhenTheSourceIsMade() {
        XCTAssertThrowsError(try InputEventSource(path: "/dev/null", map: ["KEY_F1": Command("play"), "KEY_NOPE": Command("stop")])) { error in
            XCTAssertEqual((error as? InputError)?.key, "KEY_NOPE")
            XCTAssertTrue("\(error)".contains("unknown key 'KEY_NOPE'"), "\(error)")
        }
        XCTAssertThrowsError(try InputKeyMap(profile: ["KEY_F1": Command("play"), "59": Command("stop")])) { error in
            XCTAssertEqual("\(error)", "'59' and 'KEY_F1' in the input map are the same key (code 59)")
        }
    }

    func testAProfileMapAddsAndOverrides() throws {
        let map = try InputKeyMap(profile: [
            "KEY_F1": Command("nextTrack"),
            "KEY_NEXTSONG": Command("skipForward 30"),
            "30": Command("previousTrack"),
        ])
        XCTAssertEqual(map.command(for: 59), Command("nextTrack"))
        XCTAssertEqual(map.command(for: 163), Command("skipForward 30"))
        XCTAssertEqual(map.command(for: 30), Command("previousTrack"))
        XCTAssertEqual(map.command(for: 164), Command("togglePlayPause"), "the defaults stay")
        XCTAssertNil(map.command(for: 60))
        XCTAssertEqual(map.commands.count, InputKeyMap.defaults.count + 2)
    }

    func testAHeldScanIsEndedWhenItsDeviceGoes() {
        var interpreter = InputKeyInterpreter(map: InputKeyMap())
        XCTAssertEqual(interpreter.command(for: InputEvent(type: 1, code: 208, value: 1)), .seek(.seekForward, .begin))
        XCTAssertEqual(interpreter.command(for: InputEvent(type: 1, code: 168, value: 1)), .seek(.seekBackward, .begin))
        XCTAssertEqual(interpreter.command(for: InputEvent(type: 1, code: 168, value: 0)), .seek(.seekBackward, .end))
        XCTAssertEqual(interpreter.releaseHeld(), [.seek(.seekForward, .end)])
        XCTAssertEqual(interpreter.releaseHeld(), [])
        XCTAssertNil(interpreter.command(for: InputEvent(type: 1, code: 208, value: 0)), "a release with no press ends nothing")
    }
}
