import TonearmControlPlane
import TonearmFLAC
import TonearmSQLite

#if canImport(Glibc)
import Glibc
#endif

/// One scan of the music directory, or of a directory or file in it, on the scanner's thread.
///
/// Incremental: a file whose size and modification time are what the index has is not read
/// again; one that fails to read is remembered with its reason and read again once it changes;
/// what is no longer there is pruned. A directory that was a mount point and no longer is (a
/// stick pulled out: /proc/self/mountinfo says so) is not pruned: its songs are marked
/// unavailable, and available again when a scan finds the mount back. Changes are committed in batches, so a scan killed half-way
/// leaves a database that opens and a rescan that finishes the job.
struct IndexScan {
    /// The canonical music directory.
    let root: String
    /// The directory or file to scan, relative to `root` ("" for all of it).
    let target: String
    let db: Database
    let statements: IndexStatements
    let stopping: () -> Bool
    /// Called after each batch with the figures so far.
    let progress: (ScanProgress) -> Void
    var figures: ScanProgress
    private var pending = 0
    private var inTransaction = false
    private var visited = Set<FileIdentity>()
    /// The tracks found again or stored by this scan: the others under `target` are pruned.
    private var seenTracks = Set<Int>()
    /// What the index had under `target`, taken off as the walk finds it again.
    private var knownFailures: [String: (size: Int, modifiedNanoseconds: Int)] = [:]
    private var knownDirectories: [String: (id: Int, wasMount: Bool, available: Bool)] = [:]
    /// The mount points, as the scan began.
    private let mountPoints = IndexScan.mountPoints()
    /// Directories found unmounted: what is under them stays, unavailable.
    private var unmounted: [String] = []

    static let batchSize = 1024

    init(root: String, target: String, db: Database, statements: IndexStatements, figures: ScanProgress,
         stopping: @escaping () -> Bool, progress: @escaping (ScanProgress) -> Void) {
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
        try loadKnown()
        let absolute = target.isEmpty ? root : root + "/" + target
        if let status = try? FileSystem.status(absolute) {
            switch status.kind {
            case .directory:
                try walk(target, absolute: absolute, status: status, parentID: try parentID(of: target))
            case .regular:
                if LibraryScan.hasFLACExtension(target) {
                    try file(target, absolute: absolute, status: status, directoryID: try directoryID(parentOf: target))
                }
            case .other:
                break
            }
        }
        guard !stopping() else {
            try commit()
            return unmounted
        }
        try prune()
        try commit()
        return unmounted
    }

    // MARK: Walking

    private mutating func walk(_ path: String, absolute: String, status: FileStatus, parentID: Int?) throws(SQLiteError) {
        guard !stopping(), visited.insert(status.identity).inserted else { return }
        let isMount = mountPoints.contains(absolute)
        let known = knownDirectories.removeValue(forKey: path)
        if let known, known.wasMount, !isMount {
            // It was a mount point and is not any more: the medium is gone.
            try markUnavailable(path, id: known.id)
            return
        }
        let id: Int
        if let known {
            id = known.id
            try statements.updateDirectory.run(.integer(status.modifiedSeconds), .integer(isMount ? 1 : 0), .integer(id))
            if !known.available { try markAvailable(path) }
        } else {
            try statements.insertDirectory.run(.text(path), parentID.map { .integer($0) } ?? .null,
                                               .integer(status.modifiedSeconds), .integer(isMount ? 1 : 0))
            id = db.lastInsertRowID
        }
        let entries: [DirectoryEntry]
        do throws(SystemError) {
            entries = try FileSystem.entries(absolute)
        } catch {
            try fail(path, size: 0, modifiedNanoseconds: 0, reason: "cannot list the directory: \(error.text)")
            return
        }
        for entry in entries.sorted(by: { naturalOrder($0.name, $1.name) }) where !entry.name.hasPrefix(".") {
            guard !stopping() else { return }
            let childPath = path.isEmpty ? entry.name : path + "/" + entry.name
            let childAbsolute = absolute + "/" + entry.name
            switch entry.kind {
            case .directory, .symbolicLink, .unknown:
                guard let child = try? FileSystem.status(childAbsolute) else { continue }
                if child.kind == .directory {
                    // Through a link, only inside the music directory.
                    if entry.kind != .directory {
                        guard let real = try? FileSystem.realPath(childAbsolute), isInside(real, root) else { continue }
                    }
                    try walk(childPath, absolute: childAbsolute, status: child, parentID: id)
                } else if child.kind == .regular, LibraryScan.hasFLACExtension(entry.name) {
                    try file(childPath, absolute: childAbsolute, status: child, directoryID: id)
                }
            case .regular:
                guard LibraryScan.hasFLACExtension(entry.name) else { continue }
                let status: FileStatus
                do throws(SystemError) {
                    status = try FileSystem.status(childAbsolute)
                } catch {
                    try fail(childPath, size: 0, modifiedNanoseconds: 0, reason: error.text)
                    continue
                }
                try file(childPath, absolute: childAbsolute, status: status, directoryID: id)
            case .other:
                continue
            }
        }
    }

