import TonearmBoard

/// One control on GPIO lines as a profile describes it: which lines, how it behaves, what it
/// sends. Built with `button`, `encoder` or `levelSwitch`.
public struct GPIOControl: Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        case button(GPIOLineSpec, ButtonRecognizer.Settings)
        case encoder(a: GPIOLineSpec, b: GPIOLineSpec, QuadratureDecoder.Settings)
        case levelSwitch(GPIOLineSpec, SwitchDebouncer.Settings)
    }

    /// The profile's name for it ("next", "volume", "ignition"), for logs.
    public var name: String
    public var kind: Kind

    public init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }

    /// A push button: press, long press or hold-to-repeat (see `ButtonRecognizer`).
    public static func button(_ name: String, line: GPIOLineSpec, _ settings: ButtonRecognizer.Settings) -> GPIOControl {
        GPIOControl(name: name, kind: .button(line, settings))
    }

    /// A rotary encoder on lines A and B (see `QuadratureDecoder`).
    public static func encoder(
        _ name: String, a: GPIOLineSpec, b: GPIOLineSpec, _ settings: QuadratureDecoder.Settings = QuadratureDecoder.Settings()
    ) -> GPIOControl {
        GPIOControl(name: name, kind: .encoder(a: a, b: b, settings))
    }

    /// A switch that stays where it is put: a mute switch, the ignition sense (see
    /// `SwitchDebouncer`).
    public static func levelSwitch(_ name: String, line: GPIOLineSpec, _ settings: SwitchDebouncer.Settings) -> GPIOControl {
        GPIOControl(name: name, kind: .levelSwitch(line, settings))
    }

    /// Its lines, in the order the control reads them (A before B).
    public var lines: [GPIOLineSpec] {
        switch kind {
        case .button(let line, _), .levelSwitch(let line, _): return [line]
        case .encoder(let a, let b, _): return [a, b]
        }
    }

    /// Required if any of its lines is.
    public var isRequired: Bool { lines.contains { $0.required } }

    /// "button", "encoder" or "switch".
    public var kindName: String {
        switch kind {
        case .button: return "button"
        case .encoder: return "encoder"
        case .levelSwitch: return "switch"
        }
    }

    /// "button next (gpiochip0 line 17)", "encoder volume (gpiochip0 lines 5, 6)".
    public var description: String {
        let lines = self.lines
        let place: String
        if lines.count == 2, lines[0].chip == lines[1].chip {
            place = "\(lines[0].chip) lines \(lines[0].line), \(lines[1].line)"
        } else {
            place = lines.map(\.description).joined(separator: ", ")
        }
        return "\(kindName) \(name) (\(place))"
    }
}
