import Foundation
import TestSupport
import XCTest
import TonearmLibrary

/// With a music directory, no path a client sends may reach a file outside it.
final class ConfinementTests: XCTestCase {
    var tmp: TemporaryDirectory!
    var music: String { tmp.file("music") }

    override func setUpWithError() throws {
        tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("music/Album/01.flac"), tags: [("TRACKNUMBER", "1")])
        try Tracks.write(tmp.file("music/Album/02.flac"), tags: [("TRACKNUMBER", "2")])
        try Tracks.write(tmp.file("outside/secret.flac"))
        // A sibling whose name starts like the music directory's.
        try Tracks.write(tmp.file("music-other/x.flac"))
    }

    override func tearDown() {
        tmp = nil
    }

    private func scan(_ paths: [String]) throws(LibraryError) -> ScanResult {
        try MusicLibrary.tracks(at: paths, musicDirectory: music)
    }

    func testRelativePathsStartAtTheMusicDirectory() throws {
        XCTAssertEqual(try scan(["Album/02.flac"]).tracks.map(\.path), [canonical(music) + "/Album/02.flac"])
        XCTAssertEqual(names(try scan(["Album"]).tracks), ["01.flac", "02.flac"])
        XCTAssertEqual(names(try scan(["./Album/../Album/01.flac"]).tracks), ["01.flac"])
        XCTAssertEqual(try MusicLibrary.resolve("Album", musicDirectory: music), canonical(music) + "/Album")
    }

    func testAbsolutePathsInsideAreAccepted() throws {
        XCTAssertEqual(names(try scan([music + "/Album/01.flac", music]).tracks), ["01.flac", "01.flac", "02.flac"])
    }

    func testDotDotOutIsRefused() {
        for path in ["../outside/secret.flac", "Album/../../outside/secret.flac", "../music-other/x.flac", ".."] {
            let error = libraryError { () throws(LibraryError) in try self.scan([path]) }
            guard case .outsideMusicDirectory(path, music)? = error else {
                return XCTFail("\(path): \(String(describing: error))")
            }
        }
    }

    func testAbsolutePathOutsideIsRefusedWithAClearMessage() {
        let error = libraryError { () throws(LibraryError) in try self.scan(["/etc/passwd"]) }
        XCTAssertEqual(error, .outsideMusicDirectory("/etc/passwd", musicDirectory: music))
        XCTAssertEqual(error?.description, "'/etc/passwd' is outside the music directory \(music)")
        let secret = tmp.file("outside/secret.flac")
        XCTAssertEqual(libraryError { () throws(LibraryError) in try self.scan([secret]) },
                       .outsideMusicDirectory(secret, musicDirectory: music))
    }

    func testAPathOutsideIsAnsweredInTheClientsOwnWordsWithoutAskingTheFileSystem() {
        // /proc/self/exe is a link to this very program: its path must not come back.
        let climb = String(repeating: "../", count: 12) + "proc/self/exe"
        let error = libraryError { () throws(LibraryError) in try self.scan([climb]) }
        XCTAssertEqual(error?.description, "'\(climb)' is outside the music directory \(music)")
        // Missing, present or unreadable beyond the music directory: one answer.
        for path in ["/proc/1/root/etc/shadow", "/no/such/file.flac", "/etc/passwd"] {
            XCTAssertEqual(libraryError { () throws(LibraryError) in try self.scan([path]) }?.description,
                           "'\(path)' is outside the music directory \(music)")
        }
    }

    func testALinkLeadingOutsideIsRefusedWhenNamedAndSkippedInAScan() throws {
        try symlink(music + "/Album/03.flac", to: tmp.file("outside/secret.flac"))
        try symlink(music + "/Elsewhere", to: tmp.file("outside"))
        let error = libraryError { () throws(LibraryError) in try self.scan(["Album/03.flac"]) }
        XCTAssertEqual(error, .outsideMusicDirectory("Album/03.flac", musicDirectory: music))
        XCTAssertEqual(error?.description, "'Album/03.flac' is outside the music directory \(music)",
                       "where the link leads is not said")
        XCTAssertNotNil(libraryError { () throws(LibraryError) in try self.scan(["Elsewhere/secret.flac"]) })

        let result = try scan(["."])
        XCTAssertEqual(names(result.tracks), ["01.flac", "02.flac"])
        XCTAssertEqual(result.skipped.map(\.path).sorted(),
                       [canonical(music) + "/Album/03.flac", canonical(music) + "/Elsewhere"])
        XCTAssertTrue(result.skipped.allSatisfy { $0.reason.hasSuffix("outside the music directory") })
    }

    /// "Not found" would tell a client which files exist beyond the music directory.
    func testAMissingPathOutsideIsOutsideNotMissing() {
        XCTAssertEqual(libraryError { () throws(LibraryError) in try self.scan(["Album/03.flac"]) }, .notFound("Album/03.flac"))
        guard case .outsideMusicDirectory? = libraryError({ () throws(LibraryError) in try self.scan(["../nothing-here.flac"]) }) else {
            return XCTFail("a missing path outside must be refused as outside")
        }
        guard case .outsideMusicDirectory? = libraryError({ () throws(LibraryError) in try self.scan(["/no/such/file.flac"]) }) else {
            return XCTFail("a missing absolute path outside must be refused as outside")
        }
    }

    func testAMusicDirectoryBehindALinkConfinesToItsTarget() throws {
        let link = tmp.file("music-link")
        try symlink(link, to: music)
        XCTAssertEqual(names(try MusicLibrary.tracks(at: [link + "/Album/01.flac", "Album/02.flac"], musicDirectory: link).tracks),
                       ["01.flac", "02.flac"])
        guard case .outsideMusicDirectory? = libraryError({ () throws(LibraryError) in
            try MusicLibrary.tracks(at: [link + "/../outside/secret.flac"], musicDirectory: link)
        }) else { return XCTFail() }
        XCTAssertEqual(libraryError { () throws(LibraryError) in
            try MusicLibrary.tracks(at: [link + "/Album/09.flac"], musicDirectory: link)
        }, .notFound(link + "/Album/09.flac"))
    }

    func testAMissingMusicDirectoryIsAnError() {
        let missing = tmp.file("no-music")
        let error = libraryError { () throws(LibraryError) in try MusicLibrary.tracks(at: ["x.flac"], musicDirectory: missing) }
        XCTAssertEqual(error, .musicDirectoryUnavailable(missing, cause: "No such file or directory"))
        XCTAssertEqual(error?.description, "music directory '\(missing)' is unusable: No such file or directory")
    }

    func testWithoutAMusicDirectoryRelativePathsStartAtTheWorkingDirectory() throws {
        let saved = FileManager.default.currentDirectoryPath
        defer { _ = FileManager.default.changeCurrentDirectoryPath(saved) }
        XCTAssertTrue(FileManager.default.changeCurrentDirectoryPath(tmp.path))
        XCTAssertEqual(try MusicLibrary.tracks(at: ["outside/secret.flac", "music/Album/../Album/01.flac"], musicDirectory: nil)
            .tracks.map(\.path),
                       [canonical(tmp.file("outside/secret.flac")), canonical(tmp.file("music/Album/01.flac"))])
    }
}
