import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// What both libgpiod wrappers share. `GPIOChip` itself is written once per libgpiod API:
// GPIOChip+Libgpiod1.swift (1.6, Debian bookworm) and GPIOChip+Libgpiod2.swift (2.x, trixie);
// Package.swift defines LIBGPIOD_V2 when pkg-config finds libgpiod 2.

/// A GPIO chip or line that could not be had, with the chip and line named: "GPIO line 17 on
/// chip 'gpiochip0': no such line (the chip has 0)". The one error type of this module.
public struct GPIOError: Error, CustomStringConvertible, Sendable, Equatable {
    /// As the profile wrote it: "gpiochip0", "/dev/gpiochip0" or a label.
    public var chip: String
    /// An offset ("17") or a name ("GPIO17"); nil when the chip itself is meant.
    public var line: String?
    public var reason: String

    public init(chip: String, line: String?, reason: String) {
        self.chip = chip
        self.line = line
        self.reason = reason
    }

    public var description: String {
        if let line { return "GPIO line \(line) on chip '\(chip)': \(reason)" }
        return "GPIO chip '\(chip)': \(reason)"
    }

    /// The same error about one of the chip's lines.
    func about(line: String) -> GPIOError { GPIOError(chip: chip, line: line, reason: reason) }

    /// Why a chip could not be opened, in words, from `errno`.
    static func chipReason(errno code: Int32) -> String {
        switch code {
        case 0, ENOENT, ENODEV: return "no such chip"
        case ENOTTY: return "not a GPIO chip"
        default: return "cannot open the chip: \(Errno(rawValue: code))"
        }
    }
}

extension GPIOChip {
    /// Checks that a line exists, by offset.
    public func checkLine(offset: Int) throws(GPIOError) {
        guard offset >= 0 && offset < lineCount else {
            throw GPIOError(chip: name, line: String(offset), reason: "no such line (the chip has \(lineCount))")
        }
    }
}
