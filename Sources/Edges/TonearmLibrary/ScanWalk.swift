import Synchronization
import TonearmDecoding
import TonearmSQLite
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// What the walk found, for the scan's writer to put in the index.
enum ScanEvent {
    /// A directory, new (`known` nil) or found again with the songs its record has; `parent`
    /// nil for the top of the walk.
    case directory(path: String, parent: String?, modified: Int, isMount: Bool, known: KnownDirectory?,
                   songs: [ListingRecord.Entry])
    /// The walk of a directory's files is over: those not found again are gone, unless the
    /// walk was not `complete` (stopped half-way).
    case directoryDone(path: String, complete: Bool)
    /// A directory that was a mount point and is not any more: what is under it stays, unavailable.
    case unmounted(path: String, id: Int)
    /// A track whose size and modification time are what the index has.
    case unchanged(path: String, directory: String)
    /// A file that failed before and has not changed since.
    case stillFailed
    /// A file read: new, or changed; `hadFailed` when the index remembers it as failed.
    case track(IndexedTrack, directory: String, hadFailed: Bool)
    /// A file that could not be read.
    case failed(path: String, size: Int, modifiedNanoseconds: Int, reason: String)
    /// A directory that could not be listed, or a name that could not be looked at.
    case unreadable(path: String, reason: String)
}

/// A directory the index had when the scan began.
struct KnownDirectory {
    var id: Int
    var wasMount: Bool
    var available: Bool
}

/// A track the index has: enough to tell whether its file changed.
struct KnownTrack {
    var size: Int
    var modifiedNanoseconds: Int
}

/// The reading half of a scan, on a thread of its own: it walks the directories, looks at
/// each file, reads the new and changed ones with libFLAC, and hands what it found to the
/// writer (`IndexScan`) through a `ScanChannel` — so the disk and libFLAC work while SQLite
/// writes, each on one core.
///
/// It reads the index only to learn what a directory had (through a connection of its own),
/// never writes it.
struct ScanWalk {
    let root: String
    let channel: ScanChannel
    let stopping: () -> Bool
    /// A directory's record.
    private let recordOf: Statement
    /// What the index had under the target, taken off as the walk finds it again; what is left
    /// at the end is gone from the disk.
    var knownFailures: [String: (size: Int, modifiedNanoseconds: Int)]
    var knownDirectories: [String: KnownDirectory]
    private var visited = Set<FileIdentity>()
    private let mountPoints: Set<String>
    private var pending: [ScanEvent] = []

    init(root: String, reader: Database, channel: ScanChannel, knownFailures: [String: (size: Int, modifiedNanoseconds: Int)],
         knownDirectories: [String: KnownDirectory], mountPoints: Set<String>,
         stopping: @escaping () -> Bool) throws(SQLiteError) {
        self.root = root
        self.channel = channel
        self.knownFailures = knownFailures
        self.knownDirectories = knownDirectories
        self.mountPoints = mountPoints
        self.stopping = stopping
        recordOf = try reader.prepare(IndexStatements.recordSQL)
    }

    /// Walks the directory `path` (relative to the root), then tells the writer it is done.
    mutating func run(_ path: String, absolute: String, status: FileStatus, parent: String?) {
        if let directory = try? OpenDirectory(absolute) {
            walk(path, absolute: absolute, directory: directory, status: status, parent: parent)
        }
        flush()
    }

    private var isAbandoned: Bool { stopping() || channel.isAbandoned }

    private mutating func emit(_ event: ScanEvent) {
        pending.append(event)
        if pending.count >= ScanChannel.chunkSize { flush() }
    }

    private mutating func flush() {
        guard !pending.isEmpty else { return }
        channel.send(pending)
        pending.removeAll(keepingCapacity: true)
    }

