import NIOHTTP1
import TonearmControl
import TonearmControlPlane
import TonearmControlJSON
import TonearmJSON
import TonearmNetwork

/// What each path answers (`API.swift` documents them). Paths are matched exactly: nothing is
/// read from disk by its path, so there is nothing to traverse.
struct WebRoutes: Sendable {
    let plane: any ControlPlane
    /// Which `Host`s are this box's: every request is checked first.
    let hosts: HostCheck
    /// `[web] token`, for every route but the page's own files.
    let access: WebAccess
    /// Who commands come from: the web remote is one client of the control plane.
    let source: CommandSource

    func respond(_ request: HTTPRequest) async -> HTTPResponse {
        if let refusal = hosts.refusal(request.head) { return refusal }
        let path = request.path
        let method = request.head.method
        if path == "/api" {
            guard method == .POST else { return Self.notAllowed("POST") }
            return await api(request)
        }
        if path == "/login" {
            guard method == .POST else { return Self.notAllowed("POST") }
            return login(request)
        }
        guard method == .GET || method == .HEAD else { return Self.notAllowed("GET, HEAD") }
        if let file = StaticPage.file(path) { return StaticPage.response(file, request.head.headers) }
        if path.hasPrefix("/api/") {
            let report = String(path.dropFirst("/api/".count))
            guard WebAPI.getReports.contains(report) else { return .text(.notFound, "no report '\(report)'; POST commands to /api") }
            return await api(request, command: .object([("command", .string(report))]))
        }
        if path.hasPrefix("/art/") {
            if let refusal = unauthorized(request) { return refusal }
            return await art(String(path.dropFirst("/art/".count)), request)
        }
        if path == "/ws" {
            guard Self.originAllowed(request.head) else { return .text(.forbidden, "a WebSocket from another site's page is refused") }
            if let refusal = unauthorized(request) { return refusal }
            return .text(.badRequest, "/ws is a WebSocket: open it with an Upgrade request")
        }
        return .text(.notFound, "nothing at \(path)")
    }

    /// Whether a WebSocket may open: this box's `Host`, its own page's `Origin`, and the session
    /// cookie when there is a token. Refused, the upgrade is answered by `respond` with why.
    func acceptsWebSocket(_ request: HTTPRequest) -> Bool {
        hosts.refusal(request.head) == nil && Self.originAllowed(request.head) && access.admitsWebSocket(request)
    }

    // MARK: the token

    /// The answer for a request without the token's permission; nil when it has it.
    private func unauthorized(_ request: HTTPRequest) -> HTTPResponse? {
        switch access.verdict(request) {
        case .allowed: return nil
        case .missing: return Self.refusal(.unauthorized, "this box asks for its token: log in (POST /login) or send Authorization: Bearer TOKEN")
        case .wrong: return Self.refusal(.unauthorized, "that token is wrong")
        case .slowedDown(let seconds): return Self.slowedDown(seconds)
        }
    }

    /// `POST /login` with `{"token":"…"}`: the session cookie for the right token.
    private func login(_ request: HTTPRequest) -> HTTPResponse {
        guard Self.originAllowed(request.head) else { return .text(.forbidden, "a request from another site's page is refused") }
        guard Self.isJSON(request.head) else { return .text(.unsupportedMediaType, "send the request as Content-Type: application/json") }
        guard let object = try? JSONValue.parse(request.body), let offered = object["token"]?.stringValue else {
            return Self.refusal(.badRequest, "log in with a JSON object {\"token\":\"…\"}", code: ControlErrorCode.badRequest)
        }
        switch access.login(offered, from: request.peerAddress) {
        case .allowed:
            var response = HTTPResponse(.noContent, headers: ["Cache-Control": "no-store"])
            if access.token != nil { response.headers.add(name: "Set-Cookie", value: access.sessionCookie) }
            return response
        case .missing, .wrong: return Self.refusal(.unauthorized, "that token is wrong")
        case .slowedDown(let seconds): return Self.slowedDown(seconds)
        }
    }

    private static func refusal(_ status: HTTPResponseStatus, _ message: String, code: String = "unauthorized") -> HTTPResponse {
        json(status, Reply.failure(id: nil, code: code, message: message))
    }

