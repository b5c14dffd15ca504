#if canImport(Glibc)
import Glibc
#endif
import NIOHTTP1
import Synchronization
import TonearmNetwork
import TonearmSystem

/// `[web] token`: who may use the remote. A script sends the token (`Authorization: Bearer`);
/// the page sends it once to `POST /login` and gets a session cookie, which the browser then
/// sends by itself with every request, the WebSocket's upgrade and the covers included (a page
/// cannot set headers on those). The cookie is a random key made at start, not the token:
/// seeing it tells nothing of the token, and a restart ends every session.
final class WebAccess: Sendable {
    let token: String?
    /// The session cookie's value.
    let sessionKey: String
    private let guesses: Mutex<TokenGuesses>

    static let cookieName = "tonearm-session"

    init(token: String?, guesses: TokenGuesses = TokenGuesses()) {
        self.token = token
        var random = SystemRandomNumberGenerator()
        sessionKey = (0..<4).map { _ in
            let word = String(random.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - word.count) + word
        }.joined()
        self.guesses = Mutex(guesses)
    }

    enum Verdict: Equatable {
        case allowed
        /// No credentials, or a session cookie from before a restart: not a guess.
        case missing
        /// A wrong token: counted against the peer.
        case wrong
        /// Too many wrong tokens from the peer: not checked until this many seconds pass.
        case slowedDown(seconds: Int)
    }

    /// Whether the request may go on. A bearer token is checked, and counted when wrong, only
    /// while its peer is not made to wait.
    func verdict(_ request: HTTPRequest, now: Double = monotonicSeconds()) -> Verdict {
        guard let token else { return .allowed }
        if hasSession(request.head) { return .allowed }
        guard let authorization = request.head.headers.first(name: "Authorization") else { return .missing }
        let offered = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst("Bearer ".count)) : ""
        return attempt(offered, token: token, from: request.peerAddress, now: now)
    }

    /// `POST /login`'s check of the token the page sends.
    func login(_ offered: String, from peer: String?, now: Double = monotonicSeconds()) -> Verdict {
        guard let token else { return .allowed }
        return attempt(offered, token: token, from: peer, now: now)
    }

    /// A session cookie, or a bearer token, without counting anything: whether a WebSocket may
    /// open. A refused upgrade is answered as a request, and counted there.
    func admitsWebSocket(_ request: HTTPRequest, now: Double = monotonicSeconds()) -> Bool {
        guard let token else { return true }
        if hasSession(request.head) { return true }
        guard guesses.withLock({ $0.wait(for: request.peerAddress, now: now) }) == nil,
              let authorization = request.head.headers.first(name: "Authorization") else { return false }
        return constantTimeEqual(authorization, "Bearer " + token)
    }

    /// `Set-Cookie` for a page that logged in.
    var sessionCookie: String {
        "\(Self.cookieName)=\(sessionKey); HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000"
    }

    private func attempt(_ offered: String, token: String, from peer: String?, now: Double) -> Verdict {
        guesses.withLock { guesses in
            if let wait = guesses.wait(for: peer, now: now) { return .slowedDown(seconds: wait) }
            if constantTimeEqual(offered, token) {
                guesses.succeeded(peer)
                return .allowed
            }
            guesses.failed(peer, now: now)
            return .wrong
        }
    }

    private func hasSession(_ head: HTTPRequestHead) -> Bool {
        for field in head.headers["Cookie"] {
            for pair in field.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingSpaces == Self.cookieName, constantTimeEqual(String(parts[1].trimmingSpaces), sessionKey) {
                    return true
                }
            }
        }
        return false
    }
}

/// Wrong tokens per peer: after each, the peer waits before its next token is even checked,
/// 1 s after the first and twice as long after each more, up to a minute; a right token
/// clears it. A person who mistypes loses a second; a guesser gets about one try a minute
/// instead of thousands a second. IPv6 peers count per /64, which one host can fill with
/// addresses. At most `capacity` peers are kept (the one longest quiet makes room), so a
/// stream of new addresses costs memory that stays bounded; a peer quiet for `forgetAfter`
/// starts afresh.
struct TokenGuesses: Sendable {
    struct Peer: Sendable {
        var failures: Int
        var lastFailure: Double
        var waitUntil: Double
    }

    let capacity: Int
    let firstWait: Double
    let longestWait: Double
    let forgetAfter: Double
    private(set) var peers: [String: Peer] = [:]

    init(capacity: Int = 256, firstWait: Double = 1, longestWait: Double = 60, forgetAfter: Double = 900) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.firstWait = firstWait
        self.longestWait = longestWait
        self.forgetAfter = forgetAfter
    }

    /// Seconds, rounded up, before `peer`'s next token is checked; nil when it may try now.
    func wait(for peer: String?, now: Double) -> Int? {
        guard let record = peers[Self.key(peer)], now < record.waitUntil else { return nil }
        return Int((record.waitUntil - now).rounded(.up))
    }

    mutating func failed(_ peer: String?, now: Double) {
        let key = Self.key(peer)
        var record = peers[key].flatMap { now - $0.lastFailure < forgetAfter ? $0 : nil } ?? Peer(failures: 0, lastFailure: now, waitUntil: now)
        record.failures += 1
        record.lastFailure = now
        record.waitUntil = now + min(longestWait, firstWait * Double(1 << min(record.failures - 1, 20)))
        if peers[key] == nil, peers.count >= capacity, let oldest = peers.min(by: { $0.value.lastFailure < $1.value.lastFailure })?.key {
            peers[oldest] = nil
        }
        peers[key] = record
    }

    mutating func succeeded(_ peer: String?) { peers[Self.key(peer)] = nil }

    /// An IPv6 address's first 64 bits; an IPv4 address as it is, mapped into IPv6 too (a
    /// server bound to `::` sees IPv4 peers so, and they must not all share one /64).
    static func key(_ peer: String?) -> String {
        guard let peer else { return "" }
        guard peer.contains(":"), let bytes = RequestHost.bytes(of: Substring(peer), family: AF_INET6) else { return peer }
        if bytes.prefix(12).elementsEqual([UInt8](repeating: 0, count: 10) + [0xFF, 0xFF]) {
            return bytes.suffix(4).map { String($0) }.joined(separator: ".")
        }
        return bytes.prefix(8).map { String($0, radix: 16) }.joined(separator: ".") + "/64"
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return text
    }
}
