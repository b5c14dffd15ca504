import TonearmControlPlane
import TonearmDBus
import TonearmPlayer

/// MPRIS 2.2's properties, from the control plane's published state: pure, so every mapping is
/// tested without a bus.
enum MPRISProperties {
    static let objectPath = "/org/mpris/MediaPlayer2"
    static let root = "org.mpris.MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    /// An item's `mpris:trackid`: from its stable queue id.
    static let trackPrefix = "/org/tonearm/track/"
    static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"

    static func rootProperties() -> [(String, DBusValue)] {
        [
            ("CanQuit", .boolean(false)), ("CanRaise", .boolean(false)), ("HasTrackList", .boolean(false)),
            ("Identity", .string("Tonearm")), ("DesktopEntry", .string("tonearm")),
            ("SupportedUriSchemes", .array(element: "s", [.string("file")])),
            ("SupportedMimeTypes", .array(element: "s", [.string("audio/flac")])),
        ]
    }

    /// Every Player property but `Position`, which is computed when read and never signalled.
    static func playerProperties(_ state: ControlState) -> [(String, DBusValue)] {
        let enabled = { (command: RemoteCommand) in state.enabledCommands[command] ?? false }
        return [
            ("PlaybackStatus", .string(playbackStatus(state))),
            ("LoopStatus", .string(loopStatus(state.repeatMode))),
            ("Rate", .double(1)), ("MinimumRate", .double(1)), ("MaximumRate", .double(1)),
            ("Shuffle", .boolean(state.shuffle)),
            ("Volume", .double(state.volume / 100)),
            ("Metadata", .dictionary(metadata(state))),
            ("CanGoNext", .boolean(enabled(.nextTrack))),
            ("CanGoPrevious", .boolean(enabled(.previousTrack))),
            ("CanPlay", .boolean(enabled(.play))),
            ("CanPause", .boolean(enabled(.pause))),
            ("CanSeek", .boolean(enabled(.changePlaybackPosition))),
            ("CanControl", .boolean(true)),
        ]
    }

    /// Playing only while it is heard: an interrupted or stalled player is Paused, as its rate is 0.
    static func playbackStatus(_ state: ControlState) -> String {
        switch state.transport {
        case .stopped: "Stopped"
        case .paused: "Paused"
        case .playing: state.nowPlaying.rate == 0 ? "Paused" : "Playing"
        }
    }

    static func loopStatus(_ mode: RepeatMode) -> String {
        switch mode {
        case .off: "None"
        case .one: "Track"
        case .all: "Playlist"
        }
    }

    static func repeatMode(_ loopStatus: String) -> RepeatMode? {
        switch loopStatus {
        case "None": .off
        case "Track": .one
        case "Playlist": .all
        default: nil
        }
    }

    static func trackID(_ state: ControlState) -> String {
        state.queue.currentItemID.map { trackPrefix + String($0) } ?? noTrack
    }

    static func metadata(_ state: ControlState) -> [(String, DBusValue)] {
        guard let id = state.queue.currentItemID, let item = state.queue.items.first(where: { $0.id == id }) else {
            return [("mpris:trackid", .objectPath(noTrack))]
        }
        let info = item.metadata
        var out: [(String, DBusValue)] = [("mpris:trackid", .objectPath(trackID(state)))]
        if let duration = info.duration { out.append(("mpris:length", .int64(Int64((duration * 1_000_000).rounded())))) }
        if let title = info.title { out.append(("xesam:title", .string(title))) }
        if let artist = info.artist { out.append(("xesam:artist", .array(element: "s", [.string(artist)]))) }
        if let album = info.album { out.append(("xesam:album", .string(album))) }
        if let albumArtist = info.albumArtist { out.append(("xesam:albumArtist", .array(element: "s", [.string(albumArtist)]))) }
        if let track = info.trackNumber { out.append(("xesam:trackNumber", .int32(Int32(clamping: track)))) }
        if let disc = info.discNumber { out.append(("xesam:discNumber", .int32(Int32(clamping: disc)))) }
        out.append(("xesam:url", .string("file://" + percentEncoded(item.path))))
        return out
    }

    /// Position in µs, extrapolated to `now` from the last publication.
    static func position(_ state: ControlState, now: Double) -> Int64 {
        Int64((state.nowPlaying.elapsed(at: now) * 1_000_000).rounded())
    }

    /// The properties whose values differ between two sets, in `new`'s order.
    static func changed(from old: [(String, DBusValue)], to new: [(String, DBusValue)]) -> [(String, DBusValue)] {
        new.filter { name, value in !old.contains { $0.0 == name && $0.1 == value } }
    }

    /// A path as a file URL's: RFC 3986's unreserved characters and '/' stay, the rest is %XX.
    static func percentEncoded(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF")
                out += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 15)])
            }
        }
        return out
    }
}
