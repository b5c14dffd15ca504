import Synchronization
import TonearmBoard
import TonearmControlPlane
import TonearmSystem

/// Buttons, encoders and switches on GPIO lines, as a plug-in of the control plane.
///
/// The lines are requested when this is built, so a profile that needs a line it cannot have
/// fails there, before the daemon starts anything:
///
/// - a line that is missing, busy or unusable and `required` makes `init` throw its
///   `GPIOError` ("GPIO line 17 on chip 'gpiochip0': no such line (the chip has 0)"), having
///   released every line it requested; the daemon refuses to start with that message;
/// - otherwise the control is left out: `leftOut` says which and why, and `run` logs one
///   warning line for each ("…: no such chip; button next left out").
///
/// `run` then starts a thread, "tonearm-gpio", that waits for edges with a timeout equal to the
/// earliest deadline any button or switch has (a debounce ending, a long press, a repeat), feeds
/// the edges to the controls' recognizers and hands their commands, in order, to the control
/// plane, each from its control ("button next (gpiochip0 line 17)"); each is logged at debug
/// level with the time it was made on the lines' clock. Cancelled, `run` wakes and joins the
/// thread and releases the lines; the lines are had once, so a second `run` does nothing.
public final class GPIOControls: PlugIn, Sendable {
    /// A control that could not be had, and why.
    public struct LeftOut: Sendable, CustomStringConvertible {
        public var control: GPIOControl
        public var error: GPIOError

        /// "GPIO line 17 on chip 'gpiochip0': no such chip; button next left out".
        public var description: String { "\(error); \(control.kindName) \(control.name) left out" }
    }

    public let name: String
    /// The controls whose lines were all had, in the order given.
    public let available: [GPIOControl]
    public let leftOut: [LeftOut]

    private enum Role: Sendable {
        case only, a, b
    }

    private enum Machine: Sendable {
        case button(ButtonRecognizer)
        case encoder(QuadratureDecoder)
        case levelSwitch(SwitchDebouncer, initial: Bool)
        /// Its line was lost.
        case gone

        var nextDeadline: Double? {
            switch self {
            case .button(let button): return button.nextDeadline
            case .levelSwitch(let levelSwitch, _): return levelSwitch.nextDeadline
            case .encoder, .gone: return nil
            }
        }

        mutating func edge(_ role: Role, active: Bool, at time: Double) -> [Command] {
            switch self {
            case .button(var button):
                defer { self = .button(button) }
                return button.edge(pressed: active, at: time)
            case .encoder(var encoder):
                defer { self = .encoder(encoder) }
                return role == .b ? encoder.edge(b: active) : encoder.edge(a: active)
            case .levelSwitch(var levelSwitch, let initial):
                defer { self = .levelSwitch(levelSwitch, initial: initial) }
                return levelSwitch.edge(on: active, at: time)
            case .gone:
                return []
            }
        }

        mutating func tick(at time: Double) -> [Command] {
            switch self {
            case .button(var button):
                defer { self = .button(button) }
                return button.tick(at: time)
            case .levelSwitch(var levelSwitch, let initial):
                defer { self = .levelSwitch(levelSwitch, initial: initial) }
                return levelSwitch.tick(at: time)
            case .encoder, .gone:
                return []
            }
        }
    }

    private enum Phase: Sendable {
        case ready, running, stopped
    }

    private let source: any LineEventSource
    /// For each requested line (by the index `open` gave it): which machine and which of its lines.
    private let owners: [(machine: Int, role: Role)?]
    private let machines: [Machine]
    private let machineNames: [String]
    private let phase = Mutex(Phase.ready)

