/// Times closer than this are the same time. Edge timestamps are nanoseconds; sums such as
/// `press + debounce + threshold` and `release + debounce` may differ in the last bit, and that
/// rounding must not decide whether a press was long.
let sameTime = 1e-9

/// One input line's level with contact bounce taken out: a new level counts only once the line
/// has stayed at it for `debounce` seconds. Shared by buttons and switches; no clock of its own.
struct DebouncedLevel: Sendable {
    let debounce: Double
    /// The level that counts; nil until the first level has been stable for `debounce`.
    private(set) var stable: Bool?
    /// The level the line was last seen at, and since when.
    private var raw: Bool?
    private var rawSince = -Double.infinity

    init(debounce: Double, stable: Bool?) {
        self.debounce = max(0, debounce)
        self.stable = stable
        raw = stable
    }

    /// When the level the line is at will count, if it differs from the one that counts.
    var confirmation: Double? {
        guard let raw, raw != stable else { return nil }
        return rawSince + debounce
    }

    /// An edge to `level` at `time`. The same level twice means the opposite edge between
    /// them was lost, so the line was not stable: the wait starts again either way.
    mutating func edge(_ level: Bool, at time: Double) {
        raw = level
        rawSince = time
    }

    /// Makes the pending level the one that counts (call once `confirmation` is due); returns
    /// it and the time it counted from.
    mutating func confirm() -> (level: Bool, at: Double)? {
        guard let at = confirmation, let raw else { return nil }
        stable = raw
        return (raw, at)
    }
}
