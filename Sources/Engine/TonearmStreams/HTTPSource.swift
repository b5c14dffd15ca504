import CCurl
import TonearmDecoding
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// An http:// or https:// stream as a `ByteSource`: a thread of its own ("tonearm-stream")
/// runs libcurl and fills a bounded buffer that `read` drains.
///
/// - libcurl is loaded by the first stream's thread (`LibCurl`); without it the stream fails
///   at once, with "internet radio needs libcurl (libcurl4): …".
/// - The buffer holds `bufferMilliseconds` of the stream (2 s by default) at its bitrate: the
///   station's `icy-br` when it sends one, else 1411 kbit/s for FLAC and WAV (CD audio, the most
///   a lossless stereo stream of 16 bits needs) and 320 kbit/s for anything else. Each
///   connection first fills it (the prebuffer) before `read` returns its first byte, or waits
///   `bufferMilliseconds` from its first byte, when the stream is slower than its estimate; when
///   the buffer is full the transfer is paused (curl stops reading the socket) until `read` has
///   taken half.
/// - ICY metadata blocks are taken out of the bytes; titles, the station's headers and the
///   connection's state go to `onEvent`, on the stream's thread.
/// - A connection that drops is an outage, not an end: the thread connects again after a
///   back-off (`ReconnectBackoff`), for ever. Each connection's bytes are a stream of their own
///   (a decoder must start again at its headers): `read` returns 0 at the end of one connection's
///   bytes, and `nextConnection()` waits for the next one's. Only a stream whose server said
///   its length and sent all of it ends; before anything was read, an error that waiting
///   cannot mend (a 404, an unknown host, an untrusted certificate) fails it.
/// - `read` and `nextConnection()` wait on a condition that the stream's thread signals; both
///   are ended at once by `cancel()`, which the decoder thread's owner calls when a command
///   wants the thread (a stop, another item): the wait is for the network, never a timer.
///
/// Not seekable; `seek` may go back over the last 64 KiB read (a decoder looking at the first
/// bytes again) and no further.
public final class HTTPSource: ByteSource, @unchecked Sendable {
    public struct Options: Sendable {
        /// How much of the stream the buffer holds, in milliseconds at its bitrate.
        public var bufferMilliseconds = 2000
        public var connectTimeoutMilliseconds = 10_000
        /// A connection that delivers nothing for this long is dropped (and made again).
        public var noDataTimeoutSeconds = 10
        /// A CA certificate file trusted besides the system's store (a station with a
        /// self-signed certificate); nil: the system's store alone.
        public var caFile: String?
        public var userAgent = "Tonearm/\(HTTPSource.version)"
        /// The reconnection schedule.
        public var backoff = ReconnectBackoff()
        /// A connection that delivered audio for this long resets the back-off.
        public var goodConnectionSeconds = 10.0

        public init() {}
    }

    /// Tonearm's version, as the User-Agent says it.
    public static let version = "0.1"

    public let name: String
    public let options: Options
    private let shared: Shared
    private var thread: NamedThread?

    /// Offset in the current connection's bytes.
    public private(set) var offset: UInt64 = 0
    public private(set) var atEnd = false
    public var isSeekable: Bool { false }
    public var length: UInt64? { nil }
    /// The current connection's `Content-Type`.
    public var mimeType: String? { shared.contentType }

    /// Starts connecting to `url` at once. `onEvent` is called on the stream's thread and must
    /// not block.
    public convenience init(url: String, options: Options = Options(), onEvent: @escaping @Sendable (StreamEvent) -> Void = { _ in }) {
        self.init(url: url, options: options, library: LibCurl.soname, onEvent: onEvent)
    }

    /// `library`: the libcurl to load (tests name one that is not there).
    init(url: String, options: Options, library: String, onEvent: @escaping @Sendable (StreamEvent) -> Void) {
        name = url
        self.options = options
        shared = Shared(url: url, options: options, library: library, onEvent: onEvent)
        let shared = self.shared
        thread = NamedThread(name: "tonearm-stream") { shared.run() }
    }

    deinit { close() }

    /// Stops the stream's thread and waits for it.
    public func close() {
        shared.cancel(closing: true)
        thread?.join()
        thread = nil
    }

    /// Ends every wait of `read` and `nextConnection()`, now and from now on: they throw.
    /// Called from any thread.
    public func cancel() { shared.cancel(closing: false) }

    public var isCancelled: Bool { shared.isCancelled }

