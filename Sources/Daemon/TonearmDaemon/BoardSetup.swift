import TonearmBoard
import TonearmConfig
import TonearmControlPlane
import TonearmGPIO
import TonearmInput
import TonearmSerial

/// Builds the board's plug-ins from a profile: the GPIO controls (`[[button]]`, `[[encoder]]`,
/// `[mute_switch]`, `[ignition]`), one per `[[input]]`, the serial `[display]`. Only the GPIO
/// lines are requested here, so a `required` one that is missing stops the daemon before it
/// starts; input devices and the display's port are opened when their plug-in runs, which says
/// then what is missing and keeps trying. What a profile names wrongly (an unknown key name)
/// fails here, so `tonearmd --check` refuses it too.
public enum BoardSetup {
    /// Checks what only the board modules can check (key names, display settings) without
    /// opening anything.
    public static func check(_ profile: DaemonConfig) throws(BoardSetupError) {
        _ = try inputs(profile)
        _ = try displaySettings(profile)
    }

    /// The board's plug-ins, in this order: the GPIO controls (if the profile has any), the
    /// input devices, the display. `lines` stands in for libgpiod (tests).
    public static func plugIns(
        for profile: DaemonConfig, lines: any LineEventSource = LibgpiodLineEventSource()
    ) throws(BoardSetupError) -> [any PlugIn] {
        var plugIns: [any PlugIn] = []
        let controls = gpioControls(profile)
        if !controls.isEmpty {
            // Lines are requested here: a required one that is missing stops the daemon now.
            do throws(GPIOError) {
                plugIns.append(try GPIOControls(controls, source: lines))
            } catch {
                throw BoardSetupError(key: "required GPIO line", message: "\(error) (the profile marks it required)")
            }
        }
        plugIns += try inputs(profile)
        if let settings = try displaySettings(profile) {
            // One plug-in both ways: it shows Now Playing and sends what is touched or typed.
            do throws(SerialError) {
                plugIns.append(try SerialDisplay(settings: settings))
            } catch {
                throw BoardSetupError(key: "display", message: error.description)
            }
        }
        return plugIns
    }

    /// The display's port, baud rate and flow control.
    static func portSettings(_ display: DaemonConfig.Display) -> SerialPortSettings {
        let flow: SerialFlowControl = switch display.flowControl {
        case .none: .none
        case .rtscts: .rtscts
        case .xonxoff: .xonxoff
        }
        return SerialPortSettings(path: display.port, baudRate: display.baud, flowControl: flow)
    }

