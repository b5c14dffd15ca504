import Synchronization
import TonearmControlPlane
import TonearmDecoding
import TonearmSQLite
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// The music library's index: the database, the scanner thread that keeps it, the watcher
/// that asks it to, and the queries (`catalog`) every client reads.
///
/// The scanner ("tonearm-scan") and the watcher ("tonearm-watch") run at idle CPU and I/O
/// priority: the player's threads always come first, so a scan never causes an underrun.
/// Requests to scan queue up and merge (the same path twice is one scan, the whole library
/// swallows the rest); each is numbered, and `progress` says which is done.
public final class MusicIndex: Sendable {
    public struct Settings: Sendable {
        public var musicDirectory: String
        public var databasePath: String
        /// Where stored playlists (`NAME.m3u`) are; nil for none.
        public var playlistDirectory: String?
        /// Watch the music directory and scan what changes.
        public var watch = true

        public init(musicDirectory: String, databasePath: String, playlistDirectory: String? = nil, watch: Bool = true) {
            self.musicDirectory = musicDirectory
            self.databasePath = databasePath
            self.playlistDirectory = playlistDirectory
            self.watch = watch
        }
    }

    /// The canonical music directory.
    public let root: String
    public let settings: Settings
    public var catalog: any LibraryCatalog { reader }
    private let reader: IndexCatalog
    private let state = Mutex(Queue())
    private let wakeup = Wakeup()
    private let scanner = Mutex<DeviceLoop?>(nil)
    private let watcher = Mutex<LibraryWatcher?>(nil)
    private let notify: @Sendable () -> Void
    private let log: PlugInLog

    private struct Queue {
        var requests: [(target: String, job: Int)] = []
        var nextJob = 1
        var progress = ScanProgress()
        var unavailable: [String] = []
        /// As of the last scan done (or the opening).
        var totals = LibraryTotals()
    }

    /// Opens (or makes) the database and starts the scanner and, if asked, the watcher. The
    /// first scan waits for `scan()`. `notify` is called, from the scanner's thread, when
    /// `progress` or `unavailable` changed.
    public init(_ settings: Settings, log: PlugInLog, notify: @escaping @Sendable () -> Void) throws(LibraryError) {
        self.settings = settings
        self.log = log
        self.notify = notify
        do throws(SystemError) {
            root = try FileSystem.realPath(settings.musicDirectory)
            guard try FileSystem.status(root).kind == .directory else { throw SystemError(ENOTDIR) }
        } catch {
            throw .musicDirectoryUnavailable(settings.musicDirectory, cause: error.text)
        }
        let writer: Database
        do {
            writer = try IndexDatabase.open(settings.databasePath) { aside, why in
                log.warning("library database \(settings.databasePath) could not be used (\(why)); set aside as \(aside), a new one is made")
            }
            reader = IndexCatalog(try (0..<2).map { _ throws(SQLiteError) in try IndexDatabase.reader(settings.databasePath) },
                                  playlists: settings.playlistDirectory.map(PlaylistDirectory.init(path:)))
        } catch {
            throw .databaseUnavailable(settings.databasePath, cause: error.description)
        }
        let unavailable = (try? Self.unavailableRoots(writer)) ?? []
        let totals = (try? reader.totals()) ?? LibraryTotals()
        state.withLock {
            $0.unavailable = unavailable
            $0.totals = totals
        }
        let loop = DeviceLoop(name: "tonearm-scan", wake: { [wakeup] in wakeup.post() }) { [self] isStopping in
            if requestIdlePriority() != 0 { log.notice("the library scanner runs at normal priority: SCHED_IDLE was refused") }
            scanLoop(writer, isStopping: isStopping)
        }
        scanner.withLock { $0 = loop }
        if settings.watch {
            let watching = LibraryWatcher(root: root) { [weak self] path in self?.scan(path) }
            watcher.withLock { $0 = watching }
        }
    }

    /// Stops the watcher and the scanner (a scan in progress commits what it has and stops).
    public func stop() {
        watcher.withLock { $0 }?.stop()
        scanner.withLock { $0 }?.stop()
    }

