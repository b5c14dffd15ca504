import TonearmControlPlane
import TonearmDecoding
import TonearmSQLite
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// One scan of the music directory, or of a directory or file in it, on the scanner's thread.
///
/// Incremental: a file whose size and modification time are what the index has is not read
/// again; one that fails to read is remembered with its reason and read again once it changes;
/// what is no longer there is pruned. A directory that was a mount point and no longer is (a
/// stick pulled out: /proc/self/mountinfo says so) is not pruned: its songs are marked
/// unavailable, and available again when a scan finds the mount back. Changes are committed in
/// batches, so a scan killed half-way leaves a database that opens and a rescan that finishes
/// the job.
///
/// A directory is walked and its files read by a `ScanWalk` on a second thread
/// ("tonearm-scan-rd", idle priority too) while this one writes what it found.
struct IndexScan {
    /// The canonical music directory.
    let root: String
    /// The directory or file to scan, relative to `root` ("" for all of it).
    let target: String
    let db: Database
    let statements: IndexStatements
    let stopping: @Sendable () -> Bool
    /// Called after each batch with the figures so far.
    let progress: (ScanProgress) -> Void
    var figures: ScanProgress
    private var pending = 0
    private var inTransaction = false
    /// The ids of the directories this scan found, by path.
    private var directoryIDs: [String: Int] = [:]
    /// Directories whose walk has begun and not ended, by path: what their records had and
    /// what the scan found.
    private var walking: [String: DirectoryWork] = [:]
    /// What the directories written since the last commit changed in the tag index.
    private var changes = TagIndex.Changes()
    /// Directories found unmounted: what is under them stays, unavailable.
    private var unmounted: [String] = []
    /// A scan into an empty library: the tag index is made at the end, from every record.
    private var bulk = false

    static let batchSize = 1024

    private struct DirectoryWork {
        var id: Int
        var before: [ListingRecord.Entry]
        var songs: [String: ListingRecord.Entry]
        var seen = Set<String>()
        var failed = Set<String>()
        var changed = false

        init(id: Int, before: [ListingRecord.Entry]) {
            self.id = id
            self.before = before
            songs = Dictionary(before.map { ($0.song.path, $0) }, uniquingKeysWith: { a, _ in a })
        }
    }

    init(root: String, target: String, db: Database, statements: IndexStatements, figures: ScanProgress,
         stopping: @escaping @Sendable () -> Bool, progress: @escaping (ScanProgress) -> Void) {
        self.root = root
        self.target = target
        self.db = db
        self.statements = statements
        self.figures = figures
        self.stopping = stopping
        self.progress = progress
    }

