#if canImport(Glibc)
import Glibc
#endif

/// One line on standard error.
func printError(_ line: String) { writeError(line + "\n") }

/// `text` to stderr as it is (a progress line redrawn with \r).
func writeError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

/// m:ss, or h:mm:ss for long tracks.
func clock(_ seconds: Double) -> String {
    let total = Int(seconds.rounded(.down))
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
    let ss = s < 10 ? "0\(s)" : "\(s)"
    if h > 0 { return "\(h):\(m < 10 ? "0" : "")\(m):\(ss)" }
    return "\(m):\(ss)"
}

func fixed(_ value: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int((abs(value) * scale).rounded())
    let whole = scaled / Int(scale)
    var fraction = String(scaled % Int(scale))
    while fraction.count < digits { fraction = "0" + fraction }
    return (value < 0 ? "-" : "") + "\(whole)" + (digits > 0 ? ".\(fraction)" : "")
}
