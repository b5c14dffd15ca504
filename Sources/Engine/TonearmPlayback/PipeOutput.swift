#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import TonearmALSA
import TonearmAudio
import TonearmSystem

/// What the output thread writes to: an ALSA PCM, or a named pipe (`PipeOutput`).
protocol OutputDevice: AnyObject {
    var format: DeviceFormat { get }
    /// Frames of room found by the last `waitForRoom` that found enough.
    var availableFrames: Int { get }
    /// `wake`: a descriptor that ends the wait (`.woken`) when it becomes readable.
    func waitForRoom(_ frames: Int, timeoutMilliseconds: Int32, wake: Int32) -> PCMDevice.WriteOutcome?
    func write(_ frames: UnsafeRawPointer, count: Int, timeoutMilliseconds: Int32) -> PCMDevice.WriteOutcome
    func drain(timeoutMilliseconds: Int)
    func drop()
    /// Frames written and not yet played; nil when the device failed.
    func delayFrames() -> Int?
    /// Starts a device that holds fewer frames than start it by themselves.
    func startIfPrepared()
    /// Whether it takes back what it has not played; asked once, right after opening.
    func canRewind() -> Bool
    func rewindableFrames() -> Int
    func rewind(_ frames: Int) -> Int
    func forward(_ frames: Int) -> Int
}

extension PCMDevice: OutputDevice {}

extension PlaybackEngine {
    /// The output device `options.device` names: `pipe:PATH` for a named pipe, else an ALSA PCM.
    func openOutputDevice(_ request: OutputRequest) throws(ALSAError) -> any OutputDevice {
        let name = options.device
        if name.hasPrefix(PipeOutput.prefix) { return try PipeOutput(path: String(name.dropFirst(PipeOutput.prefix.count)), request: request) }
        return try PCMDevice(name: name, request: request)
    }
}

/// A named pipe (FIFO) as the output device, for Snapcast's pipe source: raw S16_LE, 48 kHz,
/// stereo (snapserver's default sample format), which the engine converts to as for any
/// device. A pipe has no clock, so the writes are paced by the monotonic clock as a sound card
/// of `bufferFrames` would take them.
///
/// It never blocks the output thread. The pipe is opened once for reading and writing, both
/// non-blocking, as mpd's fifo output does, and kept open for the life of the process: the
/// open never waits for a reader, and a reader that comes later (snapserver opens the pipe
/// again every second or so while it finds no writer) always finds a writer. A missing pipe is
/// an unavailable device, retried every reopen interval. With nobody reading, or a reader that
/// stops, the pipe fills (64 KiB, a third of a second): a write that finds no room within the
/// stall timeout is a stall, so the device is lost; and a pipe found half full or more when
/// the device is opened again is unavailable, until a reader has taken what waits in it.
final class PipeOutput: OutputDevice {
    static let prefix = "pipe:"
    static let bytesPerFrame = 4

    let path: String
    let format: DeviceFormat
    private let fd: Int32
    /// When the first frame written since the last start plays, by the clock; nil: nothing
    /// written since opened, drained or dropped.
    private var started: Double?
    private var written = 0
    private(set) var availableFrames = 0

    /// The descriptor of each pipe opened, by path: kept open from the first open on.
    private static let opened = Mutex<[String: Int32]>([:])
    /// Bytes a pipe holds (Linux's default capacity).
    static let capacity = 65536

    init(path: String, request: OutputRequest) throws(ALSAError) {
        self.path = path
        // Whatever happens to the pipe must fail a write, never end the daemon.
        signal(SIGPIPE, SIG_IGN)
        fd = try Self.open(path)
        var waiting: Int32 = 0
        if ioctl(fd, UInt(FIONREAD), &waiting) == 0, Int(waiting) >= Self.capacity / 2 {
            // What was written before is still there: nothing reads the pipe.
            throw ALSAError(device: path, operation: "open", code: -ENXIO, subject: "pipe (nothing reads it)")
        }
        format = DeviceFormat(sampleFormat: .s16LE, sampleRate: 48000, channels: 2,
                              periodFrames: request.periodFrames, bufferFrames: request.bufferFrames)
    }

