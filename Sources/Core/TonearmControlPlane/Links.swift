import TonearmPlayer
import TonearmSession

/// A client that speaks for the program behind the sessions of one name — an MPRIS player
/// linked to an ALSA program's sessions by a profile's `[[link]]` — publishes what that program
/// plays and takes the remote commands meant for it. While a session of that name owns Now
/// Playing, what the client published is Tonearm's Now Playing everywhere (`ControlState`'s
/// `transport`, `nowPlaying` and `enabledCommands`), and every remote command, whatever its
/// source, goes to that client as `Notice.remoteCommand`: the seeds' MPNowPlayingSession across
/// processes. A session of a name nobody speaks for, or whose program is not there, is as it
/// always was.
public enum LinkCommand: Sendable, Equatable {
    /// Claims the sessions named `sessionName` for the sending client, or says again what its
    /// program plays: each publication replaces the one before. A name another client claims
    /// is refused (`exists`).
    case publish(LinkedPlayer)
    /// Gives the claim up. A client's claims also end when it leaves.
    case release(sessionName: String)
}

/// What a client says of the program it speaks for.
public struct LinkedPlayer: Sendable, Equatable {
    /// The sessions' name, as they were opened (`SessionCommand.open`'s `name`).
    public var sessionName: String
    /// Who is spoken for, for `status` and `doctor`: "org.mpris.MediaPlayer2.ShairportSync on
    /// the system bus".
    public var player: String
    /// What it plays; nil while the program is not there (its sessions are then unlinked).
    public var playing: LinkedNowPlaying?

    public init(sessionName: String, player: String, playing: LinkedNowPlaying?) {
        self.sessionName = sessionName
        self.player = player
        self.playing = playing
    }
}

/// A linked program's transport, Now Playing dictionary and command center.
public struct LinkedNowPlaying: Sendable, Equatable {
    public var transport: TransportState
    /// `elapsed` at `timestamp` on the daemon's monotonic clock, moving at `rate`, as the
    /// player's own; its `artwork` is ignored: the daemon names `artwork` and serves it.
    public var info: NowPlayingInfo
    /// The commands the program takes now; those it does not are refused as `disabled`.
    public var enabledCommands: [RemoteCommand: Bool]
    public var artwork: LinkedArtwork?
    /// Why this publication was made: `trackChanged` when the item changed (a full
    /// replacement), `seek`, `paused`, `resumed`, `metadataChanged`…
    public var reason: PublicationReason

    public init(transport: TransportState, info: NowPlayingInfo, enabledCommands: [RemoteCommand: Bool], artwork: LinkedArtwork? = nil,
                reason: PublicationReason) {
        self.transport = transport
        self.info = info
        self.enabledCommands = enabledCommands
        self.artwork = artwork
        self.reason = reason
    }
}

/// A picture a linked program shows, JPEG or PNG, as read by its client.
public struct LinkedArtwork: Sendable, Equatable {
    public var mimeType: String
    public var width: Int
    public var height: Int
    public var bytes: [UInt8]

    public init(mimeType: String, width: Int, height: Int, bytes: [UInt8]) {
        self.mimeType = mimeType
        self.width = width
        self.height = height
        self.bytes = bytes
    }
}

/// A link as clients see it.
public struct LinkState: Sendable, Equatable {
    public var sessionName: String
    public var player: String
    /// The client that speaks for it, and to which its remote commands go.
    public var client: ClientID
    /// Whether the program is there (the client has published what it plays).
    public var present: Bool

    public init(sessionName: String, player: String, client: ClientID, present: Bool) {
        self.sessionName = sessionName
        self.player = player
        self.client = client
        self.present = present
    }
}
