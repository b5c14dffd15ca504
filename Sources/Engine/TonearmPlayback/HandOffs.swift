import Synchronization
import TonearmAudio
import TonearmSystem

// How the engine's threads hand things to each other without a lock, so that the output
// thread never waits for another thread (each sleeps by a `Doorbell`, from TonearmSystem): a
// value one thread writes and others read (sequence-locked), a value handed from one thread to
// another, and the queue of item starts the decoder hands the output.

/// A value one thread writes and any thread reads, without a lock: a sequence lock. The writer
/// never waits; a reader copies the value and tries again if a write overlapped its copy. The
/// value is kept as atomic words, so a reader never sees a torn word, and it is rebuilt only
/// from a copy the sequence vouches for.
final class SequenceLocked<Value: WordCoded>: @unchecked Sendable {
    private let sequence = Atomic<Int>(0)
    /// Word 0 says whether there is a value; the value's words follow.
    private let words: UnsafeMutablePointer<Atomic<Int>>
    private let count = Value.wordCount + 1

    init(_ value: Value?) {
        words = .allocate(capacity: count)
        for index in 0..<count { (words + index).initialize(to: Atomic(0)) }
        store(value)
    }

    deinit {
        words.deinitialize(count: count)
        words.deallocate()
    }

    /// The writer's: one thread at a time.
    func store(_ value: Value?) {
        let start = sequence.load(ordering: .relaxed)
        sequence.store(start + 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { copy in
            copy.initialize(repeating: 0)
            if let value {
                copy[0] = 1
                value.encode(into: UnsafeMutableBufferPointer(rebasing: copy[1...]))
            }
            for index in 0..<count { words[index].store(copy[index], ordering: .relaxed) }
        }
        sequence.store(start + 2, ordering: .releasing)
    }

    func load() -> Value? {
        withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { copy in
            while true {
                let before = sequence.load(ordering: .acquiring)
                for index in 0..<count { copy.initializeElement(at: index, to: words[index].load(ordering: .relaxed)) }
                atomicMemoryFence(ordering: .acquiring)
                if before & 1 == 0 && sequence.load(ordering: .relaxed) == before {
                    return copy[0] == 0 ? nil : Value(decoding: UnsafeBufferPointer(rebasing: copy[1...]))
                }
            }
        }
    }
}

/// A value kept as a few `Int`s (in a `SequenceLocked`).
protocol WordCoded {
    static var wordCount: Int { get }
    func encode(into words: UnsafeMutableBufferPointer<Int>)
    init(decoding words: UnsafeBufferPointer<Int>)
}

extension StreamFormat: WordCoded {
    static var wordCount: Int { 3 }

    func encode(into words: UnsafeMutableBufferPointer<Int>) {
        words[0] = sampleRate
        words[1] = channels
        words[2] = bitsPerSample
    }

    init(decoding words: UnsafeBufferPointer<Int>) {
        self.init(sampleRate: words[0], channels: words[1], bitsPerSample: words[2])
    }
}

extension DeviceFormat: WordCoded {
    static var wordCount: Int { 5 }

    func encode(into words: UnsafeMutableBufferPointer<Int>) {
        words[0] = switch sampleFormat {
        case .s16LE: 0
        case .s24_3LE: 1
        case .s24LE: 2
        case .s32LE: 3
        case .floatLE: 4
        }
        words[1] = sampleRate
        words[2] = channels
        words[3] = periodFrames
        words[4] = bufferFrames
    }

    init(decoding words: UnsafeBufferPointer<Int>) {
        let sampleFormat: DeviceSampleFormat = switch words[0] {
        case 0: .s16LE
        case 1: .s24_3LE
        case 2: .s24LE
        case 3: .s32LE
        default: .floatLE
        }
        self.init(sampleFormat: sampleFormat, sampleRate: words[1], channels: words[2],
                  periodFrames: words[3], bufferFrames: words[4])
    }
}

/// The latest of a series of values one thread hands to another, without a lock: the writer
/// swaps a boxed value in, the reader takes it out. A value not taken before the next comes is
/// dropped. The writer allocates (and may free the value it replaces).
final class HandOff<Value: Sendable>: @unchecked Sendable {
    private final class Box {
        let value: Value
        init(_ value: Value) { self.value = value }
    }
    private let slot = Atomic<UnsafeMutableRawPointer?>(nil)

