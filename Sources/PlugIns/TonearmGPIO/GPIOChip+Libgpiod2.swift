#if LIBGPIOD_V2
import CGPIOD

#if canImport(Glibc)
import Glibc
#endif

/// A GPIO chip opened through libgpiod 2, by name (`gpiochip0`), path or label.
///
/// libgpiod 2 opens a chip by its path only; the lookup 1.6 made (`gpiod_chip_open_lookup`) is
/// made here the same way, so a profile means the same chip with either: a number is
/// /dev/gpiochipN; anything else is first a label, then a name in /dev, or a path.
public final class GPIOChip {
    public let name: String
    let chip: OpaquePointer
    /// The chip's label (e.g. "pinctrl-bcm2711").
    public let label: String
    public let lineCount: Int
    /// The chip's name as the kernel gives it ("gpiochip0").
    public let kernelName: String

    public init(_ name: String) throws(GPIOError) {
        var opened: OpaquePointer?
        var path = name
        if name.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            // A number as 1.6 read it (strtoul into an unsigned int): "" is 0, "07" is 7.
            path = "/dev/gpiochip\(UInt32(truncatingIfNeeded: name.isEmpty ? 0 : UInt(name) ?? .max))"
        } else {
            opened = Self.chip(labelled: name)
            if !name.hasPrefix("/dev/") { path = "/dev/" + name }
        }
        errno = 0
        guard let chip = opened ?? gpiod_chip_open(path) else {
            var code = errno
            // A character device that is not a GPIO chip: ENODEV from libgpiod 2, ENOTTY from 1.6.
            if code == ENODEV && !gpiod_is_gpiochip_device(path) { code = ENOTTY }
            throw GPIOError(chip: name, line: nil, reason: GPIOError.chipReason(errno: code))
        }
        guard let info = gpiod_chip_get_info(chip) else {
            let code = errno
            gpiod_chip_close(chip)
            throw GPIOError(chip: name, line: nil, reason: GPIOError.chipReason(errno: code))
        }
        defer { gpiod_chip_info_free(info) }
        self.name = name
        self.chip = chip
        label = String(cString: gpiod_chip_info_get_label(info))
        lineCount = gpiod_chip_info_get_num_lines(info)
        kernelName = String(cString: gpiod_chip_info_get_name(info))
    }

    deinit { gpiod_chip_close(chip) }

    /// The first chip in /dev, in the order of their names, whose label is `label`, opened.
    private static func chip(labelled label: String) -> OpaquePointer? {
        guard let directory = opendir("/dev") else { return nil }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix("gpiochip") { names.append(name) }
        }
        closedir(directory)
        for name in names.sorted() {
            guard let chip = gpiod_chip_open("/dev/" + name) else { continue }
            if let info = gpiod_chip_get_info(chip) {
                let matches = String(cString: gpiod_chip_info_get_label(info)) == label
                gpiod_chip_info_free(info)
                if matches { return chip }
            }
            gpiod_chip_close(chip)
        }
        return nil
    }

    /// A line's name and, when something holds it, the holder ("tonearm", "sysfs"…): what a
    /// self-test prints. The line must exist (`checkLine`).
    public func lineInfo(offset: Int) -> (name: String?, usedBy: String?) {
        guard let info = gpiod_chip_get_line_info(chip, UInt32(offset)) else { return (nil, nil) }
        defer { gpiod_line_info_free(info) }
        let name = gpiod_line_info_get_name(info).map { String(cString: $0) }
        guard gpiod_line_info_is_used(info) else { return (name, nil) }
        return (name, gpiod_line_info_get_consumer(info).map { String(cString: $0) } ?? "the kernel")
    }

    /// What holds a line, as the kernel names it; nil when nothing does or it has no name.
    func consumer(offset: Int) -> String? {
        guard let info = gpiod_chip_get_line_info(chip, UInt32(offset)) else { return nil }
        defer { gpiod_line_info_free(info) }
        return gpiod_line_info_get_consumer(info).map { String(cString: $0) }
    }

    /// The offset of a line by its name (e.g. "GPIO17").
    public func lineOffset(named line: String) throws(GPIOError) -> Int {
        let offset = gpiod_chip_get_line_offset_from_name(chip, line)
        guard offset >= 0 else {
            throw GPIOError(chip: name, line: line, reason: "no line of that name")
        }
        return Int(offset)
    }
}
#endif
