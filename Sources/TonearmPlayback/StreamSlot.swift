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
/// The producer ("tonearm-stream") decodes a file, converts it to the device's rate and layout
/// and writes the slot's small ring; the output thread's mixer reads it. They share only the
/// ring and atomics. The control plane claims a slot (`busy`) and the producer frees it when the
/// stream has been heard or has faded out after `stopStream`.
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
    let stopWanted = Atomic<Bool>(false)
    /// The producer of the slot's current or last stream (control plane only).
    var thread: NamedThread?

    init(index: Int, ringSamples: Int) {
        self.index = index
        input = MixerInput(ring: SPSCRing(capacity: ringSamples), isEnabled: false)
    }

    var ring: SPSCRing { input.ring }

    /// The stream has audio the output should play now: a full period, or its last frames.
    /// Output thread; no lock, no allocation.
    @inline(__always)
    func wantsOutput(periodSamples: Int) -> Bool {
        guard input.isEnabled else { return false }
        let readable = ring.readableSamples
        return readable >= periodSamples || (readable > 0 && complete.load(ordering: .acquiring))
    }
}
