import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A single-producer single-consumer ring of interleaved `Int32` samples.
///
/// The storage is allocated once, in `init`; neither side ever allocates, locks or blocks. The
/// producer (a decoder thread) only moves `writeIndex`, the consumer (the output thread) only
/// moves `readIndex`; both indices count samples since the start and never wrap, so "how full"
/// is a subtraction. Release/acquire ordering on the indices publishes the samples themselves.
///
/// A *cut* changes what the consumer plays next. The producer names the sample index where the
/// consumer must stop reading (`at`), the index where it resumes (`resumeAt`, where the producer
/// writes next), and optionally a new stream format. A track boundary with a new format is a cut
/// at the end of what was written; a seek or a skip is a cut at once (`at` ≤ the read index),
/// which discards what was read ahead; changing the next track is a cut where it begins. One
/// cut is pending at a time: the producer waits for `cutTaken` before the next.
///
/// The consumer may keep a *history*: what it has read stays in the ring, so that it can read
/// it again (`rewind`), until it lets it go (`release`). The producer's room counts from the
/// oldest sample kept, and the history never takes more than `historyLimit` samples of it.
public final class SPSCRing: @unchecked Sendable {
    /// A cut the consumer has reached.
    public struct Cut: Sendable, Equatable {
        /// The format of what follows, when it changes.
        public var format: StreamFormat?
        /// True when what was before the cut must play out first (a track boundary), false when
        /// it is abandoned (a seek or a skip).
        public var playsOut: Bool

        public init(format: StreamFormat?, playsOut: Bool) {
            self.format = format
            self.playsOut = playsOut
        }
    }

    public let capacity: Int
    private let storage: UnsafeMutablePointer<Int32>
    private let writeIndex = Atomic<Int>(0)
    private let readIndex = Atomic<Int>(0)
    /// The oldest sample the consumer keeps (≤ `readIndex`); the producer's room ends there.
    private let keptIndex = Atomic<Int>(0)
    /// Consumer only: the first sample after the last cut taken, which no rewind goes before.
    private var cutFloor = 0
    /// Consumer only: whether what is read is kept until released, and at most how much.
    private var keepsHistory = false
    private var historyLimit = 0
    /// Where the consumer stops reading for the pending cut; `Int.max` when none is pending.
    private let cutAt = Atomic<Int>(Int.max)
    /// Where the consumer resumes after the pending cut.
    private let resumeAt = Atomic<Int>(0)
    /// Incremented by the consumer each time it has taken a cut.
    private let cutGeneration = Atomic<Int>(0)
    /// Written by the producer before `cutAt` is published, read by the consumer after.
    private nonisolated(unsafe) var pendingCut = Cut(format: nil, playsOut: true)

