/// SplitMix64: a small seedable generator, so a shuffle is reproducible from its seed.
///
/// The standard library's `shuffle(using:)` does not promise its algorithm across releases, so
/// the core does its own Fisher–Yates with this generator.
struct ShuffleGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform index in 0..<count (multiply-high; the bias is below 2⁻³² for any queue).
    mutating func index(below count: Int) -> Int {
        precondition(count > 0)
        return Int(UInt64(count).multipliedFullWidth(by: next()).high)
    }

    mutating func shuffle(_ ids: inout [Int]) {
        guard ids.count > 1 else { return }
        for i in stride(from: ids.count - 1, to: 0, by: -1) {
            ids.swapAt(i, index(below: i + 1))
        }
    }
}
