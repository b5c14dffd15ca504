import TonearmAudio

/// Takes back what the device has not played, so that a change to the mix is heard within the
/// guard rather than a buffer later (a buffer of 100 ms or more, on a device that can rewind).
///
/// It knows where the device's write position is on the mixer's clock (`deviceEnd`), and
/// decides when to take back and to where: on a change to the mix (a gain target, a stream that
/// starts), on a seek or skip once its new audio is there, on a pause back to where the player
/// went silent, and once, to rehearse, when a device just opened is full. A take-back leaves
/// the device the guard, takes back from it what follows, and moves the mixer back to where it
/// rendered that from (`Mixer.rewind`): what follows is rendered again with the mix as it is
/// now. The periods after it are short at first (`refill`), so that a slow render never finds
/// the device dry.
///
/// The output thread owns it and keeps what is the loop's: what the device holds, whether it
/// is heard and paced, and the counts of frames written; it passes them in. The arithmetic
/// (`takeBackFloor`, `rendersAgain`, `nextRefill`, `seekAudioReady`, `seekWait`) is apart from
/// the calls on the device and the mixer (`takeBack`). Nothing here locks or logs, and nothing
/// allocates but `opened` (the mixer's history); what runs on the render path (`wrote`,
/// `devicePlayed`, `refill`) is arithmetic and the mixer's letting go of its history.
struct Rewinder {
    let mixer: Mixer
    /// What a take-back leaves the device to play (`rewindGuardMilliseconds`).
    let guardMilliseconds: Int
    /// Whether the device takes back what it has not played, and the mixer keeps a history.
    var isOn = false
    /// Where the device's write position is, on the mixer's clock (`Mixer.renderedFrames`).
    private(set) var deviceEnd = 0
    /// The mix changes (`mixGeneration`) taken so far.
    private var mixSeen = 0
    /// A seek or skip was taken on a device that rewinds: once the new audio is there, what the
    /// device has of the old beyond the guard is taken back.
    private(set) var cutWaiting = false
    /// After a take-back the device holds little: the periods that follow are short, written
    /// before it reaches them, each twice the one before until a whole period (0: none).
    private(set) var refillFrames = 0
    /// Whether the device opened last has had its rehearsal (`rehearse`).
    private var rehearsed = false

    init(mixer: Mixer, guardMilliseconds: Int) {
        self.mixer = mixer
        self.guardMilliseconds = guardMilliseconds
    }

    /// What a take-back leaves the device to play, in frames.
    func guardFrames(_ format: DeviceFormat) -> Int {
        max(1, format.sampleRate * guardMilliseconds / 1000)
    }

    /// What the device is left to play when a seek takes back the old audio with what little
    /// of the new there is; below it, a device playing out is not written to again.
    func seekLeadFrames(_ format: DeviceFormat) -> Int {
        4 * guardFrames(format)
    }

    // MARK: The device as the output thread opens, writes and drops it

    /// A device was opened (`isOn` says whether it takes back), `pending` frames rendered and
    /// not yet written: the mixer keeps a history as long as its buffer and a period, and the
    /// device is rehearsed once it is full. Allocates: not on the render path.
    mutating func opened(_ format: DeviceFormat, pending: Int) {
        mixer.keepHistory(frames: isOn ? format.bufferFrames + format.periodFrames : 0)
        deviceEnd = mixer.renderedFrames - pending
        cutWaiting = false
        rehearsed = false
    }

    /// The device took `frames`.
    @inline(__always)
    mutating func wrote(_ frames: Int) {
        deviceEnd += frames
    }

    /// The device has room, and holds `fill` frames still to play: what it has played is never
    /// rendered again.
    @inline(__always)
    func devicePlayed(holding fill: Int) {
        if isOn { mixer.releaseHistory(before: deviceEnd - fill) }
    }

    /// Nothing the device held will be rendered again (dropped, drained, played out, underrun),
    /// `pending` frames rendered and not yet written: the mixer forgets its history, and no
    /// seek waits.
    mutating func forget(pending: Int) {
        mixer.forgetHistory()
        refillFrames = 0
        deviceEnd = mixer.renderedFrames - pending
        cutWaiting = false
    }

    /// A seek or skip was taken on a device that rewinds: it waits for its new audio
    /// (`seekAudioReady`), then takes back the old.
    mutating func awaitSeekAudio() {
        cutWaiting = true
    }

    /// The device was closed for a new format: no seek waits on it.
    mutating func closed() {
        cutWaiting = false
    }

    // MARK: Deciding

    /// The frames of the period rendered next, of the `frames` it would hold: after a
    /// take-back, short ones, each twice the one before, until a whole period.
    @inline(__always)
    mutating func refill(_ frames: Int, _ format: DeviceFormat) -> Int {
        guard refillFrames > 0 else { return frames }
        let short = min(frames, refillFrames)
        refillFrames = Rewinder.nextRefill(after: refillFrames, periodFrames: format.periodFrames)
        return short
    }

    /// The refill after one of `frames`: twice as long, or none (0) once that is a period.
    static func nextRefill(after frames: Int, periodFrames: Int) -> Int {
        2 * frames < periodFrames ? 2 * frames : 0
    }

    /// Whether the device is to be rehearsed now: once per device opened, once it has taken a
    /// buffer (`writtenSinceStart` frames since it started).
    func rehearsalDue(writtenSinceStart: Int, _ format: DeviceFormat) -> Bool {
        !rehearsed && writtenSinceStart >= format.bufferFrames
    }

