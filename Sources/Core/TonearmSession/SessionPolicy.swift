/// A change asked of the sessions, by a client, the built-in player or the mute input.
public enum SessionRequest: Sendable, Equatable {
    /// A new, inactive session. soloAmbient is the default category, as on iOS.
    case open(
        SessionID, owner: ClientID, category: SessionCategory = .soloAmbient,
        mode: SessionMode = .default, options: SessionOptions = [], hasEnabledCommand: Bool = false)
    /// Remove the session; if it was active, as a deactivation without notifying others.
    case close(SessionID)
    /// Start sounding (or resume after an interruption), interrupting by the category rules.
    /// Activating a session that is already sounding changes nothing.
    case activate(SessionID)
    /// Stop sounding. With `notifyOthers` (notifyOthersOnDeactivation) the sessions it
    /// interrupted, and that nothing else still interrupts, get interruption ended with
    /// shouldResume; without, they stay interrupted.
    case deactivate(SessionID, notifyOthers: Bool = false)
    /// Replace category, mode and options together: options are not sticky. On a sounding
    /// session the new category applies at once, with the interruptions an activation in it
    /// would cause.
    case setCategory(
        SessionID, SessionCategory, mode: SessionMode = .default, options: SessionOptions = [])
    /// The owner's remote commands changed (Now Playing eligibility).
    case setHasEnabledCommand(SessionID, Bool)
    /// The mute input (the silent switch): silences ambient and soloAmbient output.
    case setMute(Bool)
}

/// Why an interruption began.
public enum InterruptionReason: String, Sendable, Equatable, CustomStringConvertible {
    /// A non-mixable session became active and this one is non-mixable too.
    case nonMixableActivated
    /// A session with `interruptSpokenAudioAndMixWithOthers` became active and this one is in
    /// mode `spokenAudio`.
    case spokenAudioInterrupted

    public var description: String { rawValue }
}

/// "Interruption began", for the owner of `session`: stop sounding (the built-in player pauses
/// and remembers its position).
public struct InterruptionBegan: Sendable, Equatable {
    public var session: SessionID
    public var owner: ClientID
    public var interrupter: SessionID
    public var reason: InterruptionReason

    public init(session: SessionID, owner: ClientID, interrupter: SessionID, reason: InterruptionReason) {
        self.session = session
        self.owner = owner
        self.interrupter = interrupter
        self.reason = reason
    }
}

/// "Interruption ended", for the owner of `session`. Only sent when the interrupter
/// deactivated with notifyOthersOnDeactivation, so `shouldResume` is always true today; the
/// built-in player resumes where it stopped.
public struct InterruptionEnded: Sendable, Equatable {
    public var session: SessionID
    public var owner: ClientID
    /// The session whose deactivation ended the interruption.
    public var endedBy: SessionID
    public var shouldResume: Bool

    public init(session: SessionID, owner: ClientID, endedBy: SessionID, shouldResume: Bool) {
        self.session = session
        self.owner = owner
        self.endedBy = endedBy
        self.shouldResume = shouldResume
    }
}

/// The gain factors of one session's output, for the mixer to ramp to. The levels are the
/// mixer's (duck to −15 dB, fades); the policy only says which apply.
public struct OutputGain: Sendable, Equatable, CustomStringConvertible {
    /// Audible: active, not interrupted, with output, not silenced by mute.
    public var mixes: Bool
    /// The sounding sessions with `duckOthers` that lower this one; empty unless `mixes`.
    public var duckedBy: [SessionID]
    /// The mute input is on and the category obeys it (whether or not the session is active).
    public var silencedByMute: Bool
    /// Stopped by an interruption.
    public var interrupted: Bool

    public init(
        mixes: Bool, duckedBy: [SessionID] = [], silencedByMute: Bool = false,
        interrupted: Bool = false
    ) {
        self.mixes = mixes
        self.duckedBy = duckedBy
        self.silencedByMute = silencedByMute
        self.interrupted = interrupted
    }

    public var ducked: Bool { !duckedBy.isEmpty }