    private static func open(_ path: String) throws(ALSAError) -> Int32 {
        try opened.withLock { (opened) throws(ALSAError) -> Int32 in
            if let fd = opened[path] { return fd }
            let fd = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw ALSAError(device: path, operation: "open", code: -errno, subject: "pipe") }
            var status = stat()
            guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else {
                close(fd)
                throw ALSAError(device: path, operation: "open", code: -EINVAL, subject: "pipe (it is not a FIFO)")
            }
            opened[path] = fd
            return fd
        }
    }

    // ── Render path (see OutputThread): no allocation, no lock; clock reads, a sleep while
    // waiting for room, and the pipe's write.

    /// Frames written and not yet played by the clock at `now`; a clock run past what was
    /// written (the thread was late) starts again from now.
    @inline(__always)
    private func fill(_ now: Double) -> Int {
        guard let started else { return 0 }
        let played = Int((now - started) * Double(format.sampleRate))
        if played >= written {
            self.started = nil
            written = 0
            return 0
        }
        return written - played
    }

    /// A pipe cannot take back what it was given.
    func canRewind() -> Bool { false }
    func rewindableFrames() -> Int { 0 }
    func rewind(_ frames: Int) -> Int { 0 }
    func forward(_ frames: Int) -> Int { 0 }
    func startIfPrepared() {}
    func delayFrames() -> Int? { fill(monotonicSeconds()) }

    /// Waits by the clock; `wake` is not watched (a pipe's buffer is small, see `canRewind`).
    @inline(__always)
    func waitForRoom(_ frames: Int, timeoutMilliseconds: Int32, wake: Int32) -> PCMDevice.WriteOutcome? {
        let room = format.bufferFrames - fill(monotonicSeconds())
        if room >= frames {
            availableFrames = room
            return nil
        }
        // Until that much has played, by the clock.
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let nanoseconds = deadline.tv_nsec + (frames - room) * 1_000_000_000 / format.sampleRate
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
        availableFrames = frames
        return nil
    }

    @inline(__always)
    func write(_ frames: UnsafeRawPointer, count: Int, timeoutMilliseconds: Int32) -> PCMDevice.WriteOutcome {
        let now = monotonicSeconds()
        _ = fill(now)
        var offset = 0
        let bytes = count * Self.bytesPerFrame
        // Whole frames only: a pipe may take part of a large write.
        while offset == 0 || offset % Self.bytesPerFrame != 0 {
            let n = Glibc.write(fd, frames + offset, bytes - offset)
            if n > 0 {
                offset += n
                if offset == bytes { break }
                continue
            }
            let error = errno
            if n < 0 && error == EINTR { continue }
            guard n < 0 && error == EAGAIN else { return .failed(-(n < 0 ? error : EIO)) }
            // Full: the reader is behind. Wait for room, at most the stall timeout.
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let polled = poll(&ready, 1, timeoutMilliseconds)
            if polled == 0 { return .stalled }
            if polled < 0 && errno != EINTR { return .failed(-errno) }
            if ready.revents & Int16(POLLERR | POLLHUP) != 0 { return .failed(-EPIPE) }
            if offset == 0 { return .wrote(0) }
        }
        if started == nil { started = now }
        let taken = offset / Self.bytesPerFrame
        written += taken
        return .wrote(taken)
    }

    // ── Render path ends.

    /// Lets what was written play out by the clock, for at most `timeoutMilliseconds`.
    func drain(timeoutMilliseconds: Int) {
        let left = min(Double(fill(monotonicSeconds())) / Double(format.sampleRate), Double(timeoutMilliseconds) / 1000)
        if left > 0 { usleep(UInt32(left * 1_000_000)) }
        drop()
    }

    /// What is in the pipe cannot be taken back; the clock starts again with the next write.
    func drop() {
        started = nil
        written = 0
    }
}
