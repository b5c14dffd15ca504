import Foundation
import TestSupport
import XCTest

/// The library through the real daemon and the real CLI: scans, browsing, queries, bad input,
/// a kill -9 mid-scan, a stick pulled out under the queue, and a scan while playing.
final class DaemonLibraryTests: XCTestCase {
    private static let samples = FLACFixture(frames: 4410, sampleRate: 44100, channels: 1).samples()

    /// `artists` × `albums` × `tracks` tagged files under DIR/<artist>/<album>/.
    private func writeTree(_ directory: String, artists: Int, albums: Int, tracks: Int) throws {
        var template: String?
        for a in 1...artists {
            for b in 1...albums {
                for t in 1...tracks {
                    let path = "\(directory)/Artist \(a)/Album \(a)-\(b)/\(t).flac"
                    try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                            withIntermediateDirectories: true)
                    if artists * albums * tracks > 50, let template {
                        // Big trees: copies of one file (the scan reads each all the same).
                        try FileManager.default.copyItem(atPath: template, toPath: path)
                        continue
                    }
                    try LibFLACEncoder.write(Self.samples, to: path, sampleRate: 44100, channels: 1, bits: 16, tags: [
                        ("ALBUMARTIST", "Artist \(a)"), ("ARTIST", "Artist \(a)"), ("ALBUM", "Album \(a)-\(b)"),
                        ("TITLE", "Song \(t) of \(b)"), ("TRACKNUMBER", "\(t)"), ("GENRE", a % 2 == 0 ? "Jazz" : "Blues"),
                    ])
                    template = template ?? path
                }
            }
        }
    }

    private func waitForScan(_ world: DaemonBench, atLeast job: Int = 1, timeout: Double = 30) throws -> [String: Any] {
        var library: [String: Any] = [:]
        let done = try waitUntil(timeout: timeout) {
            library = try world.statusJSON().object("library") ?? [:]
            return (library.object("scan")?.int("finishedJob") ?? 0) >= job
        }
        XCTAssertTrue(done, "scan \(job) did not finish: \(library)")
        return library
    }

    func testTheCLIScansBrowsesListsFindsAndSearches() throws {
        let world = try DaemonBench(jack: false, device: "null", start: false)
        let music = world.path("music")
        try writeTree(music, artists: 2, albums: 2, tracks: 2)
        try writeBytes(Array("not a flac".utf8), to: music + "/Artist 1/broken.flac")
        world.daemon.arguments = ["--music-dir", music]
        try world.daemon.start()
        let library = try waitForScan(world)
        XCTAssertEqual(library.int("songs"), 8, "\(library)")
        XCTAssertEqual(library.object("scan")?.int("failed"), 1)

        // update: nothing changed; the failure is named with its reason.
        let update = try world.ok("update")
        XCTAssertTrue(update.stdout.contains("indexed 0, unchanged 8, removed 0, failed 1"), update.stdout)
        XCTAssertTrue(update.stderr.contains("failed: Artist 1/broken.flac: not a FLAC file"), update.stderr)
        let json = try XCTUnwrap(parseJSONObject(try world.ok("update", "--json").stdout))
        XCTAssertEqual(json.int("unchanged"), 8)

        XCTAssertEqual(try world.ok("ls").stdout, "Artist 1/\nArtist 2/\n")
        XCTAssertEqual(try world.ok("ls", "Artist 1/Album 1-2").stdout, "Artist 1/Album 1-2/1.flac\nArtist 1/Album 1-2/2.flac\n")
        XCTAssertEqual(try world.ok("list", "albumartist").stdout, "Artist 1\nArtist 2\n")
        XCTAssertEqual(try world.ok("list", "album", "genre", "Jazz").stdout, "Album 2-1\nAlbum 2-2\n")
        XCTAssertEqual(try world.ok("list", "album", "--group", "albumartist", "artist", "Artist 1").stdout,
                       "Artist 1\tAlbum 1-1\nArtist 1\tAlbum 1-2\n")
        XCTAssertEqual(try world.ok("find", "album", "Album 2-1").stdout, "Artist 2/Album 2-1/1.flac\nArtist 2/Album 2-1/2.flac\n")
        XCTAssertEqual(try world.ok("find", "album", "album 2-1").stdout, "", "find is case-sensitive")
        XCTAssertEqual(try world.ok("search", "title", "SONG 2 OF 2").stdout.split(separator: "\n").count, 2)
        let found = try XCTUnwrap(parseJSONObject(try world.ok("search", "--json", "--limit", "3", "title", "song").stdout))
        XCTAssertEqual(found.int("total"), 8)
        XCTAssertEqual(found.array("songs")?.count, 3)
        let first = try XCTUnwrap(found.array("songs")?.first as? [String: Any])
        XCTAssertEqual(first.string("file"), "Artist 1/Album 1-1/1.flac")
        XCTAssertEqual(first.object("tags")?.string("Title"), "Song 1 of 1")
        XCTAssertEqual(first.object("format")?.int("rate"), 44100)

        let stats = try world.ok("stats").stdout
        XCTAssertTrue(stats.contains("artists: 2") && stats.contains("albums:  4") && stats.contains("songs:   8"), stats)

        // findadd queues what matches, in path order, and it plays like anything added.
        XCTAssertTrue(try world.ok("findadd", "albumartist", "Artist 2").stdout.contains("added 4, queue 4"))
        XCTAssertEqual(try world.statusJSON().int("queueCount"), 4)

        // Bad input: a clear error each, exit 1, the daemon still up.
        for (arguments, message) in [
            (["list", "colour"], "unknown tag 'colour'"),
            (["find", "album"], "give TAG VALUE pairs"),
            (["update", "../elsewhere"], "leads out of the music directory"),
            (["update", "/etc"], "outside the music directory"),
            (["ls", "Nowhere"], "no directory 'Nowhere'"),
            (["findadd", "album", "No Such Album"], "no song in the library matches"),
        ] {
            let result = try world.daemon.cli(arguments)
            XCTAssertEqual(result.status, 1, "tonearm \(arguments): \(result)")
            XCTAssertTrue(result.stderr.contains(message), "tonearm \(arguments): \(result.stderr)")
        }
        XCTAssertEqual(try world.statusJSON().object("library")?.int("songs"), 8)
    }

    func testWithoutAMusicDirectoryThereIsNoLibrary() throws {
        let world = try DaemonBench(jack: false, device: "null")
        let result = try world.cli("stats")
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("there is no library: no music directory is configured"), result.stderr)
        XCTAssertEqual(try world.statusJSON().object("library")?.bool("indexed"), false)
    }

    /// kill -9 in the middle of the first scan: the database opens at the next start, and the
    /// scan it starts with finishes the job.
    func testAKillMidScanLeavesADatabaseThatOpensAndARescanThatFinishes() throws {
        let world = try DaemonBench(jack: false, device: "null", start: false)
        let music = world.path("music")
        try writeTree(music, artists: 30, albums: 10, tracks: 10)
        world.daemon.arguments = ["--music-dir", music]
        try world.daemon.start()
        let midway = try waitUntil(timeout: 30, interval: 0.005) {
            let scan = try world.statusJSON().object("library")?.object("scan")
            return (scan?.int("seen") ?? 0) >= 1024 && scan?.bool("scanning") == true
        }
        XCTAssertTrue(midway, "never saw the scan half-way")
        _ = world.daemon.kill()
        try world.daemon.start()
        let library = try waitForScan(world, timeout: 60)
        XCTAssertEqual(library.int("songs"), 3000, "\(library)")
        XCTAssertGreaterThan(library.object("scan")?.int("unchanged") ?? 0, 0, "the rescan read everything again: \(library)")
        XCTAssertFalse(world.daemon.log.contains("set aside"), world.daemon.log)
    }

    /// A bind mount stands in for a USB stick holding part of the music directory.
    func testAQueueItemOnAPulledStickIsSkippedWithTheReasonAndPlaysOnceItIsBack() throws {
        try requirePacedDevice()
        let world = try DaemonBench(start: false)
        let music = world.path("music")
        let stick = world.path("stick")
        for directory in [music + "/Local", music + "/usb", stick] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        _ = try world.fixture("music/Local/local.flac", taggedFixture(2, seconds: 3))
        _ = try world.fixture("stick/On Stick.flac", taggedFixture(7, seconds: 3))
        guard try runProcess("/bin/mount", ["--bind", stick, music + "/usb"]).status == 0 else {
            throw XCTSkip("mount --bind is not allowed here")
        }
        var mounted = true
        defer { if mounted { _ = try? runProcess("/bin/umount", [music + "/usb"]) } }
        world.daemon.arguments = ["--music-dir", music]
        try world.daemon.start()
        XCTAssertEqual(try waitForScan(world).int("songs"), 2)
        try world.ok("add", "usb/On Stick.flac", "Local/local.flac")

        XCTAssertEqual(try runProcess("/bin/umount", [music + "/usb"]).status, 0)
        mounted = false
        XCTAssertTrue(try waitUntil(timeout: 10) { (try world.statusJSON().object("library")?.array("unavailable") as? [String]) == ["usb"] })
        try world.ok("play")
        try world.waitForStatus(timeout: 30, "the item on the stick skipped") { $0.string("title") == "Track 2" && $0.string("state") == "playing" }
        XCTAssertTrue(world.daemon.log.contains("the medium holding it (\(canonicalPath(music))/usb) is not mounted"), world.daemon.log)

        XCTAssertEqual(try runProcess("/bin/mount", ["--bind", stick, music + "/usb"]).status, 0)
        mounted = true
        XCTAssertTrue(try waitUntil(timeout: 10) { (try world.statusJSON().object("library")?.array("unavailable") as? [String]) == [] })
        try world.ok("previous")
        try world.waitForStatus(timeout: 30, "the item on the stick plays again") { $0.string("title") == "Track 7" && $0.string("state") == "playing" }
        try world.waitForStatus(timeout: 30, "audio from it") { ($0.double("elapsed") ?? 0) > 0.3 }
    }

    /// A big first scan while playing on the paced device: no underrun.
    func testAScanWhilePlayingCausesNoUnderrun() throws {
        try requirePacedDevice()
        let world = try DaemonBench(start: false)
        let music = world.path("music")
        try writeTree(music, artists: 40, albums: 10, tracks: 10)
        let track = try world.fixture("music/long.flac", taggedFixture(1, seconds: 8, sampleRate: 48000))
        world.daemon.arguments = ["--music-dir", music, "--no-initial-scan"]
        try world.daemon.start()
        try world.ok("add", track)
        // The track plays again and again, so it plays for the whole scan however long a busy
        // machine makes it.
        try world.ok("repeat", "one")
        try world.ok("play")
        try world.waitForStatus(timeout: 30, "playing") { $0.object("device")?.string("state") == "open" && $0.double("elapsed") ?? 0 > 0.5 }
        // The scanner runs at idle priority: on a machine busy with other work it waits its turn.
        let update = try world.daemon.cli(["update"], timeout: 600)
        XCTAssertEqual(update.status, 0, "\(update)")
        XCTAssertTrue(update.stdout.contains("indexed 4001"), update.stdout)
        let status = try world.statusJSON()
        XCTAssertEqual(status.string("state"), "playing", "playing throughout the scan")
        XCTAssertEqual(status.object("device")?.int("underruns"), 0, jsonText(status))
    }
}

private func canonicalPath(_ path: String) -> String {
    URL(fileURLWithPath: path).resolvingSymlinksInPath().path
}

private func writeBytes(_ bytes: [UInt8], to path: String) throws {
    try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}
