import Foundation
import TestSupport
import XCTest
@testable import TonearmLibrary

final class StateStoreTests: XCTestCase {
    static let sample = PlayerStateRecord(
        queue: ["/srv/music/Album/01 Intro.flac", "/srv/music/Ü/\"quoted\"\\ and\nnewline.flac", "/srv/music/Album/03.flac"],
        currentIndex: 1, position: 83.25, volume: 0.7, repeatMode: "all", shuffle: true, shuffleOrder: [2, 0, 1],
        wasPlaying: true)

    func testNoFileIsAFirstStart() throws {
        let tmp = try TemporaryDirectory()
        XCTAssertEqual(try StateStore(directory: tmp.path).load(), .none)
    }

    func testRoundTrip() throws {
        let tmp = try TemporaryDirectory()
        let store = try StateStore(directory: tmp.path)
        try store.save(Self.sample)
        XCTAssertEqual(try StateStore(directory: tmp.path).load(), .restored(Self.sample))
        let empty = PlayerStateRecord()
        try store.save(empty)
        XCTAssertEqual(try StateStore(directory: tmp.path).load(), .restored(empty))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp.path), ["state.json"])
        let text = try String(contentsOfFile: tmp.file("state.json"), encoding: .utf8)
        XCTAssertTrue(text.hasPrefix("{\"version\":1,\"checksum\":\""), text)
    }

    func testTheDirectoryIsCreated() throws {
        let tmp = try TemporaryDirectory()
        let directory = tmp.file("var/lib/tonearm")
        let store = try StateStore(directory: directory)
        var st = stat()
        XCTAssertEqual(stat(directory, &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFDIR)
        XCTAssertEqual(st.st_mode & 0o777, 0o750 & ~currentUmask())
        try store.save(Self.sample)
        XCTAssertEqual(store.path, directory + "/state.json")
        XCTAssertTrue(FileManager.default.fileExists(atPath: store.path))
    }

    func testADirectoryThatCannotBeMadeIsAClearError() throws {
        let tmp = try TemporaryDirectory()
        try writeBytes([1], to: tmp.file("file"))
        let error = libraryError { () throws(LibraryError) in try StateStore(directory: tmp.file("file/state")) }
        XCTAssertEqual(error?.description, "state directory '\(tmp.file("file/state"))' is unusable: cannot create it: Not a directory")
    }

    /// A save cut short before its rename leaves the old file whole and a stray .tmp.
    func testALeftoverTemporaryFileIsIgnored() throws {
        let tmp = try TemporaryDirectory()
        try StateStore(directory: tmp.path).save(Self.sample)
        var newer = Self.sample
        newer.position = 99
        let partial = Array(StateStore.encode(newer).prefix(40))
        try writeBytes(partial, to: tmp.file("state.json.tmp"))
        let store = try StateStore(directory: tmp.path)
        XCTAssertEqual(store.load(), .restored(Self.sample))
        try store.save(newer)
        XCTAssertEqual(try StateStore(directory: tmp.path).load(), .restored(newer))
        XCTAssertFalse(FileManager.default.fileExists(atPath: tmp.file("state.json.tmp")))
    }

    func testTruncatedFilesAreSetAside() throws {
        let tmp = try TemporaryDirectory()
        let full = StateStore.encode(Self.sample)
        // Every cut but the one that drops only the final newline.
        var n = 0
        for length in stride(from: 0, to: full.count - 1, by: 3) {
            n += 1
            try writeBytes(Array(full.prefix(length)), to: tmp.file("state.json"))
            let store = try StateStore(directory: tmp.path)
            guard case .setAside(let reason, let movedTo) = store.load() else {
                return XCTFail("a file cut to \(length) of \(full.count) bytes was trusted")
            }
            XCTAssertEqual(movedTo, tmp.file("state.json.corrupt-\(n)"), reason)
            XCTAssertEqual(readBytes(movedTo), Array(full.prefix(length)))
            XCTAssertEqual(store.load(), .none, "the daemon starts empty")
        }
        XCTAssertEqual(try StateStore(directory: tmp.path).load(), .none)
        try writeBytes(Array(full.dropLast()), to: tmp.file("state.json"))
        XCTAssertEqual(try StateStore(directory: tmp.path).load(), .restored(Self.sample))
    }

    func testCorruptFilesAreSetAsideWithAReason() throws {
        var flipped = StateStore.encode(Self.sample)
        let at = flipped.firstIndex(of: UInt8(ascii: "8"))!  // 83.25 → 93.25: still JSON
        flipped[at] = UInt8(ascii: "9")
        var random = SeededRandom(seed: 7)
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("zeros", [UInt8](repeating: 0, count: 4096)),
            ("garbage", (0..<500).map { _ in UInt8(truncatingIfNeeded: random.next()) }),
            ("not UTF-8", Array("{\"version\":1,\"x\":\"".utf8) + [0xC3, 0x28] + Array("\"}".utf8)),
            ("other JSON", Array("[1,2,3]".utf8)),
            ("one flipped digit", flipped),
            ("newer version", Array(String(decoding: StateStore.encode(Self.sample), as: UTF8.self)
                .replacingOccurrences(of: "\"version\":1", with: "\"version\":2").utf8)),
            ("wrong field type", signed("{\"queue\":\"/a.flac\",\"currentIndex\":null,\"position\":0,\"volume\":1,"
                + "\"repeatMode\":\"off\",\"shuffle\":false,\"shuffleOrder\":null,\"wasPlaying\":false}")),
            ("missing field", signed("{\"queue\":[],\"currentIndex\":null,\"position\":0,\"volume\":1,"
                + "\"repeatMode\":\"off\",\"shuffle\":false,\"shuffleOrder\":null}")),
            ("index outside the queue", signed("{\"queue\":[\"/a.flac\"],\"currentIndex\":1,\"position\":0,\"volume\":1,"
                + "\"repeatMode\":\"off\",\"shuffle\":false,\"shuffleOrder\":null,\"wasPlaying\":false}")),
            ("shuffle order not a permutation", signed("{\"queue\":[\"/a.flac\",\"/b.flac\"],\"currentIndex\":0,\"position\":0,"
                + "\"volume\":1,\"repeatMode\":\"off\",\"shuffle\":true,\"shuffleOrder\":[0,0],\"wasPlaying\":false}")),
        ]
        var reasons: [String] = []
        for (name, bytes) in cases {
            let tmp = try TemporaryDirectory()
            try writeBytes(bytes, to: tmp.file("state.json"))
            let result = try StateStore(directory: tmp.path).load()
            guard case .setAside(let reason, let movedTo) = result else {
                XCTFail("\(name): \(result)")
                continue
            }
            XCTAssertEqual(movedTo, tmp.file("state.json.corrupt-1"), name)
            XCTAssertFalse(FileManager.default.fileExists(atPath: tmp.file("state.json")), name)
            XCTAssertFalse(reason.contains("\n"), name)
            reasons.append("\(name): \(reason)")
        }
        print(reasons.joined(separator: "\n"))
        XCTAssertTrue(reasons.contains { $0.hasPrefix("one flipped digit: checksum mismatch") }, "\(reasons)")
        XCTAssertTrue(reasons.contains("newer version: format version 2; this daemon reads version 1"), "\(reasons)")
        XCTAssertTrue(reasons.contains("wrong field type: 'queue' is not a list of paths"), "\(reasons)")
        XCTAssertTrue(reasons.contains("missing field: 'wasPlaying' is missing"), "\(reasons)")
        XCTAssertTrue(reasons.contains("index outside the queue: current index 1 is outside the queue of 1"), "\(reasons)")
    }

    func testAStateFileThatIsADirectoryIsSetAside() throws {
        let tmp = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: tmp.file("state.json"), withIntermediateDirectories: false)
        let store = try StateStore(directory: tmp.path)
        guard case .setAside(_, tmp.file("state.json.corrupt-1")) = store.load() else { return XCTFail() }
        try store.save(Self.sample)
        XCTAssertEqual(store.load(), .restored(Self.sample))
    }

    func testAnInconsistentRecordIsNotSaved() throws {
        let tmp = try TemporaryDirectory()
        let store = try StateStore(directory: tmp.path)
        for record in [
            PlayerStateRecord(queue: ["/a.flac"], currentIndex: 1),
            PlayerStateRecord(queue: ["/a.flac"], currentIndex: 0, position: .nan),
            PlayerStateRecord(queue: ["/a.flac"], volume: -1),
            PlayerStateRecord(queue: ["/a.flac", "/b.flac"], shuffleOrder: [1]),
        ] {
            guard case .cannotSaveState(store.path, _)? = libraryError({ () throws(LibraryError) in try store.save(record) }) else {
                return XCTFail("\(record) was saved")
            }
        }
        XCTAssertEqual(store.load(), .none)
    }

    /// Saving runs on every change and every 5 s while playing; this shows what it costs.
    func testSaveCost() throws {
        let tmp = try TemporaryDirectory()
        let store = try StateStore(directory: tmp.path)
        var record = PlayerStateRecord(
            queue: (0..<500).map { "/srv/music/Some Artist/Some Album (Deluxe Edition)/\($0 % 20 + 1) - Track Title \($0).flac" },
            currentIndex: 250, volume: 0.5, repeatMode: "off", shuffle: true, shuffleOrder: Array((0..<500).reversed()),
            wasPlaying: true)
        let bytes = StateStore.encode(record).count
        var encodeOnly = 0.0
        let started = monotonicSeconds()
        for i in 0..<1000 {
            record.position = Double(i) * 5.0
            let t = monotonicSeconds()
            _ = StateStore.encode(record)
            encodeOnly += monotonicSeconds() - t
            try store.save(record)
        }
        let total = monotonicSeconds() - started
        print(String(format: "state save: 1000 saves of a 500-track queue (%d bytes) in %.3f s: %.2f ms each, %.2f ms of it encoding",
                     bytes, total, total, encodeOnly))
        XCTAssertEqual(store.load(), .restored(record))
    }

    /// A writer killed with SIGKILL at arbitrary moments leaves a file that loads, each time.
    func testAWriterKilledMidSaveLeavesALoadableFile() throws {
        let tmp = try TemporaryDirectory()
        for delay in [0.02, 0.11, 0.23] {
            // Each child must be saving when it dies: wait for its first file.
            try? FileManager.default.removeItem(atPath: tmp.file("state.json"))
            let child = try RunningProcess(CommandLine.arguments[0], ["TonearmLibraryTests.StateStoreTests/testWriterChild"],
                                           environment: ["TONEARM_STATE_WRITER_DIRECTORY": tmp.path])
            defer { child.send(SIGKILL) }
            let deadline = monotonicSeconds() + 2
            while !FileManager.default.fileExists(atPath: tmp.file("state.json")) && monotonicSeconds() < deadline {
                usleep(1_000)
            }
            sleepSeconds(delay)
            child.send(SIGKILL)
            let result = child.wait(timeout: 2)
            XCTAssertEqual(result.signal, SIGKILL, "\(result)")
            guard case .restored(let record) = try StateStore(directory: tmp.path).load() else {
                return XCTFail("the file left by a writer killed after \(delay) s did not load")
            }
            XCTAssertEqual(record.queue.count, 300)
            XCTAssertEqual(record.currentIndex, Int(record.position) % 300)
        }
    }

    /// Run only as the child of the test above: saves as fast as it can until killed.
    func testWriterChild() throws {
        guard let directory = ProcessInfo.processInfo.environment["TONEARM_STATE_WRITER_DIRECTORY"] else { return }
        let store = try StateStore(directory: directory)
        var record = PlayerStateRecord(queue: (0..<300).map { "/music/\($0).flac" }, wasPlaying: true)
        let stop = monotonicSeconds() + 10
        var i = 0
        while monotonicSeconds() < stop {
            i += 1
            record.position = Double(i)
            record.currentIndex = i % 300
            try store.save(record)
        }
    }

    private func signed(_ state: String) -> [UInt8] {
        let body = Array(state.utf8)
        var hash = FNV1a64()
        hash.combine(body)
        return Array("{\"version\":1,\"checksum\":\"\(hex(hash.value))\",\"state\":".utf8) + body + Array("}\n".utf8)
    }

    private func currentUmask() -> mode_t {
        let mask = umask(0o022)
        umask(mask)
        return mask
    }
}
