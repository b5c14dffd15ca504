import TonearmAudio
import TonearmPlayer
import TonearmSession

/// Every command a client can send, whatever it is: the JSON-lines socket, a button, a knob, a
/// steering-wheel key, a serial display, and next MPD, MPRIS and the web page. One vocabulary:
/// a source turns what it receives into a `Command`, sends it through `ControlPlane.send`, and
/// gets a `CommandResult`.
public enum Command: Sendable, Equatable {
    /// A remote command (the seeds' command center). It goes to the Now Playing owner: the
    /// built-in player, or a client's session, whose client is told (`Notice.remoteCommand`) —
    /// or the client that speaks for that session's program (`link`).
    /// `changeRepeatMode` without a mode steps off → all → one; `changeShuffleMode` without
    /// `shuffle` toggles: a button has no menu.
    case remote(CommandRequest)
    case volume(VolumeChange)
    case mute(MuteChange)
    /// The ignition-sense line: off pauses and saves, on plays again what off paused.
    case ignition(on: Bool)
    case queue(QueueEdit)
    /// The picture of an artwork id, as `Artwork.id` names it: as it is, or (`fitting`) as a
    /// JPEG scaled to fit that many pixels square, never enlarged — what the web page, MPRIS
    /// and a display show, made once per size and kept while the daemon runs.
    case artwork(id: String, fitting: Int? = nil)
    /// A file's own picture (`embedded`), or the cover file beside it: MPD's `readpicture` and
    /// `albumart`. The payload is `.artwork` (its id empty), or `.none` when there is none.
    case picture(path: String, embedded: Bool)
    /// Scans the music directory, or a directory or file in it, for what changed.
    case updateLibrary(path: String?)
    /// An audio session of the sending client (its `CommandSource.client`).
    case session(SessionCommand)
    /// The sending client speaks for the program behind the sessions of a name: their Now
    /// Playing and their remote commands (`LinkCommand`).
    case link(LinkCommand)
    /// How the player goes through the queue and how loud each item plays, beyond the command
    /// center's repeat and shuffle.
    case playerMode(PlayerModeChange)
    /// Changes the stored playlists (the `.m3u` files of the playlist directory).
    case playlist(PlaylistEdit)
    /// Turns the player's output (its ALSA device) off, closing the device so other programs
    /// may use it, or on again; MPD's output 0.
    case output(enabled: Bool)
}

/// Stored playlist edits. Entries are paths relative to the music directory (or URLs), as
/// the playlist files hold them; positions are 0-based.
public enum PlaylistEdit: Sendable, Equatable {
    /// The queue, as a new playlist (`replacing` false: the name must be free).
    case saveQueue(name: String, replacing: Bool)
    /// Adds at `position` (the end when nil), making the playlist when there is none of that
    /// name.
    case add(name: String, entries: [String], at: Int?)
    case clear(name: String)
    case delete(name: String, positions: Range<Int>)
    case move(name: String, from: Int, to: Int)
    case rename(name: String, to: String)
    case remove(name: String)
}

public enum PlayerModeChange: Sendable, Equatable {
    /// Stop (or, with repeat, repeat) after the current item.
    case single(SingleMode)
    /// Items leave the queue once played.
    case consume(Bool)
    /// ReplayGain: what is given changes, the rest stays.
    case replayGain(mode: ReplayGainMode?, preamp: Double?, missingPreamp: Double?)
}

public enum VolumeChange: Sendable, Equatable {
    /// Percent, 0…100.
    case set(Double)
    /// ± percent, clamped to 0…100.
    case step(Double)
}

public enum MuteChange: Sendable, Equatable {
    case on, off, toggle
}

/// Queue edits. Items are named by their stable id (`QueueItem.id`), positions are 0-based.
public enum QueueEdit: Sendable, Equatable {
    /// Files or directories (in album order), at the end or before `position`.
    case add(paths: [String], at: Int?)
    case remove(itemIDs: [Int])
    case move(itemID: Int, to: Int)
    case clear
    /// Plays the item from its start, whatever played before (MPD's `playid`).
    case play(itemID: Int)
    /// Puts the positions in `range` (the whole queue when nil) in random order; the current
    /// item, when in it, goes first (MPD's `shuffle`).
    case shuffle(range: Range<Int>?)
    /// 0…255: with shuffle on, higher priorities play first (MPD's `prio`, `prioid`).
    case priority(Int, itemIDs: [Int])
    /// Plays only part of the item from its next play on; nil: all of it (MPD's `rangeid`).
    case range(itemID: Int, PlayRange?)
}

