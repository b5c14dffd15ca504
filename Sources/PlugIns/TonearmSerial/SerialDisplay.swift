import Synchronization
import SystemPackage
import TonearmBoard
import TonearmControlPlane
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

/// A display on a serial port, as a plug-in of the control plane: it follows the player, the
/// mixer, the options and the queue, shows the control plane's snapshot after each change
/// (only what it shows that changed goes out; nothing on a timer), and sends what it is told
/// (touches, a microcontroller's buttons) as commands, in order, from "NAME display on PORT".
///
/// One thread, "tonearm-display", owns the port: it opens it, sends the state, redraws what
/// must be ticked (an LCD's clock and scrolling), reads and decodes what the display sends.
/// A new snapshot is only stored for the thread, which is woken, so a slow or unplugged
/// display never holds the daemon up, and states that come faster than the display takes them
/// are skipped (the display gets the latest).
///
/// A port that is missing or goes away (EIO, ENXIO, a hang-up, a failed open) is closed and
/// opened again every `reopenInterval`, saying so once in the log; when it is back the whole
/// state is sent again. Memory stays bounded whatever the display sends: the drivers keep at
/// most a line or a frame of input, and output waits only for one drawing of the state plus
/// a few replies. Cancelled, `run` wakes and joins the thread; the port is closed.
public final class SerialDisplay: PlugIn {
    public let settings: SerialDisplaySettings
    /// "nextion display on /dev/ttyUSB0".
    public let name: String
    private let clock: @Sendable () -> Double
    private let mailbox: DisplayMailbox

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
        /// Snapshots handed to the thread (each one differed from the one before).
        public var states = 0
    }

    /// The parts of the state a display shows.
    public static let subsystems: Set<Subsystem> = [.player, .mixer, .options, .queue]

    /// Checks the settings (`SerialDisplaySettings.validate`); opens nothing. `clock` gives
    /// "now" to the drivers, on the clock of `NowPlayingInfo.timestamp`.
    public init(settings: SerialDisplaySettings, clock: @escaping @Sendable () -> Double = monotonicSeconds) throws(SerialError) {
        try settings.validate()
        let devices = DevicePoll()
        if let failure = devices.failure {
            throw SerialError(port: settings.port.path, message: "cannot start the display on \(settings.port.path): pipe: \(failure)")
        }
        self.settings = settings
        self.name = "\(settings.driver.name) display on \(settings.port.path)"
        self.clock = clock
        mailbox = DisplayMailbox(devices: devices)
    }

    public var statistics: Statistics { mailbox.shared.withLock { $0.statistics } }

    public func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let first = mailbox.shared.withLock { shared in
            defer { shared.running = true }
            return !shared.running
        }
        guard first else {
            log.warning("\(name) runs already")
            return
        }
        defer { mailbox.shared.withLock { $0.running = false } }
        // Subscribed before the snapshot is read: nothing is missed between them.
        let changes = plane.subscribe(Self.subsystems)
        show(await plane.snapshot())
        let forwarder = CommandForwarder()
        let (settings, clock, mailbox, name) = (settings, clock, mailbox, name)
        let loop = DeviceLoop(name: "tonearm-display", wake: mailbox.devices.wake) { isStopping in
            var loop = DisplayLoop(settings: settings, clock: clock, mailbox: mailbox, send: { forwarder.send($0, from: name) }, log: log)
            loop.run(isStopping: isStopping)
        }
        // Both until cancelled: the daemon stops.
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await forwarder.forward(to: plane, log: log) }
            group.addTask {
                for await _ in changes { self.show(await plane.snapshot()) }
            }
        }
        changes.cancel()
        loop.stop()
    }

    /// Stores `state` for the thread and wakes it, if it differs from the last one. Never
    /// waits for the port.
    private func show(_ state: ControlState) {
        let changed = mailbox.shared.withLock { shared in
            guard shared.state != state else { return false }
            shared.state = state
            shared.generation &+= 1
            shared.statistics.states += 1
            return true
        }
        if changed { mailbox.devices.wake() }
    }
}