    init() {}

    deinit { _ = take() }

    func give(_ value: Value) {
        let box = Unmanaged.passRetained(Box(value)).toOpaque()
        if let old = slot.exchange(box, ordering: .acquiringAndReleasing) {
            Unmanaged<Box>.fromOpaque(old).release()
        }
    }

    /// The value given since the last take, if any.
    func take() -> Value? {
        guard let box = slot.exchange(nil, ordering: .acquiringAndReleasing) else { return nil }
        return Unmanaged<Box>.fromOpaque(box).takeRetainedValue().value
    }
}

extension ReplayGainSettings: WordCoded {
    static var wordCount: Int { 4 }

    func encode(into words: UnsafeMutableBufferPointer<Int>) {
        words[0] = ReplayGainMode.allCases.firstIndex(of: mode) ?? 0
        words[1] = Int(bitPattern: UInt(preamp.bitPattern))
        words[2] = Int(bitPattern: UInt(missingPreamp.bitPattern))
        words[3] = preventsClipping ? 1 : 0
    }

    init(decoding words: UnsafeBufferPointer<Int>) {
        let modes = ReplayGainMode.allCases
        self.init(mode: modes.indices.contains(words[0]) ? modes[words[0]] : .off,
                  preamp: Double(bitPattern: UInt64(UInt(bitPattern: words[1]))),
                  missingPreamp: Double(bitPattern: UInt64(UInt(bitPattern: words[2]))),
                  preventsClipping: words[3] != 0)
    }
}

/// Where an item starts in the player's ring, and what its loudness correction needs.
struct QueuedStart {
    var sample: Int
    var gain: ReplayGain
    var albumInOrder: Bool
}

/// The item starts in the player's ring, oldest first: decoder → output, so the output can
/// announce a start once it has written the period that holds it (then the start says exactly
/// when it is heard), and change the ReplayGain level on the start's very sample, without the
/// lock the timeline takes. Eight `Int32`s an entry, in the one ring type there is: the sample
/// in two halves, the four gains and peaks as `Float` bits (NaN when the file has none), the
/// album flag.
final class StartQueue: @unchecked Sendable {
    private let queue: SPSCRing
    private static let words = 8
    /// The output's copy of the entry it takes.
    private let entry = UnsafeMutablePointer<Int32>.allocate(capacity: StartQueue.words)

    init(entries: Int) { queue = SPSCRing(capacity: StartQueue.words * entries) }

    deinit { entry.deallocate() }

    /// Decoder: false when full (more starts ahead of the reader than the queue holds).
    func push(_ start: QueuedStart) -> Bool {
        func bits(_ value: Double?) -> Int32 { Int32(bitPattern: Float(value ?? .nan).bitPattern) }
        let words = [Int32(truncatingIfNeeded: start.sample >> 32), Int32(truncatingIfNeeded: start.sample),
                     bits(start.gain.trackGain), bits(start.gain.trackPeak), bits(start.gain.albumGain),
                     bits(start.gain.albumPeak), start.albumInOrder ? 1 : 0, 0]
        return words.withUnsafeBufferPointer { queue.write($0, frameSize: StartQueue.words) } == StartQueue.words
    }

    /// Output: the oldest start not yet taken.
    func pop() -> QueuedStart? {
        guard queue.read(into: entry, count: StartQueue.words) == StartQueue.words else { return nil }
        func value(_ word: Int32) -> Double? {
            let v = Float(bitPattern: UInt32(bitPattern: word))
            return v.isNaN ? nil : Double(v)
        }
        return QueuedStart(sample: Int(entry[0]) << 32 | Int(UInt32(bitPattern: entry[1])),
                           gain: ReplayGain(trackGain: value(entry[2]), trackPeak: value(entry[3]),
                                            albumGain: value(entry[4]), albumPeak: value(entry[5])),
                           albumInOrder: entry[6] != 0)
    }
}
