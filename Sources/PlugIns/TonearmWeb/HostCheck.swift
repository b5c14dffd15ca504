#if canImport(Glibc)
import Glibc
#endif
import NIOHTTP1
import TonearmNetwork
import Synchronization
import TonearmSystem

/// The host a request names in its `Host` header, in one canonical form: a name in lower case
/// without its trailing dot, or an address's bytes (4 or 16).
enum RequestHost: Hashable, Sendable {
    case name(String)
    case address([UInt8])

    /// `name`, `name:port`, `1.2.3.4`, `[::1]:8080` (RFC 9110's `uri-host [ ":" port ]`); nil
    /// for anything else, an empty port or a bare IPv6 address included.
    static func parse(_ field: Substring) -> (host: RequestHost, port: Int?)? {
        var hostPart = field
        var portPart: Substring?
        if field.hasPrefix("[") {
            guard let close = field.firstIndex(of: "]") else { return nil }
            hostPart = field[field.index(after: field.startIndex)..<close]
            let rest = field[field.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                portPart = rest.dropFirst()
            }
            guard let bytes = Self.bytes(of: hostPart, family: AF_INET6) else { return nil }
            return Self.port(portPart).map { (.address(bytes), $0) }
        }
        if let colon = field.firstIndex(of: ":") {
            hostPart = field[..<colon]
            portPart = field[field.index(after: colon)...]
        }
        guard let port = Self.port(portPart) else { return nil }
        if let bytes = Self.bytes(of: hostPart, family: AF_INET) { return (.address(bytes), port) }
        guard let name = Self.name(hostPart) else { return nil }
        return (.name(name), port)
    }

    /// A name or address as a profile's `allowed_hosts` writes it (no port); nil if it is not one.
    static func parseAllowed(_ text: String) -> RequestHost? {
        guard let (host, port) = parse(Substring(text)), port == nil else { return nil }
        return host
    }

    /// The port, when there is one; `.some(nil)` for none, nil for a bad one.
    private static func port(_ text: Substring?) -> Int?? {
        guard let text else { return .some(nil) }
        guard (1...5).contains(text.count), text.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int(text),
              (1...65535).contains(value) else { return nil }
        return .some(value)
    }

    private static func name(_ text: Substring) -> String? {
        var name = text.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        let allowed = name.utf8.allSatisfy { byte in
            (97...122).contains(byte) || (48...57).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
        }
        guard !name.isEmpty, name.utf8.count <= 253, allowed, !name.hasPrefix("."), !name.contains("..") else { return nil }
        return name
    }

    static func bytes(of text: Substring, family: Int32) -> [UInt8]? {
        var storage = [UInt8](repeating: 0, count: 16)
        let parsed = String(text).withCString { string in storage.withUnsafeMutableBytes { inet_pton(family, string, $0.baseAddress) } }
        guard parsed == 1 else { return nil }
        return Array(storage.prefix(family == AF_INET ? 4 : 16))
    }

    /// 127.0.0.0/8 and ::1, and `localhost` (the one name /etc/hosts fixes; a name under
    /// `.localhost` goes to whatever resolver is configured).
    var isLoopback: Bool {
        switch self {
        case .name(let name): return name == "localhost"
        case .address(let bytes): return bytes.count == 4 ? bytes[0] == 127 : bytes == [UInt8](repeating: 0, count: 15) + [1]
        }
    }
}

/// The names and addresses this box answers to besides loopback: its hostname (and NAME.local,
/// as mDNS announces it) and its interfaces' addresses. They change (DHCP, a new network), so
/// they are read again when a request names a host that is not among them, at most once per
/// `refreshInterval`: a stream of foreign `Host`s costs one read per interval, not one each.
final class BoxIdentity: Sendable {
    struct Known: Sendable {
        var hosts: Set<RequestHost> = []
        var readAt: Double = -.infinity
    }

    private let known = Mutex(Known())
    private let refreshInterval: Double
    private let read: @Sendable () -> Set<RequestHost>

    /// `read` is the box's own names and addresses (a test's fixed set).
    init(refreshInterval: Double = 5, read: @escaping @Sendable () -> Set<RequestHost> = BoxIdentity.readSystem) {
        self.refreshInterval = refreshInterval
        self.read = read
    }

    /// Whether `host` is one of the box's own, reading them again if it is not and they were
    /// last read over `refreshInterval` ago.
    func knows(_ host: RequestHost, now: Double = monotonicSeconds()) -> Bool {
        let (hit, stale) = known.withLock { ($0.hosts.contains(host), now - $0.readAt >= refreshInterval) }
        if hit || !stale { return hit }
        let fresh = read()
        known.withLock { $0 = Known(hosts: fresh, readAt: now) }
        return fresh.contains(host)
    }

    /// gethostname(2) and getifaddrs(3).
    @Sendable static func readSystem() -> Set<RequestHost> {
        var hosts: Set<RequestHost> = []
        var buffer = [CChar](repeating: 0, count: 256)
        if gethostname(&buffer, buffer.count - 1) == 0 {
            let hostname = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).lowercased()
            if let first = hostname.split(separator: ".").first, !first.isEmpty {
                hosts.insert(.name(hostname))
                hosts.insert(.name(first + ".local"))
                hosts.insert(.name(String(first)))
            }
        }
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return hosts }
        defer { freeifaddrs(list) }
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        while let current = entry {
            if let address = current.pointee.ifa_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    let bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin_addr, Array.init) }
                    hosts.insert(.address(bytes))
                case AF_INET6:
                    let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin6_addr, Array.init) }
                    hosts.insert(.address(bytes))
                default: break
                }
            }
            entry = current.pointee.ifa_next
        }
        return hosts
    }
}

/// Which `Host` a request may name (DNS rebinding: a page from another site whose name the
/// attacker points at this box's address sends its own name; the browser's `Origin` then
/// matches that `Host`, so the `Origin` check alone lets it through).
struct HostCheck: Sendable {
    /// The server's port: a `Host`'s port, when it names one, must be it.
    let port: Int
    /// `[web] allowed_hosts`: names behind which the box is reached besides its own.
    let allowed: Set<RequestHost>
    let box: BoxIdentity

    init(port: Int, allowedHosts: [String], box: BoxIdentity = BoxIdentity()) {
        self.port = port
        allowed = Set(allowedHosts.compactMap(RequestHost.parseAllowed))
        self.box = box
    }

    /// The answer for a request that is not for this box (400 for a malformed or missing
    /// `Host`, 421 for another host or port), with why in one line; nil when it is for it.
    func refusal(_ head: HTTPRequestHead) -> HTTPResponse? {
        let fields = head.headers["Host"]
        guard fields.count <= 1 else { return .text(.badRequest, "a request has one Host header, not \(fields.count)") }
        guard let field = fields.first else {
            // HTTP/1.0 did not require it; a browser always sends it.
            let old = head.version.major < 1 || (head.version.major == 1 && head.version.minor == 0)
            return old ? nil : .text(.badRequest, "an HTTP/1.1 request needs a Host header")
        }
        guard let (host, hostPort) = RequestHost.parse(Substring(field)) else {
            return .text(.badRequest, "the Host header '\(field)' is not a host name or address")
        }
        if let hostPort, hostPort != port {
            return .text(.misdirectedRequest, "this server is on port \(port), not \(hostPort) (Host: \(field))")
        }
        if host.isLoopback || allowed.contains(host) || box.knows(host) { return nil }
        return .text(.misdirectedRequest, "this box does not answer to the name '\(field)': not its own, nor in [web] allowed_hosts")
    }
}
