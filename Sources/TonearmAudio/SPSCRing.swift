import Synchronization

/// A single-producer single-consumer ring of interleaved `Int32` samples.
///
/// The storage is allocated once, in `init`; neither side ever allocates, locks or blocks. The
/// producer (a decoder thread) only moves `writeIndex`, the consumer (the output thread) only
/// moves `readIndex`; both indices count samples since the start and never wrap, so "how full"
/// is a subtraction. Release/acquire ordering on the indices publishes the samples themselves.
///
/// A stream's format may change between tracks. The producer marks the sample index where the
/// current *segment* ends (`endSegment(with:)`); the consumer reads up to that mark, applies the
/// new format (reconfiguring its device) and acknowledges, after which the producer continues.
public final class SPSCRing: @unchecked Sendable {
    public let capacity: Int
    private let storage: UnsafeMutablePointer<Int32>
    private let writeIndex = Atomic<Int>(0)
    private let readIndex = Atomic<Int>(0)
    /// Sample index where the current segment ends; `Int.max` while it is open.
    private let segmentEnd = Atomic<Int>(Int.max)
    /// Incremented by the consumer each time it has taken a segment change.
    private let segmentGeneration = Atomic<Int>(0)
    /// Written by the producer before `segmentEnd` is published, read by the consumer after.
    private nonisolated(unsafe) var pendingFormat: StreamFormat?
    private let finished = Atomic<Bool>(false)

    public init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
        storage.initialize(repeating: 0, count: capacity)
    }

    deinit { storage.deallocate() }

    /// The storage, for `mlock`.
    public var storageRegion: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage, count: capacity * MemoryLayout<Int32>.stride)
    }

    // MARK: Producer side

    /// Room for this many samples.
    public var freeSamples: Int {
        capacity - (writeIndex.load(ordering: .relaxed) - readIndex.load(ordering: .acquiring))
    }

    /// Copies as many whole frames (`frameSize` samples each) as fit; returns how many samples
    /// were written.
    @discardableResult
    public func write(_ samples: UnsafeBufferPointer<Int32>, frameSize: Int = 1) -> Int {
        let w = writeIndex.load(ordering: .relaxed)
        let r = readIndex.load(ordering: .acquiring)
        var count = min(samples.count, capacity - (w - r))
        count -= count % frameSize
        guard count > 0, let base = samples.baseAddress else { return 0 }
        let start = w % capacity
        let first = min(count, capacity - start)
        (storage + start).update(from: base, count: first)
        if count > first { storage.update(from: base + first, count: count - first) }
        writeIndex.store(w + count, ordering: .releasing)
        return count
    }

    /// Ends the current segment after the samples written so far; the consumer switches to
    /// `format` once it has read them. Returns the generation to wait for in `segmentTaken`.
    public func endSegment(with format: StreamFormat) -> Int {
        let generation = segmentGeneration.load(ordering: .acquiring) + 1
        pendingFormat = format
        segmentEnd.store(writeIndex.load(ordering: .relaxed), ordering: .releasing)
        return generation
    }

    /// True once the consumer has taken the segment change numbered `generation`.
    public func segmentTaken(_ generation: Int) -> Bool {
        segmentGeneration.load(ordering: .acquiring) >= generation
    }

    /// No more samples will come.
    public func finish() { finished.store(true, ordering: .releasing) }

    // MARK: Consumer side

    /// Samples that can be read now (never past a segment end).
    public var readableSamples: Int {
        let r = readIndex.load(ordering: .relaxed)
        let limit = min(writeIndex.load(ordering: .acquiring), segmentEnd.load(ordering: .acquiring))
        return limit - r
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
        return n
    }

    /// If the reader has reached a segment end, the format that follows it.
    public var reachedSegmentChange: StreamFormat? {
        let end = segmentEnd.load(ordering: .acquiring)
        guard end != Int.max, readIndex.load(ordering: .relaxed) >= end else { return nil }
        return pendingFormat
    }

    /// Acknowledges the segment change reported by `reachedSegmentChange`.
    public func takeSegmentChange() {
        pendingFormat = nil
        segmentEnd.store(Int.max, ordering: .releasing)
        segmentGeneration.add(1, ordering: .releasing)
    }

    /// The producer has finished and every sample has been read.
    public var isDrained: Bool {
        finished.load(ordering: .acquiring) && readIndex.load(ordering: .relaxed) == writeIndex.load(ordering: .acquiring)
    }

    /// Total samples the consumer has taken since creation.
    public var samplesRead: Int { readIndex.load(ordering: .acquiring) }
    /// Total samples the producer has written since creation.
    public var samplesWritten: Int { writeIndex.load(ordering: .acquiring) }
}