    private static func slowedDown(_ seconds: Int) -> HTTPResponse {
        var response = refusal(.tooManyRequests, "too many wrong tokens from this address: try again in \(seconds) s", code: "busy")
        response.headers.add(name: "Retry-After", value: String(seconds))
        return response
    }

    private static func isJSON(_ head: HTTPRequestHead) -> Bool {
        let type = head.headers.first(name: "Content-Type")?.lowercased() ?? ""
        return type == "application/json" || type.hasPrefix("application/json;")
    }

    static func notAllowed(_ allowed: String) -> HTTPResponse {
        var response = HTTPResponse.text(.methodNotAllowed, "use \(allowed)")
        response.headers.add(name: "Allow", value: allowed)
        return response
    }

    // MARK: /api

    private func api(_ request: HTTPRequest, command: JSONValue? = nil) async -> HTTPResponse {
        guard Self.originAllowed(request.head) else { return .text(.forbidden, "a request from another site's page is refused") }
        if let refusal = unauthorized(request) { return refusal }
        let object: JSONValue
        if let command {
            object = command
        } else {
            guard Self.isJSON(request.head) else {
                return .text(.unsupportedMediaType, "send the request as Content-Type: application/json")
            }
            do throws(JSONParseError) {
                object = try JSONValue.parse(request.body)
            } catch {
                return Self.json(.badRequest, Reply.failure(id: .null, code: ControlErrorCode.malformed, message: "invalid JSON: \(error)"))
            }
        }
        guard case .object = object, let name = object["command"]?.stringValue else {
            return Self.json(.badRequest, Reply.failure(id: .null, code: ControlErrorCode.badRequest,
                                                       message: "a request is an object with a string \"command\""))
        }
        let id = object["id"] ?? .null
        if case .array = id { return Self.json(.badRequest, Reply.failure(id: .null, code: ControlErrorCode.badRequest, message: "\"id\" must be a scalar")) }
        if case .object = id { return Self.json(.badRequest, Reply.failure(id: .null, code: ControlErrorCode.badRequest, message: "\"id\" must be a scalar")) }
        if ControlResponder.isSessionCommand(name) {
            return Self.json(.badRequest, Reply.failure(id: id, code: ControlErrorCode.badArgument,
                                                       message: "audio sessions belong to a connection that stays open: use the control socket"))
        }
        let controlRequest = ControlRequest(clientID: request.clientID, id: id, command: name, arguments: object)
        let line: [UInt8] = await withCheckedContinuation { continuation in
            let reply = Reply(clientID: request.clientID, id: id, command: name, log: nil) { continuation.resume(returning: $0) }
            Task { await ControlResponder.answer(controlRequest, reply, plane) { source } }
        }
        let answer = try? JSONValue.parse(line)
        let code = answer?["error"]?["code"]?.stringValue
        return HTTPResponse(Self.status(code), contentType: "application/json", body: line, headers: ["Cache-Control": "no-store"])
    }

    /// The HTTP status for a control-protocol error code (nil: none, 200).
    static func status(_ code: String?) -> HTTPResponseStatus {
        guard let code else { return .ok }
        switch code {
        case ControlErrorCode.malformed, ControlErrorCode.badRequest, ControlErrorCode.badArgument: return .badRequest
        case ControlErrorCode.unknownCommand, CommandFailure.Code.notFound.rawValue: return .notFound
        case CommandFailure.Code.forbidden.rawValue: return .forbidden
        case CommandFailure.Code.exists.rawValue: return .conflict
        case CommandFailure.Code.notPlayable.rawValue: return .unprocessableEntity
        case CommandFailure.Code.unavailable.rawValue, CommandFailure.Code.busy.rawValue: return .serviceUnavailable
        case "unauthorized": return .unauthorized
        default: return .internalServerError
        }
    }

    static func json(_ status: HTTPResponseStatus, _ value: JSONValue) -> HTTPResponse {
        HTTPResponse(status, contentType: "application/json", body: value.serializedBytes + [0x0A], headers: ["Cache-Control": "no-store"])
    }

    /// No `Origin` (curl, a script), or this server's own: the page's requests and nobody
    /// else's (a page on another site cannot drive the box through a visitor's browser).
    static func originAllowed(_ head: HTTPRequestHead) -> Bool {
        guard let origin = head.headers.first(name: "Origin") else { return true }
        guard let host = head.headers.first(name: "Host") else { return false }
        return origin == "http://" + host || origin == "https://" + host
    }