    /// Requests every control's lines from `source` (libgpiod by default). Throws the error of
    /// the first required line that cannot be had; see the type's notes.
    public init(
        _ controls: [GPIOControl], source: any LineEventSource = LibgpiodLineEventSource(), consumer: String = "tonearm"
    ) throws(GPIOError) {
        self.source = source
        // One line, one control: a second use is refused here, whatever the chip would say.
        var specs: [GPIOLineSpec] = []
        var specOwner: [(control: Int, role: Role)] = []
        var problems: [Int: GPIOError] = [:]
        for (index, control) in controls.enumerated() {
            let roles: [Role] = control.lines.count == 2 ? [.a, .b] : [.only]
            for (spec, role) in zip(control.lines, roles) {
                if let earlier = specs.firstIndex(where: { $0.chip == spec.chip && $0.line == spec.line }) {
                    let user = controls[specOwner[earlier].control]
                    problems[index] = problems[index]
                        ?? GPIOError(chip: spec.chip, line: spec.line.description, reason: "already used by \(user.description)")
                    continue
                }
                specs.append(spec)
                specOwner.append((index, role))
            }
        }
        let results = specs.isEmpty ? [] : source.open(specs, consumer: consumer)
        var levels: [Int: [Role: Bool]] = [:]
        for (position, result) in results.enumerated() {
            let owner = specOwner[position]
            switch result {
            case .success(let level): levels[owner.control, default: [:]][owner.role] = level
            case .failure(let error): problems[owner.control] = problems[owner.control] ?? error
            }
        }
        if let required = controls.indices.first(where: { controls[$0].isRequired && problems[$0] != nil }) {
            source.close()
            throw problems[required]!
        }

        var available: [GPIOControl] = []
        var machines: [Machine] = []
        var machineOf: [Int: Int] = [:]
        for (index, control) in controls.enumerated() where problems[index] == nil {
            let level = levels[index] ?? [:]
            machineOf[index] = machines.count
            available.append(control)
            switch control.kind {
            case .button(_, let settings):
                machines.append(.button(ButtonRecognizer(settings, pressed: level[.only] ?? false)))
            case .encoder(_, _, let settings):
                machines.append(.encoder(QuadratureDecoder(settings, a: level[.a] ?? false, b: level[.b] ?? false)))
            case .levelSwitch(_, let settings):
                machines.append(.levelSwitch(SwitchDebouncer(settings), initial: level[.only] ?? false))
            }
        }
        owners = specOwner.map { owner in machineOf[owner.control].map { ($0, owner.role) } }
        self.machines = machines
        machineNames = available.map(\.description)
        self.available = available
        leftOut = controls.indices.compactMap { index in problems[index].map { LeftOut(control: controls[index], error: $0) } }
        name = available.isEmpty ? "GPIO controls (none)" : "GPIO controls: " + machineNames.joined(separator: ", ")
    }

    deinit {
        source.close()
    }

    /// Required when any of its controls is: the daemon does not run without it.
    public var isRequired: Bool { available.contains(where: \.isRequired) }

    public func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let first = phase.withLock { phase in
            guard case .ready = phase else { return false }
            phase = .running
            return true
        }
        guard first else {
            log.warning("GPIO controls were stopped and do not start again")
            return
        }
        for problem in leftOut { log.warning(problem.description) }
        let forwarder = CommandForwarder()
        var loop: DeviceLoop?
        if machines.isEmpty {
            log.info("no GPIO controls to watch")
        } else {
            log.info(name)
            loop = DeviceLoop(name: "tonearm-gpio", wake: source.wake) { [self] isStopping in
                watch(forwarder, log: log, isStopping: isStopping)
            }
        }
        // Until cancelled: the daemon stops.
        await forwarder.forward(to: plane, log: log)
        loop?.stop()
        source.close()
        phase.withLock { $0 = .stopped }
    }

    /// The thread: edges and deadlines into the recognizers, their commands to `forwarder`.
    private func watch(_ forwarder: CommandForwarder, log: PlugInLog, isStopping: () -> Bool) {
        var machines = self.machines
        func send(_ commands: [Command], from machine: Int, at time: Double) {
            for command in commands {
                log(.debug, "\(machineNames[machine]): \(command) at \(Self.milliseconds(time))")
                forwarder.send(command, from: machineNames[machine])
            }
        }
        // A switch's first level is the one read when its line was opened.
        let start = source.now()
        for index in machines.indices {
            if case .levelSwitch(_, let initial) = machines[index] {
                send(machines[index].edge(.only, active: initial, at: start), from: index, at: start)
            }
        }
        while !isStopping() {
            let deadline = machines.compactMap(\.nextDeadline).min()
            let events = source.wait(until: deadline)
            guard !isStopping() else { break }
            let now = source.now()
            for event in events {
                switch event {
                case .edge(let line, let active, let at):
                    guard line >= 0, line < owners.count, let owner = owners[line] else { continue }
                    send(machines[owner.machine].edge(owner.role, active: active, at: at), from: owner.machine, at: now)
                case .lost(let line, let error):
                    guard line >= 0, line < owners.count, let owner = owners[line] else { continue }
                    machines[owner.machine] = .gone
                    log.warning("\(error); \(machineNames[owner.machine]) no longer works")
                }
            }
            for index in machines.indices {
                send(machines[index].tick(at: now), from: index, at: now)
            }
        }
    }

    /// "3.620": seconds to the millisecond, for the debug log.
    private static func milliseconds(_ time: Double) -> String {
        let value = Int((time * 1000).rounded())
        let fraction = value % 1000
        return "\(value / 1000).\(fraction < 10 ? "00" : fraction < 100 ? "0" : "")\(fraction)"
    }
}
