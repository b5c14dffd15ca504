/// A session's id, given by the daemon when the session is opened and never reused.
public struct SessionID: Hashable, Comparable, Sendable, ExpressibleByIntegerLiteral,
    CustomStringConvertible
{
    public var value: Int

    public init(_ value: Int) {
        self.value = value
    }

    public init(integerLiteral value: Int) {
        self.value = value
    }

    public static func < (lhs: SessionID, rhs: SessionID) -> Bool { lhs.value < rhs.value }

    public var description: String { String(value) }
}

/// The control-socket client (or the built-in player) that opened a session and receives its
/// interruption and duck events.
public struct ClientID: Hashable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    public var value: Int

    public init(_ value: Int) {
        self.value = value
    }

    public init(integerLiteral value: Int) {
        self.value = value
    }

    public var description: String { String(value) }
}

/// One session as the policy sees it.
///
/// An interrupted session stays active (its owner did not deactivate it) but does not sound
/// until its interruption ends with shouldResume, or until its owner activates it again.
public struct SessionState: Sendable, Equatable {
    public let id: SessionID
    public var owner: ClientID
    public var category: SessionCategory
    public var mode: SessionMode
    /// With implications: `duckOthers` and `interruptSpokenAudioAndMixWithOthers` come with
    /// `mixWithOthers`.
    public var options: SessionOptions
    public var active: Bool
    /// Stopped by an interruption that has not ended with shouldResume.
    public var interrupted: Bool
    /// The active sessions that hold this one interrupted, in the order they interrupted it.
    /// Empty while `interrupted` when every interrupter deactivated without
    /// notifyOthersOnDeactivation: the session stays interrupted until activated again.
    public var interruptedBy: [SessionID]
    /// Larger is more recent; nil while inactive. Decides the Now Playing owner.
    public var activationOrder: Int?
    /// At least one remote command is enabled (Now Playing eligibility).
    public var hasEnabledCommand: Bool

    public init(
        id: SessionID, owner: ClientID, category: SessionCategory = .soloAmbient,
        mode: SessionMode = .default, options: SessionOptions = [], active: Bool = false,
        interrupted: Bool = false, interruptedBy: [SessionID] = [], activationOrder: Int? = nil,
        hasEnabledCommand: Bool = false
    ) {
        self.id = id
        self.owner = owner
        self.category = category
        self.mode = mode
        self.options = options
        self.active = active
        self.interrupted = interrupted
        self.interruptedBy = interruptedBy
        self.activationOrder = activationOrder
        self.hasEnabledCommand = hasEnabledCommand
    }

    public var rules: CategoryRules { SessionPolicy.rules(for: category) }

    /// Mixes with the others instead of interrupting them: an ambient session, or one with
    /// `mixWithOthers` (or an option that implies it).
    public var isMixable: Bool {
        rules.mixableByDefault || !options.withImplications.isDisjoint(with: .mixWithOthers)
    }

    /// Active and not interrupted.
    public var isSounding: Bool { active && !interrupted }

    /// May own Now Playing: "non-mixable category + at least one enabled command" (seed 001).
    public var isNowPlayingEligible: Bool { !isMixable && hasEnabledCommand }
}
