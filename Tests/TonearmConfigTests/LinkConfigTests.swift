@testable import TonearmConfig
import XCTest

/// `[[link]]`: sessions of a name linked to an MPRIS player. Every key is checked, with an
/// error that names it and its line.
final class LinkConfigTests: XCTestCase {
    private func parse(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> DaemonConfig {
        do {
            return try DaemonConfig.parse(text)
        } catch {
            XCTFail("refused: \(error)", file: file, line: line)
            return DaemonConfig()
        }
    }

    private func assertRefused(_ text: String, _ kind: ConfigError.Kind, _ description: String, key: String? = nil,
                               file: StaticString = #filePath, line: UInt = #line) {
        do {
            let config = try DaemonConfig.parse(text)
            XCTFail("accepted: \(config.links)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: line)
            XCTAssertEqual(error.description, description, file: file, line: line)
            if let key { XCTAssertEqual(error.key, key, file: file, line: line) }
        }
    }

    func testLinksAreReadInOrderWithTheSystemBusByDefault() {
        XCTAssertEqual(DaemonConfig().links, [], "none unless the profile has some")
        let config = parse("""
            [[link]]
            session = "shairport-sync"
            mpris = "org.mpris.MediaPlayer2.ShairportSync"

            [[link]]
            session = "bluealsa-aplay"
            mpris = "org.mpris.MediaPlayer2.bluez_proxy.hci0-dev_00_11_22"
            bus = "session"
            """)
        XCTAssertEqual(config.links, [
            DaemonConfig.Link(session: "shairport-sync", mpris: "org.mpris.MediaPlayer2.ShairportSync", bus: .system),
            DaemonConfig.Link(session: "bluealsa-aplay", mpris: "org.mpris.MediaPlayer2.bluez_proxy.hci0-dev_00_11_22", bus: .session),
        ])
        let inline = parse(#"link = [{ session = "spotifyd", mpris = "org.mpris.MediaPlayer2.spotifyd.instance42", bus = "system" }]"#)
        XCTAssertEqual(inline.links.first?.mpris, "org.mpris.MediaPlayer2.spotifyd.instance42", "an inline table, and an instance name")
        XCTAssertEqual(parse("[[link]]\nsession = \"Navi Ünïcode\"\nmpris = \"org.mpris.MediaPlayer2.N\"").links.first?.session,
                       "Navi Ünïcode", "a session name is any text")
    }

    func testMissingKeysAndUnknownOnes() {
        assertRefused("[[link]]\nmpris = \"org.mpris.MediaPlayer2.X\"", .outOfRange,
                      "link[1].session is required: the name of the sessions to link (the program's, such as \"shairport-sync\") (line 1)",
                      key: "link[1].session")
        assertRefused("[[link]]\nsession = \"x\"", .outOfRange,
                      "link[1].mpris is required: the player's bus name (such as \"org.mpris.MediaPlayer2.ShairportSync\") (line 1)")
        assertRefused("[[link]]\nsession = \"x\"\nmpris = \"org.mpris.MediaPlayer2.X\"\nplayer = \"y\"", .unknownKey,
                      "unknown key 'player' in [[link]] (line 4)", key: "link[1].player")
        assertRefused("[link]\nsession = \"x\"", .wrongType, "link must be an array of tables ([[link]]) (line 1)")
        assertRefused("link = [\"shairport-sync\"]", .wrongType, "link must be an array of tables ([[link]]) (line 1)")
    }

    func testValuesOfTheWrongType() {
        let mpris = "mpris = \"org.mpris.MediaPlayer2.X\""
        assertRefused("[[link]]\nsession = 5\n\(mpris)", .wrongType, "link[1].session must be a string (line 2)")
        assertRefused("[[link]]\nsession = [\"a\", \"b\"]\n\(mpris)", .wrongType, "link[1].session must be a string (line 2)")
        assertRefused("[[link]]\nsession = \"x\"\nmpris = true", .wrongType, "link[1].mpris must be a string (line 3)")
        assertRefused("[[link]]\nsession = \"x\"\n\(mpris)\nbus = \"System\"", .wrongType,
                      "link[1].bus must be 'system' or 'session', not 'System' (line 4)")
        assertRefused("[[link]]\nsession = \"x\"\n\(mpris)\nbus = \"off\"", .wrongType,
                      "link[1].bus must be 'system' or 'session', not 'off' (line 4)")
        assertRefused("[[link]]\nsession = \"x\"\n\(mpris)\nbus = 1", .wrongType, "link[1].bus must be 'system' or 'session' (line 4)")
    }

    func testBadNames() {
        let rule = "must be an MPRIS player's bus name, org.mpris.MediaPlayer2.NAME (as busctl list shows it)"
        for bad in ["ShairportSync", "org.mpris.MediaPlayer2.", "org.mpris.MediaPlayer2", "org.mpris.MediaPlayer2.2nd",
                    "org.mpris.MediaPlayer2.a..b", "org.mpris.MediaPlayer2.a.", "org.mpris.MediaPlayer2.Shairport Sync",
                    "org.mpris.MediaPlayer2.Ünï", "com.example.Player", ":1.42", "org.mpris.MediaPlayer2." + String(repeating: "x", count: 240)] {
            assertRefused("[[link]]\nsession = \"x\"\nmpris = \"\(bad)\"", .outOfRange, "link[1].mpris \(rule), not '\(bad)' (line 3)")
        }
        assertRefused("[[link]]\nsession = \"\"\nmpris = \"org.mpris.MediaPlayer2.X\"", .outOfRange,
                      "link[1].session is required: the name of the sessions to link (the program's, such as \"shairport-sync\") (line 2)")
        assertRefused("[[link]]\nsession = \"a\\u0000b\"\nmpris = \"org.mpris.MediaPlayer2.X\"", .invalidValue,
                      "link[1].session must not contain a NUL character (line 2)")
        assertRefused("[[link]]\nsession = \"a\\nb\"\nmpris = \"org.mpris.MediaPlayer2.X\"", .outOfRange,
                      "link[1].session must not contain control characters (line 2)")
    }

    func testOneLinkPerSessionNameAndNeverToTonearmsOwnPlayer() {
        assertRefused("""
            [[link]]
            session = "shairport-sync"
            mpris = "org.mpris.MediaPlayer2.ShairportSync"
            [[link]]
            session = "shairport-sync"
            mpris = "org.mpris.MediaPlayer2.Other"
            """, .outOfRange, "link[2].session 'shairport-sync' is linked already, by link[1] (line 5)", key: "link[2].session")
        assertRefused("""
            [mpris]
            bus = "system"
            [[link]]
            session = "loop"
            mpris = "org.mpris.MediaPlayer2.tonearm"
            """, .outOfRange, "link[1].mpris is Tonearm's own player ([mpris]); link another program's (line 5)")
        // The same name on the other bus, or with Tonearm's MPRIS off, is another player.
        XCTAssertEqual(parse("[mpris]\nbus = \"session\"\n[[link]]\nsession = \"x\"\nmpris = \"org.mpris.MediaPlayer2.tonearm\"").links.count, 1)
        XCTAssertEqual(parse("[[link]]\nsession = \"x\"\nmpris = \"org.mpris.MediaPlayer2.tonearm\"").links.count, 1)
        XCTAssertEqual(parse("""
            [[link]]
            session = "a"
            mpris = "org.mpris.MediaPlayer2.Same"
            [[link]]
            session = "b"
            mpris = "org.mpris.MediaPlayer2.Same"
            """).links.count, 2, "one player may speak for two names")
    }

    func testValidateChecksLinksChangedAfterLoading() {
        var config = DaemonConfig()
        config.links = [DaemonConfig.Link(session: "x", mpris: "org.mpris.MediaPlayer2.X")]
        XCTAssertNoThrow(try config.validate())
        config.links.append(DaemonConfig.Link(session: "x", mpris: "org.mpris.MediaPlayer2.Y"))
        XCTAssertThrowsError(try config.validate()) { error in
            XCTAssertEqual("\(error)", "link[2].session 'x' is linked already, by link[1]")
        }
        config.links = [DaemonConfig.Link(session: "x", mpris: "X")]
        XCTAssertThrowsError(try config.validate()) { error in
            XCTAssertEqual((error as? ConfigError)?.key, "link[1].mpris")
        }
        config.links = [DaemonConfig.Link(session: "y", mpris: "org.mpris.MediaPlayer2.tonearm", bus: .session)]
        config.mpris.bus = .session
        XCTAssertThrowsError(try config.validate()) { error in
            XCTAssertEqual("\(error)", "link[1].mpris is Tonearm's own player ([mpris]); link another program's")
        }
    }
}
