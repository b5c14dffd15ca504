import Synchronization
import TonearmAudio
import TonearmSystem

/// A session's stream playing through the engine: which mixer slot it holds, and which of the
/// slot's streams it is (a slot is reused once its stream has ended).
public struct StreamHandle: Hashable, Sendable {
    /// The mixer input it plays through (1…; 0 is the player).
    public let slot: Int
    let serial: Int
}

/// One secondary mixer input and the producer thread feeding it.
///
/// The producer ("tonearm-stream") takes blocks from its source — a file it decodes, or raw PCM
/// the control plane feeds (`feed`) — converts them to the device's rate and layout and writes
/// the slot's small ring; the output thread's mixer reads it. They share only the ring and
/// atomics. The control plane claims a slot (`busy`) and the producer frees it when the stream
/// has been heard or has faded out after `stopStream`.
///
/// Holding (an interruption) is asked for with `holdWanted`; the producer carries it out: once
/// the fade has reached 0 it disables the input, so what the ring holds waits there, and sets
/// `held`. Only the producer enables or disables a claimed slot's input.
final class StreamSlot: @unchecked Sendable {
    let index: Int
    let input: MixerInput
    /// Claimed by a stream; cleared by its producer when it is done.
    let busy = Atomic<Bool>(false)
    /// Bumped for each stream started in the slot; a handle with an older serial has ended.
    let serial = Atomic<Int>(0)
    /// Everything the stream had is in the ring (the output plays a last short period for it).
    let complete = Atomic<Bool>(false)
    /// The stream's ring has been read to its end, or it was stopped and faded out.
    let finished = Atomic<Bool>(false)
    /// The serial of the last stream that finished, for the engine's events.
    let finishedSerial = Atomic<Int>(0)
    /// The producer's sleep: the control plane wakes it (a feed, a hold, a stop), the output
    /// rings it (room in the ring, a cut taken, a device opened).
    let bell = Doorbell()
    let stopWanted = Atomic<Bool>(false)
    /// The control plane wants the stream held (`holdStream`) or no longer (`releaseStream`).
    let holdWanted = Atomic<Bool>(false)
    /// The producer has faded the stream out and the mixer no longer reads it.
    let held = Atomic<Bool>(false)
    /// Samples the producer has converted and not yet written to the ring (`Producer.pending`).
    let pendingSamples = Atomic<Int>(0)
    /// Serialises the control plane's changes to the stream's factors and hold with the
    /// producer's `attach`, so neither overwrites what the other set.
    let controls = Mutex<Void>(())
    /// The raw PCM source of the slot's current stream, with the stream's serial; nil for a file.
    private let pcm = Mutex<(serial: Int, feed: PCMFeed)?>(nil)
    /// The producer of the slot's current or last stream (control plane only).
    var thread: NamedThread?
    /// Whether the ring is locked in memory: from the slot's first stream on, so that slots
    /// never used cost no resident memory (control plane only, under the claim lock).
    var memoryLocked = false

    init(index: Int, ringSamples: Int) {
        self.index = index
        input = MixerInput(ring: SPSCRing(capacity: ringSamples), isEnabled: false)
    }

    var ring: SPSCRing { input.ring }

    /// Readies the slot for a new stream and numbers it; returns its serial. Control plane,
    /// holding the engine's claim lock, with the slot free (`busy` clear).
    func claim(feed: PCMFeed?, gain: Float, fade: Float) -> Int {
        controls.withLock { _ in
            busy.store(true, ordering: .relaxed)
            complete.store(false, ordering: .relaxed)
            finished.store(false, ordering: .relaxed)
            stopWanted.store(false, ordering: .relaxed)
            holdWanted.store(false, ordering: .relaxed)
            held.store(false, ordering: .relaxed)
            pendingSamples.store(0, ordering: .relaxed)
            // The factors the stream starts at; the producer's `attach` takes them, with any
            // change made before it.
            input.gain = gain
            input.duckLevel = 1
            input.fade = fade
            let serial = self.serial.load(ordering: .relaxed) + 1
            pcm.withLock { $0 = feed.map { (serial, $0) } }
            self.serial.store(serial, ordering: .releasing)
            return serial
        }
    }

    /// The PCM feed of stream `serial`, nil once the slot has moved on (or for a file).
    func feed(serial: Int) -> PCMFeed? {
        pcm.withLock { $0?.serial == serial ? $0?.feed : nil }
    }

    /// Closes and lets go of the feed: its stream has ended (producer, before freeing the slot).
    func dropFeed() {
        pcm.withLock { pcm in
            pcm?.feed.close()
            pcm = nil
        }
    }

    /// The stream has audio the output should play now: a full period, or its last frames.
    /// Output thread; no lock, no allocation.
    @inline(__always)
    func wantsOutput(periodSamples: Int) -> Bool {
        guard input.isEnabled else { return false }
        let readable = ring.readableSamples
        return readable >= periodSamples || (readable > 0 && complete.load(ordering: .acquiring))
    }
}
