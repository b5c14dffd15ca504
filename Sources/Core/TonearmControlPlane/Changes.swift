import Synchronization
import TonearmPlayer
import TonearmSession

/// The parts of the published state, as a client waits for them to change (MPD's `idle`
/// subsystems).
public enum Subsystem: String, CaseIterable, Sendable, Hashable {
    /// Transport, Now Playing and the enabled commands.
    case player
    /// Volume and mute.
    case mixer
    /// Repeat, shuffle, single, consume and ReplayGain.
    case options
    case queue
    /// The sessions, and the links (`ControlState.links`).
    case sessions
    case output
    case library
    /// The stored playlists.
    case storedPlaylists
}

/// What happened since a subscriber last looked: the subsystems that changed, every Now
/// Playing publication in order (each has its reason), and notices.
public struct ChangeBatch: Sendable, Equatable {
    public var subsystems: Set<Subsystem> = []
    public var publications: [NowPlayingPublication] = []
    public var notices: [Notice] = []

    public init(subsystems: Set<Subsystem> = [], publications: [NowPlayingPublication] = [], notices: [Notice] = []) {
        self.subsystems = subsystems
        self.publications = publications
        self.notices = notices
    }

    public var isEmpty: Bool { subsystems.isEmpty && publications.isEmpty && notices.isEmpty }

    mutating func merge(_ other: ChangeBatch) {
        subsystems.formUnion(other.subsystems)
        publications += other.publications
        notices += other.notices
        // A subscriber that does not read keeps the latest of each, not an unbounded history.
        if publications.count > ChangeBatch.keep { publications.removeFirst(publications.count - ChangeBatch.keep) }
        if notices.count > ChangeBatch.keep { notices.removeFirst(notices.count - ChangeBatch.keep) }
    }

    static let keep = 64
}

/// Events that are not state: something failed, or something happened to a client's session.
public enum Notice: Sendable, Equatable {
    /// A queued file could not be played (it is skipped, or it played in part).
    case itemFailed(itemID: Int, message: String)
    case interruptionBegan(InterruptionBegan)
    case interruptionEnded(InterruptionEnded)
    case duck(owner: ClientID, session: SessionID, ducked: Bool, by: [SessionID])
    /// A session's stream has been heard to its end.
    case streamFinished(owner: ClientID, session: SessionID)
    /// A remote command for the Now Playing owner, a client's session: for its client, or for
    /// the client that speaks for it (`LinkCommand`, with `owner` that client). A linked
    /// client's `changeRepeatMode` and `changeShuffleMode` may come without a mode: it steps
    /// or toggles its program's own.
    case remoteCommand(owner: ClientID, session: SessionID, CommandRequest)

    /// The client a notice is for; nil when it is for everyone.
    public var owner: ClientID? {
        switch self {
        case .itemFailed: nil
        case .interruptionBegan(let began): began.owner
        case .interruptionEnded(let ended): ended.owner
        case .duck(let owner, _, _, _), .streamFinished(let owner, _), .remoteCommand(let owner, _, _): owner
        }
    }
}

/// Hands changes to every subscriber without waiting for any: each subscription keeps what it
/// has not read, merged, and is woken once. Called from the daemon's actor; read from
/// plug-ins' tasks.
public final class ChangeFeed: Sendable {
    private struct Subscriber {
        var subsystems: Set<Subsystem>
        var pending = ChangeBatch()
        var wake: AsyncStream<Void>.Continuation
    }

    private let subscribers = Mutex<[Int: Subscriber]>([:])
    private let nextID = Atomic<Int>(1)

    public init() {}

    /// A subscription to changes of `subsystems`; notices for everyone and for `client` come
    /// with it too.
    public func subscribe(_ subsystems: Set<Subsystem>) -> ChangeSubscription {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        subscribers.withLock { $0[id] = Subscriber(subsystems: subsystems, wake: continuation) }
        return ChangeSubscription(id: id, feed: self, wakes: stream)
    }

    /// Publishes a batch: each subscriber gets the subsystems it follows, the publications if it
    /// follows `player`, and the notices.
    public func publish(_ batch: ChangeBatch) {
        guard !batch.isEmpty else { return }
        subscribers.withLock { all in
            for (id, var subscriber) in all {
                var mine = ChangeBatch(subsystems: batch.subsystems.intersection(subscriber.subsystems), notices: batch.notices)
                if subscriber.subsystems.contains(.player) { mine.publications = batch.publications }
                guard !mine.isEmpty else { continue }
                subscriber.pending.merge(mine)
                all[id] = subscriber
                subscriber.wake.yield()
            }
        }
    }

    fileprivate func take(_ id: Int) -> ChangeBatch? {
        subscribers.withLock { all in
            guard var subscriber = all[id], !subscriber.pending.isEmpty else { return nil }
            let batch = subscriber.pending
            subscriber.pending = ChangeBatch()
            all[id] = subscriber
            return batch
        }
    }

    fileprivate func cancel(_ id: Int) {
        let gone = subscribers.withLock { $0.removeValue(forKey: id) }
        gone?.wake.finish()
    }

    /// Ends every subscription (the daemon stops).
    public func finish() {
        let all = subscribers.withLock { all in
            defer { all.removeAll() }
            return all
        }
        for subscriber in all.values { subscriber.wake.finish() }
    }

    public var subscriberCount: Int { subscribers.withLock { $0.count } }
}

/// Changes as an async sequence of batches: each `next()` waits until something the
/// subscription follows changed and returns everything since the last one. Ends when the
/// daemon stops or the subscription is cancelled.
public final class ChangeSubscription: AsyncSequence, Sendable {
    public typealias Element = ChangeBatch

    private let id: Int
    private let feed: ChangeFeed
    private let wakes: AsyncStream<Void>

    fileprivate init(id: Int, feed: ChangeFeed, wakes: AsyncStream<Void>) {
        self.id = id
        self.feed = feed
        self.wakes = wakes
    }

    deinit { feed.cancel(id) }

    public func cancel() { feed.cancel(id) }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: ChangeSubscription
        var wakes: AsyncStream<Void>.AsyncIterator

        public mutating func next() async -> ChangeBatch? {
            while true {
                if let batch = subscription.feed.take(subscription.id) { return batch }
                guard await wakes.next() != nil else { return nil }
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(subscription: self, wakes: wakes.makeAsyncIterator())
    }
}
