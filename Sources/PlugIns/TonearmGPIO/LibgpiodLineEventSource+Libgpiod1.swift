#if !LIBGPIOD_V2
import CGPIOD
import SystemPackage
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// GPIO lines through libgpiod 1.6: each line requested for both-edge events (bias and
/// active-low as flags, so the kernel reports logical levels), its level read once, then only
/// edge events: the lines' event descriptors waited for in a `DevicePoll`, never the values.
///
/// Thread use: `open`, `wait` and `close` from one thread at a time; `wake` from any.
public final class LibgpiodLineEventSource: LineEventSource, @unchecked Sendable {
    private struct Requested {
        let index: Int
        let spec: GPIOLineSpec
        let line: OpaquePointer
        let descriptor: FileDescriptor
    }

    /// Chips stay open while their lines are requested, by the name the profile used.
    private var chips: [String: GPIOChip] = [:]
    private var requested: [Requested] = []
    /// `wait`'s poll, which `wake` wakes.
    private let devices = DevicePoll()

    public init() {}

    deinit { close() }

    public func open(_ lines: [GPIOLineSpec], consumer: String) -> [Result<Bool, GPIOError>] {
        lines.enumerated().map { index, spec in
            do throws(GPIOError) {
                return .success(try request(spec, index: index, consumer: consumer))
            } catch {
                return .failure(error)
            }
        }
    }

    private func request(_ spec: GPIOLineSpec, index: Int, consumer: String) throws(GPIOError) -> Bool {
        let lineName = spec.line.description
        if let wakeFailure = devices.failure {
            throw GPIOError(chip: spec.chip, line: lineName, reason: "cannot make a wake-up pipe: \(wakeFailure)")
        }
        let (chip, offset) = try Self.locate(spec, in: &chips)
        func failure(_ what: String) -> GPIOError {
            GPIOError(chip: spec.chip, line: lineName, reason: "\(what): \(Errno(rawValue: errno))")
        }
        guard let line = gpiod_chip_get_line(chip.chip, UInt32(offset)) else {
            throw failure("cannot get the line")
        }
        var flags: Int32 = 0
        switch spec.bias {
        case .asIs: break
        case .disabled: flags |= Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE)
        case .pullUp: flags |= Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
        case .pullDown: flags |= Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
        }
        if spec.activeLow { flags |= Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) }
        errno = 0
        guard gpiod_line_request_both_edges_events_flags(line, consumer, flags) == 0 else {
            switch errno {
            case EBUSY:
                let user = gpiod_line_consumer(line).map { " by '\(String(cString: $0))'" } ?? ""
                throw GPIOError(chip: spec.chip, line: lineName, reason: "already in use\(user)")
            case EINVAL where spec.bias != .asIs:
                throw failure("cannot set bias \(spec.bias.rawValue) (it needs Linux 5.5 or later)")
            default:
                throw failure("cannot request edge events")
            }
        }
        let value = gpiod_line_get_value(line)
        let descriptor = gpiod_line_event_get_fd(line)
        guard value >= 0, descriptor >= 0 else {
            let error = failure("cannot read the line")
            gpiod_line_release(line)
            throw error
        }
        requested.append(Requested(index: index, spec: spec, line: line, descriptor: FileDescriptor(rawValue: descriptor)))
        return value == 1
    }

    public func wait(until deadline: Double?) -> [LineEvent] {
        guard let ready = try? devices.wait(for: requested.map { ($0.descriptor, .readable) }, until: deadline),
              ready.contains(where: { !$0.isEmpty })
        else { return [] }
        let readAt = now()
        var edges: [LineEvent] = []
        var lost: [LineEvent] = []
        var buffer = [gpiod_line_event](repeating: gpiod_line_event(), count: 16)
        for (position, line) in requested.enumerated() {
            guard !ready[position].isEmpty else { continue }
            errno = 0
            let count = ready[position].contains(.readable) ? gpiod_line_event_read_multiple(line.line, &buffer, UInt32(buffer.count)) : -1
            guard count >= 0 else {
                let reason = errno == 0 ? "the line stopped reporting events" : "cannot read events: \(Errno(rawValue: errno))"
                lost.append(.lost(line: line.index, GPIOError(chip: line.spec.chip, line: line.spec.line.description, reason: reason)))
                continue
            }
            for event in buffer.prefix(Int(count)) {
                let active = Int(event.event_type) == Int(GPIOD_LINE_EVENT_RISING_EDGE)
                let stamp = Double(event.ts.tv_sec) + Double(event.ts.tv_nsec) / 1e9
                edges.append(.edge(line: line.index, active: active, at: Self.seconds(stamped: stamp, readAt: readAt)))
            }
        }
        if !lost.isEmpty {
            let gone = Self.lines(of: lost)
            for line in requested where gone.contains(line.index) { gpiod_line_release(line.line) }
            requested.removeAll { gone.contains($0.index) }
        }
        return Self.inOrder(edges: edges, lost: lost)
    }

    public func wake() {
        devices.wake()
    }

    public func close() {
        for line in requested { gpiod_line_release(line.line) }
        requested = []
        chips = [:]
    }
}
#endif
