import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The same MPD sessions sent to Debian's mpd and to tonearmd over the same music tree: each
/// reply normalised (ids, versions, times, dates, error messages) and compared. Prints the share
/// of identical replies and every difference; the replies of the library and the queue must
/// all be identical.
final class MPDDifferentialTests: XCTestCase {
    /// One request per line; a command list is one request of several lines.
    private static let session: [String] = [
        "status", "currentsong", "ping",
        "lsinfo", "lsinfo \"Artist 1\"", "lsinfo \"Artist 1/Album 1-1\"", "lsinfo \"Artist 2/Album 2-1/2.flac\"",
        "listall \"Artist 2\"", "listallinfo \"Artist 1/Album 1-2\"",
        "list album", "list albumartist", "list genre", "list album group albumartist", "list title album \"Album 2-1\"",
        "list album artist \"Artist 2\"", "list date",
        "find album \"Album 1-2\"", "find \"(artist == 'Artist 2')\"",
        "find \"((artist == 'Artist 1') AND (album == 'Album 1-1'))\"", "find genre \"Jazz\" title \"Song 2 of 2-1\"",
        "search title \"song 2\"", "search \"(title contains 'SONG 1')\"", "search any \"2-2\"",
        "count album \"Album 1-1\"", "count group artist", "count genre \"Blues\"",
        "find \"(artist != 'Artist 1')\"", "find \"(album starts_with 'Album 1')\"", "search \"(album starts_with 'album 2')\"",
        "find \"(title =~ 'Song [12] of 1-.')\"", "find \"(title !~ 'of 2')\"", "find \"(!(artist == 'Artist 2'))\"",
        "find \"((genre != 'Jazz') AND (title starts_with 'Song 2'))\"", "search \"(title =~ 'SONG 1 OF 2')\"",
        "find \"(title =~ '(')\"", "find \"(title ~~ 'x')\"", "count \"(genre != 'Jazz')\"",
        "list album \"(artist != 'Artist 1')\"", "find \"(!(title contains 'song 1'))\"", "find \"(title contains 'ong 1')\"",
        "search \"(artist == 'artist 1')\"", "search \"(artist != 'artist 1')\"", "find \"(any contains 'Jazz')\"",
        "find \"(file =~ '2-1/')\"", "search \"(title !~ 'SONG 2')\"",
        "add \"Artist 1/Album 1-1\"", "add \"Artist 2/Album 2-2/1.flac\"", "playlistinfo", "playlistinfo 1", "playlistinfo 1:3",
        "playlist", "status", "playlistid", "playlistfind album \"Album 1-1\"", "playlistsearch title \"song 1\"",
        "playlistfind \"(genre == 'Jazz')\"", "playlistfind \"(title != 'Song 1 of 1-1')\"",
        "playlistsearch \"(title =~ 'song 2')\"", "playlistfind \"(!(title =~ 'Song 2'))\"", "swap 0 2", "playlistinfo", "delete 0", "playlistinfo", "move 0 1", "playlistinfo", "plchangesposid 0",
        "findadd album \"Album 2-1\"", "playlistinfo", "clear", "status", "playlistinfo",
        "repeat 1", "random 1", "status", "repeat 0", "random 0", "status",
        "add \"Artist 1/Album 1-1\"", "repeat 1", "single 1", "consume 1", "status", "single oneshot", "status",
        "replay_gain_mode track", "replay_gain_status", "crossfade 0", "prio 3 0:1", "playlistinfo", "prio 256 0",
        "disableoutput 1", "single 0", "consume 0", "repeat 0", "replay_gain_mode off", "replay_gain_mode loud", "status", "clear",
        "play 5", "playid 9999", "delete 7", "setvol 101", "repeat 2", "frobnicate", "add \"no/such.flac\"",
        "lsinfo \"no/such\"", "find", "list colour", "find colour red",
        "command_list_ok_begin\nping\nstatus\ncommand_list_end", "command_list_begin\nping\nfrobnicate\nping\ncommand_list_end",
        "tagtypes",
        // Stored playlists.
        "clear", "add \"Artist 1/Album 1-1\"", "save one", "save one", "listplaylist one", "listplaylistinfo one",
        "playlistadd one \"Artist 2/Album 2-1/1.flac\"", "playlistadd one \"no/such.flac\"", "playlistmove one 0 2",
        "listplaylist one", "playlistmove one 5 0", "playlistdelete one 1", "listplaylist one", "playlistdelete one 9",
        "playlistdelete nope 0", "playlistclear nope", "rename one two", "rename nope x", "listplaylists", "lsinfo", "playlistclear two",
        "listplaylist two", "playlistadd two \"Artist 2/Album 2-2\"", "playlistadd two \"Artist 1/Album 1-2/1.flac\" 0",
        "listplaylist two", "searchaddpl three title \"song 1 of 2\"", "listplaylist three", "rename two three", "rm three",
        "rm three", "save \"a/b\"", "listplaylist nope", "load two", "playlistinfo", "rm two", "clear", "listplaylists",
    ]

