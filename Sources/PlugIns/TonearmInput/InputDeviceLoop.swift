import SystemPackage
import TonearmControlPlane
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// The "tonearm-input" thread of one source: one wait over every open device; opens what is
/// missing every `retryInterval`. Only this thread touches it once it runs.
final class InputDeviceLoop: @unchecked Sendable {
    private struct Device {
        let path: String
        let descriptor: FileDescriptor
        let isFIFO: Bool
        var framer = InputRecordFramer()
        var interpreter: InputKeyInterpreter
    }

    private let pattern: String
    private let isPattern: Bool
    private let keyMap: InputKeyMap
    private let grab: Bool
    private let poll: DevicePoll
    private let send: @Sendable (Command, String) -> Void
    private let log: PlugInLog

    private var devices: [Device] = []
    /// When to try again, and what has been said about each path that is not open (the
    /// pattern itself for "no device matches").
    private var reopening: Reopening
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(
        byteCount: 64 * InputEvent.recordSize, alignment: MemoryLayout<Int>.alignment)

    init(
        pattern: String, keyMap: InputKeyMap, retryInterval: Double, grab: Bool, devices: DevicePoll,
        send: @escaping @Sendable (Command, String) -> Void, log: PlugInLog
    ) {
        self.pattern = pattern
        self.isPattern = pattern.contains { "*?[".contains($0) }
        self.keyMap = keyMap
        self.grab = grab
        self.poll = devices
        self.send = send
        self.log = log
        reopening = Reopening(interval: retryInterval)
    }

    deinit { readBuffer.deallocate() }

    func run(isStopping: () -> Bool) {
        defer {
            for device in devices { try? device.descriptor.close() }
            devices = []
        }
        while !isStopping() {
            // A pattern is expanded again every time, so a second remote plugged in is read too.
            let attempting = isPattern || devices.isEmpty
            if attempting, reopening.isDue(at: monotonicSeconds()) {
                openMissingDevices()
                reopening.attempted(at: monotonicSeconds())
            }
            let ready: [PollEvents]
            do throws(Errno) {
                ready = try poll.wait(for: devices.map { ($0.descriptor, .readable) }, until: attempting ? reopening.nextAttempt : nil)
            } catch {
                if reopening.failed(pattern, "poll") { log.error("input \(pattern): poll failed (\(error))") }
                sleepMilliseconds(100)
                continue
            }
            // Backwards, so losing a device does not move the ones still to be served.
            for index in devices.indices.reversed() where !ready[index].isEmpty {
                serve(index, events: ready[index])
            }
        }
    }

    // MARK: Reading

    /// Reads once (poll says again if there is more, and a writer that never pauses cannot keep
    /// the thread from seeing stop); loses the device on end of file, a read error or an error
    /// poll reported.
    private func serve(_ index: Int, events: PollEvents) {
        let read: Int?
        do throws(Errno) {
            read = try devices[index].descriptor.readAvailable(into: readBuffer)
        } catch {
            lose(index, reason: error.description)
            return
        }
        guard let count = read else {
            if events.contains(.error) || events.contains(.invalid) {
                lose(index, reason: "device error")
            } else if events.contains(.hangUp) && !devices[index].isFIFO {
                // A FIFO that hung up and has nothing to read has a new writer already: keep it.
                lose(index, reason: "hung up")
            }
            return
        }
        guard count > 0 else {
            // A FIFO whose last writer closed it; a device never says this.
            lose(index, reason: "end of file")
            return
        }
        let path = devices[index].path
        for event in devices[index].framer.events(appending: UnsafeRawBufferPointer(rebasing: readBuffer[..<count])) {
            if let command = devices[index].interpreter.command(for: event) { send(command, "input \(path)") }
        }
    }