    public init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        let bytes = capacity * MemoryLayout<Int32>.stride
        if bytes >= 64 * 1024,
           let pages = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), pages != MAP_FAILED {
            storage = pages.bindMemory(to: Int32.self, capacity: capacity)
            mapped = true
        } else {
            storage = .allocate(capacity: capacity)
            storage.initialize(repeating: 0, count: capacity)
            mapped = false
        }
    }

    /// Large rings are mapped from the kernel's zero pages: a page takes memory only once it is
    /// written (or locked), so rings made up front for streams that seldom play cost nothing.
    private let mapped: Bool

    deinit {
        if mapped {
            munmap(storage, capacity * MemoryLayout<Int32>.stride)
        } else {
            storage.deallocate()
        }
    }

    /// The storage, for `mlock`.
    public var storageRegion: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage, count: capacity * MemoryLayout<Int32>.stride)
    }

    // MARK: Producer side

    /// Room for this many samples.
    public var freeSamples: Int {
        capacity - (writeIndex.load(ordering: .relaxed) - keptIndex.load(ordering: .acquiring))
    }

    /// Copies as many whole frames (`frameSize` samples each) as fit; returns how many samples
    /// were written.
    @discardableResult
    public func write(_ samples: UnsafeBufferPointer<Int32>, frameSize: Int = 1) -> Int {
        let w = writeIndex.load(ordering: .relaxed)
        let kept = keptIndex.load(ordering: .acquiring)
        var count = min(samples.count, capacity - (w - kept))
        count -= count % frameSize
        guard count > 0, let base = samples.baseAddress else { return 0 }
        let start = w % capacity
        let first = min(count, capacity - start)
        (storage + start).update(from: base, count: first)
        if count > first { storage.update(from: base + first, count: count - first) }
        writeIndex.store(w + count, ordering: .releasing)
        return count
    }

    /// Publishes a cut: the consumer reads up to `at` (or stops at once if it is already past
    /// it), then continues from what is written after this call. Returns the generation to
    /// wait for with `cutTaken`.
    public func cut(at: Int, format: StreamFormat?, playsOut: Bool) -> Int {
        let generation = cutGeneration.load(ordering: .acquiring) + 1
        pendingCut = Cut(format: format, playsOut: playsOut)
        resumeAt.store(writeIndex.load(ordering: .relaxed), ordering: .relaxed)
        cutAt.store(at, ordering: .releasing)
        return generation
    }

    /// A cut at the end of what has been written: what is there plays out first.
    public func cutAtEnd(format: StreamFormat?) -> Int {
        cut(at: writeIndex.load(ordering: .relaxed), format: format, playsOut: true)
    }

    /// A cut at once: what was read ahead is abandoned.
    public func cutNow(format: StreamFormat?) -> Int {
        cut(at: -1, format: format, playsOut: false)  // indices are never negative
    }

    /// True once the consumer has taken the cut numbered `generation`.
    public func cutTaken(_ generation: Int) -> Bool {
        cutGeneration.load(ordering: .acquiring) >= generation
    }

    // MARK: Consumer side

    /// Samples that can be read now (never past a pending cut).
    public var readableSamples: Int {
        let r = readIndex.load(ordering: .relaxed)
        let limit = min(writeIndex.load(ordering: .acquiring), cutAt.load(ordering: .acquiring))
        return max(0, limit - r)
    }

    /// Copies up to `count` samples into `destination`; returns how many were read.
    @discardableResult
    public func read(into destination: UnsafeMutablePointer<Int32>, count: Int) -> Int {
        let n = min(count, readableSamples)
        guard n > 0 else { return 0 }
        let r = readIndex.load(ordering: .relaxed)
        let start = r % capacity
        let first = min(n, capacity - start)
        destination.update(from: storage + start, count: first)
        if n > first { (destination + first).update(from: storage, count: n - first) }
        readIndex.store(r + n, ordering: .releasing)
        let kept = keptIndex.load(ordering: .relaxed)
        let oldest = keepsHistory ? max(kept, r + n - historyLimit) : r + n
        if oldest > kept { keptIndex.store(oldest, ordering: .releasing) }
        return n
    }

    /// Keeps what is read from now on, at most `limit` samples of it (less than the capacity:
    /// the producer needs room), until `release`d; `limit` 0 keeps nothing.
    public func keepHistory(_ limit: Int) {
        keepsHistory = limit > 0
        historyLimit = min(max(0, limit), capacity)
        if !keepsHistory { release(upTo: Int.max) }
    }

    /// Lets go of what was read before sample `index`: the producer may write over it.
    @inline(__always)
    public func release(upTo index: Int) {
        let oldest = min(index, readIndex.load(ordering: .relaxed))
        if oldest > keptIndex.load(ordering: .relaxed) { keptIndex.store(oldest, ordering: .releasing) }
    }

    /// Where a rewind to `index` would land: `index`, or the first sample after a cut taken
    /// since; nil when that much is no longer kept.
    @inline(__always)
    public func rewindTarget(_ index: Int) -> Int? {
        let target = max(index, cutFloor)
        guard target >= keptIndex.load(ordering: .relaxed), target <= readIndex.load(ordering: .relaxed) else { return nil }
        return target
    }

    /// Reads again from `index` (see `rewindTarget`); false, changing nothing, when it cannot.
    @inline(__always)
    @discardableResult
    public func rewind(to index: Int) -> Bool {
        guard let target = rewindTarget(index) else { return false }
        readIndex.store(target, ordering: .releasing)
        return true
    }

    /// The first sample after the last cut taken: no rewind goes before it.
    public var firstSinceCut: Int { cutFloor }

    /// The pending cut, once the reader has reached it.
    public var reachedCut: Cut? {
        let at = cutAt.load(ordering: .acquiring)
        guard at != Int.max, readIndex.load(ordering: .relaxed) >= at else { return nil }
        return pendingCut
    }

    /// Takes the cut reported by `reachedCut`: skips to where the producer resumed.
    public func takeCut() {
        let resume = resumeAt.load(ordering: .relaxed)
        if resume > readIndex.load(ordering: .relaxed) { readIndex.store(resume, ordering: .releasing) }
        // What came before the cut is never read again.
        cutFloor = readIndex.load(ordering: .relaxed)
        keptIndex.store(cutFloor, ordering: .releasing)
        cutAt.store(Int.max, ordering: .releasing)
        cutGeneration.add(1, ordering: .releasing)
    }

    /// Everything written has been read.
    public var isEmpty: Bool { readIndex.load(ordering: .relaxed) == writeIndex.load(ordering: .acquiring) }

    /// Total samples the consumer has taken (or skipped) since creation.
    public var samplesRead: Int { readIndex.load(ordering: .acquiring) }
    /// Total samples the producer has written since creation.
    public var samplesWritten: Int { writeIndex.load(ordering: .acquiring) }
}