/// What `SerialDisplay` and its thread share: the latest state behind a lock, and the wait
/// that the display wakes.
final class DisplayMailbox: Sendable {
    struct Shared {
        var state = ControlState()
        var generation = 0
        var running = false
        var statistics = SerialDisplay.Statistics()
    }

    let shared = Mutex(Shared())
    let devices: DevicePoll

    init(devices: DevicePoll) { self.devices = devices }

    func record(_ update: (inout SerialDisplay.Statistics) -> Void) {
        shared.withLock { update(&$0.statistics) }
    }
}

/// The display thread's work, on its own state.
private struct DisplayLoop {
    let settings: SerialDisplaySettings
    let clock: @Sendable () -> Double
    let mailbox: DisplayMailbox
    let send: @Sendable (Command) -> Void
    let log: PlugInLog

    var driver: any SerialDisplayDriver
    var port: SerialPort?
    /// Bytes for the port; those before `written` have gone.
    var output: [UInt8] = []
    var written = 0
    /// The display knows nothing (just opened, or it asked): send everything.
    var needsStart = true
    var shownGeneration = 0
    /// When to open the port again, and what has been said about it.
    var reopening: Reopening
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
         send: @escaping @Sendable (Command) -> Void, log: PlugInLog) {
        self.settings = settings
        self.clock = clock
        self.mailbox = mailbox
        self.send = send
        self.log = log
        driver = settings.makeDriver()
        reopening = Reopening(interval: settings.reopenInterval)
    }

    var pendingOutput: Int { output.count - written }
    var path: String { settings.port.path }

    mutating func run(isStopping: () -> Bool) {
        while !isStopping() {
            let (state, generation) = mailbox.shared.withLock { ($0.state, $0.generation) }
            if port == nil && reopening.isDue(at: monotonicSeconds()) { open() }
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
    mutating func prepareOutput(_ state: ControlState, _ generation: Int) {
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
        reopening.attempted(at: monotonicSeconds())
        do throws(SerialError) {
            port = try SerialPort(settings.port)
            (needsStart, output, written) = (true, [], 0)
            switch reopening.opened(path) {
            case .back:
                log.notice("serial port \(path) is back: sending the \(settings.driver.name) display everything again")
            case .first:
                log.info("opened serial port \(path) for the \(settings.driver.name) display at \(settings.port.baudRate) baud")
            }
            mailbox.record { $0.opens += 1 }
        } catch {
            if reopening.failed(path, "unavailable") {
                log.warning("\(error.message); trying again every \(reopening.intervalText)")
            }
        }
    }

    /// `why`: "serial port /dev/ttyUSB0 hung up", "cannot read from serial port …: …".
    mutating func lost(_ why: String) {
        port?.close()
        port = nil
        (output, written, needsStart) = ([], 0, true)
        log.warning("\(settings.driver.name) display lost: \(why); reopening every \(reopening.intervalText)")
        reopening.lost(path, as: "unavailable", at: monotonicSeconds())
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

    /// Sleeps until the display sends something, the port takes more output, a new state or a
    /// stop wakes us, a tick is due or it is time to open the port again.
    mutating func waitForWork() {
        var deadline: Double?
        if port == nil {
            deadline = reopening.nextAttempt
        } else if pendingOutput == 0, let due = driver.nextTick {
            // The tick is on the drivers' clock; the wait is on the monotonic one.
            deadline = monotonicSeconds() + max(0, due - clock())
        }
        var devices: [(FileDescriptor, PollEvents)] = []
        if let file = port?.file { devices.append((file, pendingOutput > 0 ? [.readable, .writable] : .readable)) }
        guard let ready = try? mailbox.devices.wait(for: devices, until: deadline), let events = ready.first else { return }
        if !events.intersection([.readable, .hangUp, .error]).isEmpty {
            readInput(hangUp: !events.intersection([.hangUp, .error, .invalid]).isEmpty)
        } else if events.contains(.invalid) {
            lost("serial port \(path) is not open (POLLNVAL)")
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
