/// One GPIO input line as a profile names it. Plain values only, so the same spec serves
/// libgpiod 1.6 and libgpiod 2 alike.
public struct GPIOLineSpec: Sendable, Hashable, CustomStringConvertible {
    public enum Line: Sendable, Hashable, CustomStringConvertible {
        /// The line's offset on its chip (17 for GPIO17 on a Raspberry Pi's main chip).
        case offset(Int)
        /// The line's name as the chip reports it ("GPIO17").
        case named(String)

        /// "17" or "GPIO17", as error messages name it.
        public var description: String {
            switch self {
            case .offset(let offset): return String(offset)
            case .named(let name): return name
            }
        }
    }

    /// The line's internal pull resistor, where the hardware and kernel (5.5 or later) can set it.
    public enum Bias: String, Sendable, CaseIterable {
        /// Leave it as the firmware or device tree set it.
        case asIs
        case disabled
        case pullUp
        case pullDown
    }

    /// A name ("gpiochip0"), a path ("/dev/gpiochip0") or a label ("pinctrl-bcm2711").
    public var chip: String
    public var line: Line
    public var bias: Bias
    /// The line is active (pressed, on) when low: a button to ground with a pull-up.
    public var activeLow: Bool
    /// A line that must be there: without it the controls are not built at all (see
    /// `GPIOControls.init`). Otherwise a missing line is logged and its control left out.
    public var required: Bool

    public init(chip: String = "gpiochip0", line: Line, bias: Bias = .asIs, activeLow: Bool = false, required: Bool = false) {
        self.chip = chip
        self.line = line
        self.bias = bias
        self.activeLow = activeLow
        self.required = required
    }

    /// "gpiochip0 line 17".
    public var description: String { "\(chip) line \(line)" }
}
