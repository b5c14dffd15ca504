#if canImport(Glibc)
import Glibc
#endif
import TonearmBoard
import TonearmSystem

/// The "tonearm-input" thread of one source: one `poll` over the wake pipe and every open
/// device; opens what is missing every `retryInterval`. Only this thread touches it once it
/// runs.
final class InputDeviceLoop: @unchecked Sendable {
    private struct Device {
        let path: String
        let fd: Int32
        let isFIFO: Bool
        var framer = InputRecordFramer()
        var interpreter: InputKeyInterpreter
    }

    private let pattern: String
    private let isPattern: Bool
    private let keyMap: InputKeyMap
    private let retryInterval: Double
    private let grab: Bool
    private let signal: StopSignal
    private let send: @Sendable (BoardCommand) -> Void
    private let log: @Sendable (BoardLogLevel, String) -> Void

    private var devices: [Device] = []
    /// The last problem logged for each path that is not open, so each is logged once: a
    /// missing device is said to be missing when it first is, not every retry.
    private var reported: [String: String] = [:]
    /// The pattern matched nothing and that has been said (or a device it matched was lost,
    /// which said "waiting for it").
    private var emptyPatternReported = false
    private var nextAttempt = 0.0
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(
        byteCount: 64 * InputEvent.recordSize, alignment: MemoryLayout<Int>.alignment)

    init(
        pattern: String, keyMap: InputKeyMap, retryInterval: Double, grab: Bool, signal: StopSignal,
        send: @escaping @Sendable (BoardCommand) -> Void, log: @escaping @Sendable (BoardLogLevel, String) -> Void
    ) {
        self.pattern = pattern
        self.isPattern = pattern.contains { "*?[".contains($0) }
        self.keyMap = keyMap
        self.retryInterval = retryInterval
        self.grab = grab
        self.signal = signal
        self.send = send
        self.log = log
    }

    deinit { readBuffer.deallocate() }

    func run() {
        defer {
            for device in devices { close(device.fd) }
            devices = []
        }
        while !signal.isRaised {
            // A pattern is expanded again every time, so a second remote plugged in is read too.
            let attempting = isPattern || devices.isEmpty
            if attempting, monotonicSeconds() >= nextAttempt {
                openMissingDevices()
                nextAttempt = monotonicSeconds() + retryInterval
            }

            var descriptors = [pollfd(fd: signal.pipe.descriptor, events: Int16(POLLIN), revents: 0)]
            for device in devices { descriptors.append(pollfd(fd: device.fd, events: Int16(POLLIN), revents: 0)) }
            var timeout: Int32 = -1
            if isPattern || devices.isEmpty {
                timeout = Int32(max(0, min(60_000, ((nextAttempt - monotonicSeconds()) * 1000).rounded(.up))))
            }
            if signal.pipe.descriptor < 0 { timeout = timeout < 0 ? 100 : min(timeout, 100) }

            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0 {
                if errno != EINTR {
                    report(pattern, as: "poll", .error, "input \(pattern): poll failed (\(String(cString: strerror(errno))))")
                    sleepMilliseconds(100)
                }
                continue
            }
            if descriptors[0].revents != 0 { continue }  // stop() wrote to the pipe
            // Backwards, so losing a device does not move the ones still to be served.
            for index in devices.indices.reversed() where descriptors[index + 1].revents != 0 {
                serve(index, events: descriptors[index + 1].revents)
            }
        }
    }

    // MARK: Reading

    /// Reads once (poll says again if there is more, and a writer that never pauses cannot keep
    /// the thread from seeing stop); loses the device on end of file, a read error or an error
    /// poll reported.
    private func serve(_ index: Int, events: Int16) {
        var count: Int
        repeat {
            count = read(devices[index].fd, readBuffer.baseAddress, readBuffer.count)
        } while count < 0 && errno == EINTR
        if count > 0 {
            let events = devices[index].framer.events(appending: UnsafeRawBufferPointer(rebasing: readBuffer[..<count]))
            for event in events {
                if let command = devices[index].interpreter.command(for: event) { send(command) }
            }
        } else if count == 0 {
            // A FIFO whose last writer closed it; a device never says this.
            lose(index, reason: "end of file")
        } else if errno != EAGAIN && errno != EWOULDBLOCK {
            lose(index, reason: String(cString: strerror(errno)))
        } else if events & Int16(POLLERR | POLLNVAL) != 0 {
            lose(index, reason: "device error")
        } else if events & Int16(POLLHUP) != 0 && !devices[index].isFIFO {
            // A FIFO that hung up and has nothing to read has a new writer already: keep it.
            lose(index, reason: "hung up")
        }
    }

