import Synchronization
import TonearmBoard
import TonearmSystem

/// Buttons, encoders and switches on GPIO lines, as a board command source.
///
/// The lines are requested when this is built, so a profile that needs a line it cannot have
/// fails there, before the daemon starts anything:
///
/// - a line that is missing, busy or unusable and `required` makes `init` throw its
///   `GPIOError` ("GPIO line 17 on chip 'gpiochip0': no such line (the chip has 0)"), having
///   released every line it requested; the daemon refuses to start with that message;
/// - otherwise the control is left out: `leftOut` says which and why, and `start` logs one
///   warning line for each ("…: no such chip; button next left out").
///
/// `start` then runs a thread, "tonearm-gpio", that waits for edges with a timeout equal to the
/// earliest deadline any button or switch has (a debounce ending, a long press, a repeat), feeds
/// the edges to the controls' recognizers and sends their commands. `stop` wakes and joins it
/// and releases the lines; a stopped `GPIOControls` does not start again.
public final class GPIOControls: BoardCommandSource, Sendable {
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

        mutating func edge(_ role: Role, active: Bool, at time: Double) -> [BoardCommand] {
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

        mutating func tick(at time: Double) -> [BoardCommand] {
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
        case ready, running(NamedThread), stopped
    }

    private let source: any LineEventSource
    /// For each requested line (by the index `open` gave it): which machine and which of its lines.
    private let owners: [(machine: Int, role: Role)?]
    private let machines: [Machine]
    private let machineNames: [String]
    private let phase = Mutex(Phase.ready)
    private let stopping = Atomic(false)

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

    public func start(
        send: @escaping @Sendable (BoardCommand) -> Void, log: @escaping @Sendable (BoardLogLevel, String) -> Void
    ) {
        phase.withLock { phase in
            guard case .ready = phase else {
                if case .stopped = phase { log(.warning, "GPIO controls were stopped and do not start again") }
                return
            }
            for problem in leftOut { log(.warning, problem.description) }
            guard !machines.isEmpty else {
                log(.info, "no GPIO controls to watch")
                return
            }
            log(.info, name)
            phase = .running(NamedThread(name: "tonearm-gpio") { [self] in run(send: send, log: log) })
        }
    }

    public func stop() {
        let thread = phase.withLock { phase -> NamedThread?? in
            switch phase {
            case .stopped:
                return .none
            case .ready:
                phase = .stopped
                return .some(nil)
            case .running(let thread):
                phase = .stopped
                return .some(thread)
            }
        }
        guard let thread else { return }
        stopping.store(true, ordering: .releasing)
        source.wake()
        thread?.join()
        source.close()
    }

    private func run(send: @Sendable (BoardCommand) -> Void, log: @Sendable (BoardLogLevel, String) -> Void) {
        var machines = self.machines
        // A switch's first level is the one read when its line was opened.
        let start = source.now()
        for index in machines.indices {
            if case .levelSwitch(_, let initial) = machines[index] {
                machines[index].edge(.only, active: initial, at: start).forEach(send)
            }
        }
        while !stopping.load(ordering: .acquiring) {
            let deadline = machines.compactMap(\.nextDeadline).min()
            let events = source.wait(until: deadline)
            guard !stopping.load(ordering: .acquiring) else { break }
            for event in events {
                switch event {
                case .edge(let line, let active, let at):
                    guard line >= 0, line < owners.count, let owner = owners[line] else { continue }
                    machines[owner.machine].edge(owner.role, active: active, at: at).forEach(send)
                case .lost(let line, let error):
                    guard line >= 0, line < owners.count, let owner = owners[line] else { continue }
                    machines[owner.machine] = .gone
                    log(.warning, "\(error); \(machineNames[owner.machine]) no longer works")
                }
            }
            let now = source.now()
            for index in machines.indices {
                machines[index].tick(at: now).forEach(send)
            }
        }
    }
}
