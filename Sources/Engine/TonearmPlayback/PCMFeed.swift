import Synchronization
import TonearmAudio
import TonearmSystem

/// Raw PCM a session's client sends (`feedStream`), waiting for the stream's producer thread.
///
/// The control plane appends chunks of interleaved, left-justified samples; the producer takes
/// them a block at a time into a buffer of its own, as a decoder hands out blocks. Neither side
/// is the render path, so a Mutex guards the queue. The backlog — frames fed but not yet in the
/// slot's ring — is bounded, so a client that sends faster than the stream plays is told to
/// come back later rather than filling the daemon's memory.
final class PCMFeed: @unchecked Sendable {
    let format: StreamFormat
    /// `feed` refuses while the backlog holds this many frames (2 s of audio unless the feeder
    /// asks for less) or more.
    let backlogLimitFrames: Int
    /// Posted each time the producer takes frames (room in the backlog) and when the feed
    /// closes: a feeder that waits for room polls its descriptor.
    let room: Wakeup?
    /// Frames the producer takes at a time.
    static let blockFrames = 4096

    private struct Queue {
        var chunks: [[Int32]] = []
        /// Samples of `chunks[0]` already taken.
        var taken = 0
        var queuedFrames = 0
        /// Frames of the block the producer took last; it takes the next once they are all in
        /// the ring (or dropped with a device change).
        var inFlightFrames = 0
        /// No more chunks will come (`endStream`, `stopStream`, or the producer has finished).
        var ended = false
    }
    private let queue = Mutex(Queue())

    /// The producer's block; only the producer touches it (hence `@unchecked Sendable`).
    private let block: UnsafeMutablePointer<Int32>

    init(format: StreamFormat, backlogFrames: Int? = nil, room: Wakeup? = nil) {
        self.format = format
        backlogLimitFrames = max(1, backlogFrames ?? 2 * format.sampleRate)
        self.room = room
        block = .allocate(capacity: Self.blockFrames * format.channels)
    }

    deinit { block.deallocate() }

    /// The format's problem, if it has one, in a few words.
    static func problem(with format: StreamFormat) -> String? {
        if !(8000...384_000).contains(format.sampleRate) {
            return "the sample rate must be 8000 to 384000 Hz"
        }
        if !(1...8).contains(format.channels) { return "there must be 1 to 8 channels" }
        if ![8, 16, 24, 32].contains(format.bitsPerSample) { return "samples must be 8, 16, 24 or 32 bits" }
        return nil
    }

    // MARK: Control plane

    /// Queues `samples` (whole frames); false, taking nothing, once ended or while the backlog
    /// is at its limit.
    func feed(_ samples: [Int32]) -> Bool {
        precondition(samples.count % format.channels == 0,
                     "\(samples.count) samples are not whole frames of \(format.channels) channels")
        return queue.withLock { q in
            guard !q.ended, q.queuedFrames + q.inFlightFrames < backlogLimitFrames else { return false }
            if !samples.isEmpty {
                q.chunks.append(samples)
                q.queuedFrames += samples.count / format.channels
            }
            return true
        }
    }

    /// What was fed plays out; nothing more is taken.
    func end() { queue.withLock { $0.ended = true } }

    /// Ends the feed and drops what waits (the stream was stopped, or its producer is done).
    func close() {
        queue.withLock { q in
            q.ended = true
            q.chunks = []
            q.taken = 0
            q.queuedFrames = 0
            q.inFlightFrames = 0
        }
        room?.post()
    }

    /// Frames `feed` would take now.
    var roomFrames: Int {
        queue.withLock { q in q.ended ? 0 : max(0, backlogLimitFrames - q.queuedFrames - q.inFlightFrames) }
    }

    /// Frames fed but not yet written to the slot's ring.
    var backlogFrames: Int { queue.withLock { $0.queuedFrames + $0.inFlightFrames } }

    /// Frames fed that the producer has not taken yet (the block it took is on its way to the
    /// ring, partly there already).
    var waitingFrames: Int { queue.withLock { $0.queuedFrames } }

    // MARK: Producer

    /// The next block of up to `blockFrames` frames. The block taken before is, by now, in the
    /// ring.
    func take() -> SourceBlock {
        let (block, freed) = takeBlock()
        // The last block is in the ring (its frames no longer count), or frames were taken:
        // either way there is room.
        if freed { room?.post() }
        return block
    }

    private func takeBlock() -> (SourceBlock, freed: Bool) {
        queue.withLock { q in
            let wasInFlight = q.inFlightFrames > 0
            q.inFlightFrames = 0
            var copied = 0
            let capacity = Self.blockFrames * format.channels
            while copied < capacity, let chunk = q.chunks.first {
                let n = min(capacity - copied, chunk.count - q.taken)
                chunk.withUnsafeBufferPointer { (block + copied).update(from: $0.baseAddress! + q.taken, count: n) }
                copied += n
                q.taken += n
                if q.taken == chunk.count {
                    q.chunks.removeFirst()
                    q.taken = 0
                }
            }
            if copied == 0 { return (q.ended ? .ended : .waiting, wasInFlight) }
            let frames = copied / format.channels
            q.queuedFrames -= frames
            q.inFlightFrames = frames
            return (.samples(UnsafeBufferPointer(start: block, count: copied)), true)
        }
    }
}
