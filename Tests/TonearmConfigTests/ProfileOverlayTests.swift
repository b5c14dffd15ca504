import Foundation
@testable import TonearmConfig
import XCTest

/// `profile = "NAME"`: a configuration file read over a board profile.
final class ProfileOverlayTests: XCTestCase {
    /// A folder standing for /usr/share/tonearm/boards, and one standing for /etc/tonearm.
    var boards = ""
    var etc = ""

    static let base = """
        [board]
        name = "base"

        [output]
        device = "hw:CARD=DAC,DEV=0"
        period_frames = 512
        buffer_frames = 2048

        [daemon]
        music_dir = "/srv/music"
        resume = "playing"

        [mpd]
        bind = "127.0.0.1"
        port = 6600

        [[link]]
        session = "shairport-sync"
        mpris = "org.mpris.MediaPlayer2.ShairportSync"

        [[link]]
        session = "spotifyd"
        mpris = "org.mpris.MediaPlayer2.spotifyd"
        """

    override func setUpWithError() throws {
        let top = FileManager.default.temporaryDirectory.appendingPathComponent("tonearm-profiles-\(UUID().uuidString)").path
        boards = top + "/boards"
        etc = top + "/etc"
        try FileManager.default.createDirectory(atPath: boards, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: etc, withIntermediateDirectories: true)
        try write(Self.base, to: boards + "/base.toml")
    }

    override func tearDownWithError() throws {
        try FileManager.default.removeItem(atPath: (boards as NSString).deletingLastPathComponent)
    }

    func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Writes `text` as etc/tonearm.toml and loads it.
    func load(_ text: String) throws -> DaemonConfig {
        try write(text, to: etc + "/tonearm.toml")
        return try DaemonConfig.load(path: etc + "/tonearm.toml", profileDirectory: boards)
    }

