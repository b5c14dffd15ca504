import Synchronization
import TestSupport
import TonearmControlPlane
@testable import TonearmMPD
import XCTest

/// `listallinfo` over a library larger than one of its parts: every directory in MPD's order,
/// each part read in one snapshot, the next read while the last goes to the client and never
/// more than one ahead; a directory gone between two parts, and a client gone mid-answer.
final class MPDListAllTests: XCTestCase {
    private static let modified = 1_700_000_000
    private static let modifiedLine = "Last-Modified: 2023-11-14T22:13:20Z\n"

    /// A top song, 8 artists of 8 albums of 12 songs, with long titles: some 600 KB of answer.
    private static func tree() -> [String: DirectoryListing] {
        func song(_ path: String) -> LibrarySong {
            LibrarySong(path: path, tags: [(.title, "Title of \(path) " + String(repeating: "la ", count: 200))],
                        duration: 180.25, sampleRate: 44100, bitsPerSample: 16, channels: 2, modified: modified)
        }
        var tree: [String: DirectoryListing] = [:]
        var top = DirectoryListing()
        top.songs = [song("intro.flac")]
        for artist in 0..<8 {
            let artistPath = "Artist \(artist)"
            top.directories.append(.init(path: artistPath, modified: modified))
            var artistListing = DirectoryListing()
            for album in 0..<8 {
                let albumPath = "\(artistPath)/Album \(album)"
                artistListing.directories.append(.init(path: albumPath, modified: modified))
                var albumListing = DirectoryListing()
                albumListing.songs = (1...12).map { song("\(albumPath)/\($0).flac") }
                tree[albumPath] = albumListing
            }
            tree[artistPath] = artistListing
        }
        tree[""] = top
        return tree
    }

    /// The answer written out by hand: a directory's songs, then each directory's line and
    /// what is under it.
    private static func expected(_ tree: [String: DirectoryListing], _ directory: String = "") -> String {
        var out = directory.isEmpty ? "" : "directory: \(directory)\n" + modifiedLine
        for song in tree[directory]?.songs ?? [] {
            let title = song.tags[0].value
            out += "file: \(song.path)\n" + modifiedLine + "Format: 44100:16:2\nTitle: \(title)\nTime: 180\nduration: 180.250\n"
        }
        for sub in tree[directory]?.directories ?? [] { out += expected(tree, sub.path) }
        return out
    }

    /// A library of fixed listings that counts its snapshots and what it listed.
    private final class TreeCatalog: LibraryCatalog {
        struct Seen {
            var started = 0
            var finished = 0
            var listed: [String] = []
        }

        let tree: [String: DirectoryListing]
        /// Gone from the second snapshot on.
        let vanishing: Set<String>
        let seen = Mutex(Seen())
        let onRead: @Sendable () -> Void

        init(_ tree: [String: DirectoryListing], vanishing: Set<String> = [], onRead: @escaping @Sendable () -> Void = {}) {
            self.tree = tree
            self.vanishing = vanishing
            self.onRead = onRead
        }

        var listedAll: Bool { seen.withLock { Set($0.listed) == Set(tree.keys) } }

        func listDirectory(_ directory: String) throws(CommandFailure) -> DirectoryListing {
            try readingDirectories { (list) throws(CommandFailure) in try list(directory) }
        }

        func readingDirectories<T>(
            _ body: (_ listDirectory: (String) throws(CommandFailure) -> DirectoryListing) throws(CommandFailure) -> T
        ) throws(CommandFailure) -> T {
            let snapshot = seen.withLock { $0.started += 1; return $0.started }
            defer {
                seen.withLock { $0.finished += 1 }
                onRead()
            }
            return try body { (directory) throws(CommandFailure) -> DirectoryListing in
                seen.withLock { $0.listed.append(directory) }
                guard let listing = tree[directory], !(snapshot > 1 && vanishing.contains(directory)) else {
                    throw CommandFailure(.notFound, "no directory '\(directory)' in the library")
                }
                return listing
            }
        }

        func songs(_ query: SongQuery, _ each: (LibrarySong) -> Bool) throws(CommandFailure) -> Int { throw Self.unused }
        func values(of tag: Tag, filters: [TagFilter], groupedBy groups: [Tag], _ each: ([String]) -> Bool) throws(CommandFailure) {
            throw Self.unused
        }
        func count(_ filters: [TagFilter], matching: Matching, groupedBy group: Tag?) throws(CommandFailure) -> [SongCount] {
            throw Self.unused
        }
        func totals() throws(CommandFailure) -> LibraryTotals { throw Self.unused }
        func storedPlaylists() throws(CommandFailure) -> [StoredPlaylist] { throw Self.unused }
        func failures(_ each: (_ path: String, _ reason: String) -> Bool) throws(CommandFailure) { throw Self.unused }
        private static let unused = CommandFailure(.unavailable, "not asked in this test")
    }

