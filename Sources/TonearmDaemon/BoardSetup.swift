import TonearmControlPlane
import TonearmBoard
import TonearmConfig
import TonearmGPIO
import TonearmInput
import TonearmSerial

/// Builds the board's plug-ins from a profile: GPIO controls, input-event devices, the serial
/// display. Nothing is opened here: the sources open their devices when started, and say then
/// what is missing. What a profile names wrongly (an unknown key name) fails here, so
/// `tonearmd --check` refuses it too.
public enum BoardSetup {
    /// Checks what only the board modules can check (key names, display settings) without
    /// opening anything.
    public static func check(_ profile: DaemonConfig) throws(BoardSetupError) {
        _ = try inputs(profile)
        _ = try displaySettings(profile)
    }

    static func plugIns(for profile: DaemonConfig) throws -> [any PlugIn] {
        let board = try boardPlugIns(for: profile)
        return board.sources.map { BoardSourcePlugIn(source: $0) } + board.displays.map { BoardDisplayPlugIn(display: $0) }
    }

    static func boardPlugIns(for profile: DaemonConfig) throws -> BoardPlugIns {
        var plugIns = BoardPlugIns()
        let controls = gpioControls(profile)
        if !controls.isEmpty {
            // Lines are requested here: a required one that is missing stops the daemon now.
            do throws(GPIOError) {
                plugIns.sources.append(try GPIOControls(controls))
            } catch {
                throw BoardSetupError(key: "required GPIO line", message: "\(error) (the profile marks it required)")
            }
        }
        plugIns.sources += try inputs(profile)
        if let settings = try displaySettings(profile) {
            // One object both ways: it shows Now Playing and sends what is touched or typed.
            let display: SerialDisplay
            do throws(SerialError) {
                display = try SerialDisplay(settings: settings)
            } catch {
                throw BoardSetupError(key: "display", message: error.description)
            }
            plugIns.sources.append(display)
            plugIns.displays.append(display)
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
                if let command = BoardCommand(named: name), let touch = NextionTouch(key: key, command: command) { touches.append(touch) }
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
        func command(_ name: String?) -> BoardCommand? { name.flatMap(BoardCommand.init(named:)) }
        func seconds(_ milliseconds: Int?, _ fallback: Int) -> Double { Double(milliseconds ?? fallback) / 1000 }

        var controls: [GPIOControl] = []
        for (index, button) in profile.buttons.enumerated() {
            guard let press = command(button.command) else { continue }
            let hold: ButtonRecognizer.Settings.Hold
            if let repeatMilliseconds = button.repeatMilliseconds {
                hold = .repeats(delay: Double(button.repeatDelayMilliseconds) / 1000, interval: Double(repeatMilliseconds) / 1000)
            } else if let long = command(button.longPressCommand) {
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
            guard var clockwise = command(encoder.clockwise), var counterClockwise = command(encoder.counterclockwise),
                  let steps = QuadratureDecoder.StepsPerDetent(rawValue: encoder.stepsPerDetent) else { continue }
            // A knob's step is the profile's, not a key's 5 %.
            if [.volumeUp, .volumeDown].contains(clockwise.name) { clockwise.value = encoder.stepPercent }
            if [.volumeUp, .volumeDown].contains(counterClockwise.name) { counterClockwise.value = encoder.stepPercent }
            controls.append(.encoder(
                encoder.name ?? "encoder[\(index + 1)]",
                a: spec(encoder.chip, encoder.lineA, encoder.bias, encoder.activeLow, encoder.required),
                b: spec(encoder.chip, encoder.lineB, encoder.bias, encoder.activeLow, encoder.required),
                QuadratureDecoder.Settings(stepsPerDetent: steps, clockwise: clockwise, counterClockwise: counterClockwise)))
        }
        if let mute = profile.muteSwitch {
            controls.append(.levelSwitch(
                "mute switch", line: spec(mute.chip, mute.line, mute.bias, mute.activeLow, mute.required),
                SwitchDebouncer.Settings(on: BoardCommand(.muteOn), off: BoardCommand(.muteOff),
                                         debounce: seconds(mute.debounceMilliseconds, gpio.debounceMilliseconds))))
        }
        if let ignition = profile.ignition {
            controls.append(.levelSwitch(
                "ignition", line: spec(ignition.chip, ignition.line, ignition.bias, ignition.activeLow, ignition.required),
                SwitchDebouncer.Settings(on: BoardCommand(.ignitionOn), off: BoardCommand(.ignitionOff),
                                         debounce: seconds(ignition.debounceMilliseconds, gpio.debounceMilliseconds))))
        }
        return controls
    }

    static func inputs(_ profile: DaemonConfig) throws(BoardSetupError) -> [BoardCommandSource] {
        var sources: [BoardCommandSource] = []
        for (index, input) in profile.inputs.enumerated() {
            var map: [String: BoardCommand] = [:]
            for (key, name) in input.map.entries {
                // The profile's names were checked when it was read.
                if let command = BoardCommand(named: name) { map[key] = command }
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
