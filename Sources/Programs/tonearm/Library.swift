import ArgumentParser
import TonearmControl
import TonearmJSON

#if canImport(Glibc)
import Glibc
#endif

// The music library: scan, browse, list, find, search, stats. Paths are relative to the
// daemon's music directory.

/// TAG VALUE pairs into the protocol's filters.
private func filters(_ words: [String], command: String) throws -> JSONValue {
    guard words.count % 2 == 0 else {
        printError("tonearm \(command): give TAG VALUE pairs ('\(words.last ?? "")' has no value)")
        throw ExitCode(1)
    }
    return .array(stride(from: 0, to: words.count, by: 2).map {
        .object([("tag", .string(words[$0])), ("value", .string(words[$0 + 1]))])
    })
}

private let tagHelp = "Tags: Artist, ArtistSort, Album, AlbumSort, AlbumArtist, AlbumArtistSort, Title, Track, Genre, Date, OriginalDate, Composer, Performer, Conductor, Work, Grouping, Comment, Disc, Label, the MUSICBRAINZ_* ids (any case); also any (every tag), file (the path) and base (everything under a directory)."

struct Update: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Scan the music directory, or a directory or file in it, for what changed.",
        discussion: "Only new and changed files are read; what is gone is removed. Waits until the scan is done, drawing its progress on a terminal, then prints what it did. The daemon also scans at start and, while it runs, indexes what changes in the music directory by itself.")
    @OptionGroup var connection: Connection
    @Argument(help: "A directory or file, relative to the music directory (default: all of it).") var path: String?
    @Flag(help: "Queue the scan and return at once.") var noWait = false
    @Flag(help: "Print the scan's figures as JSON.") var json = false

    func run() throws {
        let client = try connection.connect()
        do {
            if noWait {
                let queued = try client.request("update", path.map { [("path", .string($0))] } ?? [])
                print(json ? queued.serialized : "scan \(queued["job"]?.intValue ?? 0) queued")
                return
            }
            _ = try client.request("subscribe", [("topics", .array([.string("library")]))])
            let job = try client.request("update", path.map { [("path", .string($0))] } ?? [])["job"]?.intValue ?? 0
            let live = isatty(STDERR_FILENO) != 0
            var library = try client.request("status")["library"] ?? .null
            let known = library["songs"]?.intValue ?? 0
            while (library["scan"]?["finishedJob"]?.intValue ?? 0) < job {
                if live { drawProgress(library["scan"] ?? .null, known: known) }
                guard let event = try client.readEvent(timeout: nil) else { break }
                if event.topic == "library" { library = event.data }
            }
            if live { writeError("\r\u{1B}[2K") }
            let scan = library["scan"] ?? .null
            if json {
                print(scan.serialized)
                return
            }
            func n(_ key: String) -> Int { scan[key]?.intValue ?? 0 }
            let seconds = scan["seconds"]?.doubleValue ?? 0
            print("indexed \(n("indexed")), unchanged \(n("unchanged")), removed \(n("removed")), failed \(n("failed")) in \((seconds * 10).rounded() / 10) s")
            if n("failed") > 0 {
                for failure in try client.request("failures")["failures"]?.arrayValue ?? [] {
                    printError("failed: \(failure["path"]?.stringValue ?? "?"): \(failure["reason"]?.stringValue ?? "")")
                }
            }
        } catch {
            printError("tonearm: \(error)")
            throw ExitCode(1)
        }
    }

    /// "scanning ███████░░░░ 12034 files, 340 new, 2 failed" — the bar against the songs the
    /// library had, when it had some.
    private func drawProgress(_ scan: JSONValue, known: Int) {
        let seen = scan["seen"]?.intValue ?? 0
        var line = "scanning "
        if known > 0 {
            let width = 24
            let filled = min(width, seen * width / max(known, seen, 1))
            line += String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled) + " "
        }
        line += "\(seen) files, \(scan["indexed"]?.intValue ?? 0) read, \(scan["failed"]?.intValue ?? 0) failed"
        writeError("\r\u{1B}[2K" + line)
    }
}