    /// The linear gain to ramp to, given the mixer's duck gain (−15 dB ≈ 0.178) and the
    /// stream's own volume.
    public func linearGain(volume: Float = 1, duckGain: Float) -> Float {
        guard mixes else { return 0 }
        return ducked ? volume * duckGain : volume
    }

    public var description: String {
        var words = [mixes ? "mixes" : "silent"]
        if ducked { words.append("ducked by \(duckedBy.map(\.description).joined(separator: ","))") }
        if silencedByMute { words.append("muted") }
        if interrupted { words.append("interrupted") }
        return words.joined(separator: " ")
    }
}

/// Everything a request changed, for the daemon to apply.
public struct PolicyDecision: Sendable, Equatable {
    /// The sessions after the request, in the order given (an opened one last).
    public var sessions: [SessionState]
    public var muted: Bool
    /// Sessions that stop sounding now, in session order.
    public var interruptionsBegan: [InterruptionBegan]
    /// Sessions that resume now, in session order.
    public var interruptionsEnded: [InterruptionEnded]
    /// Every session's output gain factors (record sessions included: they never mix).
    public var outputs: [SessionID: OutputGain]
    /// The session whose Now Playing the display shows and whose commands the buttons send.
    public var nowPlayingOwner: SessionID?

    public init(
        sessions: [SessionState], muted: Bool, interruptionsBegan: [InterruptionBegan],
        interruptionsEnded: [InterruptionEnded], outputs: [SessionID: OutputGain],
        nowPlayingOwner: SessionID?
    ) {
        self.sessions = sessions
        self.muted = muted
        self.interruptionsBegan = interruptionsBegan
        self.interruptionsEnded = interruptionsEnded
        self.outputs = outputs
        self.nowPlayingOwner = nowPlayingOwner
    }

    public func session(_ id: SessionID) -> SessionState? {
        sessions.first { $0.id == id }
    }
}

/// The session policy: the category table (`rules(for:)`) applied by one pure function.
public enum SessionPolicy {
    /// The sessions after `request`, and what that means for interruptions, gains and Now
    /// Playing. `sessions` have distinct ids; `muted` is the mute input before the request.
    /// Throws, changing nothing, for an unknown session or a configuration the tables refuse.
    public static func evaluate(
        sessions: [SessionState], request: SessionRequest, muted: Bool
    ) throws(SessionError) -> PolicyDecision {
        var change = Change(sessions: sessions, muted: muted)
        switch request {
        case .open(let id, let owner, let category, let mode, let options, let hasEnabledCommand):
            guard change.index(of: id) == nil else { throw .sessionExists(id) }
            let held = try validate(category: category, mode: mode, options: options)
            change.sessions.append(
                SessionState(
                    id: id, owner: owner, category: category, mode: mode, options: held,
                    hasEnabledCommand: hasEnabledCommand))
        case .close(let id):
            let index = try change.existing(id)
            change.sessions.remove(at: index)
            change.release(by: id, notifyOthers: false)
        case .activate(let id):
            let index = try change.existing(id)
            guard !change.sessions[index].isSounding else { break }
            change.sessions[index].active = true
            change.sessions[index].interrupted = false
            change.sessions[index].interruptedBy = []
            change.sessions[index].activationOrder = change.nextActivationOrder
            change.interruptOthers(by: index)
        case .deactivate(let id, let notifyOthers):
            let index = try change.existing(id)
            guard change.sessions[index].active else { break }
            change.sessions[index].active = false
            change.sessions[index].interrupted = false
            change.sessions[index].interruptedBy = []
            change.sessions[index].activationOrder = nil
            change.release(by: id, notifyOthers: notifyOthers)
        case .setCategory(let id, let category, let mode, let options):
            let index = try change.existing(id)
            let held = try validate(category: category, mode: mode, options: options)
            change.sessions[index].category = category
            change.sessions[index].mode = mode
            change.sessions[index].options = held
            if change.sessions[index].isSounding { change.interruptOthers(by: index) }
        case .setHasEnabledCommand(let id, let enabled):
            let index = try change.existing(id)
            change.sessions[index].hasEnabledCommand = enabled
        case .setMute(let on):
            change.muted = on
        }
        return change.decision()
    }
}