    /// Runs the scan; returns the directories found unmounted.
    mutating func run() throws(SQLiteError) -> [String] {
        var (knownFailures, knownDirectories) = try loadKnown()
        // Into an empty library: the tag index is made once, at the end (and by the next
        // `open` if this scan is cut short).
        bulk = try db.integer("SELECT EXISTS(SELECT 1 FROM directories WHERE listing IS NOT NULL)") == 0
        if bulk { try db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('\(TagIndex.pendingKey)', 1)") }
        let absolute = target.isEmpty ? root : root + "/" + target
        let status = try? FileSystem.status(absolute)
        switch status?.kind {
        case .directory?:
            let left = try walk(absolute: absolute, status: status!, knownFailures: knownFailures,
                                knownDirectories: knownDirectories)
            (knownFailures, knownDirectories) = (left.failures, left.directories)
        case .regular? where Decoders.isAudioName(target):
            let slash = absolute.lastIndex(of: "/")!
            if let directory = try? OpenDirectory(String(absolute[..<slash])) {
                let parent = target.split(separator: "/").dropLast().joined(separator: "/")
                let id = try directoryID(parentOf: target)
                directoryIDs[parent] = id
                let songs = try statements.entries(ofDirectory: id)
                walking[parent] = DirectoryWork(id: id, before: songs)
                var walk = try ScanWalk(root: root, reader: db, channel: ScanChannel(), knownFailures: knownFailures,
                                        knownDirectories: [:], mountPoints: [], stopping: stopping)
                let known = songs.first { $0.song.path == target }.map {
                    KnownTrack(size: $0.song.size, modifiedNanoseconds: $0.modifiedNanoseconds)
                }
                try apply(walk.examine(target, name: String(absolute[absolute.index(after: slash)...]), in: directory,
                                       directoryPath: parent, status: status!, known: known))
                try finish(parent, complete: false)
                knownFailures = walk.knownFailures
            }
        default:
            // Not there (or not music) any more: a file the index has is taken out of its
            // directory's record.
            if !target.isEmpty, !stopping() { try remove(target) }
        }
        if !stopping() { try prune(failures: knownFailures, directories: knownDirectories) }
        try commit()
        if bulk {
            try db.transaction { () throws(SQLiteError) in try TagIndex.rebuild(db) }
        }
        // What the scan wrote is in the log. Copied into the database now and the log cut to
        // nothing: queries then read the database's pages without looking each up in the
        // log, and the card holds the library once. It waits for a query reading the log to
        // end (at most the connection's busy timeout; then the copy is left for later).
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return unmounted
    }

    /// Walks a directory on a second thread and writes what it finds here; returns what the
    /// index had and the walk did not find.
    private mutating func walk(absolute: String, status: FileStatus, knownFailures: [String: (size: Int, modifiedNanoseconds: Int)],
                               knownDirectories: [String: KnownDirectory])
        throws(SQLiteError) -> (failures: [String: (size: Int, modifiedNanoseconds: Int)], directories: [String: KnownDirectory]) {
        let parent: String? = target.isEmpty ? nil : target.split(separator: "/").dropLast().joined(separator: "/")
        if let parent { directoryIDs[parent] = try directoryID(parentOf: target) }
        let channel = ScanChannel()
        let reader = try IndexDatabase.reader(db.path, small: true)
        let walk = WalkBox(try ScanWalk(root: root, reader: reader, channel: channel, knownFailures: knownFailures,
                                        knownDirectories: knownDirectories, mountPoints: Self.mountPoints(), stopping: stopping))
        let (target, root) = (self.target, self.root)
        let thread = NamedThread(name: "tonearm-scan-rd") {
            _ = requestIdlePriority()
            walk.value.run(target, absolute: target.isEmpty ? root : root + "/" + target, status: status, parent: parent)
            channel.finish()
        }
        do throws(SQLiteError) {
            while let chunks = channel.receive() {
                for chunk in chunks {
                    for event in chunk { try apply(event) }
                }
            }
        } catch {
            channel.abandon()
            thread.join()
            throw error
        }
        thread.join()
        return (walk.value.knownFailures, walk.value.knownDirectories)
    }

    /// Puts one of the walk's findings in the index.
    private mutating func apply(_ event: ScanEvent) throws(SQLiteError) {
        switch event {
        case let .directory(path, parent, modified, isMount, known, songs):
            let id: Int
            if let known {
                id = known.id
                try statements.updateDirectory.run(.integer(modified), .integer(isMount ? 1 : 0), .integer(id))
                if !known.available { try markAvailable(path) }
            } else {
                let parentID = parent.flatMap { directoryIDs[$0] }
                try statements.insertDirectory.run(.text(path), parentID.map { .integer($0) } ?? .null,
                                                   .integer(modified), .integer(isMount ? 1 : 0))
                id = db.lastInsertRowID
            }
            directoryIDs[path] = id
            walking[path] = DirectoryWork(id: id, before: songs)
        case let .directoryDone(path, complete):
            try finish(path, complete: complete)
        case let .unmounted(path, _):
            try markUnavailable(path)
        case let .unchanged(path, directory):
            figures.seen += 1
            figures.unchanged += 1
            walking[directory]?.seen.insert(path)
        case .stillFailed:
            figures.seen += 1
            figures.failed += 1
        case let .track(track, directory, hadFailed):
            figures.seen += 1
            guard walking[directory] != nil else { return }
            try begin()
            if hadFailed { try statements.deleteFailure.run(.text(track.path)) }
            walking[directory]?.songs[track.path] = track.entry
            walking[directory]?.seen.insert(track.path)
            walking[directory]?.changed = true
            figures.indexed += 1
            try counted()
        case let .failed(path, size, modifiedNanoseconds, reason):
            figures.seen += 1
            try fail(path, size: size, modifiedNanoseconds: modifiedNanoseconds, reason: reason)
        case let .unreadable(path, reason):
            try fail(path, size: 0, modifiedNanoseconds: 0, reason: reason)
        }
    }

    /// A file that cannot be read: remembered with its reason; a song the index had there is
    /// taken out when its directory's walk ends (it is not found again).
    private mutating func fail(_ path: String, size: Int, modifiedNanoseconds: Int, reason: String) throws(SQLiteError) {
        try begin()
        walking[Self.parent(of: path)]?.failed.insert(path)
        try statements.insertFailure.run(.text(path), .integer(size), .integer(modifiedNanoseconds), .text(reason))
        figures.failed += 1
        try counted()
    }

    /// The walk of `path` is over: its record is written when its songs changed. A
    /// `complete` walk found every file there is: the songs it did not find are gone.
    private mutating func finish(_ path: String, complete: Bool) throws(SQLiteError) {
        guard var work = walking.removeValue(forKey: path) else { return }
        if complete {
            for gone in work.songs.keys where !work.seen.contains(gone) {
                work.songs[gone] = nil
                work.changed = true
                if !work.failed.contains(gone) { figures.removed += 1 }
            }
        }
        guard work.changed else { return }
        try begin()
        let entries = Array(work.songs.values)
        try statements.writeRecord(work.id, entries)
        if !bulk {
            changes.replace(directory: work.id, before: TagIndex.keys(of: work.before.map(\.song)),
                            after: TagIndex.keys(of: entries.map(\.song)))
        }
        try counted()
    }

    /// Takes the song at `path` out of its directory's record, if it is there.
    private mutating func remove(_ path: String) throws(SQLiteError) {
        let parent = Self.parent(of: path)
        guard let id = try statements.directoryID(parent) else { return }
        var work = DirectoryWork(id: id, before: try statements.entries(ofDirectory: id))
        guard work.songs.removeValue(forKey: path) != nil else { return }
        work.changed = true
        figures.removed += 1
        walking[parent] = work
        try finish(parent, complete: false)
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    // MARK: Unmounted and back

    private mutating func markUnavailable(_ path: String) throws(SQLiteError) {
        try begin()
        try statements.setSubtreeAvailable(path, false)
        unmounted.append(path)
        try counted()
    }

    private mutating func markAvailable(_ path: String) throws(SQLiteError) {
        try begin()
        try statements.setSubtreeAvailable(path, true)
        try counted()
    }

    // MARK: Pruning

    private mutating func prune(failures: [String: (size: Int, modifiedNanoseconds: Int)],
                                directories: [String: KnownDirectory]) throws(SQLiteError) {
        for (path, _) in failures {
            try begin()
            try statements.deleteFailure.run(.text(path))
            try counted()
        }
        for (_, known) in directories {
            try begin()
            let songs = try statements.entries(ofDirectory: known.id).map(\.song)
            figures.removed += songs.count
            if !bulk { changes.replace(directory: known.id, before: TagIndex.keys(of: songs), after: [:]) }
            try statements.deleteDirectory(known.id)
            try counted()
        }
    }

    // MARK: Batches

    private mutating func begin() throws(SQLiteError) {
        guard !inTransaction else { return }
        try db.execute("BEGIN IMMEDIATE")
        inTransaction = true
    }

    private mutating func counted() throws(SQLiteError) {
        pending += 1
        if pending >= Self.batchSize { try commit() }
    }

    private mutating func commit() throws(SQLiteError) {
        if inTransaction {
            try changes.write(db)
            try db.execute("COMMIT")
            inTransaction = false
        }
        pending = 0
        progress(figures)
    }

    // MARK: What the index had

    private func loadKnown() throws(SQLiteError)
        -> (failures: [String: (size: Int, modifiedNanoseconds: Int)], directories: [String: KnownDirectory]) {
        let (exact, prefix) = (target, target.isEmpty ? "" : target + "/")
        func under(_ path: String) -> Bool { target.isEmpty || path == exact || path.hasPrefix(prefix) }
        var failures: [String: (size: Int, modifiedNanoseconds: Int)] = [:]
        var directories: [String: KnownDirectory] = [:]
        try statements.allFailures.rows([]) { row in
            let path = row.text(0) ?? ""
            if under(path) { failures[path] = (row.integer(1), row.integer(2)) }
            return true
        }
        try statements.allDirectories.rows([]) { row in
            let path = row.text(1) ?? ""
            if under(path) { directories[path] = KnownDirectory(id: row.integer(0), wasMount: row.integer(2) != 0, available: row.integer(3) != 0) }
            return true
        }
        return (failures, directories)
    }

    /// The id of the directory holding `path`; the directories between are indexed when missing.
    private func directoryID(parentOf path: String) throws(SQLiteError) -> Int {
        let parent = path.split(separator: "/").dropLast().joined(separator: "/")
        if let id = try statements.directoryID(parent) { return id }
        let grandparent: Int? = parent.isEmpty ? nil : try directoryID(parentOf: parent)
        let status = try? FileSystem.status(parent.isEmpty ? root : root + "/" + parent)
        let absolute = parent.isEmpty ? root : root + "/" + parent
        try statements.insertDirectory.run(.text(parent), grandparent.map { .integer($0) } ?? .null,
                                           .integer(status?.modifiedSeconds ?? 0), .integer(Self.mountPoints().contains(absolute) ? 1 : 0))
        return db.lastInsertRowID
    }

    /// Every mount point (field 5 of /proc/self/mountinfo, its octal escapes undone).
    static func mountPoints() -> Set<String> {
        guard let fd = try? FileSystem.openForReading("/proc/self/mountinfo") else { return [] }
        defer { close(fd) }
        var bytes: [UInt8] = []
        while let chunk = try? FileSystem.read(fd, offset: bytes.count, count: 65536), !chunk.isEmpty { bytes += chunk }
        var points = Set<String>()
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5)
            guard fields.count > 4 else { continue }
            points.insert(unescapeMountField(fields[4]))
        }
        return points
    }

    /// "\\040" and the like back into the byte they stand for.
    static func unescapeMountField(_ field: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        var index = field.startIndex
        while index < field.endIndex {
            if field[index] == UInt8(ascii: "\\"), index + 3 < field.endIndex,
               case let digits = field[(index + 1)...(index + 3)], digits.allSatisfy({ (48...55).contains($0) }) {
                out.append(digits.reduce(0) { $0 * 8 + ($1 - 48) })
                index += 4
            } else {
                out.append(field[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// The walk, handed to its thread and back after the join.
private final class WalkBox: @unchecked Sendable {
    var value: ScanWalk
    init(_ value: ScanWalk) { self.value = value }
}