    /// Asks for a scan of `path` (relative to the music directory, "" or nil for all of it);
    /// returns its job number.
    @discardableResult
    public func scan(_ path: String? = nil) -> Int {
        let target = IndexCatalog.trimmed(path ?? "")
        let job = state.withLock { queue -> Int in
            if let pending = queue.requests.first(where: { $0.target == target || $0.target.isEmpty }) { return pending.job }
            let job = queue.nextJob
            queue.nextJob += 1
            if target.isEmpty {
                queue.requests = [(target, job)]
            } else {
                queue.requests.append((target, job))
            }
            queue.progress.job = job
            return job
        }
        wakeup.post()
        return job
    }

    /// The stored playlists' directory; nil when none is configured.
    public var playlists: PlaylistDirectory? { settings.playlistDirectory.map(PlaylistDirectory.init(path:)) }

    /// What the scanner is doing or last did.
    public var progress: ScanProgress { state.withLock { $0.progress } }

    /// Directories whose medium is not mounted ("" for the music directory itself).
    public var unavailable: [String] { state.withLock { $0.unavailable } }

    /// Songs, artists, albums and play time as of the last scan done, counted by the scanner
    /// when it finished: reading them asks the database nothing.
    public var totals: LibraryTotals { state.withLock { $0.totals } }

    // MARK: The scanner's thread

    private func scanLoop(_ db: Database, isStopping: @escaping @Sendable () -> Bool) {
        let statements: IndexStatements
        do {
            statements = try IndexStatements(db)
        } catch {
            log.error("library database: \(error)")
            return
        }
        while !isStopping() {
            guard let (target, job) = state.withLock({ $0.requests.isEmpty ? nil : $0.requests.removeFirst() }) else {
                wakeup.wait()
                continue
            }
            let started = monotonicSeconds()
            var figures = state.withLock { queue -> ScanProgress in
                var fresh = ScanProgress()
                fresh.job = queue.progress.job
                fresh.finishedJob = queue.progress.finishedJob
                fresh.isScanning = true
                queue.progress = fresh
                return fresh
            }
            notify()
            var scan = IndexScan(root: root, target: target, db: db, statements: statements, figures: figures,
                                 stopping: isStopping) { [self] now in
                state.withLock { queue in
                    let job = queue.progress.job
                    queue.progress = now
                    queue.progress.job = job
                    queue.progress.seconds = monotonicSeconds() - started
                }
                notify()
            }
            do {
                _ = try scan.run()
                try db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('last_update', \(time(nil)))")
            } catch {
                log.error("library scan of \(target.isEmpty ? root : root + "/" + target): \(error)")
                try? db.execute("ROLLBACK")
            }
            figures = scan.figures
            let unavailable = (try? Self.unavailableRoots(db)) ?? []
            let totals = try? reader.totals()
            state.withLock { queue in
                let latest = queue.progress.job
                queue.progress = figures
                queue.progress.job = latest
                queue.progress.finishedJob = max(queue.progress.finishedJob, job)
                queue.progress.isScanning = !queue.requests.isEmpty
                queue.progress.seconds = monotonicSeconds() - started
                queue.unavailable = unavailable
                if let totals { queue.totals = totals }
            }
            if figures.failed > 0 || figures.indexed > 0 || figures.removed > 0 {
                log.info("library: \(figures.indexed) indexed, \(figures.unchanged) unchanged, \(figures.removed) removed, \(figures.failed) failed in \(target.isEmpty ? "the music directory" : target)")
            }
            notify()
        }
    }

    /// The tops of the subtrees marked unavailable.
    static func unavailableRoots(_ db: Database) throws(SQLiteError) -> [String] {
        var roots: [String] = []
        try db.prepare("""
            SELECT d.path FROM directories d LEFT JOIN directories p ON p.id = d.parent
            WHERE d.available = 0 AND (p.id IS NULL OR p.available = 1) ORDER BY d.path
            """).rows([]) { row in
            roots.append(row.text(0) ?? "")
            return true
        }
        return roots
    }
}

private extension Substring {
    func trimmingCharacters() -> String {
        String(self.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
