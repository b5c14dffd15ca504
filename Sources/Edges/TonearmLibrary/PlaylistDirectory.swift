#if canImport(Glibc)
import Glibc
#endif
import TonearmControlPlane

/// The stored playlists: `NAME.m3u` files in one directory, one entry a line (a path relative to
/// the music directory, an absolute path or a URL), as mpd writes them. They are read when
/// asked for, so a file copied in by hand is there at once. Every change replaces the whole
/// file atomically (`FileSystem.replace`): a power cut leaves the old playlist or the new one.
public struct PlaylistDirectory: Sendable {
    public let path: String
    /// A playlist file larger than this is not read.
    static let largestFile = 4 << 20

    public init(path: String) { self.path = path }

    /// Every playlist, by name. Hidden files and names that are not `.m3u` are left out.
    public func all() throws(LibraryError) -> [StoredPlaylist] {
        let listing: [DirectoryEntry]
        do throws(SystemError) {
            listing = try FileSystem.entries(path)
        } catch {
            throw .playlistsUnavailable(path, cause: error.text)
        }
        var playlists: [StoredPlaylist] = []
        for entry in listing where entry.name.lowercased().hasSuffix(".m3u") && !entry.name.hasPrefix(".") {
            if let playlist = try? read(String(entry.name.dropLast(4))) { playlists.append(playlist) }
        }
        return playlists.sorted { $0.name < $1.name }
    }

    /// The playlist `name`; `noSuchPlaylist` when there is none.
    public func read(_ name: String) throws(LibraryError) -> StoredPlaylist {
        try Self.check(name)
        let file = path + "/" + name + ".m3u"
        let status: FileStatus
        do throws(SystemError) {
            status = try FileSystem.status(file)
        } catch {
            if error.isMissing { throw .noSuchPlaylist(name) }
            throw .playlistsUnavailable(file, cause: error.text)
        }
        guard status.kind == .regular, status.size <= Self.largestFile else {
            throw .playlistsUnavailable(file, cause: status.kind == .regular ? "larger than 4 MiB" : "not a file")
        }
        do throws(SystemError) {
            let fd = try FileSystem.openForReading(file)
            defer { close(fd) }
            let bytes = try FileSystem.read(fd, offset: 0, count: status.size)
            return StoredPlaylist(name: name, modified: status.modifiedSeconds, entries: Self.entries(bytes))
        } catch {
            throw .playlistsUnavailable(file, cause: error.text)
        }
    }

    /// Writes `entries` as the playlist `name`, replacing it. `replacing` false: a playlist
    /// of that name must not exist yet.
    public func write(_ name: String, _ entries: [String], replacing: Bool = true) throws(LibraryError) {
        try Self.check(name)
        if !replacing, exists(name) { throw .playlistExists(name) }
        for entry in entries where entry.contains("\n") || entry.contains("\r") {
            throw .badPlaylistName(entry, why: "an entry must be one line")
        }
        let text = entries.map { $0 + "\n" }.joined()
        try withDirectory { fd throws(SystemError) in
            try FileSystem.replace(name + ".m3u", in: fd, temporary: "." + name + ".m3u.tmp", with: Array(text.utf8), mode: 0o644)
        }
    }

    /// Changes the entries of an existing playlist.
    public func edit(_ name: String, _ change: (inout [String]) throws(LibraryError) -> Void) throws(LibraryError) {
        var entries = try read(name).entries
        try change(&entries)
        try write(name, entries)
    }

    public func remove(_ name: String) throws(LibraryError) {
        try Self.check(name)
        guard exists(name) else { throw .noSuchPlaylist(name) }
        try withDirectory { fd throws(SystemError) in
            guard unlinkat(fd, name + ".m3u", 0) == 0 else { throw SystemError() }
            guard fsync(fd) == 0 else { throw SystemError() }
        }
    }

    /// Renames `name` to `newName`, which must be free.
    public func rename(_ name: String, to newName: String) throws(LibraryError) {
        try Self.check(name)
        try Self.check(newName)
        guard exists(name) else { throw .noSuchPlaylist(name) }
        guard !exists(newName) else { throw .playlistExists(newName) }
        try withDirectory { fd throws(SystemError) in
            guard renameat(fd, name + ".m3u", fd, newName + ".m3u") == 0 else { throw SystemError() }
            guard fsync(fd) == 0 else { throw SystemError() }
        }
    }

    func exists(_ name: String) -> Bool {
        (try? FileSystem.status(path + "/" + name + ".m3u"))?.kind == .regular
    }

