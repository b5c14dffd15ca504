import TonearmAudio
import Foundation
@testable import TonearmConfig
import XCTest

final class DaemonConfigTests: XCTestCase {
    static let fullProfile = #"""
        # HiFiBerry DAC+ on a Raspberry Pi 4, in a car.
        [board]
        name = "car-pi"
        description = "Pi 4 + HiFiBerry DAC+ Pro, steering-wheel keys"

        [output]
        device = "hw:CARD=sndrpihifiberry"
        period_frames = 512
        buffer_frames = 2_048
        mixer_control = "Digital"
        mixer_card = "hw:0"
        reopen_interval_ms = 250
        read_ahead_seconds = 4.5

        [daemon]
        socket = "/run/tonearm/control.sock"
        state_dir = "/var/lib/tonearm"
        music_dir = '/media/usb/Music'
        resume = "playing"
        save_interval_seconds = 10

        [player]
        skip_forward_seconds = 30
        skip_backward_seconds = 7.5
        previous_restarts_after_seconds = 5
        volume = 80
        category = "playback"
        mode = "spokenAudio"
        """#

    func parse(_ text: String, fileName: String? = nil, file: StaticString = #filePath, line: UInt = #line) -> DaemonConfig {
        do {
            return try DaemonConfig.parse(text, fileName: fileName)
        } catch {
            XCTFail("refused: \(error)", file: file, line: line)
            return DaemonConfig()
        }
    }

    func refusal(_ text: String, fileName: String? = nil, file: StaticString = #filePath, line: UInt = #line) -> ConfigError? {
        do {
            let config = try DaemonConfig.parse(text, fileName: fileName)
            XCTFail("accepted: \(config)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    /// Refused with exactly `description` (no file name given) and `kind`.
    func assertRefused(_ text: String, _ kind: ConfigError.Kind, _ description: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let error = refusal(text, file: file, line: line) else { return }
        XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: line)
        XCTAssertEqual(error.description, description, file: file, line: line)
    }

    // MARK: Reading

    func testDefaultsSuitARaspberryPi() throws {
        let config = DaemonConfig()
        XCTAssertEqual(config.output.device, "default")
        XCTAssertEqual(config.output.periodFrames, 256)
        XCTAssertEqual(config.output.bufferFrames, 1024)
        XCTAssertNil(config.output.mixerControl)
        XCTAssertEqual(config.output.mixerCard, "default")
        XCTAssertEqual(config.output.reopenIntervalMilliseconds, 500)
        XCTAssertEqual(config.output.readAheadSeconds, 2.0)
        XCTAssertNil(config.daemon.socket)
        XCTAssertNil(config.daemon.stateDirectory)
        XCTAssertNil(config.daemon.musicDirectory)
        XCTAssertEqual(config.daemon.resume, .paused)
        XCTAssertEqual(config.daemon.saveIntervalSeconds, 5)
        XCTAssertEqual(config.player.skipForwardSeconds, 15)
        XCTAssertEqual(config.player.skipBackwardSeconds, 15)
        XCTAssertEqual(config.player.previousRestartsAfterSeconds, 3)
        XCTAssertEqual(config.player.volume, 100)
        XCTAssertEqual(config.player.category, .playback)
        XCTAssertEqual(config.player.mode, .default)
        XCTAssertNil(config.board.name)
        XCTAssertNil(config.board.description)
        XCTAssertNil(config.library.database)
        XCTAssertNil(config.library.playlistDirectory)
        XCTAssertTrue(config.library.scanOnStart)
        XCTAssertTrue(config.library.watch)
        XCTAssertNoThrow(try config.validate())

        XCTAssertEqual(parse(""), config)
        XCTAssertEqual(parse("# nothing but a comment\n[output]\n[daemon]\n[player]\n[board]\n"), config)
    }

    func testTheLibrarySection() throws {
        let config = parse("""
            [library]
            database = "/var/lib/tonearm/music.db"
            playlist_dir = "/media/music/Playlists"
            scan_on_start = false
            watch = false
            """)
        XCTAssertEqual(config.library.database, "/var/lib/tonearm/music.db")
        XCTAssertEqual(config.library.playlistDirectory, "/media/music/Playlists")
        XCTAssertFalse(config.library.scanOnStart)
        XCTAssertFalse(config.library.watch)
        assertRefused("[library]\nwatch = \"yes\"", .wrongType, "library.watch must be true or false (line 2)")
        assertRefused("[library]\nindex = 1", .unknownKey, "unknown key 'index' in [library] (line 2)")
    }

    func testTheProgramAudioSocket() throws {
        XCTAssertNil(DaemonConfig().daemon.pcmSocket, "beside the control socket unless given")
        XCTAssertEqual(DaemonConfig().daemon.pcmGroup, "audio")
        let config = parse("""
            [daemon]
            pcm_socket = "/run/x/programs.sock"
            pcm_group = "tonearm"
            """)
        XCTAssertEqual(config.daemon.pcmSocket, "/run/x/programs.sock")
        XCTAssertEqual(config.daemon.pcmGroup, "tonearm")
        XCTAssertEqual(parse("[daemon]\npcm_socket = \"off\"").daemon.pcmSocket, "off")
        assertRefused("[daemon]\npcm_group = \"\"", .outOfRange, "daemon.pcm_group must name a group (line 2)")
        let long = String(repeating: "x", count: 120)
        assertRefused("[daemon]\npcm_socket = \"/\(long)\"", .outOfRange,
                      "daemon.pcm_socket is 121 bytes long; a Unix socket path has room for 107 (line 2)")
    }

    func testTheMPDSection() throws {
        let defaults = DaemonConfig().mpd
        XCTAssertEqual([defaults.bind, String(defaults.port), String(defaults.maxClients)], ["127.0.0.1", "6600", "20"])
        XCTAssertEqual(defaults.maxClientsPerAddress, 8)
        XCTAssertNil(defaults.password)
        XCTAssertTrue(defaults.isEnabled)
        let config = parse("""
            [mpd]
            bind = "0.0.0.0"
            port = 0
            socket = "/run/tonearm/mpd.sock"
            password = "pass"
            max_clients = 5
            max_clients_per_address = 2
            connection_timeout = 10
            """)
        XCTAssertEqual(config.mpd.bind, "0.0.0.0")
        XCTAssertEqual(config.mpd.port, 0)
        XCTAssertEqual(config.mpd.socket, "/run/tonearm/mpd.sock")
        XCTAssertEqual(config.mpd.password, "pass")
        XCTAssertEqual(config.mpd.maxClients, 5)
        XCTAssertEqual(config.mpd.maxClientsPerAddress, 2)
        XCTAssertEqual(config.mpd.connectionTimeout, 10)
        XCTAssertTrue(config.mpd.isEnabled, "the socket alone")
        XCTAssertFalse(parse("[mpd]\nport = 0").mpd.isEnabled)
        assertRefused("[mpd]\nport = 70000", .outOfRange, "mpd.port must be between 0 and 65535, not 70000 (line 2)")
        assertRefused("[mpd]\nmax_clients = 0", .outOfRange, "mpd.max_clients must be between 1 and 1000, not 0 (line 2)")
        assertRefused("[mpd]\nmax_clients_per_address = 0", .outOfRange,
                      "mpd.max_clients_per_address must be between 1 and 1000, not 0 (line 2)")
        assertRefused("[mpd]\nhost = \"x\"", .unknownKey, "unknown key 'host' in [mpd] (line 2)")
    }

    func testTheWebSection() throws {
        let defaults = DaemonConfig().web
        XCTAssertEqual([defaults.bind, String(defaults.port), String(defaults.maxClients)], ["127.0.0.1", "8080", "64"])
        XCTAssertNil(defaults.token)
        XCTAssertTrue(defaults.isEnabled)
        let config = parse("""
            [web]
            bind = "0.0.0.0"
            port = 80
            token = "correct-horse"
            max_clients = 8
            """)
        XCTAssertEqual(config.web.bind, "0.0.0.0")
        XCTAssertEqual(config.web.port, 80)
        XCTAssertEqual(config.web.token, "correct-horse")
        XCTAssertEqual(config.web.maxClients, 8)
        XCTAssertFalse(parse("[web]\nport = 0").web.isEnabled)
        assertRefused("[web]\nport = 70000", .outOfRange, "web.port must be between 0 and 65535, not 70000 (line 2)")
        assertRefused("[web]\nmax_clients = 1", .outOfRange, "web.max_clients must be between 2 and 1000, not 1 (line 2)")
        for token in ["short", "has space in it", ""] {
            let error = refusal("[web]\ntoken = \"\(token)\"")
            XCTAssertTrue(error?.description.contains("at least 8 printable ASCII characters") ?? false, "\(token): \(String(describing: error))")
        }
    }

    func testTheWebRemotesAllowedHosts() throws {
        XCTAssertEqual(DaemonConfig().web.allowedHosts, [])
        let config = parse(#"""
            [web]
            allowed_hosts = ["music.home.arpa", "Tonearm.example.", "192.168.1.20", "[fd00::20]"]
            """#)
        XCTAssertEqual(config.web.allowedHosts, ["music.home.arpa", "Tonearm.example.", "192.168.1.20", "[fd00::20]"])
        for host in ["http://music.home.arpa", "music.home.arpa:8080", "music/x", "*.example", "", "a..b", "[fd00::20", "fd00::20", "box name"] {
            let error = refusal("[web]\nallowed_hosts = [\"\(host)\"]")
            XCTAssertEqual(error?.description,
                           "web.allowed_hosts has '\(host)', which is not a host name or address (such as \"music.home.arpa\", "
                           + "\"192.168.1.20\" or \"[fd00::20]\"; no scheme, port or path) (line 2)", host)
        }
        assertRefused("[web]\nallowed_hosts = \"music.home.arpa\"", .wrongType,
                      "web.allowed_hosts must be an array, each element a string (line 2)")
    }

    func testReplayGainInThePlayerSection() throws {
        XCTAssertEqual(DaemonConfig().player.replayGainSettings, ReplayGainSettings(), "off by default: bit-perfect")
        let config = parse("""
            [player]
            replay_gain = "auto"
            replay_gain_preamp = -2.5
            replay_gain_missing_preamp = -6
            replay_gain_limit = false
            """)
        XCTAssertEqual(config.player.replayGainSettings,
                       ReplayGainSettings(mode: .auto, preamp: -2.5, missingPreamp: -6, preventsClipping: false))
        guard let error = refusal("[player]\nreplay_gain = \"loud\"") else { return }
        XCTAssertTrue(error.description.contains("player.replay_gain") && error.description.contains("'auto'"), error.description)
        assertRefused("[player]\nreplay_gain_preamp = 20", .outOfRange,
                      "player.replay_gain_preamp must be between -15 and 15, not 20 (line 2)")
    }

    func testTheMPRISSection() throws {
        XCTAssertEqual(DaemonConfig().mpris.bus, .off)
        let config = parse("[mpris]\nbus = \"session\"\nname = \"tonearm_2\"")
        XCTAssertEqual(config.mpris.bus, .session)
        XCTAssertEqual(config.mpris.name, "tonearm_2")
        XCTAssertEqual(parse("[mpris]\nname = \"tonearm.zone2\"").mpris.name, "tonearm.zone2", "a second instance, as MPRIS suggests")
        let rule = "must be ASCII letters, digits and '_' (dots between parts), no part starting with a digit (line 2)"
        for bad in ["2nd", "tonearm.2", "tonearm..x", ".tonearm", "tonearm.", "tone-arm", ""] {
            assertRefused("[mpris]\nname = \"\(bad)\"", .outOfRange, "mpris.name " + rule)
        }
        XCTAssertNotNil(refusal("[mpris]\nbus = \"both\""))
        XCTAssertNil(DaemonConfig().mpris.avrcpAdapters, "every adapter")
        XCTAssertEqual(parse("[mpris]\navrcp_adapters = [\"hci0\", \"hci2\"]").mpris.avrcpAdapters, ["hci0", "hci2"])
        XCTAssertEqual(parse("[mpris]\navrcp_adapters = []").mpris.avrcpAdapters, [], "none")
        assertRefused("[mpris]\navrcp_adapters = [\"/org/bluez/hci0\"]", .outOfRange,
                      "mpris.avrcp_adapters has '/org/bluez/hci0', which is not an adapter's name (such as \"hci0\") (line 2)")
        XCTAssertNotNil(refusal("[mpris]\navrcp_adapters = \"hci0\""), "a list")
    }

    func testFullProfile() throws {
        let config = parse(Self.fullProfile)
        var expected = DaemonConfig()
        expected.board.name = "car-pi"
        expected.board.description = "Pi 4 + HiFiBerry DAC+ Pro, steering-wheel keys"
        expected.output.device = "hw:CARD=sndrpihifiberry"
        expected.output.periodFrames = 512
        expected.output.bufferFrames = 2048
        expected.output.mixerControl = "Digital"
        expected.output.mixerCard = "hw:0"
        expected.output.reopenIntervalMilliseconds = 250
        expected.output.readAheadSeconds = 4.5
        expected.daemon.socket = "/run/tonearm/control.sock"
        expected.daemon.stateDirectory = "/var/lib/tonearm"
        expected.daemon.musicDirectory = "/media/usb/Music"
        expected.daemon.resume = .playing
        expected.daemon.saveIntervalSeconds = 10
        expected.player.skipForwardSeconds = 30
        expected.player.skipBackwardSeconds = 7.5
        expected.player.previousRestartsAfterSeconds = 5
        expected.player.volume = 80
        expected.player.category = .playback
        expected.player.mode = .spokenAudio
        XCTAssertEqual(config, expected)
        XCTAssertNoThrow(try config.validate())
    }

    func testDottedKeysAndInlineTablesWorkLikeSections() {
        let config = parse("""
            output.device = "hw:1"
            player = { volume = 40, category = "ambient" }
            """)
        XCTAssertEqual(config.output.device, "hw:1")
        XCTAssertEqual(config.player.volume, 40)
        XCTAssertEqual(config.player.category, .ambient)
    }

    func testLoadReadsAFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tonearm-\(UUID().uuidString).toml").path
        try Data(Self.fullProfile.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        XCTAssertEqual(try DaemonConfig.load(path: path), parse(Self.fullProfile))

        try Data("[output]\nperiod_frames = 8\n".utf8).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try DaemonConfig.load(path: path)) { error in
            XCTAssertEqual("\(error)", "\(path):2: output.period_frames must be between 16 and 65536, not 8")
        }
    }

    func testLoadOfAMissingFile() {
        XCTAssertThrowsError(try DaemonConfig.load(path: "/etc/tonearm-missing/board.toml")) { error in
            XCTAssertEqual("\(error)", "cannot read /etc/tonearm-missing/board.toml: No such file or directory")
            XCTAssertEqual((error as? ConfigError)?.kind, .unreadable)
            XCTAssertNil((error as? ConfigError)?.line)
        }
    }

    // MARK: Unknown keys and tables

    func testUnknownKeyNamesTheKeyTableAndLine() {
        let text = "[output]\ndevice = \"hw:0\"\n\nperiodframes = 256\n"
        let error = refusal(text, fileName: "board.toml")
        XCTAssertEqual(error?.description, "board.toml:4: unknown key 'periodframes' in [output]")
        XCTAssertEqual(error?.kind, .unknownKey)
        XCTAssertEqual(error?.key, "output.periodframes")
        XCTAssertEqual(error?.line, 4)
        XCTAssertEqual(refusal(text)?.description, "unknown key 'periodframes' in [output] (line 4)")
    }

    func testUnknownTablesAndTopLevelKeys() {
        assertRefused("[output]\n[outptu]\ndevice = \"x\"", .unknownTable, "unknown table [outptu] (line 2)")
        assertRefused("[output.extra]\nx = 1", .unknownTable, "unknown table [output.extra] (line 1)")
        assertRefused("[player]\nvolume = 50\nfoo.bar = 1", .unknownTable, "unknown table [player.foo] (line 3)")
        assertRefused("\n\nvolume = 50", .unknownKey, "unknown key 'volume' (line 3)")
        assertRefused("[[knob]]\nline = 17", .unknownTable, "unknown table [[knob]] (line 1)")
        assertRefused("[daemon]\n\"music dir\" = \"/m\"", .unknownKey, "unknown key 'music dir' in [daemon] (line 2)")
    }

    // MARK: Types

    func testWrongTypesNameTheKeyAndLine() {
        let text = "[output]\n\n\n\n\n\nperiod_frames = \"256\"\n"
        XCTAssertEqual(refusal(text)?.description, "output.period_frames must be an integer (line 7)")
        XCTAssertEqual(refusal(text, fileName: "board.toml")?.description, "board.toml:7: output.period_frames must be an integer")
        XCTAssertEqual(refusal(text)?.kind, .wrongType)

        assertRefused("[output]\nperiod_frames = 256.0", .wrongType, "output.period_frames must be an integer (line 2)")
        assertRefused("[output]\ndevice = 0", .wrongType, "output.device must be a string (line 2)")
        assertRefused("[output]\nmixer_control = true", .wrongType, "output.mixer_control must be a string (line 2)")
        assertRefused("[output]\nread_ahead_seconds = \"2\"", .wrongType, "output.read_ahead_seconds must be a number (line 2)")
        assertRefused("[board]\nname = [\"a\"]", .wrongType, "board.name must be a string (line 2)")
        assertRefused("output = 5", .wrongType, "output must be a table ([output]) (line 1)")
        assertRefused("[[output]]", .wrongType, "output must be a table ([output]) (line 1)")
    }

    func testSecondsAcceptIntegersAndFloats() {
        let config = parse("[output]\nread_ahead_seconds = 3\n[player]\nskip_forward_seconds = 2.5\n")
        XCTAssertEqual(config.output.readAheadSeconds, 3.0)
        XCTAssertEqual(config.player.skipForwardSeconds, 2.5)
    }

    // MARK: Ranges

    func testOutOfRangeValues() {
        for (text, description) in [
            ("[output]\nperiod_frames = 8", "output.period_frames must be between 16 and 65536, not 8 (line 2)"),
            ("[output]\nperiod_frames = 65537\nbuffer_frames = 200000", "output.period_frames must be between 16 and 65536, not 65537 (line 2)"),
            ("[output]\nperiod_frames = 256\nbuffer_frames = 300", "output.buffer_frames must be at least two periods (512 frames), not 300 (line 3)"),
            ("[output]\nreopen_interval_ms = 5", "output.reopen_interval_ms must be at least 10, not 5 (line 2)"),
            ("[output]\nread_ahead_seconds = 0.05", "output.read_ahead_seconds must be between 0.1 and 60, not 0.05 (line 2)"),
            ("[output]\nread_ahead_seconds = 61", "output.read_ahead_seconds must be between 0.1 and 60, not 61 (line 2)"),
            ("[output]\nread_ahead_seconds = nan", "output.read_ahead_seconds must be between 0.1 and 60, not nan (line 2)"),
            ("[daemon]\nsave_interval_seconds = 0", "daemon.save_interval_seconds must be between 1 and 3600, not 0 (line 2)"),
            ("[daemon]\nsave_interval_seconds = 3601", "daemon.save_interval_seconds must be between 1 and 3600, not 3601 (line 2)"),
            ("[player]\nvolume = -1", "player.volume must be between 0 and 100, not -1 (line 2)"),
            ("[player]\nvolume = 100.5", "player.volume must be between 0 and 100, not 100.5 (line 2)"),
            ("[player]\nskip_forward_seconds = 0", "player.skip_forward_seconds must be a number above 0, not 0 (line 2)"),
            ("[player]\nskip_backward_seconds = -5", "player.skip_backward_seconds must be a number above 0, not -5 (line 2)"),
            ("[player]\nskip_backward_seconds = inf", "player.skip_backward_seconds must be a number above 0, not inf (line 2)"),
            ("[player]\nprevious_restarts_after_seconds = -1", "player.previous_restarts_after_seconds must be at least 0, not -1 (line 2)"),
        ] {
            guard let error = refusal(text) else { continue }
            XCTAssertEqual(error.kind, .outOfRange, text)
            XCTAssertEqual(error.description, description)
        }
        XCTAssertEqual(parse("[player]\nvolume = 0\nprevious_restarts_after_seconds = 0").player.volume, 0)
        XCTAssertEqual(parse("[player]\nvolume = 62.5\nprevious_restarts_after_seconds = inf").player.volume, 62.5)
        XCTAssertEqual(parse("[output]\nperiod_frames = 16\nbuffer_frames = 32").output.bufferFrames, 32)
        XCTAssertEqual(parse("[output]\nperiod_frames = 65536\nbuffer_frames = 131072").output.periodFrames, 65536)
    }

    /// The buffer in milliseconds, on a device that can rewind; or in frames; never both.
    func testTheBufferIsGivenInMillisecondsOrInFrames() {
        XCTAssertNil(parse("").output.bufferMilliseconds, "frames unless a profile asks")
        XCTAssertEqual(parse("").output.rewindGuardMilliseconds, 5)
        let output = parse("[output]\nbuffer_ms = 500\nrewind_guard_ms = 8").output
        XCTAssertEqual(output.bufferMilliseconds, 500)
        XCTAssertEqual(output.rewindGuardMilliseconds, 8)
        assertRefused("[output]\nbuffer_ms = 500\nbuffer_frames = 2048", .outOfRange,
                      "output.buffer_ms and period_frames or buffer_frames are two ways to size the buffer: give one (line 2)")
        assertRefused("[output]\nperiod_frames = 512\nbuffer_ms = 200", .outOfRange,
                      "output.buffer_ms and period_frames or buffer_frames are two ways to size the buffer: give one (line 3)")
        assertRefused("[output]\nbuffer_ms = 10", .outOfRange, "output.buffer_ms must be between 20 and 2000, not 10 (line 2)")
        assertRefused("[output]\nrewind_guard_ms = 0", .outOfRange, "output.rewind_guard_ms must be between 1 and 100, not 0 (line 2)")
        assertRefused("[output]\nbuffer_ms = \"500\"", .wrongType, "output.buffer_ms must be an integer (line 2)")
    }

    func testTheResampleQualityIsOneOfLibsoxrsRecipes() {
        XCTAssertEqual(parse("").output.resampleQuality, "high")
        XCTAssertEqual(parse("[output]\nresample_quality = \"very_high\"").output.resampleQuality, "very_high")
        assertRefused("[output]\nresample_quality = \"best\"", .outOfRange,
                      "output.resample_quality must be one of quick, low, medium, high, very_high, not 'best' (line 2)")
    }

    func testARuleBrokenByADefaultPointsAtTheTable() {
        // buffer_frames keeps its default (1024), which is less than two 1024-frame periods.
        assertRefused(
            "\n[output]\nperiod_frames = 1024", .outOfRange,
            "output.buffer_frames must be at least two periods (2048 frames), not 1024 (line 2)")
    }

    func testUnusableStrings() {
        assertRefused("[output]\ndevice = \"\"", .invalidValue, "output.device must not be empty (line 2)")
        assertRefused("[output]\nmixer_card = \"hw:\\u0000\"", .invalidValue, "output.mixer_card must not contain a NUL character (line 2)")
        assertRefused("[daemon]\nmusic_dir = \"~/Music\"", .invalidValue, "daemon.music_dir starts with '~', which is not expanded; write the full path (line 2)")
        assertRefused("[daemon]\nstate_dir = ''", .invalidValue, "daemon.state_dir must not be empty (line 2)")
        let long = "/" + String(repeating: "s", count: 107)
        assertRefused("[daemon]\nsocket = \"\(long)\"", .outOfRange, "daemon.socket is 108 bytes long; a Unix socket path has room for 107 (line 2)")
        XCTAssertEqual(parse("[daemon]\nsocket = \"\(long.dropLast())\"").daemon.socket?.utf8.count, 107)
        XCTAssertEqual(parse("[daemon]\nmusic_dir = \"music\"").daemon.musicDirectory, "music")
    }

    // MARK: Words

    func testResumeValues() {
        XCTAssertEqual(parse("[daemon]\nresume = \"paused\"").daemon.resume, .paused)
        XCTAssertEqual(parse("[daemon]\nresume = \"playing\"").daemon.resume, .playing)
        assertRefused("[daemon]\nresume = \"stopped\"", .wrongType, "daemon.resume must be 'paused' or 'playing', not 'stopped' (line 2)")
        assertRefused("[daemon]\nresume = \"Playing\"", .wrongType, "daemon.resume must be 'paused' or 'playing', not 'Playing' (line 2)")
        assertRefused("[daemon]\nresume = true", .wrongType, "daemon.resume must be 'paused' or 'playing' (line 2)")
    }

    func testCategoryValues() {
        for category in ["ambient", "soloAmbient", "playback", "record", "playAndRecord", "multiRoute"] {
            XCTAssertEqual(parse("[player]\ncategory = \"\(category)\"").player.category.rawValue, category)
        }
        assertRefused(
            "[player]\ncategory = \"Playback\"", .wrongType,
            "player.category must be one of 'ambient', 'soloAmbient', 'playback', 'record', 'playAndRecord', 'multiRoute', not 'Playback' (line 2)")
    }

    func testModeValues() {
        for mode in DaemonConfig.Player.Mode.allCases {
            // Each with a category that accepts it (the session rules are checked too).
            let category = mode == .moviePlayback ? "playback" : "playAndRecord"
            XCTAssertEqual(parse("[player]\ncategory = \"\(category)\"\nmode = \"\(mode.rawValue)\"").player.mode, mode)
        }
        XCTAssertEqual(refusal("[player]\nmode = \"karaoke\"")?.kind, .wrongType)
        XCTAssertEqual(refusal("[player]\nmode = \"karaoke\"")?.message.hasSuffix(", not 'karaoke'"), true)
    }

    /// The player's session options, checked by the session rules when the profile is read.
    func testPlayerSessionOptions() throws {
        let mixing = parse("[player]\ncategory = \"playback\"\noptions = [\"duckOthers\"]")
        XCTAssertEqual(mixing.player.options, ["duckOthers"])
        let session = try mixing.player.sessionConfiguration()
        XCTAssertEqual(session.0, .playback)
        XCTAssertEqual(session.2, [.mixWithOthers, .duckOthers], "duckOthers implies mixWithOthers")
        XCTAssertEqual(try parse("").player.sessionConfiguration().2, [], "no options by default")
        let refused = refusal("[player]\ncategory = \"ambient\"\noptions = [\"mixWithOthers\"]")
        XCTAssertEqual(refused?.kind, .outOfRange)
        XCTAssertEqual(refused?.message.contains("category ambient does not accept option mixWithOthers"), true, "\(String(describing: refused))")
        let unknown = refusal("[player]\noptions = [\"loud\"]")
        XCTAssertEqual(unknown?.kind, .wrongType)
        XCTAssertEqual(unknown?.message.contains("'loud', which is not an option"), true, "\(String(describing: unknown))")
        XCTAssertEqual(refusal("[player]\noptions = \"duckOthers\"")?.kind, .wrongType, "a string is not an array")
        let mode = refusal("[player]\ncategory = \"playback\"\nmode = \"voiceChat\"")
        XCTAssertEqual(mode?.message.hasPrefix("player.mode mode voiceChat cannot be used with category playback"), true, "\(String(describing: mode))")
    }

    // MARK: Syntax and overrides

    func testTOMLErrorsKeepTheirPlace() {
        let error = refusal("[output]\ndevice = hw:0\n", fileName: "board.toml")
        XCTAssertEqual(error?.kind, .syntax)
        XCTAssertEqual(error?.toml?.kind, .syntax)
        XCTAssertEqual(error?.line, 2)
        XCTAssertEqual(error?.column, 10)
        XCTAssertEqual(error?.description, "board.toml:2:10: expected a value, found 'hw:0' (strings need quotes)")
        XCTAssertEqual(refusal("[output]\n[output]")?.description, "table [output] is defined twice (first at line 1) (line 2, column 2)")
    }

    func testValidateChecksOverridesWithoutALine() {
        var config = parse(Self.fullProfile)
        config.output.periodFrames = 8
        XCTAssertThrowsError(try config.validate()) { error in
            XCTAssertEqual("\(error)", "output.period_frames must be between 16 and 65536, not 8")
            XCTAssertNil((error as? ConfigError)?.line)
            XCTAssertEqual((error as? ConfigError)?.key, "output.period_frames")
        }
        config.output.periodFrames = 2048
        XCTAssertThrowsError(try config.validate()) { error in
            XCTAssertEqual("\(error)", "output.buffer_frames must be at least two periods (4096 frames), not 2048")
        }
        config.output.bufferFrames = 4096
        config.player.volume = 0
        config.daemon.socket = "/tmp/t.sock"
        XCTAssertNoThrow(try config.validate())
        config.daemon.musicDirectory = "~/Music"
        XCTAssertThrowsError(try config.validate()) { error in
            XCTAssertEqual((error as? ConfigError)?.kind, .invalidValue)
        }
        config.daemon.musicDirectory = nil
        config.player.category = .ambient
        XCTAssertNoThrow(try config.validate())
    }

    // MARK: The way later tables are added

    /// A stand-in for the `[[button]]` table a later change adds: one small type.
    struct Button: ConfigSection, Equatable {
        static let tableName = "button"
        var line = 0
        var longPressMilliseconds = 600
        var command: String?

        mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
            try table.read("line", into: &line)
            try table.read("long_press_ms", into: &longPressMilliseconds)
            try table.read("command", into: &command)
        }

        func validate(_ check: ConfigCheck) throws(ConfigError) {
            try check.range("line", line, 0...511)
        }
    }

    func readButtons(_ text: String) throws(ConfigError) -> [Button] {
        let document: TOMLTable
        do { document = try TOMLTable.parse(text) } catch { throw ConfigError(error) }
        var root = ConfigTableReader(document: document, fileName: nil)
        let buttons = try root.sections(Button.self)
        try root.rejectUnknownKeys()
        return buttons
    }

    func testArraysOfTablesReadAsSections() throws {
        let buttons = try readButtons("""
            [[button]]
            line = 17
            command = "togglePlayPause"
            [[button]]
            line = 27
            long_press_ms = 900
            """)
        XCTAssertEqual(buttons, [
            Button(line: 17, longPressMilliseconds: 600, command: "togglePlayPause"),
            Button(line: 27, longPressMilliseconds: 900, command: nil),
        ])
        XCTAssertEqual(try readButtons(""), [])
        XCTAssertEqual(try readButtons("button = [{ line = 5 }]").map(\.line), [5])

        XCTAssertThrowsError(try readButtons("[[button]]\nline = 1\n[[button]]\nline = 2\nlong_press = 1")) { error in
            XCTAssertEqual("\(error)", "unknown key 'long_press' in [[button]] (line 5)")
        }
        XCTAssertThrowsError(try readButtons("[[button]]\nline = 1\n\n[[button]]\nline = 600")) { error in
            XCTAssertEqual("\(error)", "button[2].line must be between 0 and 511, not 600 (line 5)")
        }
        XCTAssertThrowsError(try readButtons("[[button]]\nline = \"GPIO17\"")) { error in
            XCTAssertEqual("\(error)", "button[1].line must be an integer (line 2)")
        }
        XCTAssertThrowsError(try readButtons("[button]\nline = 1")) { error in
            XCTAssertEqual("\(error)", "button must be an array of tables ([[button]]) (line 1)")
        }
        XCTAssertThrowsError(try readButtons("button = [1]")) { error in
            XCTAssertEqual((error as? ConfigError)?.kind, .wrongType)
        }
    }
}
