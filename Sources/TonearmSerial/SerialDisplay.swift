#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import TonearmBoard
import TonearmSystem

/// A serial display as a profile's `[display]` describes it.
public struct SerialDisplaySettings: Sendable, Equatable {
    public enum Driver: Sendable, Equatable {
        /// The text protocol for custom microcontrollers (`LineProtocol`).
        case line
        /// A character LCD behind a SerLCD backpack (`HD44780Driver`).
        case hd44780(HD44780Settings)
        /// A Nextion HMI (`NextionDriver`).
        case nextion(NextionSettings)

        /// "line", "hd44780", "nextion".
        public var name: String {
            switch self {
            case .line: "line"
            case .hd44780: "hd44780"
            case .nextion: "nextion"
            }
        }
    }

    public var port: SerialPortSettings
    public var driver: Driver
    /// Seconds between attempts to open a port that is missing or went away.
    public var reopenInterval: Double

    public init(port: SerialPortSettings, driver: Driver = .line, reopenInterval: Double = 1) {
        self.port = port
        self.driver = driver
        self.reopenInterval = reopenInterval
    }

    /// Refuses what can never work (a baud rate termios cannot set, an LCD size that does
    /// not exist, a component name that is not one, a touch mapped twice) before anything is
    /// opened.
    public func validate() throws(SerialError) {
        try port.validate()
        switch driver {
        case .line: break
        case .hd44780(let lcd): try lcd.validate(port: port.path)
        case .nextion(let nextion): try nextion.validate(port: port.path)
        }
    }

    func makeDriver() -> any SerialDisplayDriver {
        switch driver {
        case .line: LineProtocolDriver()
        case .hd44780(let lcd): HD44780Driver(settings: lcd)
        case .nextion(let nextion): NextionDriver(settings: nextion)
        }
    }
}

/// A display on a serial port: shows what the daemon publishes and sends what it is told
/// (touches, a microcontroller's buttons) as board commands.
///
/// One thread, "tonearm-display", owns the port: it opens it, sends the state, redraws what
/// must be ticked (an LCD's clock and scrolling), reads and decodes what the display sends.
/// `show` only stores the latest state and wakes the thread, so a slow or unplugged display
/// never holds the daemon up, and states that come faster than the display takes them are
/// skipped (the display gets the latest).
///
/// A port that is missing or goes away (EIO, ENXIO, a hang-up, a failed open) is closed and
/// opened again every `reopenInterval`, saying so once in the log; when it is back the whole
/// state is sent again. Memory stays bounded whatever the display sends: the drivers keep at
/// most a line or a frame of input, and output waits only for one drawing of the state plus
/// a few replies.
public final class SerialDisplay: BoardCommandSource, BoardDisplayPublisher {
    public let settings: SerialDisplaySettings
    /// "nextion display on /dev/ttyUSB0".
    public let name: String
    private let clock: @Sendable () -> Double
    private let mailbox: DisplayMailbox
    /// nil before `start` and after `stop`.
    private let thread = Mutex<NamedThread?>(nil)

    /// What the thread has done, for `doctor` and tests.
    public struct Statistics: Sendable, Equatable {
        /// Times the port was opened.
        public var opens = 0
        /// Times an open port went away.
        public var losses = 0
        public var bytesRead = 0
        public var bytesWritten = 0
        public var commands = 0
        /// Replies dropped (over four a second, or while the display did not read).
        public var repliesDropped = 0
        /// The most output that waited for the port at once.
        public var largestPendingOutput = 0
    }

    /// Checks the settings (`SerialDisplaySettings.validate`); opens nothing. `clock` gives
    /// "now" to the drivers, on the clock of `BoardDisplayState.timestamp`.
    public init(settings: SerialDisplaySettings, clock: @escaping @Sendable () -> Double = monotonicSeconds) throws(SerialError) {
        try settings.validate()
        let wake = WakePipe()
        if let failure = wake.failure {
            throw SerialError(port: settings.port.path, message: "cannot start the display on \(settings.port.path): pipe: \(failure)")
        }
        self.settings = settings
        self.name = "\(settings.driver.name) display on \(settings.port.path)"
        self.clock = clock
        mailbox = DisplayMailbox(wake: wake)
    }

    deinit { stop() }

    public var statistics: Statistics { mailbox.shared.withLock { $0.statistics } }

