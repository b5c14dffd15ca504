import Foundation
import Synchronization
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Attacks on the MPD server of the playing daemon, through real sockets and `mpc`: strangers
/// that idle to hold every place, a long command list, a command list that never ends, and
/// password guessing. Each is watched by `withstands` (status on the control socket answered
/// at once, no underrun, memory and descriptors back).
final class DaemonMPDAbuseTests: XCTestCase {
    private static let password = "owner-PW"

    /// A daemon playing on the paced device, its MPD server on a free port; with `[mpd]` lines
    /// of the test's own in its profile.
    private func playingDaemon(mpd lines: String = "") throws -> (DaemonBench, port: Int) {
        let world = try DaemonBench(start: false)
        let port = try freeTCPPort()
        let profile = world.path("board.toml")
        try "[mpd]\n\(lines)\n".write(toFile: profile, atomically: true, encoding: .utf8)
        world.daemon.arguments = ["--config", profile, "--mpd-port", String(port)]
        try world.daemon.start()
        XCTAssertTrue(waitUntil(timeout: 10) { (try? MPDSocket(port: port)) != nil }, "the MPD server listens")
        try world.playForAbuse()
        return (world, port)
    }

    private static func mpc(_ port: Int, _ arguments: String...) throws -> ProcessResult {
        try runProcess("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(port)] + arguments, environment: [:], timeout: 15)
    }

    func testStrangersIdlingCannotKeepTheOwnerOut() throws {
        let (world, port) = try playingDaemon(mpd: "password = \"\(Self.password)\"")
        // They asked to idle before the password (which lifted their timeout) and held every place.
        try world.withstands("twenty strangers idling") {
            var strangers: [MPDSocket] = []
            for _ in 0..<20 {
                let stranger = try MPDSocket(port: port)
                stranger.send("idle\n")
                strangers.append(stranger)
            }
            let owner = try Self.mpc(port, "-P", Self.password, "status")
            guard owner.status == 0, owner.stdout.contains("volume:") else { throw TestSupportError("mpc -P … status: \(owner)") }
            // Each was refused the idle (or made room for a later one).
            for stranger in strangers {
                let line = try stranger.line()
                guard line == nil || line == #"ACK [4@0] {idle} you don't have permission for "idle""#
                    || line == "ACK [4@0] {} closed to make room for another client: no password given" else {
                    throw TestSupportError("a stranger's idle was answered \(line ?? "-")")
                }
            }
        }
        XCTAssertEqual(try Self.mpc(port, "-P", Self.password, "volume").status, 0)
    }

    func testOneAddressHoldsOnlyItsShareAndAStrangerKeepsTheTimeout() throws {
        // A peer on the network needs an address of this machine's that is not loopback.
        guard let network = networkIPv4Address() else { throw XCTSkip("no IPv4 address besides loopback") }
        let world = try DaemonBench(jack: false, device: "null", start: false)
        let port = try freeTCPPort()
        let profile = world.path("board.toml")
        try "[mpd]\nmax_clients = 8\nmax_clients_per_address = 3\nconnection_timeout = 2\npassword = \"\(Self.password)\"\n"
            .write(toFile: profile, atomically: true, encoding: .utf8)
        world.daemon.arguments = ["--config", profile, "--mpd-bind", "0.0.0.0", "--mpd-port", String(port)]
        try world.daemon.start()
        XCTAssertTrue(waitUntil(timeout: 10) { (try? MPDSocket(port: port)) != nil }, "the MPD server listens")

        var peers: [MPDSocket] = []
        for _ in 0..<3 {
            let peer = try MPDSocket(port: port, host: network)
            XCTAssertEqual(try peer.request("password \(Self.password)"), ["OK"])
            peers.append(peer)
        }
        let fourth = try MPDSocket(port: port, host: network, greeted: false)
        XCTAssertEqual(try fourth.line(), "ACK [52@0] {} too many clients: tonearmd serves at most 3 from \(network) at once")
        XCTAssertNil(try fourth.line())
        // The box's own clients are not held to an address's share.
        var own: [MPDSocket] = []
        for source in ["127.0.0.1", "127.0.0.2", "127.0.0.1", "127.0.0.1"] { own.append(try MPDSocket(port: port, from: source)) }
        XCTAssertEqual(try own[3].request("ping"), ["OK"])
        // Idling is refused before the password, and the stranger is closed when its time is up.
        let stranger = own[0]
        XCTAssertEqual(try stranger.request("idle"), [#"ACK [4@0] {idle} you don't have permission for "idle""#])
        XCTAssertEqual(try stranger.request("add \"x\u{0}../../etc/passwd\""), ["ACK [2@0] {} a request may not hold a NUL byte"])
        XCTAssertNil(try stranger.line(), "closed after connection_timeout")
        // The peers were silent as long, and went the same way: their places are free.
        peers.removeAll()
        own.removeAll()
        let owner = try Self.mpc(port, "-P", Self.password, "status")
        XCTAssertTrue(owner.stdout.contains("volume:"), "\(owner)")
    }

    func testACommandListOfTwentyThousandPings() throws {
        let (world, port) = try playingDaemon()
        // 100 KB; a copy of the list per line made it 6.3 s of the network thread's time.
        let list = "command_list_ok_begin\n" + String(repeating: "ping\n", count: 20_000) + "command_list_end\n"
        let report = try world.withstands("a command list of 20,000 pings", rounds: 3) {
            let client = try MPDSocket(port: port)
            client.send(list)
            var listOKs = 0
            while let line = try client.line() {
                if line == "list_OK" {
                    listOKs += 1
                } else if line == "OK" {
                    break
                } else {
                    throw TestSupportError("answered \(line) after \(listOKs) list_OK")
                }
            }
            guard listOKs == 20_000 else { throw TestSupportError("\(listOKs) list_OK, not 20,000") }
        }
        XCTAssertEqual(report.roundSeconds.count, 3)
    }

    func testTwoMegabytesOfSetvolWithNoEndAreRefusedAtALimit() throws {
        let (world, port) = try playingDaemon()
        let lines = Array(("command_list_begin\n" + String(repeating: "setvol 50\n", count: 200_000)).utf8)  // 2 MB
        try world.withstands("2 MB of setvol in a command list with no end", rounds: 2) {
            let client = try MPDSocket(port: port)
            // Written from a thread of its own while this one waits for the answer: the server
            // closes mid-stream, and the refusal must be read before the reset that follows.
            let writer = Thread { _ = client.send(lines) }
            writer.start()
            let refusal = try client.line()
            // 32,768 of them come first, in 320 KB; the byte limit is 1 MiB.
            guard refusal == "ACK [52@0] {} command list longer than 32768 commands" else {
                throw TestSupportError("answered \(refusal ?? "nothing")")
            }
            guard try client.line() == nil else { throw TestSupportError("the connection stayed open") }
            client.shutdown()
            while !writer.isFinished { usleep(1000) }
        }
        XCTAssertEqual(try Self.mpc(port, "volume").stdout.contains("volume:"), true)
    }

    func testPasswordGuessesSlowDownAndTheThirdClosesTheConnection() throws {
        let (world, port) = try playingDaemon(mpd: "password = \"\(Self.password)\"")
        try world.withstands("guessing the password") {
            let guesser = try MPDSocket(port: port)
            var times: [Double] = []
            func guess(_ n: Int, on connection: MPDSocket, expecting expected: String) throws {
                let asked = monotonicSeconds()
                let answer = try connection.request("password guess-\(n)")
                times.append(monotonicSeconds() - asked)
                guard answer == [expected] else { throw TestSupportError("guess \(n) answered \(answer)") }
            }
            try guess(1, on: guesser, expecting: "ACK [3@0] {password} incorrect password")
            try guess(2, on: guesser, expecting: "ACK [3@0] {password} incorrect password")
            try guess(3, on: guesser, expecting: "ACK [3@0] {password} incorrect password (3 wrong, closing the connection)")
            guard try guesser.line() == nil else { throw TestSupportError("the connection stayed open after three guesses") }
            // A new connection from the same address goes on where the last left off.
            try guess(4, on: try MPDSocket(port: port), expecting: "ACK [3@0] {password} incorrect password")
            print("abuse: wrong passwords answered after \(times.map { String(format: "%.0f ms", $0 * 1000) })")
        }
        // The owner, from the same address, waits as long once, then the slate is clean.
        let owner = try Self.mpc(port, "-P", Self.password, "status")
        XCTAssertTrue(owner.stdout.contains("volume:"), "\(owner)")
        let again = try Self.mpc(port, "-P", Self.password, "status")
        XCTAssertTrue(again.stdout.contains("volume:"), "\(again)")
        print("abuse: the owner's mpc after the guesses took \(String(format: "%.1f s", owner.seconds)), then \(String(format: "%.2f s", again.seconds))")
    }
}

/// A blocking MPD client on a real socket, for bytes no polite client sends.
private final class MPDSocket: @unchecked Sendable {
    private let fd: Int32
    private var pending: [UInt8] = []

    /// Connected to `host`:`port`, from `source` (another loopback address) if given; past the
    /// greeting unless `greeted` is false.
    init(port: Int, host: String = "127.0.0.1", from source: String? = nil, greeted: Bool = true) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: errno \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        func address(_ ip: String, _ port: Int) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr(ip)
            return address
        }
        func call(_ address: sockaddr_in, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Bool {
            withUnsafePointer(to: address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
        }
        if let source, !call(address(source, 0), { bind(fd, $0, $1) }) {
            close(fd)
            throw TestSupportError("bind to \(source): errno \(errno)")
        }
        guard call(address(host, port), { connect(fd, $0, $1) }) else {
            let error = errno
            close(fd)
            throw TestSupportError("connect to \(host):\(port): errno \(error)")
        }
        if greeted {
            guard let greeting = try line(), greeting.hasPrefix("OK MPD ") else { throw TestSupportError("no greeting") }
        }
    }

    deinit { close(fd) }

    /// Sends everything; false once the server has closed the connection.
    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool { sendAll(fd, bytes) }

    func shutdown() { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    /// One request; its answer up to `OK` or `ACK`.
    func request(_ text: String) throws -> [String] {
        guard send(text + "\n") else { throw TestSupportError("\(text): the connection is closed") }
        var answer: [String] = []
        while let next = try line() {
            answer.append(next)
            if next == "OK" || next.hasPrefix("ACK ") { return answer }
        }
        throw TestSupportError("\(text): the connection closed after \(answer)")
    }

    /// The next line; nil when the server closed the connection (or reset it).
    func line() throws -> String? {
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                defer { pending.removeFirst(newline + 1) }
                return String(decoding: pending[..<newline], as: UTF8.self)
            }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 || (count < 0 && errno == ECONNRESET) { return nil }
            guard count > 0 else { throw TestSupportError("no answer within 10 s (errno \(errno))") }
            pending += buffer[..<count]
        }
    }
}

/// An IPv4 address of this machine's that is not loopback, if it has one.
private func networkIPv4Address() -> String? {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0 else { return nil }
    defer { freeifaddrs(list) }
    var entry = list
    while let current = entry?.pointee {
        defer { entry = current.ifa_next }
        guard let address = current.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
              current.ifa_flags & UInt32(IFF_LOOPBACK) == 0, current.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
        var ip = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        guard inet_ntop(AF_INET, &ip, &text, socklen_t(text.count)) != nil else { continue }
        return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
    return nil
}