    func assertFails(_ text: String, _ kind: ConfigError.Kind, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try load(text), file: file, line: line) { error in
            XCTAssertEqual("\(error)", message, file: file, line: line)
            XCTAssertEqual((error as? ConfigError)?.kind, kind, file: file, line: line)
        }
    }

    // MARK: Overriding

    func testTheProfileAloneIsReadAsIs() throws {
        XCTAssertEqual(try load(#"profile = "base""#), try DaemonConfig.parse(Self.base))
    }

    func testKeysOverrideKeyByKeyAndTableByTable() throws {
        let config = try load("""
            profile = "base"

            [output]
            device = "default"

            [daemon]
            resume = "paused"

            [web]
            port = 0
            """)
        var expected = try DaemonConfig.parse(Self.base)
        expected.output.device = "default"
        expected.daemon.resume = .paused
        expected.web.port = 0
        XCTAssertEqual(config, expected)
        // What the file does not name stays the profile's, in the same tables.
        XCTAssertEqual(config.output.periodFrames, 512)
        XCTAssertEqual(config.output.bufferFrames, 2048)
        XCTAssertEqual(config.daemon.musicDirectory, "/srv/music")
        XCTAssertEqual(config.mpd.port, 6600)
        XCTAssertEqual(config.board.name, "base")
    }

    func testAnArrayOfTablesIsReplacedWhole() throws {
        let config = try load("""
            profile = "base"

            [[link]]
            session = "bluealsa-aplay"
            mpris = "org.mpris.MediaPlayer2.bluealsa"
            """)
        XCTAssertEqual(config.links, [DaemonConfig.Link(session: "bluealsa-aplay", mpris: "org.mpris.MediaPlayer2.bluealsa")])
        XCTAssertEqual(try load(#"profile = "base""#).links.map(\.session), ["shairport-sync", "spotifyd"])
    }

    func testDottedKeysAndInlineTablesOverrideLikeTables() throws {
        let config = try load("""
            profile = "base"
            output.device = "hw:1"
            mpd = { port = 6601 }
            """)
        XCTAssertEqual(config.output.device, "hw:1")
        XCTAssertEqual(config.output.periodFrames, 512)
        XCTAssertEqual(config.mpd.port, 6601)
        XCTAssertEqual(config.mpd.bind, "127.0.0.1")
    }

    func testARuleIsCheckedOnTheMergedSettings() {
        // Fine alone in each file; together, the buffer is under two of the profile's periods.
        assertFails(
            """
            profile = "base"
            [output]
            buffer_frames = 768
            """, .outOfRange,
            "\(etc)/tonearm.toml:3: output.buffer_frames must be at least two periods (1024 frames), not 768")
    }

    // MARK: Where the profile is

    func testAProfilesPath() {
        let path = { (reference: String, file: String?) in ProfileOverlay.path(of: reference, namedBy: file, directory: "/usr/share/tonearm/boards") }
        XCTAssertEqual(path("generic", "/etc/tonearm/tonearm.toml"), "/usr/share/tonearm/boards/generic.toml")
        XCTAssertEqual(path("raspberry-pi-4", nil), "/usr/share/tonearm/boards/raspberry-pi-4.toml")
        XCTAssertEqual(path("/home/pi/car.toml", "/etc/tonearm/tonearm.toml"), "/home/pi/car.toml")
        XCTAssertEqual(path("car.toml", "/etc/tonearm/tonearm.toml"), "/etc/tonearm/car.toml")
        XCTAssertEqual(path("boards/car", "/etc/tonearm/tonearm.toml"), "/etc/tonearm/boards/car")
        XCTAssertEqual(path("../car.toml", "/etc/tonearm/tonearm.toml"), "/etc/tonearm/../car.toml")
        XCTAssertEqual(path("car.toml", "tonearm.toml"), "car.toml")
        XCTAssertEqual(path("car.toml", nil), "car.toml")
    }

    func testAPathIsReadFromTheConfigFilesFolderOrAsIs() throws {
        try FileManager.default.createDirectory(atPath: etc + "/boards", withIntermediateDirectories: true)
        try write("[output]\ndevice = \"hw:7\"\n", to: etc + "/boards/mine.toml")
        XCTAssertEqual(try load(#"profile = "boards/mine.toml""#).output.device, "hw:7")
        try write("[output]\ndevice = \"hw:8\"\n", to: etc + "/here.toml")
        XCTAssertEqual(try load(#"profile = "here.toml""#).output.device, "hw:8")
        XCTAssertEqual(try load("profile = \"\(boards)/base.toml\"").output.device, "hw:CARD=DAC,DEV=0")
    }

    func testParseReadsANamedProfileToo() throws {
        let config = try DaemonConfig.parse("profile = \"base\"\nplayer.volume = 30\n", profileDirectory: boards)
        XCTAssertEqual(config.output.device, "hw:CARD=DAC,DEV=0")
        XCTAssertEqual(config.player.volume, 30)
    }

    // MARK: Errors

    func testAMissingProfileNamesBothFiles() {
        assertFails(
            "# the board\nprofile = \"nope\"\n", .unreadable,
            "\(etc)/tonearm.toml:2: cannot read profile \(boards)/nope.toml (named by \(etc)/tonearm.toml): No such file or directory")
        assertFails(
            #"profile = "gone/x.toml""#, .unreadable,
            "\(etc)/tonearm.toml:1: cannot read profile \(etc)/gone/x.toml (named by \(etc)/tonearm.toml): No such file or directory")
    }

    func testAProfileNamingAProfileIsRefused() throws {
        try write("# a second level\nprofile = \"base\"\n[output]\ndevice = \"hw:2\"\n", to: boards + "/chained.toml")
        assertFails(
            #"profile = "chained""#, .invalidValue,
            "\(boards)/chained.toml:2: the profile \(boards)/chained.toml (named by \(etc)/tonearm.toml) names a profile itself ('base'); a profile cannot name another")
    }

    func testALoopIsRefused() throws {
        // The file names itself.
        assertFails(
            #"profile = "tonearm.toml""#, .invalidValue,
            "\(etc)/tonearm.toml:1: the profile \(etc)/tonearm.toml (named by \(etc)/tonearm.toml) names a profile itself ('tonearm.toml'); a profile cannot name another")
        // Two files naming each other.
        try write("profile = \"\(etc)/tonearm.toml\"\n", to: boards + "/back.toml")
        assertFails(
            #"profile = "back""#, .invalidValue,
            "\(boards)/back.toml:1: the profile \(boards)/back.toml (named by \(etc)/tonearm.toml) names a profile itself ('\(etc)/tonearm.toml'); a profile cannot name another")
    }

    func testProfileMustBeANameOrAPath() {
        assertFails("profile = 3", .wrongType, "\(etc)/tonearm.toml:1: profile must be a profile's name or a path to one")
        assertFails("[output]\ndevice = \"hw:1\"\n[player]\nprofile = true", .unknownKey, "\(etc)/tonearm.toml:4: unknown key 'profile' in [player]")
        assertFails(#"profile = ["base"]"#, .wrongType, "\(etc)/tonearm.toml:1: profile must be a profile's name or a path to one")
        assertFails(#"profile = """#, .invalidValue, "\(etc)/tonearm.toml:1: profile must be a profile's name or a path to one")
    }

    func testAWrongTypeOverAProfilesTableIsTheFilesError() {
        assertFails(
            "profile = \"base\"\noutput = \"hw:1\"\n", .wrongType,
            "\(etc)/tonearm.toml:2: output must be a table ([output])")
        assertFails(
            "profile = \"base\"\n[output]\nperiod_frames = \"big\"\n", .wrongType,
            "\(etc)/tonearm.toml:3: output.period_frames must be an integer")
        assertFails(
            "profile = \"base\"\nlink = { session = \"x\" }\n", .wrongType,
            "\(etc)/tonearm.toml:2: link must be an array of tables ([[link]])")
    }

    func testAnErrorInTheProfileNamesTheProfilesFileAndLine() throws {
        try write("[output]\ndevice = \"hw:1\"\nperiodframes = 512\n", to: boards + "/typo.toml")
        assertFails(
            "profile = \"typo\"\n[output]\ndevice = \"hw:2\"\n", .unknownKey,
            "\(boards)/typo.toml:3: unknown key 'periodframes' in [output]")
        try write("[daemon]\nresume = \"later\"\n", to: boards + "/word.toml")
        assertFails(
            "profile = \"word\"\n[output]\ndevice = \"hw:2\"\n", .wrongType,
            "\(boards)/word.toml:2: daemon.resume must be 'paused' or 'playing', not 'later'")
        try write("[output\n", to: boards + "/broken.toml")
        XCTAssertThrowsError(try load(#"profile = "broken""#)) { error in
            XCTAssertEqual((error as? ConfigError)?.kind, .syntax)
            XCTAssertEqual((error as? ConfigError)?.fileName, "\(self.boards)/broken.toml")
            XCTAssertEqual((error as? ConfigError)?.line, 1)
        }
    }

    func testAnUnknownKeyInTheFileIsTheFilesError() {
        assertFails(
            "profile = \"base\"\n\n[output]\ndevise = \"hw:2\"\n", .unknownKey,
            "\(etc)/tonearm.toml:4: unknown key 'devise' in [output]")
    }
}
