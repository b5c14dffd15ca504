import TonearmDecoding
import TonearmPlayer

#if canImport(Glibc)
import Glibc
#endif

/// A playable audio file: what its tags say, as the player and every client show an item
/// (`TrackMetadata`), and where its cover comes from.
public struct LibraryTrack: Sendable, Equatable {
    /// Canonical absolute path (no `..`, no symbolic links).
    public var path: String
    /// The tags; its `artwork` is set by whoever serves the cover (`artwork` below says where
    /// it is). The duration is nil when the stream's header does not give the length.
    public var metadata: TrackMetadata
    public var artwork: ArtworkSource?

    public init(path: String, metadata: TrackMetadata = TrackMetadata(), artwork: ArtworkSource? = nil) {
        self.path = path
        self.metadata = metadata
        self.artwork = artwork
    }
}

/// A file a directory scan passed over, and why.
public struct SkippedFile: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    /// The cause alone; `description` adds the path.
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}

public struct ScanResult: Sendable, Equatable {
    /// In play order: the paths in the order given, each directory in album order.
    public var tracks: [LibraryTrack]
    /// FLAC files inside the directories that could not be used; never the named files,
    /// which throw instead.
    public var skipped: [SkippedFile]
}

/// Music on disk: turns paths a user names into tracks in album order, confined to the music
/// directory when there is one.
public enum MusicLibrary {
    /// The tracks at `paths`, files or directories.
    ///
    /// - A named file must open in a format Tonearm plays, whatever its name; otherwise this throws.
    /// - A directory is searched recursively for files with a decoder's suffix
    ///   (`Decoders.isAudioName`, any case). Names starting with '.' are passed over, and so is a
    ///   directory already seen (a symbolic-link loop). Audio files that fail to open are listed
    ///   in `skipped`.
    /// - Each directory's own files come in disc, then track number order (a missing disc
    ///   number counts as disc 1; tracks without a number follow the numbered ones of their
    ///   disc), then by name ("2" before "10"); its subdirectories follow, by name, each in the
    ///   same way. So a tree of albums plays album by album, and "CD1", "CD2" in turn.
    /// - With `musicDirectory`, relative paths are taken from it, and every path, once `..`
    ///   and symbolic links are resolved, must lie inside it (`outsideMusicDirectory`). Links
    ///   found inside a directory that lead outside are skipped and reported. Without it,
    ///   relative paths are taken from the working directory.
    public static func tracks(at paths: [String], musicDirectory: String?) throws(LibraryError) -> ScanResult {
        var scan = try LibraryScan(musicDirectory: musicDirectory)
        for path in paths {
            try scan.add(path)
        }
        return ScanResult(tracks: scan.tracks, skipped: scan.skipped)
    }

    /// The canonical path `path` names, checked as `tracks(at:musicDirectory:)` checks it
    /// (exists, and lies inside the music directory), without opening anything.
    public static func resolve(_ path: String, musicDirectory: String?) throws(LibraryError) -> String {
        try LibraryScan(musicDirectory: musicDirectory).resolve(path)
    }

    /// A file's own picture (its front cover, else its first: `embedded`), or the cover file
    /// beside it (`cover.jpg`, `folder.png`…); nil when it has none. `path` is checked as
    /// `tracks(at:musicDirectory:)` checks it.
    public static func picture(of path: String, embedded: Bool, musicDirectory: String?)
        throws(LibraryError) -> (mimeType: String, bytes: [UInt8])? {
        let scan = try LibraryScan(musicDirectory: musicDirectory)
        let resolved = try scan.resolve(path)
        if embedded {
            let decoder: any AudioDecoder
            do {
                decoder = try Decoders.open(path: resolved, keepPictureData: true)
            } catch {
                throw .notPlayable(resolved, cause: decodeCause(error))
            }
            guard let picture = Artwork.displayPicture(decoder.info.pictures), let data = picture.data else { return nil }
            let mimeType = picture.mimeType.isEmpty ? ImageHeader.parse(data)?.mimeType ?? "" : picture.mimeType
            return (mimeType, data)
        }
        let directory = parentDirectory(resolved)
        let names = ((try? FileSystem.entries(directory)) ?? []).map(\.name).filter { !$0.hasPrefix(".") }
        guard let cover = Artwork.coverFile(directory: directory, names: names, musicDirectory: scan.root) else { return nil }
        return (cover.mimeType, try Artwork.bytes(of: cover))
    }

    /// The image bytes of a cover found by a scan. Throws `artworkUnavailable` if the file is
    /// gone or no longer holds the image the scan saw (its id would lie): scan again.
    public static func artworkBytes(_ source: ArtworkSource) throws(LibraryError) -> [UInt8] {
        try Artwork.bytes(of: source)
    }
}

