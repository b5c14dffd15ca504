/// Why a path cannot be played, a cover cannot be read or the player state cannot be kept.
/// The description is one line that names the path and the cause.
public enum LibraryError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Nothing exists at the path (as the caller gave it).
    case notFound(String)
    /// The path, as given, lies or resolves (through `..` and symbolic links) outside
    /// `musicDirectory`. Where it resolves to is not said: a client learns nothing of the files
    /// beyond the music directory.
    case outsideMusicDirectory(String, musicDirectory: String)
    /// The music directory itself is missing or unusable.
    case musicDirectoryUnavailable(String, cause: String)
    /// An explicitly named file that is not a playable audio file (or not a file at all).
    case notPlayable(String, cause: String)
    /// A system call on the path failed for another reason (permissions, I/O).
    case cannotAccess(String, cause: String)
    /// A cover cannot be loaded, or no longer matches what the scan saw.
    case artworkUnavailable(String, cause: String)
    /// The state directory cannot be created or used.
    case stateDirectoryUnavailable(String, cause: String)
    /// The player state cannot be written (or the record is not valid).
    case cannotSaveState(String, cause: String)
    /// The library's database cannot be opened or made.
    case databaseUnavailable(String, cause: String)
    /// No stored playlist has the name.
    case noSuchPlaylist(String)
    /// A stored playlist has the name already (a save or rename must not overwrite it).
    case playlistExists(String)
    /// A name that cannot be a playlist's file name, and why.
    case badPlaylistName(String, why: String)
    /// A position outside the playlist.
    case badPlaylistPosition(String, position: Int, count: Int)
    /// The playlist directory is missing, not configured, or the file cannot be written.
    case playlistsUnavailable(String, cause: String)

    public var description: String {
        switch self {
        case .notFound(let path):
            return "'\(path)': no such file or directory"
        case .outsideMusicDirectory(let path, let root):
            return "'\(path)' is outside the music directory \(root)"
        case .musicDirectoryUnavailable(let path, let cause):
            return "music directory '\(path)' is unusable: \(cause)"
        case .notPlayable(let path, let cause):
            return "'\(path)' cannot be played: \(cause)"
        case .cannotAccess(let path, let cause):
            return "'\(path)': \(cause)"
        case .artworkUnavailable(let path, let cause):
            return "cover from '\(path)' is unavailable: \(cause)"
        case .stateDirectoryUnavailable(let path, let cause):
            return "state directory '\(path)' is unusable: \(cause)"
        case .cannotSaveState(let path, let cause):
            return "cannot save the player state to '\(path)': \(cause)"
        case .databaseUnavailable(let path, let cause):
            return "library database '\(path)' is unusable: \(cause)"
        case .noSuchPlaylist(let name):
            return "no stored playlist is named '\(name)'"
        case .playlistExists(let name):
            return "a stored playlist is named '\(name)' already"
        case .badPlaylistName(let name, let why):
            return "'\(name)' cannot name a playlist: \(why)"
        case .badPlaylistPosition(let name, let position, let count):
            return "playlist '\(name)' has no position \(position) (it holds \(count))"
        case .playlistsUnavailable(let path, let cause):
            return "stored playlists in '\(path)' are unavailable: \(cause)"
        }
    }
}