    /// Keys whose values differ between two servers by nature: ids, versions, clocks, dates.
    private static let volatileKeys: Set<String> = [
        "Id", "songid", "nextsongid", "time", "elapsed", "bitrate", "audio", "uptime", "playtime", "db_update",
        "Last-Modified", "updating_db", "mixrampdb", "volume",
    ]

    /// A blocking MPD connection: one request, its reply up to `OK` or `ACK`.
    private final class Connection {
        private let fd: Int32
        private var pending: [UInt8] = []

        init(port: Int) throws {
            fd = try connectTCP(port: port)
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            _ = try line()  // the greeting
        }

        deinit { close(fd) }

        func request(_ text: String) throws -> [String] {
            let bytes = Array((text + "\n").utf8)
            guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
                throw TestSupportError("write failed")
            }
            var reply: [String] = []
            while true {
                let next = try line()
                reply.append(next)
                if next == "OK" || next.hasPrefix("ACK ") { return reply }
            }
        }

        private func line() throws -> String {
            while true {
                if let newline = pending.firstIndex(of: 0x0A) {
                    let text = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeFirst(newline + 1)
                    return text
                }
                var buffer = [UInt8](repeating: 0, count: 65536)
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { throw TestSupportError("connection closed or timed out (\(n), errno \(errno))") }
                pending += buffer[..<n]
            }
        }
    }

    /// A reply as compared: volatile values starred, an error's message dropped (its number and
    /// command stay).
    static func normalised(_ reply: [String]) -> [String] {
        reply.map { line in
            if line.hasPrefix("ACK "), let brace = line.firstIndex(of: "}") { return String(line[...brace]) }
            guard let colon = line.range(of: ": ") else { return line }
            let key = String(line[..<colon.lowerBound])
            let value = line[colon.upperBound...]
            if volatileKeys.contains(key) || (key == "playlist" && value.allSatisfy(\.isNumber)) { return key + ": *" }
            return line
        }
    }

    func testTheSameSessionGetsTheSameRepliesAsDebiansMPD() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mpd") else {
            throw TestSupportError("Debian's mpd is missing: scripts/setup installs it")
        }
        let world = try DaemonBench(jack: false, device: "null", start: false)
        let music = world.path("music")
        try writeMPDTree(music, seconds: 1, pictures: false)

        // Debian's mpd: the same tree, a null output, its own port.
        let mpdPort = try freeTCPPort()
        let mpdDirectory = world.path("mpd")
        try FileManager.default.createDirectory(atPath: mpdDirectory + "/playlists", withIntermediateDirectories: true)
        let config = """
            music_directory "\(music)"
            playlist_directory "\(mpdDirectory)/playlists"
            db_file "\(mpdDirectory)/database"
            log_file "\(mpdDirectory)/log"
            bind_to_address "127.0.0.1"
            port "\(mpdPort)"
            auto_update "no"
            audio_output {
                type "null"
                name "null"
                mixer_type "software"
            }

            """
        XCTAssertTrue(FileManager.default.createFile(atPath: mpdDirectory + "/mpd.conf", contents: Data(config.utf8)))
        let mpd = try RunningProcess("/usr/bin/mpd", ["--no-daemon", mpdDirectory + "/mpd.conf"],
                                     stdoutPath: mpdDirectory + "/stdout", stderrPath: mpdDirectory + "/stderr")
        defer {
            mpd.send(SIGTERM)
            mpd.wait(timeout: 10)
        }

        let port = try freeTCPPort()
        let playlists = world.path("playlists")
        try FileManager.default.createDirectory(atPath: playlists, withIntermediateDirectories: true)
        let profile = world.path("board.toml")
        try "[library]\nplaylist_dir = \"\(playlists)\"\n".write(toFile: profile, atomically: true, encoding: .utf8)
        world.daemon.arguments = ["--config", profile, "--music-dir", music, "--mpd-port", String(port), "--no-initial-scan"]
        try world.daemon.start()

        var peers: [(name: String, connection: Connection)] = []
        for (name, peerPort) in [("mpd", mpdPort), ("tonearmd", port)] {
            var connection: Connection?
            _ = waitUntil(timeout: 10) {
                connection = try? Connection(port: peerPort)
                return connection != nil
            }
            guard let connection else { throw TestSupportError("\(name) does not answer on \(peerPort)") }
            // A full scan, waited for.
            _ = try connection.request("update")
            // Done when two looks a little apart find no scan.
            let scanned = try waitUntil(timeout: 30) {
                guard !(try connection.request("status")).contains(where: { $0.hasPrefix("updating_db") }) else { return false }
                sleepSeconds(0.3)
                return !(try connection.request("status")).contains { $0.hasPrefix("updating_db") }
            }
            XCTAssertTrue(scanned, "\(name)'s update did not finish")
            peers.append((name, connection))
        }

        var identical = 0
        var differences: [String] = []
        var mustMatch: [String] = []
        for request in Self.session {
            let replies = try peers.map { Self.normalised(try $0.connection.request(request)) }
            if replies[0] == replies[1] {
                identical += 1
                continue
            }
            let shown = request.replacingOccurrences(of: "\n", with: " | ")
            differences.append("\(shown)\n    mpd:      \(replies[0].joined(separator: " / "))\n    tonearmd: \(replies[1].joined(separator: " / "))")
            let word = request.split(separator: " ").first.map(String.init) ?? ""
            if ["lsinfo", "listall", "listallinfo", "list", "find", "search", "count", "playlistinfo", "playlist",
                "plchangesposid", "currentsong", "playlistfind", "playlistsearch", "swap", "single", "consume",
                "replay_gain_mode", "replay_gain_status", "crossfade", "prio", "disableoutput", "save", "listplaylist",
                "listplaylistinfo", "playlistadd", "playlistmove", "playlistdelete", "playlistclear", "rename", "rm",
                "searchaddpl", "load", "listplaylists"].contains(word) && !request.contains("colour")
                && !request.contains("no/such") && request != "find" && !request.contains("starts_with") {
                mustMatch.append(shown)
            }
        }
        let share = Double(identical) / Double(Self.session.count)
        print("MPD differential: \(identical) of \(Self.session.count) replies identical (\(Int((share * 100).rounded())) %)")
        for difference in differences { print("  differs: \(difference)") }
        XCTAssertEqual(mustMatch, [], "the library's and the queue's replies must be what mpd says")
        XCTAssertGreaterThanOrEqual(share, 0.8, differences.joined(separator: "\n"))
    }
}

/// A TCP port nothing listens on now: bound to port 0 and let go.
func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket: \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw TestSupportError("bind: \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A TCP connection to 127.0.0.1:`port`: its descriptor.
func connectTCP(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket: \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    guard connected else {
        let error = errno
        close(fd)
        throw TestSupportError("connect to 127.0.0.1:\(port): errno \(error)")
    }
    return fd
}
