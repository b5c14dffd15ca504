import TonearmControlPlane
import TonearmDBus
import TonearmPlayer
import TonearmSystem
import TonearmDecoding

/// MPRIS 2.2's properties, from the control plane's published state: pure, so every mapping is
/// tested without a bus.
enum MPRISProperties {
    static let objectPath = "/org/mpris/MediaPlayer2"
    static let root = "org.mpris.MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    /// An item's `mpris:trackid`: from its stable queue id.
    static let trackPrefix = "/org/tonearm/track/"
    static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"
    static let identity = "Tonearm"

    /// The MIME types of every decoder plug-in, each once.
    static let supportedMimeTypes: [String] = Decoders.all.flatMap { $0.mimeTypes }.reduce(into: []) { types, type in
        if !types.contains(type) { types.append(type) }
    }

    static func rootProperties() -> [(String, DBusValue)] {
        [
            ("CanQuit", .boolean(false)), ("CanRaise", .boolean(false)), ("HasTrackList", .boolean(false)),
            ("Identity", .string(identity)), ("DesktopEntry", .string("tonearm")),
            ("SupportedUriSchemes", .array(element: "s", [.string("file")])),
            ("SupportedMimeTypes", .array(element: "s", supportedMimeTypes.map { .string($0) })),
        ]
    }

    /// Every Player property but `Position`, which is computed when read and never signalled.
    /// `artURL` is the current cover's file, when there is one.
    static func playerProperties(_ state: ControlState, artURL: String? = nil) -> [(String, DBusValue)] {
        let enabled = { (command: RemoteCommand) in state.enabledCommands[command] ?? false }
        return [
            ("PlaybackStatus", .string(playbackStatus(state))),
            ("LoopStatus", .string(loopStatus(state.repeatMode))),
            ("Rate", .double(1)), ("MinimumRate", .double(1)), ("MaximumRate", .double(1)),
            ("Shuffle", .boolean(state.shuffle)),
            ("Volume", .double(state.volume / 100)),
            ("Metadata", .dictionary(metadata(state, artURL: artURL))),
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
        if state.nowPlayingLink != nil { return linkedTrackID(state.nowPlaying) }
        return state.queue.currentItemID.map { trackPrefix + String($0) } ?? noTrack
    }

    /// The queue's current item; nil while a linked program's is Now Playing.
    static func currentItem(_ state: ControlState) -> QueueItem? {
        guard state.nowPlayingLink == nil else { return nil }
        return state.queue.currentItemID.flatMap { id in state.queue.items.first { $0.id == id } }
    }

    /// The Now Playing item's cover: the current item's, or the linked program's.
    static func artwork(_ state: ControlState) -> Artwork? {
        state.nowPlayingLink == nil ? currentItem(state)?.metadata.artwork : state.nowPlaying.artwork
    }

    /// The Now Playing item's length in seconds, when known.
    static func duration(_ state: ControlState) -> Double? {
        state.nowPlayingLink == nil ? currentItem(state)?.metadata.duration : state.nowPlaying.duration
    }

    /// A linked program's item has no queue id: its track id is made from what names it, so
    /// it changes when the item does (within this run of the daemon).
    static let linkedTrackPrefix = "/org/tonearm/link/"

    static func linkedTrackID(_ info: NowPlayingInfo) -> String {
        guard info.title != nil || info.artist != nil || info.album != nil else { return noTrack }
        var hasher = Hasher()
        hasher.combine(info.title)
        hasher.combine(info.artist)
        hasher.combine(info.album)
        hasher.combine(info.duration)
        return linkedTrackPrefix + String(UInt(bitPattern: hasher.finalize()), radix: 16)
    }

    static func metadata(_ state: ControlState, artURL: String? = nil) -> [(String, DBusValue)] {
        if state.nowPlayingLink != nil { return linkedMetadata(state, artURL: artURL) }
        guard let item = currentItem(state) else { return [("mpris:trackid", .objectPath(noTrack))] }
        let info = item.metadata
        var out: [(String, DBusValue)] = [("mpris:trackid", .objectPath(trackID(state)))]
        out += common(duration: info.duration, title: info.title, artist: info.artist, album: info.album,
                      albumArtist: info.albumArtist, trackNumber: info.trackNumber)
        if let disc = info.discNumber { out.append(("xesam:discNumber", .int32(Int32(clamping: disc)))) }
        if let genre = info.genre { out.append(("xesam:genre", .array(element: "s", [.string(genre)]))) }
        out.append(("xesam:url", .string(fileURL(item.path))))
        if let artURL { out.append(("mpris:artUrl", .string(artURL))) }
        return out
    }

    /// A linked program's Now Playing, as Tonearm's own item's is.
    static func linkedMetadata(_ state: ControlState, artURL: String?) -> [(String, DBusValue)] {
        let info = state.nowPlaying
        var out: [(String, DBusValue)] = [("mpris:trackid", .objectPath(linkedTrackID(info)))]
        out += common(duration: info.duration, title: info.title, artist: info.artist, album: info.album,
                      albumArtist: info.albumArtist, trackNumber: info.trackNumber)
        if let artURL { out.append(("mpris:artUrl", .string(artURL))) }
        return out
    }

    /// The fields Tonearm's own item and a linked program's share.
    private static func common(duration: Double?, title: String?, artist: String?, album: String?, albumArtist: String?,
                               trackNumber: Int?) -> [(String, DBusValue)] {
        var out: [(String, DBusValue)] = []
        if let duration { out.append(("mpris:length", .int64(Int64((duration * 1_000_000).rounded())))) }
        if let title { out.append(("xesam:title", .string(title))) }
        if let artist { out.append(("xesam:artist", .array(element: "s", [.string(artist)]))) }
        if let album { out.append(("xesam:album", .string(album))) }
        if let albumArtist { out.append(("xesam:albumArtist", .array(element: "s", [.string(albumArtist)]))) }
        if let trackNumber { out.append(("xesam:trackNumber", .int32(Int32(clamping: trackNumber)))) }
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

    /// A path as a file URL: RFC 3986's unreserved characters and '/' stay, every other byte of
    /// the name as the kernel knows it is %XX.
    static func fileURL(_ path: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = Array("file://".utf8)
        for byte in FileName.bytes(path) {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The path a `file:` URL names (`file:///a%20b`, `file://localhost/a`, `file:/a`), or nil
    /// for another scheme, a remote host, a relative path or a bad escape.
    static func filePath(_ url: String) -> String? {
        let bytes = Array(url.utf8)
        let scheme = Array("file:".utf8)
        guard bytes.count > scheme.count, zip(bytes, scheme).allSatisfy({ ($0 | 0x20) == $1 || $0 == $1 }) else { return nil }
        var rest = bytes[scheme.count...]
        if rest.starts(with: "//".utf8) {
            rest = rest.dropFirst(2)
            let host = rest.prefix { $0 != UInt8(ascii: "/") }
            guard host.isEmpty || String(decoding: host, as: UTF8.self).lowercased() == "localhost" else { return nil }
            rest = rest.dropFirst(host.count)
        }
        guard rest.first == UInt8(ascii: "/") else { return nil }
        var path: [UInt8] = []
        var i = rest.startIndex
        while i < rest.endIndex {
            let byte = rest[i]
            if byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { return nil }
            guard byte == UInt8(ascii: "%") else {
                path.append(byte)
                i += 1
                continue
            }
            guard i + 2 < rest.endIndex, let high = hexValue(rest[i + 1]), let low = hexValue(rest[i + 2]) else { return nil }
            path.append(high << 4 | low)
            i += 3
        }
        guard !path.contains(0) else { return nil }
        return FileName.string(path)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