    /// Starts the thread; it opens the port. Once: later calls, and calls after `stop`, do
    /// nothing.
    public func start(send: @escaping @Sendable (BoardCommand) -> Void, log: @escaping @Sendable (BoardLogLevel, String) -> Void) {
        let (settings, clock, mailbox) = (settings, clock, mailbox)
        thread.withLock { thread in
            guard thread == nil, !mailbox.shared.withLock({ $0.stopping }) else { return }
            thread = NamedThread(name: "tonearm-display") {
                var loop = DisplayLoop(settings: settings, clock: clock, mailbox: mailbox, send: send, log: log)
                loop.run()
            }
        }
    }

    /// Stores `state` and wakes the thread. Never waits for the port.
    public func show(_ state: BoardDisplayState) {
        mailbox.shared.withLock {
            $0.state = state
            $0.generation &+= 1
        }
        mailbox.wake.wake()
    }

    /// Wakes the thread and waits for it; the port is closed. Idempotent.
    public func stop() {
        mailbox.shared.withLock { $0.stopping = true }
        let running = thread.withLock { thread in
            defer { thread = nil }
            return thread
        }
        guard let running else { return }
        precondition(!running.isCurrent, "SerialDisplay.stop() called on its own thread")
        mailbox.wake.wake()
        running.join()
    }
}

/// What `SerialDisplay` and its thread share: the latest state behind a lock, and the pipe
/// that wakes the thread. The thread holds this, not the display, so a display nobody holds
/// any more is stopped by its deinit.
final class DisplayMailbox: Sendable {
    struct Shared {
        var state = BoardDisplayState()
        var generation = 0
        var stopping = false
        var statistics = SerialDisplay.Statistics()
    }

    let shared = Mutex(Shared())
    let wake: WakePipe

    init(wake: WakePipe) { self.wake = wake }

    func record(_ update: (inout SerialDisplay.Statistics) -> Void) {
        shared.withLock { update(&$0.statistics) }
    }
}

/// The display thread's work, on its own state.
private struct DisplayLoop {
    let settings: SerialDisplaySettings
    let clock: @Sendable () -> Double
    let mailbox: DisplayMailbox
    let send: @Sendable (BoardCommand) -> Void
    let log: @Sendable (BoardLogLevel, String) -> Void

    var driver: any SerialDisplayDriver
    var port: SerialPort?
    /// Bytes for the port; those before `written` have gone.
    var output: [UInt8] = []
    var written = 0
    /// The display knows nothing (just opened, or it asked): send everything.
    var needsStart = true
    var shownGeneration = 0
    /// When to try opening the port again (monotonic).
    var nextOpen = 0.0
    /// The port is missing or went away and the log has been told: an outage is logged once,
    /// however many opens fail.
    var outage = false
    var everOpened = false
    /// Replies allowed now: four a second.
    var replyAllowance = 4.0
    var replyAllowanceAt = 0.0
    var input = [UInt8](repeating: 0, count: 4096)

    static let maxRepliesPerSecond = 4.0
    /// Replies wait only behind this much output.
    static let replyOutputLimit = 1024
    /// Read at most this much before writing again, so replies and state keep flowing while a
    /// display floods us.
    static let readsPerTurn = 16

    init(settings: SerialDisplaySettings, clock: @escaping @Sendable () -> Double, mailbox: DisplayMailbox,
         send: @escaping @Sendable (BoardCommand) -> Void, log: @escaping @Sendable (BoardLogLevel, String) -> Void) {
        self.settings = settings
        self.clock = clock
        self.mailbox = mailbox
        self.send = send
        self.log = log
        driver = settings.makeDriver()
    }

    var pendingOutput: Int { output.count - written }
    var path: String { settings.port.path }

    mutating func run() {
        while true {
            mailbox.wake.drain()
            let (state, generation, stopping) = mailbox.shared.withLock { ($0.state, $0.generation, $0.stopping) }
            if stopping { break }
            if port == nil && monotonicSeconds() >= nextOpen { open() }
            if port != nil {
                flush()  // what the port did not take last time, then what is new
                prepareOutput(state, generation)
                flush()
            }
            waitForWork()
        }
        port?.close()
    }

    /// Once the last output has gone: everything (after an open), the new state, or a tick.
    mutating func prepareOutput(_ state: BoardDisplayState, _ generation: Int) {
        guard pendingOutput == 0 else { return }
        output.removeAll(keepingCapacity: true)
        written = 0
        let now = clock()
        if needsStart {
            output = driver.start(state, now: now)
            (needsStart, shownGeneration) = (false, generation)
        } else if generation != shownGeneration {
            output = driver.update(state, now: now)
            shownGeneration = generation
        } else if let due = driver.nextTick, now >= due {
            output = driver.tick(now: now)
        }
        let pending = output.count
        if pending > 0 { mailbox.record { $0.largestPendingOutput = max($0.largestPendingOutput, pending) } }
    }

