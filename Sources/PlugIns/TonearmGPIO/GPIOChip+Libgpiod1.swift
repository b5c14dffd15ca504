#if !LIBGPIOD_V2
import CGPIOD

#if canImport(Glibc)
import Glibc
#endif

/// A GPIO chip opened through libgpiod 1.6, by name (`gpiochip0`), path or label.
public final class GPIOChip {
    public let name: String
    let chip: OpaquePointer

    public init(_ name: String) throws(GPIOError) {
        self.name = name
        errno = 0
        guard let chip = gpiod_chip_open_lookup(name) else {
            throw GPIOError(chip: name, line: nil, reason: GPIOError.chipReason(errno: errno))
        }
        self.chip = chip
    }

    deinit { gpiod_chip_close(chip) }

    /// The chip's label (e.g. "pinctrl-bcm2711").
    public var label: String { String(cString: gpiod_chip_label(chip)) }
    public var lineCount: Int { Int(gpiod_chip_num_lines(chip)) }

    /// The chip's name as the kernel gives it ("gpiochip0").
    public var kernelName: String { String(cString: gpiod_chip_name(chip)) }

    /// A line's name and, when something holds it, the holder ("tonearm", "sysfs"…): what a
    /// self-test prints. The line must exist (`checkLine`).
    public func lineInfo(offset: Int) -> (name: String?, usedBy: String?) {
        guard let line = gpiod_chip_get_line(chip, UInt32(offset)) else { return (nil, nil) }
        let name = gpiod_line_name(line).map { String(cString: $0) }
        guard gpiod_line_is_used(line) else { return (name, nil) }
        return (name, gpiod_line_consumer(line).map { String(cString: $0) } ?? "the kernel")
    }

    /// The offset of a line by its name (e.g. "GPIO17").
    public func lineOffset(named line: String) throws(GPIOError) -> Int {
        guard let handle = gpiod_chip_find_line(chip, line) else {
            throw GPIOError(chip: name, line: line, reason: "no line of that name")
        }
        return Int(gpiod_line_offset(handle))
    }
}
#endif