    /// Whether there is a change to the mix to take: `generation` (`mixGeneration`) is one not
    /// taken yet, or a seek waits for its new audio. It is taken.
    mutating func takeMixChange(_ generation: Int) -> Bool {
        guard generation != mixSeen || cutWaiting else { return false }
        mixSeen = generation
        return true
    }

    /// Whether a seek's new audio is enough to take back the old for: a period of it, so that the
    /// device does not run dry while the decoder goes on; or all there is (the queue ends); or
    /// whatever there is once the device (asked only then) is down to the lead.
    func seekAudioReady(_ device: any OutputDevice, _ format: DeviceFormat, readableSamples: Int,
                        queueEnded: Bool) -> Bool {
        if readableSamples >= format.periodFrames * format.channels { return true }
        if queueEnded { return true }
        return readableSamples > 0 && (device.delayFrames() ?? 0) <= seekLeadFrames(format)
    }

    /// How a seek waits for its new audio while the device plays `delay` frames of the old:
    /// for a period of it until the device is down to the lead (`left` frames from now), then
    /// for any of it (`left` ≤ 0). `wanted` is in samples.
    func seekWait(delay: Int, _ format: DeviceFormat) -> (left: Int, wanted: Int) {
        let left = delay - seekLeadFrames(format)
        return (left, left > 0 ? format.periodFrames * format.channels : format.channels)
    }

    /// The earliest frame a take-back may go back to: the guard is left to the device, and no
    /// more is taken than it can give back (`rewindable`) or than `floor` allows; nil when it
    /// cannot give back more than the guard.
    static func takeBackFloor(deviceEnd: Int, rewindable: Int, guardFrames: Int, notBefore floor: Int) -> Int? {
        guard rewindable > guardFrames else { return nil }
        return max(floor, deviceEnd - rewindable + guardFrames)
    }

    /// Whether going back to `point` renders anything again: it is before the device's end,
    /// or at it with frames rendered after it that the device never took (a seek dropped them).
    static func rendersAgain(from point: Int, deviceEnd: Int, renderedFrames: Int) -> Bool {
        point < deviceEnd || (point == deviceEnd && renderedFrames > deviceEnd)
    }

    // MARK: Taking back

    /// What a rewind did.
    enum Rewind: Equatable {
        /// Nothing to take back, or the device or the mixer cannot go back far enough to matter.
        case unchanged
        case tookBack(frames: Int)
        /// A seek's old audio cannot be taken back: the device is to be dropped.
        case seekAbandoned
    }

    /// Takes back what the device has not played beyond the guard, and moves the mixer back to
    /// where it rendered that from: what follows is rendered again, with the mix as it is now.
    /// A seek waiting for its new audio (`seekAudioReady` first) takes back the old, or has the
    /// device dropped when it cannot. `heard`, `paced`: as for `takeBack`.
    mutating func rewind(_ device: any OutputDevice, _ format: DeviceFormat, heard: Bool, paced: Bool) -> Rewind {
        let abandoning = cutWaiting
        cutWaiting = false
        if let frames = takeBack(device, format, silent: false, heard: heard, paced: paced) { return .tookBack(frames: frames) }
        return abandoning ? .seekAbandoned : .unchanged
    }

    /// Once a device just opened is full (`rehearsalDue`): the mixing path is run over silence
    /// (into `scratch`, a period's room), and the last period written is taken back and
    /// rendered again — the same audio, bit for bit — while the device holds the rest of its
    /// buffer. The first command's rewind then runs code and touches memory that were run and
    /// touched already, with only the guard to spare. The frames taken back (not a rewind to
    /// count), or nil.
    mutating func rehearse(_ device: any OutputDevice, _ format: DeviceFormat, scratch: UnsafeMutableRawPointer,
                           heard: Bool, paced: Bool) -> Int? {
        rehearsed = true
        guard heard else { return nil }
        mixer.warmUp(into: scratch)
        return takeBack(device, format, silent: false, notBefore: deviceEnd - format.periodFrames, heard: heard, paced: paced)
    }

    /// Takes the device and the mixer back to the first noted point after what the device must
    /// still play (the guard) — with `silent`, the first where the player had faded out — so
    /// that what follows is rendered again: the frames taken back. Nil, changing nothing, when
    /// there is no such point; or when what is written is not heard (`heard`: an interruption)
    /// or the device plays faster than real time (`paced`), since nothing then is heard late.
    mutating func takeBack(_ device: any OutputDevice, _ format: DeviceFormat, silent: Bool, notBefore floor: Int = 0,
                           heard: Bool, paced: Bool) -> Int? {
        guard heard, paced else { return nil }
        let guardFrames = guardFrames(format)
        guard let earliest = Rewinder.takeBackFloor(deviceEnd: deviceEnd, rewindable: device.rewindableFrames(),
                                                    guardFrames: guardFrames, notBefore: floor),
              let point = mixer.rewindPoint(notBefore: earliest, silent: silent),
              Rewinder.rendersAgain(from: point, deviceEnd: deviceEnd, renderedFrames: mixer.renderedFrames)
        else { return nil }
        let frames = deviceEnd - point
        let taken = frames > 0 ? device.rewind(frames) : 0
        guard taken == frames, mixer.rewind(to: point) else {
            // Put back what was taken: the device plays on as it was.
            if taken > 0 { _ = device.forward(taken) }
            return nil
        }
        deviceEnd = point
        refillFrames = max(Mixer.granule, guardFrames)
        return frames
    }
}