    /// Where the connection is (the last state `onEvent` was told).
    public var state: StreamState { shared.currentState }

    /// Whether anything of the stream has been read.
    public var hasDelivered: Bool { shared.hasDelivered }

    /// How often the transfer paused because the buffer was full (the reader is behind: a
    /// pause, or a fast server), for diagnostics.
    public var pauses: Int { shared.pauseCount }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(DecodeError) -> Int {
        guard buffer.count > 0 else { return 0 }
        let n = try shared.read(into: buffer)
        offset += UInt64(n)
        atEnd = n == 0
        return n
    }

    public func seek(to target: UInt64) throws(DecodeError) {
        guard target != offset else { return }
        guard target < offset, shared.rewind(by: Int(offset - target)) else {
            throw DecodeError(path: name, reason: .decoder("a live stream cannot seek to byte \(target)"))
        }
        offset = target
        atEnd = false
    }

    /// Waits for the next connection's bytes once `read` has returned 0 at the end of this
    /// one's. True: `read` goes on with them, from offset 0. False: the stream has ended (a
    /// known length read to its end). Throws when cancelled, or when the stream failed for good.
    public func nextConnection() throws(DecodeError) -> Bool {
        guard try shared.nextConnection() else { return false }
        offset = 0
        atEnd = false
        return true
    }
}

/// The part both threads touch, under one lock.
private final class Shared: @unchecked Sendable {
    let url: String
    let options: HTTPSource.Options
    let library: String
    let onEvent: @Sendable (StreamEvent) -> Void
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    // Under the lock.
    private var buffer = StreamBuffer()
    private var cancelled = false
    private var closing = false
    /// Set by the reader when it made room while the transfer is paused.
    private var wantsResume = false
    private var paused = false
    private var pauses = 0
    /// The stream will deliver nothing more (after what is buffered): its end, or a failure.
    private var finished: StreamState?
    private var state = StreamState.connecting
    private var delivered = false
    /// The connection whose bytes `read` returns has prebuffered (or ended).
    private var readerReady = false
    /// When the latest connection's prebuffer has waited long enough: its first bytes and
    /// `bufferMilliseconds`.
    private var prebufferDeadline: timespec?
    private var multi: UnsafeMutableRawPointer?
    /// Set with `multi`, before it.
    private var curl: LibCurl?

    // The stream's thread only.
    private var demuxer: ICYDemuxer?
    private var headers = ResponseHeaders()
    private var connectionBytes = 0
    private var lastTitle: String??
    private var capacitySet = false
    /// The Content-Type of the connection whose bytes are being read (guarded by `lock`).
    private var connectionType: String?

