import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's icecast2 run as a child on 127.0.0.1, with a configuration of its own in
/// `directory` and its log on its standard error (`directory/icecast.N.log`, N the start). Sources are
/// ffmpeg (MP3, titles set through the admin API as stations do) and ezstream (Ogg files sent
/// one after another, each one a new chained stream with its own Vorbis comments).
///
/// Icecast refuses to run as root unless `<changeowner>` makes it another user, and Debian's
/// 2.4.4 then crashes at startup now and then (a segmentation fault once in about 15 starts on
/// a busy machine). So as root it is started as `nobody` by `setpriv`, and its directory (a
/// temporary one of its own) is readable by all; its log is the standard error it was given.
public final class IcecastServer: @unchecked Sendable {
    private let temporary: TemporaryDirectory
    public var directory: String { temporary.path }
    public private(set) var port: Int = 0
    public let sourcePassword = "tonearm-source"
    public let adminPassword = "tonearm-admin"
    private var server: RunningProcess?
    private var sources: [RunningProcess] = []
    private var starts = 0

    /// The tools the tests need, or nil when all are installed.
    public static var missingTools: String? {
        let tools = ["icecast2", "ffmpeg", "ezstream"] + (getuid() == 0 ? ["setpriv"] : [])
        let missing = tools.filter { !toolsAvailable($0) }
        return missing.isEmpty ? nil : missing.joined(separator: ", ")
    }

    /// Starts icecast on a free port.
    public init() throws {
        temporary = try TemporaryDirectory(prefix: "tonearm-icecast")
        if getuid() == 0 { chmod(temporary.path, 0o755) }
        port = try freeLoopbackPort()
        try start()
    }

    deinit {
        for source in sources { source.send(SIGKILL) }
        server?.send(SIGKILL)
        server?.wait(timeout: 10)
    }

    public func url(_ mount: String) -> String { "http://127.0.0.1:\(port)\(mount)" }

    /// Everything icecast logged, over every start.
    public var log: String {
        (1...max(1, starts)).map { readText(directory + "/icecast.\($0).log") }.joined(separator: "\n")
    }