    /// A name is a file name: not empty, no '/', no line break, not hidden (a hidden file would
    /// not be listed), at most 250 bytes (the ".m3u" must fit).
    static func check(_ name: String) throws(LibraryError) {
        if name.isEmpty { throw .badPlaylistName(name, why: "it is empty") }
        if name.contains("/") { throw .badPlaylistName(name, why: "it has a '/'") }
        if name.contains("\n") || name.contains("\r") { throw .badPlaylistName(name, why: "it has a line break") }
        if name.hasPrefix(".") { throw .badPlaylistName(name, why: "it starts with '.', which would hide it") }
        if name.utf8.count > 250 { throw .badPlaylistName(name, why: "it is longer than 250 bytes") }
    }

    /// The entries of an m3u file: its lines, blanks trimmed, without comments and empty lines.
    static func entries(_ bytes: [UInt8]) -> [String] {
        String(decoding: bytes, as: UTF8.self)
            .split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            .map { line in String(line.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// Whether `path` names a playlist file `add` reads the entries of: `.m3u`, `.m3u8`, `.pls`.
    public static func isPlaylistFile(_ path: String) -> Bool {
        let lower = path.lowercased()
        return !lower.contains("://") && (lower.hasSuffix(".m3u") || lower.hasSuffix(".m3u8") || lower.hasSuffix(".pls"))
    }

    /// The entries of the playlist file at `path` (canonical, checked by the caller), in order:
    /// URLs as they are, relative paths made absolute from the playlist's directory.
    public static func entries(ofFile path: String) throws(LibraryError) -> [PlaylistEntry] {
        let bytes: [UInt8]
        let status: FileStatus
        do throws(SystemError) {
            status = try FileSystem.status(path)
        } catch {
            throw .cannotAccess(path, cause: error.text)
        }
        guard status.kind == .regular, status.size <= largestFile else {
            throw .notPlayable(path, cause: status.kind == .regular ? "a playlist larger than 4 MiB" : "not a file")
        }
        do throws(SystemError) {
            let fd = try FileSystem.openForReading(path)
            defer { close(fd) }
            bytes = try FileSystem.read(fd, offset: 0, count: status.size)
        } catch {
            throw .cannotAccess(path, cause: error.text)
        }
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let parsed = path.lowercased().hasSuffix(".pls") ? plsEntries(bytes) : m3uEntries(bytes)
        return parsed.map { entry in
            var entry = entry
            if !entry.location.hasPrefix("/") && !entry.location.contains("://") { entry.location = directory + "/" + entry.location }
            return entry
        }
    }

    /// An m3u or extended m3u file's entries: each line that is not a comment, with the title
    /// of the `#EXTINF:length,Title` line before it.
    static func m3uEntries(_ bytes: [UInt8]) -> [PlaylistEntry] {
        var result: [PlaylistEntry] = []
        var title: String?
        for line in lines(bytes) {
            if line.hasPrefix("#EXTINF:") {
                let info = line.dropFirst("#EXTINF:".count)
                title = info.firstIndex(of: ",").map { String(info[info.index(after: $0)...]).trimmed }.flatMap { $0.isEmpty ? nil : $0 }
            } else if !line.hasPrefix("#") {
                result.append(PlaylistEntry(location: line, title: title))
                title = nil
            }
        }
        return result
    }

    /// A `.pls` file's entries: `FileN=` in the order of N, with `TitleN=`.
    static func plsEntries(_ bytes: [UInt8]) -> [PlaylistEntry] {
        var files: [Int: String] = [:]
        var titles: [Int: String] = [:]
        for line in lines(bytes) {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals]).trimmed.lowercased()
            let value = String(line[line.index(after: equals)...]).trimmed
            if key.hasPrefix("file"), let n = Int(key.dropFirst(4)), !value.isEmpty { files[n] = value }
            if key.hasPrefix("title"), let n = Int(key.dropFirst(5)), !value.isEmpty { titles[n] = value }
        }
        return files.keys.sorted().map { PlaylistEntry(location: files[$0]!, title: titles[$0]) }
    }

    private static func lines(_ bytes: [UInt8]) -> [String] {
        // A UTF-8 byte order mark is not part of the first line.
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        return String(decoding: text, as: UTF8.self)
            .split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            .map { String($0).trimmed }
            .filter { !$0.isEmpty }
    }

    private func withDirectory(_ body: (Int32) throws(SystemError) -> Void) throws(LibraryError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .playlistsUnavailable(path, cause: SystemError().text) }
        defer { close(fd) }
        do throws(SystemError) {
            try body(fd)
        } catch {
            throw .playlistsUnavailable(path, cause: error.text)
        }
    }
}

/// One entry of a playlist file: a path or URL, and the title the playlist gives it.
public struct PlaylistEntry: Sendable, Equatable {
    public var location: String
    public var title: String?

    public init(location: String, title: String? = nil) {
        self.location = location
        self.title = title
    }
}

extension String {
    /// Without leading and trailing blanks.
    fileprivate var trimmed: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
