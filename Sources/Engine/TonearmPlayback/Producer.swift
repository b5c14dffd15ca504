import TonearmAudio
import TonearmDecoding
import TonearmSystem

/// A thread that moves audio from a source, block by block, through a converter into a ring:
/// the decoder thread (the player's files one after another, gapless) and each session stream's
/// producer. The loop is the same for both; what differs — where blocks come from, what is done
/// between blocks and when a source ends — is the policy's.
///
/// It sleeps when there is nothing to do: while its ring is full, until the output has read
/// half of it (so it wakes about once per half a read-ahead, not once per block); while its
/// source has nothing yet, until it has; and while its policy has nothing to produce.
struct Producer {
    let ring: SPSCRing
    /// This thread's sleep, and the output thread's, rung after each write with what the ring
    /// holds (the output may wait for more than a block: see `OutputThread.chooseMix`).
    let bell: Doorbell
    let output: Doorbell
    var converter: StreamConverter?
    /// Converted samples not yet in the ring.
    var pending = UnsafeBufferPointer<Int32>(start: nil, count: 0) {
        didSet { pendingChanged?(pending.count) }
    }
    /// Told how many converted samples are not yet in the ring, each time that changes: a
    /// stream's delay counts them once, not again as part of the block its source handed out.
    var pendingChanged: ((Int) -> Void)?
    /// Called when a write finds nothing left to read before it: the output may want to
    /// render again what it rendered without this ring's audio.
    var audioAfterSilence: (() -> Void)?

    init(ring: SPSCRing, bell: Doorbell, output: Doorbell) {
        self.ring = ring
        self.bell = bell
        self.output = output
    }

    mutating func run<Policy: ProducerPolicy>(_ policy: inout Policy) {
        while policy.attend(&self) {
            if pending.isEmpty {
                switch policy.nextBlock() {
                case .samples(let block):
                    pending = converter?.convert(block) ?? UnsafeBufferPointer(start: nil, count: 0)
                case .waiting:
                    sleep(for: policy) { false }
                    continue
                case .ended:
                    guard policy.sourceEnded(&self, failure: nil) else { return }
                    continue
                case .failed(let error):
                    guard policy.sourceEnded(&self, failure: error) else { return }
                    continue
                }
            }
            // Write what fits; sleep for room when some is left.
            let wasEmpty = ring.readableSamples == 0
            let n = ring.write(pending, frameSize: converter?.deviceChannels ?? 1)
            pending = UnsafeBufferPointer(rebasing: pending[n...])
            if n > 0 {
                output.ring(having: ring.readableSamples)
                if wasEmpty, let audioAfterSilence { audioAfterSilence() }
            }
            if !pending.isEmpty {
                let room = roomWanted(pending.count)
                sleep(for: policy, room: room) { ring.freeSamples >= room }
            }
        }
    }

    /// Sleeps until rung or woken, `done`, or the policy wants the thread.
    func sleep<Policy: ProducerPolicy>(for policy: Policy, room: Int = Doorbell.anything, until done: () -> Bool) {
        if let limit = policy.sleepLimit {
            bell.sleep(milliseconds: limit, awaiting: room) { done() || policy.needsAttention() }
        } else {
            bell.sleep(awaiting: room) { done() || policy.needsAttention() }
        }
    }

    /// Writes all of `samples` (a resampler's tail), sleeping for room; false when `stopped`.
    func push(_ samples: UnsafeBufferPointer<Int32>, channels: Int, stopped: () -> Bool) -> Bool {
        guard var base = samples.baseAddress else { return true }
        var remaining = samples.count
        while remaining > 0 {
            let n = ring.write(UnsafeBufferPointer(start: base, count: remaining), frameSize: channels)
            remaining -= n
            base += n
            if n > 0 { output.ring(having: ring.readableSamples) }
            if remaining > 0 {
                if stopped() { return false }
                let room = roomWanted(remaining)
                bell.sleep(awaiting: room) { ring.freeSamples >= room || stopped() }
            }
        }
        return true
    }

    /// Waits until the output has taken the cut numbered `generation`; false when `stopped`.
    /// The output rings when it takes a cut at the top of its loop; `afterWrites` for a ring
    /// whose cuts the mixer may also take as it renders (a stream's), so the output's ring
    /// after each write ends the wait.
    func awaitCut(_ generation: Int, afterWrites: Bool = false, stopped: () -> Bool) -> Bool {
        output.wake()
        while !ring.cutTaken(generation) {
            if stopped() { return false }
            bell.sleep(awaiting: afterWrites ? 1 : Doorbell.anything) { ring.cutTaken(generation) || stopped() }
        }
        return true
    }

    /// Room to wait for before writing `samples` more: a quarter of the ring (the output may
    /// keep up to half of it as history), or all of them if that is more (and the ring holds
    /// them).
    private func roomWanted(_ samples: Int) -> Int {
        min(ring.capacity, max(samples, ring.capacity / 4))
    }
}

/// What a producer's loop is for: where its blocks come from and what it does around them.
protocol ProducerPolicy {
    /// Carries out what was asked since the last block — commands, a hold, a new device — and
    /// sleeps while there is nothing to produce; may begin a source or change the converter.
    /// False ends the loop.
    mutating func attend(_ producer: inout Producer) -> Bool
    /// The next block of the current source (valid until the next call).
    mutating func nextBlock() -> SourceBlock
    /// The source has nothing more (`failure`: it failed). True to go on (the policy may have
    /// begun another source, or left a resampler's tail in `pending`), false to end the loop.
    mutating func sourceEnded(_ producer: inout Producer, failure: DecodeError?) -> Bool
    /// Something besides room or a block wants the thread (a command, a stop, a hold): it ends
    /// the producer's sleeps.
    func needsAttention() -> Bool
    /// How long a sleep may last, in milliseconds; nil for as long as it takes. A policy that
    /// watches something nobody rings for (a fade reaching 0) sleeps briefly.
    var sleepLimit: Int? { get }
}

/// What a producer's source has for it.
enum SourceBlock {
    case samples(UnsafeBufferPointer<Int32>)
    /// Nothing yet; more may come (a client's PCM).
    case waiting
    /// Everything the source had has been taken.
    case ended
    /// The source failed (a corrupt or truncated file); what came before it stands.
    case failed(DecodeError)
}
