#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import TonearmSystem

/// What the server thread shares with every other thread: each client's pending output and
/// topics, behind one lock, and a pipe that wakes the server's `poll`.
///
/// Replies and events are copied into the client's buffer here, on the caller's thread, and
/// the limit is enforced here too: a client over `maxPendingOutputBytes` loses its buffer at
/// once and is marked for disconnection. So publishing never waits for a client, and memory
/// stays bounded by `maxClients × maxPendingOutputBytes` however fast events come.
final class Outbox: Sendable {
    struct Peer {
        /// Sent by the server thread, under the lock.
        var output = PendingOutput()
        /// Subscribed topics, in the order the server lists its topics.
        var topics: [String] = []
        /// Requests handed to the handler and not answered yet.
        var outstanding = 0
        /// Set when the client must be disconnected; the server thread does it.
        var dropReason: String?
    }

    struct State {
        var peers: [Int: Peer] = [:]
        /// The wake pipe has been written and the server has not drained it yet.
        var wakePending = false
        var stopping = false
    }

    let state = Mutex(State())
    let maxPendingOutputBytes: Int
    let log: (@Sendable (String) -> Void)?
    /// At most one byte is in it at a time (see `wakePending`). Closed with the outbox, that
    /// is when nobody can write to it any more: a late `Reply` holds the outbox.
    private let wakePipe = WakePipe()

    /// Fails (with the system's words) when no wake-up pipe can be made.
    init(maxPendingOutputBytes: Int, log: (@Sendable (String) -> Void)?) throws(PipeFailure) {
        if let failure = wakePipe.failure { throw PipeFailure(reason: failure) }
        self.maxPendingOutputBytes = maxPendingOutputBytes
        self.log = log
    }

    struct PipeFailure: Error {
        var reason: String
    }

    /// What the server thread polls to be woken.
    var wakeDescriptor: Int32 { wakePipe.descriptor }

    /// Queues `bytes` for a client (a response; `finishingRequest` when it answers one the
    /// handler had). Dropped when the client is gone.
    func deliver(_ bytes: [UInt8], to clientID: Int, finishingRequest: Bool, fromServerThread: Bool = false) {
        let wake = state.withLock { state -> Bool in
            guard let index = state.peers.index(forKey: clientID) else { return false }
            if finishingRequest { state.peers.values[index].outstanding -= 1 }
            append(bytes, to: &state.peers.values[index])
            return !fromServerThread && state.requestWake()
        }
        if wake { signal() }
    }

    /// Queues `bytes` for every client subscribed to `topic` (or for `only` that client, if it is).
    func publish(_ bytes: [UInt8], topic: String, only clientID: Int? = nil) {
        let wake = state.withLock { state -> Bool in
            var any = false
            for index in state.peers.indices where state.peers.values[index].topics.contains(topic)
                && (clientID == nil || state.peers.keys[index] == clientID) {
                append(bytes, to: &state.peers.values[index])
                any = true
            }
            return any && state.requestWake()
        }
        if wake { signal() }
    }

    /// Appends within the limit; a client over it is marked to be dropped. Call under the lock.
    func append(_ bytes: [UInt8], to peer: inout Peer) {
        guard peer.dropReason == nil else { return }
        let pending = peer.output.count
        if pending + bytes.count > maxPendingOutputBytes {
            peer.output.release()
            peer.dropReason = "\(pending) bytes of output pending and \(bytes.count) more to send, over the limit of \(maxPendingOutputBytes) (it stopped reading)"
        } else {
            peer.output.append(bytes)
        }
    }

    /// Wakes the server thread (also to stop it).
    func signal() { wakePipe.wake() }

    /// Called by the server thread when the pipe is readable. The pipe is emptied first and the
    /// flag cleared after, and the server looks at every buffer after that, so no output is
    /// left behind. (Clearing first lost wake-ups: a writer could set the flag and write
    /// between the clear and the read, the read took its byte, and with the flag left set
    /// nobody wrote the pipe again — replies then waited for the next client to speak.)
    func drainWake() {
        wakePipe.drain()
        state.withLock { $0.wakePending = false }
    }
}

extension Outbox.State {
    /// True when the caller must write the wake pipe (nobody has since the server last woke).
    mutating func requestWake() -> Bool {
        if wakePending || stopping { return false }
        wakePending = true
        return true
    }
}

/// Bytes waiting for a socket to take them: appended at the end, sent from the front.
struct PendingOutput {
    private var bytes: [UInt8] = []
    private var head = 0

    var count: Int { bytes.count - head }
    var isEmpty: Bool { head == bytes.count }

    mutating func append(_ more: [UInt8]) {
        // Sent bytes are reclaimed once they are the larger part, so appends stay amortised O(1).
        if head > 0 && head >= bytes.count / 2 {
            bytes.removeFirst(head)
            head = 0
        }
        bytes.append(contentsOf: more)
    }

    /// Sends as much as the socket takes now; returns errno if the socket failed.
    mutating func flush(to fd: Int32) -> Int32? {
        while head < bytes.count {
            let sent = bytes.withUnsafeBytes { sendNow(fd, UnsafeRawBufferPointer(rebasing: $0[head...])) }
            if sent < 0 { return Int32(-sent) }
            if sent == 0 { return nil }
            head += sent
        }
        // Empty again: keep a small buffer for the next line, give a burst's memory back.
        bytes.removeAll(keepingCapacity: bytes.capacity <= 16384)
        head = 0
        return nil
    }

    mutating func release() {
        bytes = []
        head = 0
    }
}