    private func lose(_ index: Int, reason: String) {
        var device = devices.remove(at: index)
        try? device.descriptor.close()
        for command in device.interpreter.releaseHeld() { send(command, "input \(device.path)") }
        log.warning("input \(device.path): gone (\(reason)); waiting for it")
        // Not again when the next attempts find it missing, or the pattern matching nothing.
        reopening.lost(device.path, as: "missing", at: monotonicSeconds())
        if isPattern { reopening.lost(pattern, as: "no match", at: monotonicSeconds()) }
    }

    // MARK: Opening

    private func openMissingDevices() {
        var paths = [pattern]
        if isPattern {
            paths = expandGlob(pattern)
            if paths.isEmpty {
                if reopening.failed(pattern, "no match") { log.warning("input \(pattern): no device matches; waiting for one") }
                return
            }
            reopening.forget(pattern)
        }
        for path in paths where !devices.contains(where: { $0.path == path }) {
            openDevice(path)
        }
    }

    private func openDevice(_ path: String) {
        let descriptor: FileDescriptor
        do throws(Errno) {
            descriptor = try FileDescriptor.open(path, .readOnly, options: [.nonBlocking, .closeOnExec])
        } catch {
            switch error {
            case .noSuchFileOrDirectory, .operationNotSupportedByDevice, .noSuchAddressOrDevice:
                if reopening.failed(path, "missing") { log.warning("input \(path): not there (\(error)); waiting for it") }
            case .permissionDenied, .notPermitted:
                // Only a refusal that lasts to the next attempt is worth the advice.
                if reopening.failed(path, "access", after: 2) {
                    let user = effectiveUserName()
                    log.error(
                        "input \(path): cannot open (\(error)); add the user \(user) to group input "
                            + "(usermod -aG input \(user)) or give it the device with a udev rule; trying again every "
                            + reopening.intervalText)
                }
            default:
                if reopening.failed(path, "errno \(error.rawValue)") {
                    log.error("input \(path): cannot open (\(error)); trying again every \(reopening.intervalText)")
                }
            }
            return
        }
        // A regular file would be read from the start again after every end of file, sending
        // its keys over and over.
        var status = stat()
        let kind = fstat(descriptor.rawValue, &status) == 0 ? status.st_mode & S_IFMT : 0
        guard kind == S_IFCHR || kind == S_IFIFO else {
            try? descriptor.close()
            let what = kind == S_IFREG ? "a regular file" : kind == S_IFDIR ? "a directory" : "not a device"
            if reopening.failed(path, "kind") {
                log.error("input \(path): not an input device or a FIFO (\(what)); waiting for it to become one")
            }
            return
        }
        devices.append(Device(path: path, descriptor: descriptor, isFIFO: kind == S_IFIFO, interpreter: InputKeyInterpreter(map: keyMap)))
        _ = reopening.opened(path)
        // Closing the descriptor (a lost device, stop) gives the grab back.
        guard grab && kind == S_IFCHR else {
            log.info("input \(path): opened")
            return
        }
        if ioctl(descriptor.rawValue, evdevGrab, 1 as CInt) == 0 {
            log.info("input \(path): opened and grabbed (its keys reach no other reader)")
        } else {
            let error = Errno(rawValue: errno)
            let holder = error == .resourceBusy ? ": another program holds it" : ""
            log.warning("input \(path): opened, but cannot grab it (\(error)\(holder)); its keys reach other readers too")
        }
    }
}

/// EVIOCGRAB, `_IOW('E', 0x90, int)` in <linux/input.h>: a macro Swift cannot import.
private let evdevGrab = UInt(0x4004_4590)

extension InputEventSource {
    /// The paths `pattern` matches now, sorted (glob(3)); none when it matches nothing.
    public static func paths(matching pattern: String) -> [String] { expandGlob(pattern) }

    /// Why `path` cannot be opened for reading ("Permission denied"), or nil when it can; it
    /// is closed again at once.
    public static func openingProblem(_ path: String) -> String? {
        do throws(Errno) {
            let device = try FileDescriptor.open(path, .readOnly, options: [.nonBlocking, .closeOnExec])
            try? device.close()
            return nil
        } catch {
            return error.description
        }
    }
}

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