struct Ls: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List a directory of the library: its sub-directories (ending in /), then its songs.")
    @OptionGroup var connection: Connection
    @Argument(help: "A directory, relative to the music directory (default: the music directory).") var directory: String?
    @Flag(help: "Print the daemon's answer as JSON.") var json = false

    func run() throws {
        let listing = try connection.send("ls", directory.map { [("path", .string($0))] } ?? [])
        if json {
            print(listing.serialized)
            return
        }
        for entry in listing["directories"]?.arrayValue ?? [] { print((entry["path"]?.stringValue ?? "") + "/") }
        for song in listing["songs"]?.arrayValue ?? [] { print(song["file"]?.stringValue ?? "") }
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the distinct values of a tag, of the songs that match TAG VALUE pairs.",
        discussion: "Sorted by the sort tags where songs have them (AlbumArtistSort, ArtistSort, AlbumSort); AlbumArtist falls back to Artist. With --group, each line is the group values and the value, separated by tabs: tonearm list album --group albumartist. " + tagHelp)
    @OptionGroup var connection: Connection
    @Argument(help: "The tag to list.") var tag: String
    @Argument(help: "TAG VALUE pairs the songs must match exactly.") var filter: [String] = []
    @Option(help: ArgumentHelp("Group by this tag too (repeatable).", valueName: "tag")) var group: [String] = []
    @Flag(help: "Print the daemon's answer as JSON.") var json = false

    func run() throws {
        var arguments: [(String, JSONValue)] = [("tag", .string(tag)), ("filters", try filters(filter, command: "list"))]
        if !group.isEmpty { arguments.append(("group", .array(group.map { .string($0) }))) }
        let answer = try connection.send("list", arguments)
        if json {
            print(answer.serialized)
            return
        }
        let keys = (group + [tag]).map { $0.lowercased() }
        for item in answer["items"]?.arrayValue ?? [] {
            print(keys.map { item[$0]?.stringValue ?? "" }.joined(separator: "\t"))
        }
    }
}

/// `find` and `search`: the songs that match, as paths (or JSON).
struct SongQueryOptions: ParsableArguments {
    @Argument(help: "TAG VALUE pairs.") var filter: [String]
    @Option(help: "Skip this many songs.") var offset = 0
    @Option(help: "At most this many songs (1 to 100000).") var limit = 1000
    @Flag(help: "Print the daemon's answer as JSON (songs with every tag, and the total).") var json = false

    func run(_ command: String, _ connection: Connection) throws {
        let answer = try connection.send(command, [("filters", try filters(filter, command: command)),
                                                   ("offset", .int(offset)), ("limit", .int(limit))])
        if json {
            print(answer.serialized)
            return
        }
        let songs = answer["songs"]?.arrayValue ?? []
        for song in songs { print(song["file"]?.stringValue ?? "") }
        let total = answer["total"]?.intValue ?? songs.count
        if total > offset + songs.count { printError("tonearm: \(total) songs match; --offset and --limit show the others") }
    }
}

struct Find: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The songs whose tags are exactly the values given (case matters), as paths.",
        discussion: tagHelp)
    @OptionGroup var connection: Connection
    @OptionGroup var query: SongQueryOptions

    func run() throws { try query.run("find", connection) }
}

struct Search: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The songs whose tags contain the values given, ignoring case, as paths.",
        discussion: tagHelp)
    @OptionGroup var connection: Connection
    @OptionGroup var query: SongQueryOptions

    func run() throws { try query.run("search", connection) }
}

struct FindAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "findadd",
        abstract: "Append to the queue the songs whose tags are exactly the values given.",
        discussion: "tonearm findadd albumartist \"Miles Davis\" album \"Kind of Blue\". " + tagHelp)
    @OptionGroup var connection: Connection
    @Argument(help: "TAG VALUE pairs.") var filter: [String]

    func run() throws {
        let result = try connection.send("findadd", [("filters", try filters(filter, command: "findadd"))])
        for skipped in result["skipped"]?.arrayValue ?? [] {
            printError("tonearm: skipped \(skipped["path"]?.stringValue ?? "?"): \(skipped["reason"]?.stringValue ?? "")")
        }
        print("added \(result["added"]?.intValue ?? 0), queue \(result["queueCount"]?.intValue ?? 0)")
    }
}

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The library's figures: artists, albums, songs, play time, last scan.")
    @OptionGroup var connection: Connection
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let stats = try connection.send("stats")
        if json {
            print(stats.serialized)
            return
        }
        let playtime = Int(stats["playtime"]?.doubleValue ?? 0)
        print("artists: \(stats["artists"]?.intValue ?? 0)")
        print("albums:  \(stats["albums"]?.intValue ?? 0)")
        print("songs:   \(stats["songs"]?.intValue ?? 0)")
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let days = playtime / 86400
        let clock = "\(two(playtime / 3600 % 24)):\(two(playtime / 60 % 60)):\(two(playtime % 60))"
        print("play time: \(days) days, \(clock)")
        let update = stats["dbUpdate"]?.intValue ?? 0
        if update > 0 {
            var time = time_t(update)
            var parts = tm()
            localtime_r(&time, &parts)
            var text = [CChar](repeating: 0, count: 64)
            strftime(&text, text.count, "%Y-%m-%d %H:%M:%S", &parts)
            print("last scan: \(text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })")
        } else {
            print("last scan: never")
        }
    }
}
