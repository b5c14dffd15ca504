import TonearmControl
import TonearmControlPlane
import TonearmJSON
import TonearmSystem

/// The library's requests on the socket: `update`, `ls`, `list`, `find`, `search`, `count`,
/// `stats`, `playlists`, `failures`, and `findadd`/`searchadd`. Documented in `TonearmControl/Protocol.swift`.
enum LibraryRequest {
    case update(path: String?, wait: Bool)
    case ls(String)
    case list(Tag, filters: [TagFilter], groups: [Tag])
    case songs(SongQuery)
    case count([TagFilter], Matching, group: Tag?)
    case stats
    case playlists
    case failures
    case add(SongQuery, position: Int?)


    /// Songs a `find` or `search` answers with unless `limit` says otherwise.
    static let defaultLimit = 1000
    static let maximumLimit = 100_000

    static func parse(_ request: ControlRequest) throws(ArgumentError) -> LibraryRequest? {
        switch request.command {
        case "update":
            return .update(path: try request.optionalString("path"), wait: try request.optionalBool("wait") ?? false)
        case "ls":
            return .ls(try request.optionalString("path") ?? "")
        case "list":
            let name = try request.string("tag")
            guard let tag = Tag(named: name) else { throw unknownTag("tag", name) }
            var groups: [Tag] = []
            if let list = request["group"], !list.isNull {
                guard let names = list.arrayValue?.compactMap(\.stringValue), names.count == list.arrayValue?.count else {
                    throw ArgumentError(key: "group", description: "'group' must be an array of tag names")
                }
                for name in names {
                    guard let group = Tag(named: name) else { throw unknownTag("group", name) }
                    groups.append(group)
                }
            }
            return .list(tag, filters: try filters(request), groups: groups)
        case "find", "search":
            return .songs(SongQuery(try filters(request), matching: request.command == "find" ? .exact : .substring,
                                    window: try window(request)))
        case "findadd", "searchadd":
            let position = try request.optionalInt("position")
            if let position, position < 0 { throw ArgumentError(key: "position", description: "'position' must be 0 or more") }
            return .add(SongQuery(try filters(request), matching: request.command == "findadd" ? .exact : .substring), position: position)
        case "count":
            let group = try request.optionalString("group").map { (name: String) throws(ArgumentError) -> Tag in
                guard let tag = Tag(named: name) else { throw unknownTag("group", name) }
                return tag
            }
            let matching: Matching = try request.optionalBool("substring") ?? false ? .substring : .exact
            return .count(try filters(request), matching, group: group)
        case "stats":
            return .stats
        case "playlists":
            return .playlists
        case "failures":
            return .failures
        default:
            return nil
        }
    }

    /// `"filters":[{"tag":"artist","value":"X"},…]`; tag may also be any, file or base.
    private static func filters(_ request: ControlRequest) throws(ArgumentError) -> [TagFilter] {
        guard let list = request["filters"], !list.isNull else { return [] }
        guard let items = list.arrayValue else {
            throw ArgumentError(key: "filters", description: "'filters' must be an array of {\"tag\":NAME,\"value\":TEXT}")
        }
        var filters: [TagFilter] = []
        for item in items {
            guard let name = item["tag"]?.stringValue, let value = item["value"]?.stringValue else {
                throw ArgumentError(key: "filters", description: "each filter must be {\"tag\":NAME,\"value\":TEXT}")
            }
            guard let key = FilterKey(named: name) else { throw unknownTag("filters", name) }
            filters.append(TagFilter(key, value))
        }
        return filters
    }

    private static func window(_ request: ControlRequest) throws(ArgumentError) -> Range<Int> {
        let offset = try request.optionalInt("offset") ?? 0
        let limit = try request.optionalInt("limit") ?? defaultLimit
        guard offset >= 0 else { throw ArgumentError(key: "offset", description: "'offset' must be 0 or more") }
        guard (1...maximumLimit).contains(limit) else {
            throw ArgumentError(key: "limit", description: "'limit' must be between 1 and \(maximumLimit)")
        }
        return offset..<(offset + limit)
    }

    private static func unknownTag(_ key: String, _ name: String) -> ArgumentError {
        ArgumentError(key: key, description: "unknown tag '\(name)' (one of \((Tag.allCases.map(\.rawValue) + ["any", "file", "base"]).joined(separator: ", ")))")
    }
}