    /// Starts icecast (again, on the same port) and waits until it answers.
    public func start() throws {
        let config = directory + "/icecast.xml"
        try configuration.write(toFile: config, atomically: true, encoding: .utf8)
        starts += 1
        let logPath = directory + "/icecast.\(starts).log"
        let command = getuid() == 0
            ? ("setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", try which("icecast2"), "-c", config])
            : ("icecast2", ["-c", config])
        server = try RunningProcess(command.0, command.1, stdoutPath: logPath, stderrPath: logPath)
        let deadline = monotonicSeconds() + 20
        while monotonicSeconds() < deadline {
            if let reply = httpGet(port: port, "/status-json.xsl"), reply.status == 200 { return }
            guard server?.isRunning == true else { break }
            sleepSeconds(0.05)
        }
        throw TestSupportError("icecast did not start on port \(port): \(log)")
    }

    /// Kills icecast and its sources (SIGKILL: listeners' connections drop, new ones are refused).
    public func kill() {
        stopSources()
        server?.send(SIGKILL)
        server?.wait(timeout: 10)
        server = nil
    }

    /// Stops icecast and its sources (SIGTERM, then a wait).
    public func stop() {
        stopSources()
        server?.send(SIGTERM)
        server?.wait(timeout: 10)
        server = nil
    }

    private func stopSources() {
        for source in sources {
            source.send(SIGTERM)
            source.wait(timeout: 10)
        }
        sources.removeAll()
    }

    /// ffmpeg sending `file` (an MP3) to `mount` at its own rate, over and over; returns once
    /// icecast lists the mount.
    public func startMP3Source(file: String, mount: String) throws {
        try startSource(mount: mount, "ffmpeg", [
            "-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i", file, "-c", "copy",
            "-content_type", "audio/mpeg", "-f", "mp3", "icecast://source:\(sourcePassword)@127.0.0.1:\(port)\(mount)",
        ])
    }

    /// ezstream sending the Ogg `files` to `mount` one after another, once, each at its own
    /// rate, as the station `name` (its icy-name); returns once icecast lists the mount.
    public func startOggSource(files: [String], mount: String, name: String) throws {
        let base = "ezstream\(sources.count + 1)"
        let playlist = directory + "/\(base).m3u"
        try (files.joined(separator: "\n") + "\n").write(toFile: playlist, atomically: true, encoding: .utf8)
        let config = directory + "/\(base).xml"
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <ezstream>
              <servers><server><hostname>127.0.0.1</hostname><port>\(port)</port>
                <password>\(sourcePassword)</password><tls>none</tls></server></servers>
              <streams><stream><mountpoint>\(mount)</mountpoint><format>Ogg</format>
                <stream_name>\(name)</stream_name></stream></streams>
              <intakes><intake><type>playlist</type><filename>\(playlist)</filename>
                <stream_once>Yes</stream_once></intake></intakes>
            </ezstream>
            """
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        // ezstream refuses a configuration that others can read: it holds a password.
        chmod(config, 0o600)
        try startSource(mount: mount, "ezstream", ["-c", config])
    }

    /// Starts the source and waits until icecast lists `mount`. Icecast answers HTTP a little
    /// before it takes sources on a busy machine; a source refused then (ffmpeg: "Connection
    /// refused", ezstream through libshout: "Couldn't connect") is started again, within 20 s.
    private func startSource(mount: String, _ program: String, _ arguments: [String]) throws {
        let index = sources.count + 1
        let deadline = monotonicSeconds() + 20
        var attempt = 0
        var logPath = ""
        while monotonicSeconds() < deadline {
            attempt += 1
            logPath = directory + "/source\(index)-\(starts)-\(attempt).log"
            let source = try RunningProcess(program, arguments, stdoutPath: logPath, stderrPath: logPath)
            while monotonicSeconds() < deadline {
                if let reply = httpGet(port: port, "/status-json.xsl"), reply.body.contains("\"listenurl\":\"\(url(mount))\"") {
                    sources.append(source)
                    return
                }
                guard source.isRunning else { break }
                sleepSeconds(0.05)
            }
            source.send(SIGKILL)
            source.wait(timeout: 10)
            let said = readText(logPath)
            guard said.contains("Connection refused") || said.contains("Couldn't connect") else { break }
            sleepSeconds(0.1)
        }
        throw TestSupportError("\(program) did not start \(mount) (\(attempt) tries): \(readText(logPath))\n\(log)")
    }

    /// Sets the title icecast sends on `mount` in its ICY metadata, through its admin API.
    public func setTitle(_ title: String, mount: String) throws {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let song = title.addingPercentEncoding(withAllowedCharacters: allowed) ?? title
        let path = "/admin/metadata?mount=\(mount)&mode=updinfo&song=\(song)"
        let reply = httpGet(port: port, path, user: "admin", password: adminPassword)
        guard let reply, reply.status == 200, reply.body.contains("<return>1</return>") else {
            throw TestSupportError("icecast did not take the title \(title): \(reply.map { "\($0.status) \($0.body)" } ?? "no answer")")
        }
    }

    private var configuration: String {
        """
            <icecast>
              <location>loopback</location>
              <admin>tonearm@localhost</admin>
              <hostname>127.0.0.1</hostname>
              <limits>
                <clients>20</clients><sources>4</sources><queue-size>524288</queue-size>
                <client-timeout>30</client-timeout><header-timeout>15</header-timeout>
                <source-timeout>10</source-timeout><burst-on-connect>1</burst-on-connect><burst-size>65535</burst-size>
              </limits>
              <authentication>
                <source-password>\(sourcePassword)</source-password>
                <relay-password>\(sourcePassword)</relay-password>
                <admin-user>admin</admin-user>
                <admin-password>\(adminPassword)</admin-password>
              </authentication>
              <listen-socket><port>\(port)</port><bind-address>127.0.0.1</bind-address></listen-socket>
              <fileserve>1</fileserve>
              <paths>
                <basedir>\(directory)</basedir>
                <logdir>\(directory)</logdir>
                <webroot>/usr/share/icecast2/web</webroot>
                <adminroot>/usr/share/icecast2/admin</adminroot>
              </paths>
              <logging><accesslog>-</accesslog><errorlog>-</errorlog><loglevel>3</loglevel></logging>
              <security><chroot>0</chroot></security>
            </icecast>
            """
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on now.
public func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else { throw TestSupportError("bind: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A plain HTTP/1.0 GET to 127.0.0.1:`port`, with basic authentication when `user` is given;
/// nil when nothing answers within `timeout` seconds.
public func httpGet(port: Int, _ path: String, user: String? = nil, password: String = "",
                    timeout: Double = 5) -> (status: Int, body: String)? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var limit = timeval(tv_sec: Int(timeout), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    guard connected else { return nil }
    var request = "GET \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\n"
    if let user {
        request += "Authorization: Basic \(Data("\(user):\(password)".utf8).base64EncodedString())\r\n"
    }
    request += "\r\n"
    guard sendAll(fd, Array(request.utf8)) else { return nil }
    var reply: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16384)
    while true {
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 { break }
        reply += chunk[0..<count]
    }
    let text = String(decoding: reply, as: UTF8.self)
    guard text.hasPrefix("HTTP/"), let statusText = text.split(separator: " ", maxSplits: 2).dropFirst().first,
          let status = Int(statusText) else { return nil }
    let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
    return (status, body)
}