    private mutating func walk(_ path: String, absolute: String, directory: OpenDirectory, status: FileStatus, parent: String?) {
        guard !isAbandoned, visited.insert(status.identity).inserted else { return }
        let isMount = mountPoints.contains(absolute)
        let known = knownDirectories.removeValue(forKey: path)
        if let known, known.wasMount, !isMount {
            // It was a mount point and is not any more: the medium is gone. Nothing under it
            // is pruned ("": the music directory itself, everything).
            let prefix = path.isEmpty ? "" : path + "/"
            knownFailures = knownFailures.filter { !$0.key.hasPrefix(prefix) }
            knownDirectories = knownDirectories.filter { !$0.key.hasPrefix(prefix) }
            emit(.unmounted(path: path, id: known.id))
            return
        }
        let songs = known.map { (try? IndexStatements.entries(ofDirectory: $0.id, recordOf)) ?? [] } ?? []
        emit(.directory(path: path, parent: parent, modified: status.modifiedSeconds, isMount: isMount, known: known, songs: songs))
        let entries: [DirectoryEntry]
        do throws(SystemError) {
            entries = try directory.entries()
        } catch {
            emit(.unreadable(path: path, reason: "cannot list the directory: \(error.text)"))
            emit(.directoryDone(path: path, complete: true))
            return
        }
        var knownTracks: [String: KnownTrack] = [:]
        for entry in songs {
            knownTracks[entry.song.path] = KnownTrack(size: entry.song.size, modifiedNanoseconds: entry.modifiedNanoseconds)
        }
        defer { emit(.directoryDone(path: path, complete: !isAbandoned)) }
        for entry in entries.sorted(by: { naturalOrder($0.name, $1.name) }) where !entry.name.hasPrefix(".") {
            guard !isAbandoned else { return }
            let childPath = path.isEmpty ? entry.name : path + "/" + entry.name
            switch entry.kind {
            case .directory, .symbolicLink, .unknown:
                guard let child = try? directory.status(entry.name) else { continue }
                if child.kind == .directory {
                    let childAbsolute = absolute + "/" + entry.name
                    // Through a link, only inside the music directory.
                    if entry.kind != .directory {
                        guard let real = try? FileSystem.realPath(childAbsolute), isInside(real, root) else { continue }
                    }
                    guard let opened = try? OpenDirectory(entry.name, in: directory) else { continue }
                    walk(childPath, absolute: childAbsolute, directory: opened, status: child, parent: path)
                } else if child.kind == .regular, Decoders.isAudioName(entry.name) {
                    emit(examine(childPath, name: entry.name, in: directory, directoryPath: path, status: child, known: knownTracks[childPath]))
                }
            case .regular:
                guard Decoders.isAudioName(entry.name) else { continue }
                let status: FileStatus
                do throws(SystemError) {
                    status = try directory.status(entry.name)
                } catch {
                    emit(.unreadable(path: childPath, reason: error.text))
                    continue
                }
                emit(examine(childPath, name: entry.name, in: directory, directoryPath: path, status: status, known: knownTracks[childPath]))
            case .other:
                continue
            }
        }
    }

    /// The file `name` in `directory` (`path` in the index): unchanged, failed as before, or read.
    mutating func examine(_ path: String, name: String, in directory: OpenDirectory, directoryPath: String,
                          status: FileStatus, known: KnownTrack?) -> ScanEvent {
        let stamp = status.modifiedSeconds * 1_000_000_000 + status.modifiedNanoseconds
        if let known, known.size == status.size, known.modifiedNanoseconds == stamp {
            return .unchanged(path: path, directory: directoryPath)
        }
        let failure = known == nil ? knownFailures.removeValue(forKey: path) : nil
        if let failure, failure.size == status.size, failure.modifiedNanoseconds == stamp { return .stillFailed }
        let fd: Int32
        do throws(SystemError) {
            fd = try directory.openFile(name)
        } catch {
            return .failed(path: path, size: status.size, modifiedNanoseconds: stamp, reason: "cannot open: \(error.text)")
        }
        do throws(DecodeError) {
            let info = try Decoders.metadata(fd: fd, path: path)
            return .track(IndexedTrack(path: path, status: status, info: info), directory: directoryPath,
                          hadFailed: failure != nil)
        } catch {
            return .failed(path: path, size: status.size, modifiedNanoseconds: stamp, reason: error.reason.description)
        }
    }
}

/// Hands the walk's events to the writer in chunks, holding at most a few chunks: a walk
/// ahead of the writer waits for it, so memory stays bounded whatever the tree.
final class ScanChannel: @unchecked Sendable {
    static let chunkSize = 32
    static let chunksHeld = 4

    private struct Queue {
        var chunks: [[ScanEvent]] = []
        var finished = false
        var abandoned = false
    }

    private let queue = Mutex(Queue())
    private let readable = Wakeup()
    private let writable = Wakeup()

    /// True once the writer gave up (an SQLite error): the walk stops.
    var isAbandoned: Bool { queue.withLock { $0.abandoned } }

    /// Waits for room, then queues `events` (dropped once the writer gave up).
    func send(_ events: [ScanEvent]) {
        while true {
            let sent = queue.withLock { queue -> Bool in
                guard !queue.abandoned else { return true }
                guard queue.chunks.count < Self.chunksHeld else { return false }
                queue.chunks.append(events)
                return true
            }
            if sent { break }
            writable.wait()
        }
        readable.post()
    }

    /// The walk is over: `receive` returns nil once the queue is empty.
    func finish() {
        queue.withLock { $0.finished = true }
        readable.post()
    }

    /// The writer stops taking events: the walk's sends return at once.
    func abandon() {
        queue.withLock { $0.abandoned = true; $0.chunks.removeAll() }
        writable.post()
    }

    /// The next chunks, waiting for them; nil when the walk finished and everything was taken.
    func receive() -> [[ScanEvent]]? {
        while true {
            let (chunks, finished) = queue.withLock { queue -> ([[ScanEvent]], Bool) in
                let taken = queue.chunks
                queue.chunks.removeAll(keepingCapacity: true)
                return (taken, queue.finished)
            }
            if !chunks.isEmpty {
                writable.post()
                return chunks
            }
            if finished { return nil }
            readable.wait()
        }
    }
}