    /// `[display]` as the serial module takes it, checked (baud rate, LCD size, component
    /// names, touch ids).
    static func displaySettings(_ profile: DaemonConfig) throws(BoardSetupError) -> SerialDisplaySettings? {
        guard let display = profile.display else { return nil }
        let port = portSettings(display)
        let driver: SerialDisplaySettings.Driver
        switch display.driver {
        case .line:
            driver = .line
        case .hd44780:
            driver = .hd44780(HD44780Settings(columns: display.columns, rows: display.rows))
        case .nextion:
            var components = NextionSettings.defaultComponents
            for (key, component) in display.components.entries {
                guard let field = NextionField(rawValue: key) else {
                    throw BoardSetupError(
                        key: "display.components.\(key)",
                        message: "'\(key)' is not a Now Playing field (one of \(NextionField.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                components[field] = component
            }
            var touches: [NextionTouch] = []
            for (key, name) in display.touch.entries {
                // Both were checked when the profile was read.
                if let command = Self.command(name), let touch = NextionTouch(key: key, command: command) { touches.append(touch) }
            }
            driver = .nextion(NextionSettings(components: components, touch: touches))
        }
        let settings = SerialDisplaySettings(port: port, driver: driver)
        do throws(SerialError) {
            try settings.validate()
        } catch {
            throw BoardSetupError(key: "display", message: error.description)
        }
        return settings
    }

    /// The profile's buttons, encoders, mute switch and ignition line.
    static func gpioControls(_ profile: DaemonConfig) -> [GPIOControl] {
        let gpio = profile.gpio
        func spec(_ chip: String?, _ line: GPIOLineName?, _ bias: GPIOBias, _ activeLow: Bool, _ required: Bool) -> GPIOLineSpec {
            let named: GPIOLineSpec.Line = switch line {
            case .offset(let offset): .offset(offset)
            case .name(let name): .named(name)
            case nil: .offset(-1)  // refused when the profile was read
            }
            let lineBias: GPIOLineSpec.Bias = switch bias {
            case .asIs: .asIs
            case .disabled: .disabled
            case .pullUp: .pullUp
            case .pullDown: .pullDown
            }
            return GPIOLineSpec(chip: chip ?? gpio.chip, line: named, bias: lineBias, activeLow: activeLow, required: required)
        }
        func seconds(_ milliseconds: Int?, _ fallback: Int) -> Double { Double(milliseconds ?? fallback) / 1000 }

        var controls: [GPIOControl] = []
        for (index, button) in profile.buttons.enumerated() {
            guard let press = Self.command(button.command) else { continue }
            let hold: ButtonRecognizer.Settings.Hold
            if let repeatMilliseconds = button.repeatMilliseconds {
                hold = .repeats(delay: Double(button.repeatDelayMilliseconds) / 1000, interval: Double(repeatMilliseconds) / 1000)
            } else if let long = Self.command(button.longPressCommand) {
                hold = .longPress(long, after: seconds(button.longPressMilliseconds, gpio.longPressMilliseconds))
            } else {
                hold = .none
            }
            controls.append(.button(
                button.name ?? "button[\(index + 1)]",
                line: spec(button.chip, button.line, button.bias, button.activeLow, button.required),
                ButtonRecognizer.Settings(press: press, hold: hold, debounce: seconds(button.debounceMilliseconds, gpio.debounceMilliseconds))))
        }
        for (index, encoder) in profile.encoders.enumerated() {
            guard let clockwise = knob(encoder.clockwise, encoder.stepPercent),
                  let counterClockwise = knob(encoder.counterclockwise, encoder.stepPercent),
                  let steps = QuadratureDecoder.StepsPerDetent(rawValue: encoder.stepsPerDetent) else { continue }
            controls.append(.encoder(
                encoder.name ?? "encoder[\(index + 1)]",
                a: spec(encoder.chip, encoder.lineA, encoder.bias, encoder.activeLow, encoder.required),
                b: spec(encoder.chip, encoder.lineB, encoder.bias, encoder.activeLow, encoder.required),
                QuadratureDecoder.Settings(stepsPerDetent: steps, clockwise: clockwise, counterClockwise: counterClockwise)))
        }
        if let mute = profile.muteSwitch {
            controls.append(.levelSwitch(
                "mute switch", line: spec(mute.chip, mute.line, mute.bias, mute.activeLow, mute.required),
                SwitchDebouncer.Settings(on: .mute(.on), off: .mute(.off),
                                         debounce: seconds(mute.debounceMilliseconds, gpio.debounceMilliseconds))))
        }
        if let ignition = profile.ignition {
            controls.append(.levelSwitch(
                "ignition", line: spec(ignition.chip, ignition.line, ignition.bias, ignition.activeLow, ignition.required),
                SwitchDebouncer.Settings(on: .ignition(on: true), off: .ignition(on: false),
                                         debounce: seconds(ignition.debounceMilliseconds, gpio.debounceMilliseconds))))
        }
        return controls
    }

    /// A command the profile names; it was checked when the profile was read.
    static func command(_ text: String?) -> Command? {
        text.flatMap { try? DaemonConfig.command($0).get() }
    }

    /// An encoder's command: a volume step without an argument turns by the knob's
    /// `step_percent`, not a key's 5 %.
    static func knob(_ text: String?, _ stepPercent: Double) -> Command? {
        guard let text, let command = Self.command(text) else { return nil }
        guard !text.contains(" "), case .volume(.step(let step)) = command else { return command }
        return .volume(.step(step < 0 ? -stepPercent : stepPercent))
    }

    static func inputs(_ profile: DaemonConfig) throws(BoardSetupError) -> [InputEventSource] {
        var sources: [InputEventSource] = []
        for (index, input) in profile.inputs.enumerated() {
            var map: [String: Command] = [:]
            for (key, name) in input.map.entries {
                if let command = Self.command(name) { map[key] = command }
            }
            do throws(InputError) {
                sources.append(try InputEventSource(path: input.path, map: map, grab: input.grab))
            } catch {
                throw BoardSetupError(key: "input[\(index + 1)]", message: error.description)
            }
        }
        return sources
    }
}

/// A profile the board modules refuse, naming the key.
public struct BoardSetupError: Error, CustomStringConvertible, Sendable {
    public var key: String
    public var message: String

    public var description: String { "\(key): \(message)" }
}
