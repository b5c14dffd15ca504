/// Why a stream's connection failed or ended. The description is one line naming the URL.
public struct StreamError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        /// The server answered with an error status (404, 403, 503…): the code and its phrase.
        case httpStatus(Int, String)
        /// The host name could not be resolved.
        case unknownHost(String)
        /// Nothing accepts connections at that address and port.
        case refused(String)
        /// The server's certificate is not trusted (or the TLS handshake failed).
        case certificate(String)
        /// No connection within the connect timeout, or no data for the no-data timeout.
        case timeout(String)
        /// The server closed the stream before its end.
        case closed
        /// Neither http:// nor https://, or malformed.
        case badURL(String)
        /// Anything else curl reports.
        case network(String)
        /// libcurl could not be loaded (not installed, or too old): dlopen's or dlsym's error.
        case noLibrary(String)

        public var description: String {
            switch self {
            case .httpStatus(let code, let phrase): phrase.isEmpty ? "HTTP \(code)" : "HTTP \(code) \(phrase)"
            case .unknownHost(let why): "unknown host (\(why))"
            case .refused(let why): "connection refused (\(why))"
            case .certificate(let why): "certificate not trusted (\(why))"
            case .timeout(let why): "timed out (\(why))"
            case .closed: "the server closed the stream"
            case .badURL(let why): "bad URL (\(why))"
            case .network(let why): why
            case .noLibrary(let why): "internet radio needs libcurl (libcurl4): \(why)"
            }
        }

        /// Whether trying again cannot help while nothing has played yet: the station is not
        /// there (a 4xx, an unknown host, a bad URL) or is not trusted. A refusal, a timeout or
        /// a 5xx may be a station restarting: those are tried again.
        public var isPermanent: Bool {
            switch self {
            case .httpStatus(let code, _): (400..<500).contains(code)
            case .unknownHost, .certificate, .badURL, .noLibrary: true
            case .refused, .timeout, .closed, .network: false
            }
        }
    }

    public var url: String
    public var reason: Reason

    public init(url: String, reason: Reason) {
        self.url = url
        self.reason = reason
    }

    public var description: String { "\(url): \(reason)" }
}

/// Where a stream's connection is.
public enum StreamState: Sendable, Equatable, CustomStringConvertible {
    /// The first connection is being made.
    case connecting
    /// Bytes arrive.
    case playing
    /// The connection dropped (or a new one failed): the next attempt, counting from 1, is
    /// after a back-off.
    case reconnecting(attempt: Int, after: StreamError)
    /// Nothing will come: the first connection failed for good, or a stream of known length
    /// was read to its end (`nil`).
    case finished(StreamError?)

    /// Nothing more will come.
    public var isFinished: Bool {
        if case .finished = self { true } else { false }
    }

    public var description: String {
        switch self {
        case .connecting: "connecting"
        case .playing: "playing"
        case .reconnecting(let attempt, let error): "reconnecting (attempt \(attempt)) after \(error.reason)"
        case .finished(nil): "ended"
        case .finished(let error?): "failed: \(error.reason)"
        }
    }
}

/// What a station says about itself in its response headers.
public struct StationInfo: Sendable, Equatable {
    /// `icy-name`, `icy-genre`, `icy-br` (kbit/s), `Content-Type`.
    public var name: String?
    public var genre: String?
    public var bitrate: Int?
    public var contentType: String?
    /// `icy-metaint`: audio bytes between metadata blocks, when the server sends them.
    public var metadataInterval: Int?

    public init(name: String? = nil, genre: String? = nil, bitrate: Int? = nil, contentType: String? = nil,
                metadataInterval: Int? = nil) {
        self.name = name
        self.genre = genre
        self.bitrate = bitrate
        self.contentType = contentType
        self.metadataInterval = metadataInterval
    }
}

/// What a stream tells its owner, on the stream's thread, as it happens.
public enum StreamEvent: Sendable, Equatable {
    case state(StreamState)
    /// A connection's response headers (every connection's: a reconnect may reach another
    /// server of the station).
    case station(StationInfo)
    /// The ICY `StreamTitle` changed (nil: the station sent an empty one).
    case title(String?)
}

/// The wait before each next connection attempt: 0.5 s, doubling to 30 s, for ever; back to
/// the start after a connection that delivered audio for a while.
public struct ReconnectBackoff: Sendable, Equatable {
    public let first: Double
    public let limit: Double
    public private(set) var next: Double

    public init(first: Double = 0.5, limit: Double = 30) {
        self.first = first
        self.limit = limit
        next = first
    }

    /// The wait before the next attempt; the one after is twice as long, up to the limit.
    public mutating func take() -> Double {
        defer { next = min(limit, next * 2) }
        return next
    }

    public mutating func reset() { next = first }
}