    private func lose(_ index: Int, reason: String) {
        var device = devices.remove(at: index)
        close(device.fd)
        for command in device.interpreter.releaseHeld() { send(command) }
        log(.warning, "input \(device.path): gone (\(reason)); waiting for it")
        // Not again when the next attempts find it missing.
        reported[device.path] = "missing"
        emptyPatternReported = true
        nextAttempt = monotonicSeconds() + retryInterval
    }

    // MARK: Opening

    private func openMissingDevices() {
        var paths = [pattern]
        if isPattern {
            paths = expandGlob(pattern)
            if paths.isEmpty {
                if !emptyPatternReported {
                    log(.warning, "input \(pattern): no device matches; waiting for one")
                    emptyPatternReported = true
                }
                return
            }
            emptyPatternReported = false
        }
        for path in paths where !devices.contains(where: { $0.path == path }) {
            openDevice(path)
        }
    }

    private func openDevice(_ path: String) {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let error = errno
            let reason = String(cString: strerror(error))
            switch error {
            case ENOENT, ENODEV, ENXIO:
                report(path, as: "missing", .warning, "input \(path): not there (\(reason)); waiting for it")
            case EACCES, EPERM:
                // udev gives a new node its group a moment after the kernel makes it: only a
                // refusal that lasts to the next attempt is worth the advice.
                if reported[path] != "access" && reported[path] != "access once" {
                    reported[path] = "access once"
                    return
                }
                let user = effectiveUserName()
                report(path, as: "access", .error,
                    "input \(path): cannot open (\(reason)); add the user \(user) to group input "
                        + "(usermod -aG input \(user)) or give it the device with a udev rule; trying again every "
                        + "\(formatSeconds(retryInterval))")
            default:
                report(path, as: "errno \(error)", .error,
                    "input \(path): cannot open (\(reason)); trying again every \(formatSeconds(retryInterval))")
            }
            return
        }
        // A regular file would be read from the start again after every end of file, sending
        // its keys over and over.
        var status = stat()
        let kind = fstat(fd, &status) == 0 ? status.st_mode & S_IFMT : 0
        guard kind == S_IFCHR || kind == S_IFIFO else {
            close(fd)
            let what = kind == S_IFREG ? "a regular file" : kind == S_IFDIR ? "a directory" : "not a device"
            report(path, as: "kind", .error,
                "input \(path): not an input device or a FIFO (\(what)); waiting for it to become one")
            return
        }
        devices.append(Device(path: path, fd: fd, isFIFO: kind == S_IFIFO, interpreter: InputKeyInterpreter(map: keyMap)))
        reported[path] = nil
        // Closing the descriptor (a lost device, stop) gives the grab back.
        guard grab && kind == S_IFCHR else {
            log(.info, "input \(path): opened")
            return
        }
        if ioctl(fd, evdevGrab, 1 as CInt) == 0 {
            log(.info, "input \(path): opened and grabbed (its keys reach no other reader)")
        } else {
            let error = errno
            let holder = error == EBUSY ? ": another program holds it" : ""
            log(.warning, "input \(path): opened, but cannot grab it (\(String(cString: strerror(error)))\(holder)); "
                + "its keys reach other readers too")
        }
    }

    /// Logs `message` unless `problem` is what was last logged for `path`.
    private func report(_ path: String, as problem: String, _ level: BoardLogLevel, _ message: String) {
        guard reported[path] != problem else { return }
        reported[path] = problem
        log(level, message)
    }
}

/// EVIOCGRAB, `_IOW('E', 0x90, int)` in <linux/input.h>: a macro Swift cannot import.
private let evdevGrab = UInt(0x4004_4590)

/// The paths `pattern` matches now, sorted (glob(3)); none when it matches nothing.
func expandGlob(_ pattern: String) -> [String] {
    var matches = glob_t()
    defer { globfree(&matches) }
    guard glob(pattern, 0, nil, &matches) == 0 else { return [] }
    return (0..<Int(matches.gl_pathc)).compactMap { matches.gl_pathv[$0].map { String(cString: $0) } }
}

/// The user the daemon runs as, for the fix in a permission error.
private func effectiveUserName() -> String {
    let uid = geteuid()
    var buffer = [CChar](repeating: 0, count: 1024)
    let name = buffer.withUnsafeMutableBufferPointer { buffer -> String? in
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        guard getpwuid_r(uid, &entry, buffer.baseAddress!, buffer.count, &result) == 0, result != nil,
            let name = entry.pw_name
        else { return nil }
        return String(cString: name)
    }
    return name ?? "with uid \(uid)"
}

private func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
}
