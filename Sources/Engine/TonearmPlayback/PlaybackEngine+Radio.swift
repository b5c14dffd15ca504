import TonearmDecoding
import TonearmStreams

extension PlaybackEngine {
    /// A command came: the decoder thread must not stay waiting for the network. Called after
    /// the command is queued, so the thread, its wait ended, finds it.
    func endNetworkWait() {
        liveSource.withLock { $0?.cancel() }
    }

    /// The decoder thread reads `source` for an item (nil: a file, or nothing). True when a
    /// command came meanwhile: the source is cancelled at once, as `endNetworkWait` would.
    func reading(_ source: HTTPSource?) -> Bool {
        liveSource.withLock { $0 = source }
        readingLive.store(source != nil, ordering: .releasing)
        guard let source, hasPendingCommands || stopRequested.load(ordering: .acquiring) else { return false }
        source.cancel()
        return true
    }

    var hasPendingCommands: Bool { commands.withLock { !$0.isEmpty } }

    /// Called on the stream's thread: kept for `nextEvents`, and the control plane rung.
    func radioReported(_ itemID: Int, _ event: StreamEvent) {
        radioReports.withLock { $0.append((itemID, event)) }
        announce()
    }

    /// Whether `path` is played as a network stream rather than a file.
    public static func isStreamURL(_ path: String) -> Bool {
        let lower = path.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }
}
