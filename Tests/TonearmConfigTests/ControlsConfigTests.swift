@testable import TonearmConfig
import TonearmControlPlane
import TonearmPlayer
import XCTest

/// The board's controls and display in a profile: read, defaulted and refused by name.
final class ControlsConfigTests: XCTestCase {
    static let profile = #"""
        [gpio]
        chip = "pinctrl-bcm2711"
        debounce_ms = 15

        [[button]]
        name = "play"
        line = 17
        command = "togglePlayPause"
        long_press_command = "stop"

        [[button]]
        name = "volume up"
        line = "GPIO27"
        chip = "gpiochip1"
        bias = "pull-down"
        active_low = false
        command = "volumeUp"
        repeat_ms = 120
        required = true

        [[encoder]]
        line_a = 5
        line_b = 6
        steps_per_detent = 2

        [mute_switch]
        line = 22

        [ignition]
        line = 23
        active_low = false
        debounce_ms = 200

        [[input]]
        path = "/dev/input/by-id/*-event-kbd"
        map = { KEY_F1 = "togglePlayPause", "59" = "nextTrack" }
        grab = true

        [display]
        driver = "nextion"
        port = "/dev/ttyUSB0"
        baud = 115200
        components = { title = "t0", artist = "t1" }
        touch = { "0.3" = "togglePlayPause", "0.4" = "nextTrack" }
        """#

    func testAFullProfile() throws {
        let config = try DaemonConfig.parse(Self.profile)
        XCTAssertEqual(config.gpio.chip, "pinctrl-bcm2711")
        XCTAssertEqual(config.buttons.count, 2)
        XCTAssertEqual(config.buttons[0].line, .offset(17))
        XCTAssertEqual(config.buttons[0].bias, .pullUp, "a button to ground by default")
        XCTAssertTrue(config.buttons[0].activeLow)
        XCTAssertEqual(config.buttons[0].longPressCommand, "stop")
        XCTAssertNil(config.buttons[0].debounceMilliseconds, "[gpio]'s applies")
        XCTAssertEqual(config.buttons[1].line, .name("GPIO27"))
        XCTAssertEqual(config.buttons[1].bias, .pullDown)
        XCTAssertEqual(config.buttons[1].repeatMilliseconds, 120)
        XCTAssertTrue(config.buttons[1].required)
        XCTAssertEqual(config.encoders.first?.stepsPerDetent, 2)
        XCTAssertEqual(config.encoders.first?.clockwise, "volumeUp")
        XCTAssertEqual(config.muteSwitch?.line, .offset(22))
        XCTAssertEqual(config.ignition?.debounceMilliseconds, 200)
        XCTAssertEqual(config.inputs.first?.map["KEY_F1"], "togglePlayPause")
        XCTAssertEqual(config.inputs.first?.map["59"], "nextTrack")
        XCTAssertEqual(config.inputs.first?.grab, true)
        XCTAssertEqual(try DaemonConfig.parse("[[input]]\npath = \"/dev/input/event0\"").inputs.first?.grab, false,
                       "shared unless the profile asks")
        XCTAssertEqual(config.display?.driver, .nextion)
        XCTAssertEqual(config.display?.touch.entries.map(\.key), ["0.3", "0.4"])
        XCTAssertEqual(config.display?.components["title"], "t0")
        XCTAssertEqual(config.gpioLines.map(\.user), ["button[1]", "button[2]", "encoder[1].line_a", "encoder[1].line_b", "mute_switch", "ignition"])
        XCTAssertEqual(config.gpioLines.map(\.chip), ["pinctrl-bcm2711", "gpiochip1", "pinctrl-bcm2711", "pinctrl-bcm2711", "pinctrl-bcm2711", "pinctrl-bcm2711"])
        XCTAssertNoThrow(try config.validate())
    }

    func testNoControlsByDefault() throws {
        let config = try DaemonConfig.parse("")
        XCTAssertTrue(config.buttons.isEmpty && config.encoders.isEmpty && config.inputs.isEmpty)
        XCTAssertNil(config.display)
        XCTAssertNil(config.muteSwitch)
    }

    /// The names of the control plane's one vocabulary, its aliases and arguments after a
    /// space: the parser that reads a display's commands reads a profile's.
    func testCommandsAreReadByTheOneParser() throws {
        XCTAssertEqual(try DaemonConfig.command("next").get(), .remote(CommandRequest(.nextTrack)))
        XCTAssertEqual(try DaemonConfig.command("skipForward 30").get(), .remote(CommandRequest(.skipForward, interval: 30)))
        XCTAssertEqual(try DaemonConfig.command("setVolume 40").get(), .volume(.set(40)))
        XCTAssertEqual(try DaemonConfig.command("toggleMute").get(), .mute(.toggle))
        let config = try DaemonConfig.parse("[[button]]\nline = 17\ncommand = \"next\"\nlong_press_command = \"skipForward 30\"")
        XCTAssertNoThrow(try config.validate())
    }

    func refusal(_ text: String) -> String {
        do {
            _ = try DaemonConfig.parse(text, fileName: "board.toml")
            return "accepted"
        } catch {
            return error.description
        }
    }

    func testMistakesAreRefusedByName() {
        XCTAssertEqual(refusal("[[button]]\nline = 600\ncommand = \"play\""),
                       "board.toml:2: button[1].line must be between 0 and 511, not 600")
        XCTAssertEqual(refusal("[[button]]\nline = -1\ncommand = \"play\""),
                       "board.toml:2: button[1].line must be between 0 and 511, not -1")
        XCTAssertTrue(refusal("[[button]]\nline = 17\ncommand = \"nextSong\"").hasPrefix(
            "board.toml:3: button[1].command is 'nextSong', which is not a command (one of play, pause, togglePlayPause"))
        XCTAssertEqual(refusal("[[button]]\nline = 17\ncommand = \"setVolume\""),
                       "board.toml:3: button[1].command is 'setVolume': setVolume takes percent, 0 to 100, not ''")
        XCTAssertEqual(refusal("[[button]]\nline = 17\ncommand = \"skipForward -3\""),
                       "board.toml:3: button[1].command is 'skipForward -3': skipForward takes seconds, more than 0 (optional), not '-3'")
        XCTAssertEqual(refusal("[[button]]\nline = 17"),
                       "board.toml:1: button[1].command is required: what the button does")
        XCTAssertEqual(refusal("[[button]]\ncommand = \"play\""),
                       "board.toml:1: button[1].line is required: a line offset (17) or name (\"GPIO17\")")
        XCTAssertEqual(refusal("[[button]]\nline = 17\ncommand = \"play\"\nlong_pres_ms = 900"),
                       "board.toml:4: unknown key 'long_pres_ms' in [[button]]")
        XCTAssertEqual(refusal("[[button]]\nline = 1.5\ncommand = \"play\""),
                       "board.toml:2: button[1].line must be a line offset (an integer) or a line name (a string such as \"GPIO17\")")
        XCTAssertTrue(refusal("[[button]]\nline = 17\ncommand = \"play\"\nbias = \"up\"").contains("button[1].bias must be one of 'as-is', 'disabled', 'pull-up', 'pull-down'"))
        XCTAssertEqual(refusal("[[button]]\nline = 17\ncommand = \"volumeUp\"\nrepeat_ms = 100\nlong_press_command = \"stop\""),
                       "board.toml:4: button[1].repeat_ms cannot go with long_press_command: a repeating button has no long press")
        XCTAssertEqual(refusal("[[button]]\nline = 17\ncommand = \"play\"\n[[encoder]]\nline_a = 17\nline_b = 18"),
                       "board.toml:5: encoder[1].line_a uses line 17 on chip 'gpiochip0', which button[1] already uses")
        XCTAssertEqual(refusal("[[encoder]]\nline_a = 5\nline_b = 5"), "board.toml:3: encoder[1].line_b must differ from line_a")
        XCTAssertEqual(refusal("[[encoder]]\nline_a = 5\nline_b = 6\nsteps_per_detent = 3"),
                       "board.toml:4: encoder[1].steps_per_detent must be 1, 2 or 4, not 3")
        XCTAssertTrue(refusal("[[encoder]]\nline_a = 5\nline_b = 6\nclockwise = \"louder\"").contains("encoder[1].clockwise is 'louder', which is not a command"))
        XCTAssertEqual(refusal("[mute_switch]\nline = 900"), "board.toml:2: mute_switch.line must be between 0 and 511, not 900")
        XCTAssertEqual(refusal("[[input]]\nmap = { KEY_F1 = \"play\" }"),
                       "board.toml:1: input[1].path is required: a device (/dev/input/event3) or a glob (/dev/input/by-id/*-event-kbd)")
        XCTAssertTrue(refusal("[[input]]\npath = \"/dev/input/event0\"\nmap = { KEY_F1 = \"jump\" }").contains("input[1].map.KEY_F1 is 'jump', which is not a command"))
        XCTAssertEqual(refusal("[display]\nport = \"/dev/ttyAMA0\"\nbaud = 9601"),
                       "board.toml:3: display.baud must be one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, not 9601")
        XCTAssertEqual(refusal("[display]\ndriver = \"line\""),
                       "board.toml:1: display.port is required: the serial port (/dev/ttyAMA0, /dev/ttyUSB0, /dev/serial/by-id/…)")
        XCTAssertEqual(refusal("[display]\ndriver = \"hd44780\"\nport = \"/dev/ttyAMA0\"\ncolumns = 40"),
                       "board.toml:4: display.columns must be 16 or 20 (a 16×2 or 20×4 LCD), not 40")
        XCTAssertEqual(refusal("[display]\ndriver = \"nextion\"\nport = \"/dev/ttyAMA0\"\ntouch = { \"3\" = \"play\" }"),
                       "board.toml:4: display.touch.3 must be named PAGE.COMPONENT with two numbers from 0 to 255 (\"0.3\")")
        XCTAssertTrue(refusal("[display]\ndriver = \"oled\"\nport = \"/dev/ttyAMA0\"").contains("display.driver must be one of 'line', 'hd44780', 'nextion'"))
    }
}