    init(url: String, options: HTTPSource.Options, library: String, onEvent: @escaping @Sendable (StreamEvent) -> Void) {
        self.url = url
        self.options = options
        self.library = library
        self.onEvent = onEvent
        pthread_mutex_init(lock, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(changed, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        buffer.release()
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(lock)
        lock.deallocate()
        changed.deallocate()
    }

    private func locked<T>(_ body: () throws(DecodeError) -> T) throws(DecodeError) -> T {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return try body()
    }

    private func withLock<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body()
    }

    var isCancelled: Bool { withLock { cancelled } }
    var currentState: StreamState { withLock { state } }
    var hasDelivered: Bool { withLock { delivered } }
    var pauseCount: Int { withLock { pauses } }
    var contentType: String? { withLock { connectionType } }

    func cancel(closing: Bool) {
        withLock {
            cancelled = true
            if closing { self.closing = true }
            pthread_cond_broadcast(changed)
            // Under the lock: the stream's thread clears `multi` under it before cleaning up.
            if closing, let multi, let curl { _ = curl.multiWakeup(multi) }
        }
    }

    private func cancelledError() -> DecodeError {
        DecodeError(path: url, reason: .decoder("stopped while waiting for the stream"))
    }

    // MARK: The reader's side

    func read(into out: UnsafeMutableRawBufferPointer) throws(DecodeError) -> Int {
        return try locked { () throws(DecodeError) -> Int in
            while true {
                if cancelled { throw cancelledError() }
                if readerReady {
                    if buffer.readable > 0 { break }
                    if buffer.atBoundary { return 0 }
                    if case .finished(let error) = finished {
                        if let error { throw DecodeError(path: url, reason: .cannotOpen(error.reason.description)) }
                        return 0
                    }
                } else if buffer.readable >= buffer.prebuffer || buffer.connectionEnded || finished != nil
                            || buffer.readable > 0 && prebufferDeadline.map(Self.hasPassed) == true {
                    readerReady = true
                    continue
                } else if var deadline = prebufferDeadline, buffer.readable > 0 {
                    // A stream slower than its estimate plays after the buffer's time at most.
                    pthread_cond_timedwait(changed, lock, &deadline)
                    continue
                }
                pthread_cond_wait(changed, lock)
            }
            delivered = true
            let n = buffer.take(into: out)
            // Half the buffer free again: the paused transfer may go on.
            if paused && !wantsResume && buffer.unread <= buffer.capacity / 2 {
                wantsResume = true
                if let multi, let curl { _ = curl.multiWakeup(multi) }
            }
            return n
        }
    }

    func rewind(by count: Int) -> Bool { withLock { buffer.rewind(by: count) } }

    func nextConnection() throws(DecodeError) -> Bool {
        try locked { () throws(DecodeError) -> Bool in
            while true {
                if cancelled { throw cancelledError() }
                if buffer.atBoundary {
                    if case .finished(nil) = finished, buffer.unread == 0 { return false }
                    buffer.passBoundary()
                    readerReady = false
                    return true
                }
                if case .finished(let error) = finished, buffer.unread == 0 {
                    if let error { throw DecodeError(path: url, reason: .cannotOpen(error.reason.description)) }
                    return false
                }
                pthread_cond_wait(changed, lock)
            }
        }
    }

    // MARK: The stream's thread

    func run() {
        let curl: LibCurl
        do throws(LibCurl.LoadError) {
            curl = try LibCurl.load(library)
        } catch {
            finish(.finished(StreamError(url: url, reason: .noLibrary(error.why))))
            return
        }
        guard let multi = curl.multiInit() else {
            finish(.finished(StreamError(url: url, reason: .network("cannot start libcurl"))))
            return
        }
        withLock { self.curl = curl; self.multi = multi }
        defer {
            withLock { self.multi = nil }
            _ = curl.multiCleanup(multi)
        }
        var backoff = options.backoff
        var attempt = 0
        while !withLock({ closing }) {
            let started = monotonicSeconds()
            let outcome = transfer(multi, curl)
            let lasted = monotonicSeconds() - started
            if withLock({ closing }) { return }
            let hadBytes = connectionBytes > 0
            let everDelivered = withLock { delivered } || hadBytes
            // The bytes that came are one stream: the reader's decoder ends with them.
            guard let error = outcome else {
                finish(.finished(nil), boundary: hadBytes)
                return
            }
            if !everDelivered && error.reason.isPermanent {
                finish(.finished(error), boundary: hadBytes)
                return
            }
            if hadBytes { withLock { buffer.markBoundary(); pthread_cond_broadcast(changed) } }
            if hadBytes && lasted >= options.goodConnectionSeconds {
                backoff.reset()
                attempt = 0
            }
            attempt += 1
            setState(.reconnecting(attempt: attempt, after: error))
            let delay = backoff.take()
            // The back-off: a wait that `close()` ends.
            withLock {
                var deadline = Self.deadline(after: delay)
                while !closing {
                    if pthread_cond_timedwait(changed, lock, &deadline) == ETIMEDOUT { break }
                }
            }
        }
    }

    /// Nothing more will come. The owner hears it before a read can end with it.
    private func finish(_ final: StreamState, boundary: Bool = false) {
        onEvent(.state(final))
        withLock {
            if boundary { buffer.markBoundary() }
            finished = final
            state = final
            pthread_cond_broadcast(changed)
        }
    }

    private func setState(_ new: StreamState) {
        guard withLock({ state }) != new else { return }
        onEvent(.state(new))
        withLock { state = new }
    }

    /// One connection, to its end: nil when the server sent all of a length it announced.
    private func transfer(_ multi: UnsafeMutableRawPointer, _ curl: LibCurl) -> StreamError? {
        guard let easy = curl.easyInit() else { return StreamError(url: url, reason: .network("cannot start libcurl")) }
        defer { curl.easyCleanup(easy) }
        headers = ResponseHeaders()
        demuxer = nil
        connectionBytes = 0
        capacitySet = false
        withLock { paused = false; wantsResume = false; prebufferDeadline = nil }
        var errorText = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let userAgent = options.userAgent
        let requestHeaders = curl.slistAppend(nil, "Icy-MetaData: 1")
        defer { curl.slistFreeAll(requestHeaders) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        let setup: CURLcode = errorText.withUnsafeMutableBufferPointer { errors in
            var code = CURLE_OK
            func set(_ c: CURLcode) { if code == CURLE_OK { code = c } }
            set(curl.setoptPointer(easy, CURLOPT_URL, url))
            set(curl.setoptLong(easy, CURLOPT_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS)))
            set(curl.setoptLong(easy, CURLOPT_REDIR_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS)))
            set(curl.setoptLong(easy, CURLOPT_FOLLOWLOCATION, 1))
            set(curl.setoptLong(easy, CURLOPT_MAXREDIRS, 10))
            set(curl.setoptLong(easy, CURLOPT_FAILONERROR, 1))
            set(curl.setoptLong(easy, CURLOPT_NOSIGNAL, 1))
            set(curl.setoptLong(easy, CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeoutMilliseconds))
            set(curl.setoptLong(easy, CURLOPT_LOW_SPEED_LIMIT, 1))
            set(curl.setoptLong(easy, CURLOPT_LOW_SPEED_TIME, max(1, options.noDataTimeoutSeconds)))
            set(curl.setoptPointer(easy, CURLOPT_USERAGENT, userAgent))
            set(curl.setoptPointer(easy, CURLOPT_HTTPHEADER, requestHeaders))
            set(curl.setoptPointer(easy, CURLOPT_ERRORBUFFER, errors.baseAddress))
            set(curl.setoptWrite(easy, CURLOPT_WRITEFUNCTION, streamWrite))
            set(curl.setoptPointer(easy, CURLOPT_WRITEDATA, me))
            set(curl.setoptWrite(easy, CURLOPT_HEADERFUNCTION, streamHeader))
            set(curl.setoptPointer(easy, CURLOPT_HEADERDATA, me))
            // Keeps the compiled-in CA directory: a file given adds to the system's store.
            if let caFile = options.caFile { set(curl.setoptPointer(easy, CURLOPT_CAINFO, caFile)) }
            return code
        }
        guard setup == CURLE_OK else {
            return StreamError(url: url, reason: .badURL(String(cString: curl.easyStrerror(setup))))
        }
        _ = curl.multiAddHandle(multi, easy)
        defer { _ = curl.multiRemoveHandle(multi, easy) }
        var result = CURLE_OK
        var running: Int32 = 1
        while running > 0 {
            if curl.multiPerform(multi, &running) != CURLM_OK { break }
            if running == 0 { break }
            let (stop, resume) = withLock { () -> (Bool, Bool) in
                let resume = wantsResume
                if resume { wantsResume = false; paused = false }
                return (closing, resume)
            }
            if stop { return nil }
            if resume { _ = curl.easyPause(easy, CURLPAUSE_CONT) }
            if resume { continue }
            // Sleeps until the socket, one of curl's timers, or a wake-up (room, close).
            _ = curl.multiPoll(multi, nil, 0, 60_000, nil)
        }
        var left: Int32 = 0
        while let message = curl.multiInfoRead(multi, &left) {
            if message.pointee.msg == CURLMSG_DONE { result = message.pointee.data.result }
        }
        let text = errorText.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return classify(result, easy: easy, text: text, curl)
    }