/// What a client does with its own audio sessions (the AVAudioSession calls).
public enum SessionCommand: Sendable, Equatable {
    /// `name` is how logs, reports and `[[link]]` entries know it (an ALSA program's name).
    case open(SessionSetup, remoteCommands: Bool, name: String? = nil)
    case setCategory(SessionID, SessionSetup)
    case activate(SessionID)
    case deactivate(SessionID, notifyOthers: Bool)
    case close(SessionID)
    /// An audio file into the session.
    case playFile(SessionID, path: String)
    /// Raw PCM into the session, then `write`s and `end`.
    case playPCM(SessionID, StreamFormat)
    /// Raw PCM bytes in the stream's format (signed little-endian, interleaved), whole frames.
    case write(SessionID, bytes: [UInt8])
    case end(SessionID)
    case stop(SessionID)
    /// A program's audio into the session, as it comes: the result carries the inlet it is
    /// written to (`Payload.inlet`), which takes at most `backlogFrames` ahead of the stream.
    /// Activates the session, as playing does; replaces a stream it had.
    case openInlet(SessionID, StreamFormat, encoding: DeviceSampleFormat, backlogFrames: Int)
    /// Holds the session's stream where it is (a program's pause), or plays it on; an
    /// interruption holds it all the same.
    case pauseStream(SessionID, Bool)
}

/// A session's category, mode and options, as a client asks for them.
public struct SessionSetup: Sendable, Equatable {
    public var category: SessionCategory
    public var mode: SessionMode
    public var options: SessionOptions

    public init(category: SessionCategory = .soloAmbient, mode: SessionMode = .default, options: SessionOptions = []) {
        self.category = category
        self.mode = mode
        self.options = options
    }
}

/// Who sent a command: for logs, and for session ownership.
public struct CommandSource: Sendable, Equatable, CustomStringConvertible {
    /// "socket", "button next (gpiochip0 line 17)", "input /dev/input/event3", "display".
    public var name: String
    /// The client whose sessions `Command.session` acts on; nil for a source that has none
    /// (a button).
    public var client: ClientID?

    public init(_ name: String, client: ClientID? = nil) {
        self.name = name
        self.client = client
    }

    public var description: String { name }
}

/// The answer to a command: the command center's status, and what the command produced.
public struct CommandResult: Sendable, Equatable {
    public var status: CommandStatus
    /// A remote command that went to a client's session (the Now Playing owner).
    public var forwardedTo: SessionID?
    public var payload: Payload
    /// Why a command that could not be carried out failed, for the client to show.
    public var failure: CommandFailure?

    public init(status: CommandStatus, forwardedTo: SessionID? = nil, payload: Payload = .none, failure: CommandFailure? = nil) {
        self.status = status
        self.forwardedTo = forwardedTo
        self.payload = payload
        self.failure = failure
    }

    public static func failed(_ code: CommandFailure.Code, _ message: String) -> CommandResult {
        CommandResult(status: .commandFailed, failure: CommandFailure(code, message))
    }

    public enum Payload: Sendable, Equatable {
        case none
        /// Queue edits: what the queue holds after.
        case queueCount(Int)
        /// `add`: how many were added, what was skipped and why, the new queue length.
        case added(count: Int, skipped: [SkippedPath], queueCount: Int)
        case muted(Bool)
        case artwork(id: String, mimeType: String, bytes: [UInt8])
        /// A session command: the session after it.
        case session(SessionReport)
        case sessionClosed(SessionID)
        /// `write`: frames taken, and frames waiting to be played.
        case accepted(frames: Int, backlogFrames: Int)
        /// `openInlet`: where the program's frames go.
        case inlet(InletReference)
        /// `updateLibrary`: the scan's number (see `ScanProgress.finishedJob`).
        case scanQueued(job: Int)
    }
}

public struct SkippedPath: Sendable, Equatable {
    public var path: String
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }
}

/// A command that failed, with a code a protocol can map and a message that names what failed.
public struct CommandFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// An argument is missing or out of range, or the rules refuse it.
        case badArgument
        case notFound
        /// What was to be made is there already (a playlist of that name).
        case exists
        /// Outside the music directory.
        case forbidden
        case notPlayable
        case unavailable
        /// Every stream slot plays, or a stream's backlog is full: try again shortly.
        case busy
        /// The session has no raw PCM stream open.
        case notStreaming
    }

    public var code: Code
    public var message: String
    /// Which argument was bad and how, when the command parser found it (`Command.parse`).
    public var argument: ArgumentProblem?

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
