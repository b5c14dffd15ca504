import Foundation
import Synchronization
import TestSupport
import TonearmControlPlane
import XCTest
@testable import TonearmLibrary

/// What the tests of the index on real files share: a music folder in a temporary directory,
/// indexes on a database beside it (each stopped after its test), and the queries they ask.
class IndexTestCase: XCTestCase {
    var tmp: TemporaryDirectory!
    var music: String { tmp.file("music") }
    var indexes: [MusicIndex] = []

    override func setUp() async throws {
        tmp = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
    }

    override func tearDown() {
        for index in indexes { index.stop() }
        indexes = []
    }

    func makeIndex(watch: Bool = false, playlists: String? = nil, database: String? = nil) throws -> (MusicIndex, Notices) {
        let notices = Notices()
        let index = try MusicIndex(.init(musicDirectory: music, databasePath: database ?? tmp.file("library.db"),
                                         playlistDirectory: playlists, watch: watch),
                                   log: .silent, notify: { notices.ring() })
        indexes.append(index)
        return (index, notices)
    }

    /// Scans and waits for the scan to finish; returns its figures. The scanner and the watcher
    /// run at idle priority (SCHED_IDLE): on a machine whose cores are all busy they run only in
    /// the gaps, so every wait for their work here is two minutes, ended by the work itself.
    @discardableResult
    func scan(_ index: MusicIndex, _ path: String? = nil) throws -> ScanProgress {
        let job = index.scan(path)
        XCTAssertTrue(waitUntil(timeout: 120) { index.progress.finishedJob >= job }, "scan \(job) did not finish")
        return index.progress
    }

    func values(_ catalog: any LibraryCatalog, _ tag: Tag, filters: [TagFilter] = [], groupedBy groups: [Tag] = []) throws -> [String] {
        var out: [String] = []
        try catalog.values(of: tag, filters: filters, groupedBy: groups) { out.append($0.joined(separator: "|")); return true }
        return out
    }

    func songs(_ catalog: any LibraryCatalog, _ filters: [TagFilter], _ matching: Matching) throws -> [LibrarySong] {
        var out: [LibrarySong] = []
        try catalog.songs(SongQuery(filters, matching: matching)) { out.append($0); return true }
        return out
    }

    func paths(_ catalog: any LibraryCatalog, _ filters: [TagFilter], _ matching: Matching) throws -> [String] {
        try songs(catalog, filters, matching).map(\.path)
    }

    /// Runs `program` (mount, umount); whether it succeeded.
    func run(_ program: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}

/// Counts the index's notifications.
final class Notices: Sendable {
    private let count = Atomic<Int>(0)
    func ring() { count.add(1, ordering: .relaxed) }
    var rung: Int { count.load(ordering: .relaxed) }
}
