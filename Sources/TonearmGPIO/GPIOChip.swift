import CGPIOD

#if canImport(Glibc)
import Glibc
#endif

/// A GPIO line that could not be had, with the chip and line named.
public struct GPIOError: Error, CustomStringConvertible, Sendable {
    public var chip: String
    public var line: String?
    public var reason: String

    public var description: String {
        if let line { return "GPIO line \(line) on chip '\(chip)': \(reason)" }
        return "GPIO chip '\(chip)': \(reason)"
    }
}

/// A GPIO chip opened through libgpiod (1.6 API), by name (`gpiochip0`), path or label.
public final class GPIOChip {
    public let name: String
    private let chip: OpaquePointer

    public init(_ name: String) throws(GPIOError) {
        self.name = name
        guard let chip = gpiod_chip_open_lookup(name) else {
            let why = errno == 0 ? "not found" : String(cString: strerror(errno))
            throw GPIOError(chip: name, line: nil, reason: why)
        }
        self.chip = chip
    }

    deinit { gpiod_chip_close(chip) }

    /// The chip's label (e.g. "pinctrl-bcm2711").
    public var label: String { String(cString: gpiod_chip_label(chip)) }
    public var lineCount: Int { Int(gpiod_chip_num_lines(chip)) }

    /// Checks that a line exists, by offset.
    public func checkLine(offset: Int) throws(GPIOError) {
        guard offset >= 0 && offset < lineCount else {
            throw GPIOError(chip: name, line: String(offset), reason: "no such line (the chip has \(lineCount))")
        }
    }

    /// The offset of a line by its name (e.g. "GPIO17").
    public func lineOffset(named line: String) throws(GPIOError) -> Int {
        guard let handle = gpiod_chip_find_line(chip, line) else {
            throw GPIOError(chip: name, line: line, reason: "no line of that name")
        }
        return Int(gpiod_line_offset(handle))
    }
}