/// One call of `MusicLibrary.tracks`: the confinement rules and what has been found so far.
struct LibraryScan {
    /// The canonical music directory, when confined.
    let root: String?
    /// The music directory as configured, for messages and for paths that do not exist.
    let configuredRoot: String?
    /// The configured music directory made absolute, `..` resolved by text only.
    let lexicalRoot: String?
    /// Where relative paths start.
    let base: String
    private(set) var tracks: [LibraryTrack] = []
    private(set) var skipped: [SkippedFile] = []
    /// Cover files by directory, found once per directory.
    private var covers: [String: ArtworkSource?] = [:]

    init(musicDirectory: String?) throws(LibraryError) {
        if let musicDirectory {
            let real: String
            do throws(SystemError) {
                real = try FileSystem.realPath(musicDirectory)
                guard try FileSystem.status(real).kind == .directory else { throw SystemError(ENOTDIR) }
            } catch {
                throw .musicDirectoryUnavailable(musicDirectory, cause: error.text)
            }
            root = real
            configuredRoot = musicDirectory
            base = real
            let cwd = (try? FileSystem.currentDirectory()) ?? "/"
            lexicalRoot = lexicallyNormalized(musicDirectory.hasPrefix("/") ? musicDirectory : joinPath(cwd, musicDirectory))
        } else {
            root = nil
            configuredRoot = nil
            lexicalRoot = nil
            do throws(SystemError) {
                base = try FileSystem.currentDirectory()
            } catch {
                throw .cannotAccess(".", cause: "cannot read the working directory: \(error.text)")
            }
        }
    }

    func resolve(_ argument: String) throws(LibraryError) -> String {
        guard !argument.isEmpty else { throw .notFound(argument) }
        let absolute = argument.hasPrefix("/") ? argument : joinPath(base, argument)
        // A path that lies outside as written is refused before the file system is asked, so a
        // client cannot probe for files beyond the music directory (missing, unreadable, or
        // where a link leads all get the same answer).
        if let root, let configuredRoot, let lexicalRoot {
            let lexical = lexicallyNormalized(absolute)
            if !isInside(lexical, root) && !isInside(lexical, lexicalRoot) {
                throw .outsideMusicDirectory(argument, musicDirectory: configuredRoot)
            }
        }
        let real: String
        do throws(SystemError) {
            real = try FileSystem.realPath(absolute)
        } catch where error.isMissing {
            throw .notFound(argument)
        } catch {
            throw .cannotAccess(argument, cause: error.text)
        }
        if let root, let configuredRoot, !isInside(real, root) {
            throw .outsideMusicDirectory(argument, musicDirectory: configuredRoot)
        }
        return real
    }

    mutating func add(_ argument: String) throws(LibraryError) {
        let path = try resolve(argument)
        let status: FileStatus
        do throws(SystemError) {
            status = try FileSystem.status(path)
        } catch {
            throw .cannotAccess(argument, cause: error.text)
        }
        switch status.kind {
        case .regular:
            do throws(DecodeError) {
                tracks.append(try openTrack(path))
            } catch {
                throw .notPlayable(argument, cause: decodeCause(error))
            }
        case .directory:
            var visited: Set<FileIdentity> = []
            try walk(path, identity: status.identity, visited: &visited, named: argument)
        case .other:
            throw .notPlayable(argument, cause: "not a regular file or directory")
        }
    }

    /// Adds the audio files of `directory` (canonical) in album order, then its subdirectories.
    /// `named` is set for the directory the caller named: a failure to read it throws.
    private mutating func walk(_ directory: String, identity: FileIdentity, visited: inout Set<FileIdentity>,
                               named: String? = nil) throws(LibraryError) {
        guard visited.insert(identity).inserted else { return }
        let listing: [DirectoryEntry]
        do throws(SystemError) {
            listing = try FileSystem.entries(directory)
        } catch {
            if let named { throw .cannotAccess(named, cause: error.text) }
            skipped.append(SkippedFile(path: directory, reason: "cannot read the directory: \(error.text)"))
            return
        }

        var files: [(name: String, path: String)] = []
        var subdirectories: [(name: String, path: String, identity: FileIdentity)] = []
        var visibleNames: [String] = []
        for entry in listing where !entry.name.hasPrefix(".") {
            visibleNames.append(entry.name)
            let isAudioName = Decoders.isAudioName(entry.name)
            var path = joinPath(directory, entry.name)
            switch entry.kind {
            case .regular:
                if isAudioName { files.append((entry.name, path)) }
                continue
            case .other:
                continue
            case .symbolicLink, .unknown:
                // Unknown (a file system without d_type) may be a link too: resolve it.
                do throws(SystemError) {
                    path = try FileSystem.realPath(path)
                } catch {
                    if isAudioName { skipped.append(SkippedFile(path: path, reason: "broken symbolic link (\(error.text))")) }
                    continue
                }
            case .directory:
                break
            }
            guard let status = try? FileSystem.status(path) else { continue }
            guard status.kind == .directory || (status.kind == .regular && isAudioName) else { continue }
            if let root, !isInside(path, root) {
                skipped.append(SkippedFile(path: joinPath(directory, entry.name),
                                           reason: "links to \(path), outside the music directory"))
                continue
            }
            if status.kind == .directory {
                subdirectories.append((entry.name, path, status.identity))
            } else {
                files.append((entry.name, path))
            }
        }

        var found: [(name: String, track: LibraryTrack)] = []
        for file in files {
            do throws(DecodeError) {
                found.append((file.name, try openTrack(file.path, directoryNames: (directory, visibleNames))))
            } catch {
                skipped.append(SkippedFile(path: file.path, reason: decodeCause(error)))
            }
        }
        found.sort { Self.albumOrder($0.track, $0.name, $1.track, $1.name) }
        tracks += found.map(\.track)

        subdirectories.sort { naturalOrder($0.name, $1.name) }
        for subdirectory in subdirectories {
            try walk(subdirectory.path, identity: subdirectory.identity, visited: &visited)
        }
    }