    mutating func open() {
        do throws(SerialError) {
            port = try SerialPort(settings.port)
            (needsStart, output, written) = (true, [], 0)
            if outage && everOpened {
                log(.notice, "serial port \(path) is back: sending the \(settings.driver.name) display everything again")
            } else {
                log(.info, "opened serial port \(path) for the \(settings.driver.name) display at \(settings.port.baudRate) baud")
            }
            (outage, everOpened) = (false, true)
            mailbox.record { $0.opens += 1 }
        } catch {
            if !outage {
                log(.warning, "\(error.message); trying again every \(seconds(settings.reopenInterval))")
                outage = true
            }
            nextOpen = monotonicSeconds() + settings.reopenInterval
        }
    }

    /// `why`: "serial port /dev/ttyUSB0 hung up", "cannot read from serial port …: …".
    mutating func lost(_ why: String) {
        port?.close()
        port = nil
        (output, written, needsStart) = ([], 0, true)
        log(.warning, "\(settings.driver.name) display lost: \(why); reopening every \(seconds(settings.reopenInterval))")
        outage = true
        nextOpen = monotonicSeconds() + settings.reopenInterval
        mailbox.record { $0.losses += 1 }
    }

    mutating func flush() {
        guard let port else { return }
        while pendingOutput > 0 {
            let result = output.withUnsafeBytes { raw in
                Result { () throws(SerialError) in try port.write(UnsafeRawBufferPointer(rebasing: raw[written...])) }
            }
            guard case .success(let n) = result else {
                if case .failure(let error) = result { lost(error.message) }
                return
            }
            if n == 0 { break }
            written += n
            mailbox.record { $0.bytesWritten += n }
        }
    }

    /// Sleeps in `poll` until the display sends something, the port takes more output, `show`
    /// or `stop` wakes us, a tick is due or it is time to open the port again.
    mutating func waitForWork() {
        var timeout = 1.0
        if port == nil {
            timeout = max(0, nextOpen - monotonicSeconds())
        } else if pendingOutput == 0, let due = driver.nextTick {
            timeout = min(timeout, max(0, due - clock()))
        }
        var fds = [pollfd(fd: mailbox.wake.descriptor, events: Int16(POLLIN), revents: 0)]
        if let port {
            let events = POLLIN | (pendingOutput > 0 ? POLLOUT : 0)
            fds.append(pollfd(fd: port.descriptor, events: Int16(events), revents: 0))
        }
        let milliseconds = Int32(min(1000, max(1, (timeout * 1000).rounded(.up))))
        _ = poll(&fds, nfds_t(fds.count), milliseconds)
        if fds.count > 1 {
            let revents = Int32(fds[1].revents)
            if revents & (POLLIN | POLLHUP | POLLERR) != 0 {
                readInput(hangUp: revents & (POLLHUP | POLLERR | POLLNVAL) != 0)
            } else if revents & POLLNVAL != 0 {
                lost("serial port \(path) is not open (POLLNVAL)")
            }
        }
    }

    /// Reads what the display sent (up to `readsPerTurn` buffers) and acts on it. `hangUp`:
    /// poll said the port hung up; what it still holds is read first.
    mutating func readInput(hangUp: Bool = false) {
        guard let port else { return }
        for _ in 0..<Self.readsPerTurn {
            let result = input.withUnsafeMutableBytes { raw in
                Result { () throws(SerialError) in try port.read(into: raw) }
            }
            guard case .success(let n) = result else {
                if case .failure(let error) = result { lost(error.message) }
                return
            }
            if n == 0 { break }
            mailbox.record { $0.bytesRead += n }
            let inputs = input.withUnsafeBytes { driver.receive(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
            for item in inputs { act(on: item) }
        }
        if hangUp { lost("serial port \(path) hung up") }
    }

    mutating func act(on input: DisplayInput) {
        switch input {
        case .command(let command):
            mailbox.record { $0.commands += 1 }
            send(command)
        case .resend:
            needsStart = true
        case .reply(let bytes):
            let now = monotonicSeconds()
            replyAllowance = min(Self.maxRepliesPerSecond, replyAllowance + (now - replyAllowanceAt) * Self.maxRepliesPerSecond)
            replyAllowanceAt = now
            guard replyAllowance >= 1, pendingOutput + bytes.count <= Self.replyOutputLimit else {
                mailbox.record { $0.repliesDropped += 1 }
                return
            }
            replyAllowance -= 1
            output += bytes
        }
    }
}

/// "1 s", "0.25 s".
private func seconds(_ value: Double) -> String {
    value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
}