    private func classify(_ code: CURLcode, easy: UnsafeMutableRawPointer, text: String, _ curl: LibCurl) -> StreamError? {
        let why = text.isEmpty ? String(cString: curl.easyStrerror(code)) : text
        let reason: StreamError.Reason
        switch code {
        case CURLE_OK:
            // A server that announced its length and sent it all has ended; any other end of
            // the body is a drop.
            if let length = headers.contentLength, headers.status < 300, connectionBytes >= length { return nil }
            reason = .closed
        case CURLE_HTTP_RETURNED_ERROR:
            var status = 0
            _ = curl.getinfoLong(easy, CURLINFO_RESPONSE_CODE, &status)
            reason = .httpStatus(status, headers.phrase)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: reason = .unknownHost(why)
        case CURLE_COULDNT_CONNECT: reason = .refused(why)
        case CURLE_OPERATION_TIMEDOUT: reason = .timeout(why)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM:
            reason = .certificate(why)
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: reason = .badURL(why)
        default: reason = .network(why)
        }
        return StreamError(url: url, reason: reason)
    }

    /// Response headers, as they come: a new status line (after a redirect) starts again.
    fileprivate func header(_ line: String) {
        let trimmed = line.trimmingLineEnd
        if trimmed.hasPrefix("HTTP/") || trimmed.hasPrefix("ICY ") {
            headers = ResponseHeaders()
            let parts = trimmed.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            if parts.count >= 2 { headers.status = Int(parts[1]) ?? 0 }
            if parts.count == 3 { headers.phrase = String(parts[2]) }
            return
        }
        guard let colon = trimmed.firstIndex(of: ":") else { return }
        let key = trimmed[..<colon].lowercased()
        let value = String(trimmed[trimmed.index(after: colon)...]).trimmingSpaces
        switch key {
        case "icy-metaint": headers.station.metadataInterval = Int(value).flatMap { $0 > 0 ? $0 : nil }
        case "icy-name": headers.station.name = value.isEmpty ? nil : value
        case "icy-genre": headers.station.genre = value.isEmpty ? nil : value
        case "icy-br": headers.station.bitrate = Int(value.split(separator: ",").first ?? "")
        case "content-type": headers.station.contentType = value
        case "content-length": headers.contentLength = Int(value)
        default: break
        }
    }

