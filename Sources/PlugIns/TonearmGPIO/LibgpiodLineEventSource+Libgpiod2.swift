#if LIBGPIOD_V2
import CGPIOD
import SystemPackage
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// GPIO lines through libgpiod 2: each line requested on its own for both-edge events, with its
/// bias and active-low (so the kernel reports logical levels), its level read once, then only
/// edge events: the requests' descriptors waited for in a `DevicePoll`, never the values.
///
/// One request per line, as with 1.6: a line that is busy or fails is refused alone, and a
/// lost line takes no other with it.
///
/// Thread use: `open`, `wait` and `close` from one thread at a time; `wake` from any.
public final class LibgpiodLineEventSource: LineEventSource, @unchecked Sendable {
    private struct Requested {
        let index: Int
        let spec: GPIOLineSpec
        let request: OpaquePointer
        let descriptor: FileDescriptor
    }

    /// Events read from one request at a time.
    private static let bufferCapacity = 16

    /// Chips stay open while their lines are requested, by the name the profile used.
    private var chips: [String: GPIOChip] = [:]
    private var requested: [Requested] = []
    /// Where `wait` reads events; made with the first request.
    private var buffer: OpaquePointer?
    /// `wait`'s poll, which `wake` wakes.
    private let devices = DevicePoll()

    public init() {}

    deinit {
        close()
        gpiod_edge_event_buffer_free(buffer)
    }

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
        func failure(_ what: String, _ code: Errno) -> GPIOError {
            GPIOError(chip: spec.chip, line: lineName, reason: "\(what): \(code)")
        }
        if buffer == nil {
            buffer = gpiod_edge_event_buffer_new(Self.bufferCapacity)
            guard buffer != nil else { throw failure("cannot make an event buffer", Errno(rawValue: errno)) }
        }
        let request: OpaquePointer
        do throws(Errno) {
            request = try Self.requestBothEdges(of: chip.chip, offset: offset, spec, consumer: consumer)
        } catch {
            switch error {
            case .resourceBusy:
                let user = chip.consumer(offset: offset).map { " by '\($0)'" } ?? ""
                throw GPIOError(chip: spec.chip, line: lineName, reason: "already in use\(user)")
            case .invalidArgument where spec.bias != .asIs:
                throw failure("cannot set bias \(spec.bias.rawValue) (it needs Linux 5.5 or later)", error)
            default:
                throw failure("cannot request edge events", error)
            }
        }
        errno = 0
        let value = gpiod_line_request_get_value(request, UInt32(offset))
        let descriptor = gpiod_line_request_get_fd(request)
        guard value != GPIOD_LINE_VALUE_ERROR, descriptor >= 0 else {
            let error = failure("cannot read the line", Errno(rawValue: errno))
            gpiod_line_request_release(request)
            throw error
        }
        requested.append(Requested(index: index, spec: spec, request: request, descriptor: FileDescriptor(rawValue: descriptor)))
        return value == GPIOD_LINE_VALUE_ACTIVE
    }

    /// One line requested as an input with edge events on both edges.
    private static func requestBothEdges(
        of chip: OpaquePointer, offset: Int, _ spec: GPIOLineSpec, consumer: String
    ) throws(Errno) -> OpaquePointer {
        guard let settings = gpiod_line_settings_new() else { throw Errno(rawValue: errno) }
        defer { gpiod_line_settings_free(settings) }
        gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_INPUT)
        gpiod_line_settings_set_edge_detection(settings, GPIOD_LINE_EDGE_BOTH)
        switch spec.bias {
        case .asIs: gpiod_line_settings_set_bias(settings, GPIOD_LINE_BIAS_AS_IS)
        case .disabled: gpiod_line_settings_set_bias(settings, GPIOD_LINE_BIAS_DISABLED)
        case .pullUp: gpiod_line_settings_set_bias(settings, GPIOD_LINE_BIAS_PULL_UP)
        case .pullDown: gpiod_line_settings_set_bias(settings, GPIOD_LINE_BIAS_PULL_DOWN)
        }
        gpiod_line_settings_set_active_low(settings, spec.activeLow)

        guard let lines = gpiod_line_config_new() else { throw Errno(rawValue: errno) }
        defer { gpiod_line_config_free(lines) }
        var offset = UInt32(offset)
        guard gpiod_line_config_add_line_settings(lines, &offset, 1, settings) == 0 else { throw Errno(rawValue: errno) }

        guard let config = gpiod_request_config_new() else { throw Errno(rawValue: errno) }
        defer { gpiod_request_config_free(config) }
        gpiod_request_config_set_consumer(config, consumer)

        errno = 0
        guard let request = gpiod_chip_request_lines(chip, config, lines) else { throw Errno(rawValue: errno) }
        return request
    }

    public func wait(until deadline: Double?) -> [LineEvent] {
        guard let ready = try? devices.wait(for: requested.map { ($0.descriptor, .readable) }, until: deadline),
              ready.contains(where: { !$0.isEmpty })
        else { return [] }
        let readAt = now()
        var edges: [LineEvent] = []
        var lost: [LineEvent] = []
        for (position, line) in requested.enumerated() {
            guard !ready[position].isEmpty else { continue }
            errno = 0
            let count = ready[position].contains(.readable)
                ? gpiod_line_request_read_edge_events(line.request, buffer, Self.bufferCapacity) : -1
            guard count >= 0 else {
                let reason = errno == 0 ? "the line stopped reporting events" : "cannot read events: \(Errno(rawValue: errno))"
                lost.append(.lost(line: line.index, GPIOError(chip: line.spec.chip, line: line.spec.line.description, reason: reason)))
                continue
            }
            for number in 0..<UInt(count) {
                guard let event = gpiod_edge_event_buffer_get_event(buffer, number) else { continue }
                let active = gpiod_edge_event_get_event_type(event) == GPIOD_EDGE_EVENT_RISING_EDGE
                let nanoseconds = gpiod_edge_event_get_timestamp_ns(event)
                let stamp = Double(nanoseconds / 1_000_000_000) + Double(nanoseconds % 1_000_000_000) / 1e9
                edges.append(.edge(line: line.index, active: active, at: Self.seconds(stamped: stamp, readAt: readAt)))
            }
        }
        if !lost.isEmpty {
            let gone = Self.lines(of: lost)
            for line in requested where gone.contains(line.index) { gpiod_line_request_release(line.request) }
            requested.removeAll { gone.contains($0.index) }
        }
        return Self.inOrder(edges: edges, lost: lost)
    }

    public func wake() {
        devices.wake()
    }

    public func close() {
        for line in requested { gpiod_line_request_release(line.request) }
        requested = []
        chips = [:]
    }
}
#endif