    private enum Event: Sendable {
        case part([UInt8], readsStarted: Int, done: @Sendable (Bool) -> Void)
        case read
        case answered([UInt8])
        case timedOut
    }

    private static let request = MPDRequest(clientID: 1, commands: [MPDCommand("listallinfo")])

    func testEachPartIsReadWhileTheOneBeforeGoesOutAndTheAnswerIsWholeAndInOrder() async throws {
        let tree = Self.tree()
        let expected = Self.expected(tree) + "OK\n"
        XCTAssertGreaterThan(expected.utf8.count, 8 * MPDCommands.listAllChunkBytes)
        let (events, sink) = AsyncStream.makeStream(of: Event.self)
        let catalog = TreeCatalog(tree) { sink.yield(.read) }
        let commands = MPDCommands(plane: TestControlPlane(catalog: catalog), settings: MPDSettings(musicDirectory: "/music"))
        let reply = MPDReply(deliver: { _, _ in }, part: { bytes, done in
            sink.yield(.part(bytes, readsStarted: catalog.seen.withLock { $0.started }, done: done))
        })
        let request = Self.request
        let answering = Task {
            let answer = await commands.answer(request, streamingTo: reply)
            sink.yield(.answered(answer.0))
        }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(120))
            sink.yield(.timedOut)
        }
        defer { watchdog.cancel() }

        var received: [UInt8] = []
        var parts = 0
        var waiting: (@Sendable (Bool) -> Void)?
        loop: for await event in events {
            switch event {
            case .part(let bytes, let readsStarted, let done):
                XCTAssertNil(waiting, "a part is handed over only once the one before was written")
                XCTAssertLessThanOrEqual(readsStarted, parts + 2, "at most one part is read ahead of the one going out")
                received += bytes
                parts += 1
                waiting = done
            case .read:
                break
            case .answered(let rest):
                received += rest
                break loop
            case .timedOut:
                XCTFail("part \(parts) waited for the next read, which never came: \(catalog.seen.withLock { $0 })")
                waiting?(false)
                break loop
            }
            // A part goes out once the next is read, or nothing is left to read: so the answer
            // only comes to its end if each part is read while the one before waits.
            if let done = waiting, catalog.seen.withLock({ $0.finished }) >= parts + 1 || catalog.listedAll {
                waiting = nil
                done(true)
            }
        }
        await answering.value
        XCTAssertGreaterThanOrEqual(parts, 8)
        XCTAssertEqual(String(decoding: received, as: UTF8.self), expected)
        let seen = catalog.seen.withLock { $0 }
        XCTAssertEqual(seen.listed.count, tree.count, "each directory listed once")
        XCTAssertLessThanOrEqual(seen.started, parts + 1, "one snapshot per part, not per directory")
    }

    func testADirectoryGoneBetweenTwoPartsEndsTheAnswerWithAnError() async throws {
        let tree = Self.tree()
        let catalog = TreeCatalog(tree, vanishing: ["Artist 7"])
        let commands = MPDCommands(plane: TestControlPlane(catalog: catalog), settings: MPDSettings(musicDirectory: "/music"))
        let (bytes, close) = await commands.answer(Self.request)
        XCTAssertFalse(close)
        let answer = String(decoding: bytes, as: UTF8.self)
        let full = Self.expected(tree)
        let cut = try XCTUnwrap(full.range(of: "directory: Artist 7\n" + Self.modifiedLine))
        XCTAssertEqual(answer, String(full[..<cut.upperBound]) + "ACK [50@0] {listallinfo} No such directory\n")
    }

    func testAClientGoneMidAnswerStopsTheReading() async throws {
        let tree = Self.tree()
        let catalog = TreeCatalog(tree)
        let commands = MPDCommands(plane: TestControlPlane(catalog: catalog), settings: MPDSettings(musicDirectory: "/music"))
        let handed = Mutex(0)
        let reply = MPDReply(deliver: { _, _ in }, part: { _, done in
            handed.withLock { $0 += 1 }
            done(false)
        })
        let (rest, _) = await commands.answer(Self.request, streamingTo: reply)
        XCTAssertEqual(String(decoding: rest, as: UTF8.self), "ACK [52@0] {listallinfo} the client went away\n")
        XCTAssertEqual(handed.withLock { $0 }, 1)
        let seen = catalog.seen.withLock { $0 }
        XCTAssertLessThanOrEqual(seen.started, 2, "the part read ahead is the last")
        XCTAssertLessThan(seen.listed.count, tree.count)
    }
}