    /// Body bytes: false to pause the transfer (nothing of them taken; curl hands them again).
    fileprivate func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if connectionBytes == 0 && !capacitySet { connectionStarted() }
        let accepted = withLock { () -> Bool in
            if closing { return true }
            guard buffer.unread == 0 || buffer.unread + bytes.count <= buffer.capacity else {
                if !paused { pauses += 1 }
                paused = true
                return false
            }
            return true
        }
        guard accepted else { return false }
        var titles: [String?] = []
        withLock {
            if demuxer != nil {
                demuxer!.feed(bytes, audio: { buffer.append($0) }, metadata: { titles.append($0.title) })
            } else {
                buffer.append(bytes)
            }
            pthread_cond_broadcast(changed)
        }
        connectionBytes += bytes.count
        for title in titles where lastTitle != .some(title) {
            lastTitle = .some(title)
            onEvent(.title(title))
        }
        return true
    }

    /// The headers are all in: the buffer is sized for the stream's bitrate, and the owner told.
    private func connectionStarted() {
        capacitySet = true
        let station = headers.station
        demuxer = station.metadataInterval.map { ICYDemuxer(interval: $0) }
        let kbits = station.bitrate ?? Self.assumedBitrate(contentType: station.contentType)
        let prebuffer = max(16 * 1024, kbits * 1000 / 8 * options.bufferMilliseconds / 1000)
        withLock {
            connectionType = station.contentType
            buffer.size(prebuffer: prebuffer)
            prebufferDeadline = Self.deadline(after: Double(options.bufferMilliseconds) / 1000)
        }
        onEvent(.station(station))
        setState(.playing)
    }

    /// CLOCK_MONOTONIC (the condition's clock) `seconds` from now.
    static func deadline(after seconds: Double) -> timespec {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + Int(seconds * 1e9)
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        return deadline
    }

    static func hasPassed(_ deadline: timespec) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now.tv_sec > deadline.tv_sec || now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec
    }

    /// kbit/s to size the buffer with when the station does not say (`icy-br`).
    static func assumedBitrate(contentType: String?) -> Int {
        let type = contentType?.lowercased() ?? ""
        return type.contains("flac") || type.contains("wav") ? 1411 : 320
    }
}

private struct ResponseHeaders {
    var status = 0
    var phrase = ""
    var contentLength: Int?
    var station = StationInfo()
}

private let streamWrite: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    let shared = Unmanaged<Shared>.fromOpaque(context!).takeUnretainedValue()
    let total = size * count
    guard total > 0, let data else { return total }
    return shared.body(UnsafeRawBufferPointer(start: data, count: total)) ? total : Int(CURL_WRITEFUNC_PAUSE)
}

private let streamHeader: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    let shared = Unmanaged<Shared>.fromOpaque(context!).takeUnretainedValue()
    let total = size * count
    guard total > 0, let data else { return total }
    let bytes = UnsafeRawBufferPointer(start: data, count: total)
    shared.header(String(decoding: bytes, as: UTF8.self))
    return total
}

extension String {
    var trimmingLineEnd: String {
        var s = Substring(self)
        while let last = s.last, last == "\r\n" || last == "\n" || last == "\r" { s = s.dropLast() }
        return String(s)
    }
}