    /// Opens an audio file (canonical path) and reads its tags and cover. `directoryNames` saves
    /// listing the directory again when the caller has just listed it.
    private mutating func openTrack(_ path: String, directoryNames: (String, [String])? = nil) throws(DecodeError) -> LibraryTrack {
        let artwork: ArtworkSource?
        let info: TrackInfo
        do {
            // The picture bytes are read to fingerprint the cover, then dropped with the decoder.
            let decoder = try Decoders.open(path: path, keepPictureData: true)
            info = decoder.info
            artwork = Artwork.embedded(path: path, pictures: info.pictures)
        }
        return LibraryTrack(
            path: path,
            metadata: TrackMetadata(title: info.title, artist: info.artist, album: info.album, albumArtist: info.albumArtist,
                                    trackNumber: info.trackNumber, discNumber: info.discNumber, genre: info.genre,
                                    duration: info.duration),
            artwork: artwork ?? coverFile(forTrackAt: path, directoryNames: directoryNames))
    }

    private mutating func coverFile(forTrackAt path: String, directoryNames: (String, [String])?) -> ArtworkSource? {
        let directory = parentDirectory(path)
        if let cached = covers[directory] { return cached }
        let names: [String]
        if let directoryNames, directoryNames.0 == directory {
            names = directoryNames.1
        } else {
            names = ((try? FileSystem.entries(directory)) ?? []).map(\.name).filter { !$0.hasPrefix(".") }
        }
        let cover = Artwork.coverFile(directory: directory, names: names, musicDirectory: root)
        covers[directory] = cover
        return cover
    }

    /// Disc, then track number (numbered first), then name.
    static func albumOrder(_ a: LibraryTrack, _ aName: String, _ b: LibraryTrack, _ bName: String) -> Bool {
        let aDisc = a.metadata.discNumber ?? 1, bDisc = b.metadata.discNumber ?? 1
        if aDisc != bDisc { return aDisc < bDisc }
        switch (a.metadata.trackNumber, b.metadata.trackNumber) {
        case let (x?, y?) where x != y: return x < y
        case (.some, nil): return true
        case (nil, .some): return false
        default: return naturalOrder(aName, bName)
        }
    }
}

/// "Track 2" before "Track 10": runs of digits compare by value, other bytes one by one with
/// ASCII letters folded to lower case; names equal that way fall back to plain byte order.
func naturalOrder(_ a: String, _ b: String) -> Bool {
    let x = Array(a.utf8), y = Array(b.utf8)
    func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    func folded(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c | 0x20 : c }
    var i = 0, j = 0
    while i < x.count && j < y.count {
        if isDigit(x[i]) && isDigit(y[j]) {
            var iEnd = i, jEnd = j
            while iEnd < x.count && isDigit(x[iEnd]) { iEnd += 1 }
            while jEnd < y.count && isDigit(y[jEnd]) { jEnd += 1 }
            // Leading zeros do not change the value; keep at least one digit.
            var iStart = i, jStart = j
            while iStart < iEnd - 1 && x[iStart] == 0x30 { iStart += 1 }
            while jStart < jEnd - 1 && y[jStart] == 0x30 { jStart += 1 }
            if iEnd - iStart != jEnd - jStart { return iEnd - iStart < jEnd - jStart }
            if !x[iStart..<iEnd].elementsEqual(y[jStart..<jEnd]) {
                return x[iStart..<iEnd].lexicographicallyPrecedes(y[jStart..<jEnd])
            }
            i = iEnd
            j = jEnd
        } else {
            let c = folded(x[i]), d = folded(y[j])
            if c != d { return c < d }
            i += 1
            j += 1
        }
    }
    if x.count - i != y.count - j { return x.count - i < y.count - j }
    return x.lexicographicallyPrecedes(y)
}