extension ControlResponder {
    /// Answers a library request: queries straight from the catalog, `update` and the adds
    /// through the control plane. `update` with `wait` answers once its scan is done, without
    /// holding up the requests behind it.
    static func answer(_ request: LibraryRequest, _ reply: Reply, _ plane: any ControlPlane, source: CommandSource) async {
        if case .update(let path, let wait) = request {
            let changes = wait ? plane.subscribe([.library]) : nil
            let result = await plane.send(.updateLibrary(path: path), from: source)
            guard result.failure == nil, case .scanQueued(let job) = result.payload else {
                reply.fail(code: result.failure?.code.rawValue ?? "internal", message: result.failure?.message ?? "no scan was queued")
                return
            }
            guard let changes else {
                reply.succeed(.object([("job", .int(job))]))
                return
            }
            Task {
                var library = await plane.snapshot().library
                if library.scan.finishedJob < job {
                    for await _ in changes {
                        library = await plane.snapshot().library
                        if library.scan.finishedJob >= job { break }
                    }
                }
                reply.succeed(Reports.scan(library.scan))
            }
            return
        }
        guard let catalog = plane.catalog else {
            reply.fail(code: CommandFailure.Code.unavailable.rawValue,
                       message: "there is no library: no music directory is configured ([daemon] music_dir, --music-dir)")
            return
        }
        // The query runs on the library's worker pool, in this client's turn: a long one holds
        // up neither the daemon nor another client.
        enum Answer: Sendable {
            case report(JSONValue)
            case paths([String])
        }
        let turn = source.client.map { "\(source.name) \(String(describing: $0))" } ?? source.name
        do throws(CommandFailure) {
            let outcome = try await WorkerPool.library.run(for: turn) { () throws(CommandFailure) -> Answer in
                switch request {
                case .update:
                    return .paths([])
                case .ls(let path):
                    return .report(Reports.listing(try catalog.listDirectory(path)))
                case .list(let tag, let filters, let groups):
                    var items: [JSONValue] = []
                    let keys = (groups + [tag]).map { $0.rawValue.lowercased() }
                    try catalog.values(of: tag, filters: filters, groupedBy: groups) { values in
                        items.append(.object(Array(zip(keys, values.map { JSONValue.string($0) }))))
                        return true
                    }
                    return .report(.object([("items", .array(items))]))
                case .songs(let query):
                    var songs: [JSONValue] = []
                    let total = try catalog.songs(query) { song in
                        songs.append(Reports.song(song))
                        return true
                    }
                    return .report(.object([("songs", .array(songs)), ("total", .int(total))]))
                case .count(let filters, let matching, let group):
                    let counts = try catalog.count(filters, matching: matching, groupedBy: group)
                    return .report(.object([("counts", .array(counts.map(Reports.count)))]))
                case .stats:
                    return .report(Reports.stats(try catalog.totals()))
                case .playlists:
                    return .report(.object([("playlists", .array(try catalog.storedPlaylists().map(Reports.playlist)))]))
                case .failures:
                    var failures: [JSONValue] = []
                    try catalog.failures { path, reason in
                        failures.append(.object([("path", .string(path)), ("reason", .string(reason))]))
                        return true
                    }
                    return .report(.object([("failures", .array(failures))]))
                case .add(let query, _):
                    var paths: [String] = []
                    try catalog.songs(query) { song in
                        paths.append(song.path)
                        return true
                    }
                    return .paths(paths)
                }
            }
            switch (outcome, request) {
            case (.report(let report), _):
                reply.succeed(report)
            case (.paths(let paths), .add(_, let position)):
                guard !paths.isEmpty else {
                    reply.fail(code: CommandFailure.Code.notFound.rawValue, message: "no song in the library matches")
                    return
                }
                let result = await plane.send(.queue(.add(paths: paths, at: position)), from: source)
                if let failure = result.failure {
                    reply.fail(code: failure.code.rawValue, message: failure.message)
                } else {
                    reply.succeed(answer(result, .added))
                }
            case (.paths, _):
                return
            }
        } catch {
            reply.fail(code: error.code.rawValue, message: error.message)
        }
    }
}