    // MARK: /art

    /// The id's characters: what `Artwork.id` makes ("flac-…", "file-…"), and `placeholder`.
    private static func isArtworkID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64 && id.utf8.allSatisfy { ("a"..."z").contains(Character(UnicodeScalar($0))) || ("0"..."9").contains(Character(UnicodeScalar($0))) || $0 == UInt8(ascii: "-") }
    }

    private func art(_ id: String, _ request: HTTPRequest) async -> HTTPResponse {
        guard Self.isArtworkID(id) else { return .text(.notFound, "no artwork '\(id)'") }
        var size = 512
        if let asked = request.query("size") {
            guard let value = Int(asked), ControlResponder.artworkSizes.contains(value) else {
                return .text(.badRequest, "size must be \(ControlResponder.artworkSizes.lowerBound)…\(ControlResponder.artworkSizes.upperBound) pixels")
            }
            size = value
        }
        let tag = "\"\(id)-\(size)\""
        if request.head.headers.first(name: "If-None-Match") == tag {
            return HTTPResponse(.notModified, headers: Self.artHeaders(tag))
        }
        if id == "placeholder" {
            return HTTPResponse(.ok, contentType: "image/svg+xml", body: Placeholder.svg(size: size), headers: Self.artHeaders(tag))
        }
        let result = await plane.send(.artwork(id: id, fitting: size), from: source)
        guard case .artwork(_, let mimeType, let bytes) = result.payload else {
            let failure = result.failure ?? CommandFailure(.notFound, "no artwork '\(id)'")
            return .text(Self.status(failure.code.rawValue), failure.message)
        }
        return HTTPResponse(.ok, contentType: mimeType, body: bytes, headers: Self.artHeaders(tag))
    }

    /// An id names the picture's bytes, so what it answers never changes.
    private static func artHeaders(_ tag: String) -> HTTPHeaders {
        ["Cache-Control": "public, max-age=31536000, immutable", "ETag": tag]
    }
}

/// The cover of a track without one: a record on a dark ground, drawn as SVG, so it is sharp at
/// any size, a few hundred bytes, and costs no image library (a JPEG drawn per size needed a
/// picture's worth of memory and libjpeg-turbo's encoder for nothing the browser cannot scale).
enum Placeholder {
    static func svg(size: Int) -> [UInt8] {
        var grooves = ""
        var radius = 19.0
        while radius < 39.5 {
            grooves += #"<circle r="\#(radius)"/>"#
            radius += 2.2
        }
        return Array(#"""
            <svg xmlns="http://www.w3.org/2000/svg" width="\#(size)" height="\#(size)" viewBox="-50 -50 100 100">\#
            <defs><linearGradient id="g" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#2e3240"/>\#
            <stop offset="1" stop-color="#111219"/></linearGradient></defs>\#
            <rect x="-50" y="-50" width="100" height="100" fill="url(#g)"/>\#
            <circle r="42" fill="#0b0b0e" stroke="#464854" stroke-width="0.6"/>\#
            <g fill="none" stroke="#26262e" stroke-width="0.3">\#(grooves)</g>\#
            <circle r="15" fill="#aa5c40"/><circle r="1.2" fill="#111219"/></svg>
            """#.utf8)
    }
}

/// The page's files with their validators, made once.
enum StaticPage {
    struct Served: Sendable {
        let file: PageFiles.File
        let body: [UInt8]
        let tag: String
    }

    static let served: [Served] = PageFiles.all.map { file in
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in file.body { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Served(file: file, body: file.body, tag: "\"" + String(hash, radix: 16) + "\"")
    }

    static func file(_ path: Substring) -> Served? { served.first { $0.file.path == path } }

    static func response(_ served: Served, _ headers: HTTPHeaders) -> HTTPResponse {
        var fields: HTTPHeaders = [
            "ETag": served.tag, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
        ]
        if headers.first(name: "If-None-Match") == served.tag { return HTTPResponse(.notModified, headers: fields) }
        fields.add(name: "Content-Type", value: served.file.contentType)
        return HTTPResponse(.ok, body: served.body, headers: fields)
    }
}
