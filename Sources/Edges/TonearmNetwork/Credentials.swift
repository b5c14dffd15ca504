/// Whether a password or token a client offered is the one expected, compared without stopping
/// at the first difference: the time taken depends on the lengths only, so it tells nothing of
/// how much of a guess was right. For every server on the edge (MPD's password, the web token).
public func constantTimeEqual(_ offered: String, _ expected: String) -> Bool {
    let (a, b) = (Array(offered.utf8), Array(expected.utf8))
    var difference = UInt8(a.count == b.count ? 0 : 1)
    for index in 0..<max(a.count, b.count) {
        difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
    }
    return difference == 0
}