/// The work in progress of one `evaluate`.
private struct Change {
    var sessions: [SessionState]
    var muted: Bool
    var began: [InterruptionBegan] = []
    var ended: [InterruptionEnded] = []

    init(sessions: [SessionState], muted: Bool) {
        self.sessions = sessions
        self.muted = muted
    }

    func index(of id: SessionID) -> Int? {
        sessions.firstIndex { $0.id == id }
    }

    func existing(_ id: SessionID) throws(SessionError) -> Int {
        guard let index = index(of: id) else { throw .unknownSession(id) }
        return index
    }

    var nextActivationOrder: Int {
        (sessions.compactMap(\.activationOrder).max() ?? 0) + 1
    }

    /// Why `interrupter`, becoming active, interrupts `other`, if it does.
    static func reason(_ interrupter: SessionState, interrupts other: SessionState) -> InterruptionReason? {
        // A non-mixable activation interrupts every other non-mixable session (record too:
        // "record interrupts non-mixable playback"); mixable sessions keep playing.
        if !interrupter.isMixable && interrupter.rules.interruptsOthers && !other.isMixable {
            return .nonMixableActivated
        }
        // interruptSpokenAudioAndMixWithOthers: pause spoken audio, mix with the rest.
        if interrupter.options.contains(.interruptSpokenAudioAndMixWithOthers)
            && other.mode == .spokenAudio && other.rules.output
        {
            return .spokenAudioInterrupted
        }
        return nil
    }

    /// The session at `index` has just started sounding in its current configuration.
    /// Sessions already interrupted only record the new interrupter: their interruption
    /// began earlier, and must not end while this one is active.
    mutating func interruptOthers(by index: Int) {
        let interrupter = sessions[index]
        for other in sessions.indices where other != index && sessions[other].active {
            guard let reason = Self.reason(interrupter, interrupts: sessions[other]) else { continue }
            if !sessions[other].interrupted {
                sessions[other].interrupted = true
                began.append(
                    InterruptionBegan(
                        session: sessions[other].id, owner: sessions[other].owner,
                        interrupter: interrupter.id, reason: reason))
            }
            if !sessions[other].interruptedBy.contains(interrupter.id) {
                sessions[other].interruptedBy.append(interrupter.id)
            }
        }
    }

    /// The session `id` stopped sounding (deactivated or closed): it no longer holds anyone
    /// interrupted. With notifyOthersOnDeactivation, the sessions it interrupted that nothing
    /// else holds resume.
    mutating func release(by id: SessionID, notifyOthers: Bool) {
        for other in sessions.indices {
            guard let position = sessions[other].interruptedBy.firstIndex(of: id) else { continue }
            sessions[other].interruptedBy.remove(at: position)
            guard notifyOthers, sessions[other].interruptedBy.isEmpty else { continue }
            sessions[other].interrupted = false
            ended.append(
                InterruptionEnded(
                    session: sessions[other].id, owner: sessions[other].owner, endedBy: id,
                    shouldResume: true))
        }
    }

    func decision() -> PolicyDecision {
        let duckers = sessions.filter { $0.isSounding && $0.options.contains(.duckOthers) }
        var outputs: [SessionID: OutputGain] = [:]
        for session in sessions {
            let silenced = muted && session.rules.silencedByMute
            let mixes = session.isSounding && session.rules.output && !silenced
            let duckedBy = mixes ? duckers.map(\.id).filter { $0 != session.id } : []
            outputs[session.id] = OutputGain(
                mixes: mixes, duckedBy: duckedBy, silencedByMute: silenced,
                interrupted: session.interrupted)
        }
        // The most recently activated eligible session; when it deactivates, the previous
        // one (interrupted or not) takes Now Playing back.
        let owner = sessions
            .filter { $0.active && $0.isNowPlayingEligible }
            .max { ($0.activationOrder ?? 0) < ($1.activationOrder ?? 0) }
        return PolicyDecision(
            sessions: sessions, muted: muted, interruptionsBegan: began,
            interruptionsEnded: ended, outputs: outputs, nowPlayingOwner: owner?.id)
    }
}