    private mutating func file(_ path: String, absolute: String, status: FileStatus, directoryID: Int) throws(SQLiteError) {
        figures.seen += 1
        let stamp = status.modifiedSeconds * 1_000_000_000 + status.modifiedNanoseconds
        let known = try statements.trackStamp(path)
        if let known, known.size == status.size, known.modifiedNanoseconds == stamp {
            seenTracks.insert(known.id)
            figures.unchanged += 1
            if !known.available { try statements.setTrackAvailable.run(.integer(1), .integer(known.id)) }
            return
        } else if known == nil, let failure = knownFailures.removeValue(forKey: path), failure.size == status.size,
                  failure.modifiedNanoseconds == stamp {
            figures.failed += 1
            return
        }
        let info: TrackInfo
        do {
            info = try FLACDecoder.metadata(path: absolute)
        } catch {
            try fail(path, size: status.size, modifiedNanoseconds: stamp, reason: error.reason.description)
            return
        }
        try begin()
        try statements.deleteFailure.run(.text(path))
        seenTracks.insert(try statements.store(IndexedTrack(path: path, status: status, info: info), directory: directoryID, in: db))
        figures.indexed += 1
        try counted()
    }

    private mutating func fail(_ path: String, size: Int, modifiedNanoseconds: Int, reason: String) throws(SQLiteError) {
        try begin()
        if let id = try statements.trackID(path) { try statements.deleteTrack(id) }
        try statements.insertFailure.run(.text(path), .integer(size), .integer(modifiedNanoseconds), .text(reason))
        figures.failed += 1
        try counted()
    }

    // MARK: Unmounted and back

    private mutating func markUnavailable(_ path: String, id: Int) throws(SQLiteError) {
        try begin()
        try statements.setSubtreeAvailable(path, false)
        unmounted.append(path)
        // Nothing under it is pruned ("": the music directory itself, everything).
        let prefix = path.isEmpty ? "" : path + "/"
        knownFailures = knownFailures.filter { !$0.key.hasPrefix(prefix) }
        knownDirectories = knownDirectories.filter { !$0.key.hasPrefix(prefix) }
        try counted()
    }

    private mutating func markAvailable(_ path: String) throws(SQLiteError) {
        try begin()
        try statements.setSubtreeAvailable(path, true)
        try counted()
    }

    // MARK: Pruning

    private mutating func prune() throws(SQLiteError) {
        let (exact, prefix) = (target, target.isEmpty ? "" : target + "/")
        let kept = unmounted.map { $0.isEmpty ? "" : $0 + "/" }
        var gone: [Int] = []
        try statements.allTracks.rows([]) { row in
            let id = row.integer(0)
            guard !seenTracks.contains(id), let path = row.text(1) else { return true }
            if (target.isEmpty || path == exact || path.hasPrefix(prefix)) && !kept.contains(where: { path.hasPrefix($0) }) {
                gone.append(id)
            }
            return true
        }
        for id in gone {
            try begin()
            try statements.deleteTrack(id)
            figures.removed += 1
            try counted()
        }
        for (path, _) in knownFailures {
            try begin()
            try statements.deleteFailure.run(.text(path))
            try counted()
        }
        for (_, known) in knownDirectories {
            try begin()
            try statements.deleteDirectory.run(.integer(known.id))
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
            try db.execute("COMMIT")
            inTransaction = false
        }
        pending = 0
        progress(figures)
    }

    // MARK: What the index had

    private mutating func loadKnown() throws(SQLiteError) {
        let (exact, prefix) = (target, target.isEmpty ? "" : target + "/")
        func under(_ path: String) -> Bool { target.isEmpty || path == exact || path.hasPrefix(prefix) }
        try statements.allFailures.rows([]) { row in
            let path = row.text(0) ?? ""
            if under(path) { knownFailures[path] = (row.integer(1), row.integer(2)) }
            return true
        }
        try statements.allDirectories.rows([]) { row in
            let path = row.text(1) ?? ""
            if under(path) { knownDirectories[path] = (row.integer(0), row.integer(2) != 0, row.integer(3) != 0) }
            return true
        }
    }

    private func parentID(of path: String) throws(SQLiteError) -> Int? {
        guard !path.isEmpty else { return nil }
        return try directoryID(parentOf: path)
    }

    /// The id of the directory holding `path`; the directories between are indexed when missing.
    private func directoryID(parentOf path: String) throws(SQLiteError) -> Int {
        let parent = path.split(separator: "/").dropLast().joined(separator: "/")
        if let id = try statements.directoryID(parent) { return id }
        let grandparent: Int? = parent.isEmpty ? nil : try directoryID(parentOf: parent)
        let status = try? FileSystem.status(parent.isEmpty ? root : root + "/" + parent)
        let absolute = parent.isEmpty ? root : root + "/" + parent
        try statements.insertDirectory.run(.text(parent), grandparent.map { .integer($0) } ?? .null,
                                           .integer(status?.modifiedSeconds ?? 0), .integer(mountPoints.contains(absolute) ? 1 : 0))
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
