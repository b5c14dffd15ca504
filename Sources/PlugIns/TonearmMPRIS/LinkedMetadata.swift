import TonearmControlPlane
import TonearmDBus
import TonearmPlayer

/// A linked player's `Metadata` as Tonearm reads it. Players send what they like: a missing
/// field, a value of the wrong type or an empty text is simply not known; an artist may be one
/// string or many (joined, as a display shows them); numbers come in any integer type, or as
/// whole doubles.
struct LinkedMetadata: Equatable {
    var trackID: String?
    var title: String?
    var artist: String?
    var album: String?
    var albumArtist: String?
    var trackNumber: Int?
    /// Seconds; nil when unknown, zero or negative.
    var duration: Double?
    var artURL: String?

    init(trackID: String? = nil, title: String? = nil, artist: String? = nil, album: String? = nil, albumArtist: String? = nil,
         trackNumber: Int? = nil, duration: Double? = nil, artURL: String? = nil) {
        self.trackID = trackID
        self.title = title
        self.artist = artist
        self.album = album
        self.albumArtist = albumArtist
        self.trackNumber = trackNumber
        self.duration = duration
        self.artURL = artURL
    }

    /// From the `Metadata` property (`a{sv}`); nothing known from anything else.
    init(_ metadata: DBusValue?) {
        // a{sv} as the spec says; a dictionary of another value type is read as far as it goes.
        guard let dictionary = metadata.map(Self.unwrapped), !dictionary.keys.isEmpty else { return }
        func field(_ key: String) -> DBusValue? { dictionary[key].map(Self.unwrapped) }
        trackID = field("mpris:trackid").flatMap { value in
            switch value {
            case .objectPath(let path), .string(let path): path.isEmpty || path == MPRISProperties.noTrack ? nil : path
            default: nil
            }
        }
        title = field("xesam:title").flatMap(Self.text)
        artist = field("xesam:artist").flatMap(Self.names)
        album = field("xesam:album").flatMap(Self.text)
        albumArtist = field("xesam:albumArtist").flatMap(Self.names)
        trackNumber = field("xesam:trackNumber").flatMap(Self.integer).flatMap { $0 > 0 ? $0 : nil }
        duration = field("mpris:length").flatMap(Self.number).flatMap { $0 > 0 ? $0 / 1_000_000 : nil }
        artURL = field("mpris:artUrl").flatMap(Self.text)
    }

    /// Whether `other` is another item: another track id, or another title, artist, album or
    /// length — some players keep one track id for every item (a phone's, through BlueZ), and
    /// a stream's new title is a new item to whoever shows it.
    func isAnotherItem(than other: LinkedMetadata) -> Bool {
        trackID != other.trackID || title != other.title || artist != other.artist || album != other.album || duration != other.duration
    }

    // MARK: Reading values

    /// Variants inside variants, as some players nest them, down to the value.
    static func unwrapped(_ value: DBusValue) -> DBusValue {
        var value = value
        while case .variant(let inner) = value { value = inner }
        return value
    }

    /// A string with something in it besides white space.
    static func text(_ value: DBusValue) -> String? {
        guard case .string(let text) = unwrapped(value), text.contains(where: { !$0.isWhitespace }) else { return nil }
        return text
    }

    /// One name, or several joined with ", " ("as" as the spec says, or a bare string as some
    /// players send); what is not a string is passed over.
    static func names(_ value: DBusValue) -> String? {
        let value = unwrapped(value)
        if case .array(_, let items) = value {
            let all = items.compactMap(text)
            return all.isEmpty ? nil : all.joined(separator: ", ")
        }
        return text(value)
    }

    /// Any integer type, or a double that is a whole number.
    static func integer(_ value: DBusValue) -> Int? {
        switch unwrapped(value) {
        case .byte(let v): Int(v)
        case .int16(let v): Int(v)
        case .uint16(let v): Int(v)
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        case .int64(let v): Int(v)
        case .uint64(let v): Int(clamping: v)
        case .double(let v): v.isFinite && v == v.rounded() && abs(v) < 1e15 ? Int(v) : nil
        default: nil
        }
    }

    /// Any number.
    static func number(_ value: DBusValue) -> Double? {
        if case .double(let v) = unwrapped(value) { return v.isFinite ? v : nil }
        return integer(value).map(Double.init)
    }

    static func boolean(_ value: DBusValue?) -> Bool? {
        guard let value, case .boolean(let flag) = unwrapped(value) else { return nil }
        return flag
    }
}

/// What Tonearm knows of a linked player: its `org.mpris.MediaPlayer2.Player` properties as
/// last read or signalled, and its position as last read (the `Position` property, or a
/// `Seeked` signal), extrapolated with its rate — a position is never polled. Pure: the bus
/// thread feeds it and asks it what to publish and what to call.
struct LinkedPlayerMirror {
    private(set) var properties: [String: DBusValue] = [:]
    /// Seconds into the item at `at` (the daemon's monotonic clock).
    private(set) var position: (seconds: Double, at: Double) = (0, 0)

    init() {}

    var metadata: LinkedMetadata { LinkedMetadata(properties["Metadata"]) }

    var transport: TransportState {
        switch properties["PlaybackStatus"].flatMap(LinkedMetadata.text) {
        case "Playing": .playing
        case "Paused": .paused
        default: .stopped
        }
    }

    /// The speed of the position while playing: the player's `Rate`, 1 when it has none (or
    /// an unusable one); 0 while it does not play.
    var rate: Double {
        guard transport == .playing else { return 0 }
        let rate = properties["Rate"].flatMap(LinkedMetadata.number) ?? 1
        return rate > 0 ? rate : 1
    }

    func elapsed(at now: Double) -> Double {
        let seconds = position.seconds + rate * (now - position.at)
        return min(max(seconds, 0), metadata.duration ?? .infinity)
    }

    /// What changed, and so what must be read and published.
    struct Change: Equatable {
        /// Why to publish; nil: nothing a client sees changed.
        var reason: PublicationReason?
        /// The position must be read again before publishing (a new item, a new rate, play
        /// or pause): where it stands now is not what extrapolation says.
        var readPosition = false
    }

    /// Everything `GetAll` answered: a new item as far as clients know.
    mutating func replaceAll(_ all: [(String, DBusValue)], now: Double) -> Change {
        properties = Dictionary(all.map { ($0.0, LinkedMetadata.unwrapped($0.1)) }, uniquingKeysWith: { _, last in last })
        // The position is kept as read, with when; not as a property that would go stale.
        let read = properties.removeValue(forKey: "Position").flatMap(LinkedMetadata.integer)
        position = (read.map { Double($0) / 1_000_000 } ?? 0, now)
        return Change(reason: .trackChanged, readPosition: read == nil)
    }

    /// A `PropertiesChanged` signal's changed properties.
    mutating func apply(_ changed: [(String, DBusValue)], now: Double) -> Change {
        let before = (metadata, transport, rate)
        // Where it stands now by the old rate: the anchor a pause or a new rate starts from.
        position = (elapsed(at: now), now)
        for (name, value) in changed where name != "Position" { properties[name] = LinkedMetadata.unwrapped(value) }
        if let signalled = changed.last(where: { $0.0 == "Position" }).flatMap({ LinkedMetadata.integer($0.1) }) {
            position = (Double(signalled) / 1_000_000, now)
        }
        var change = Change()
        if metadata.isAnotherItem(than: before.0) {
            position = (0, now)
            change = Change(reason: .trackChanged, readPosition: true)
        } else if transport != before.1 {
            let reason: PublicationReason = switch transport {
            case .playing: before.1 == .stopped ? .playbackStarted : .resumed
            case .paused: .paused
            case .stopped: .stopped
            }
            change = Change(reason: reason, readPosition: transport != .stopped)
        } else if rate != before.2 {
            change = Change(reason: .rateChanged, readPosition: true)
        } else if !changed.isEmpty {
            // The same item's metadata; or only the commands it takes, its loop status…, which
            // clients see in the state without a Now Playing publication.
            change = Change(reason: .metadataChanged)
        }
        if transport == .stopped { position = (0, now) }
        return change
    }

    /// The `Position` property read, or a `Seeked` signal's position (µs).
    mutating func setPosition(microseconds: Int64, at now: Double) {
        position = (transport == .stopped ? 0 : Double(max(0, microseconds)) / 1_000_000, now)
    }

    /// What the player plays, for the control plane; `artwork` is read by the caller from
    /// `metadata.artURL`.
    func nowPlaying(reason: PublicationReason, artwork: LinkedArtwork?) -> LinkedNowPlaying {
        let metadata = metadata
        let known = metadata.title != nil || metadata.trackID != nil || metadata.artist != nil
        let info = NowPlayingInfo(title: metadata.title, artist: metadata.artist, album: metadata.album, albumArtist: metadata.albumArtist,
                                  trackNumber: metadata.trackNumber, duration: metadata.duration,
                                  elapsed: elapsed(at: position.at), rate: rate, isLiveStream: known && metadata.duration == nil,
                                  timestamp: position.at)
        return LinkedNowPlaying(transport: transport, info: info, enabledCommands: enabledCommands, artwork: artwork, reason: reason)
    }

    /// The command center as the player's `Can…` properties say. A property it leaves out
    /// does not disable a command (it may just not say); `CanControl` false disables them all.
    /// MPRIS has no scanning.
    var enabledCommands: [RemoteCommand: Bool] {
        let control = LinkedMetadata.boolean(properties["CanControl"]) ?? true
        func can(_ name: String) -> Bool { control && (LinkedMetadata.boolean(properties[name]) ?? true) }
        return [
            .play: can("CanPlay"), .pause: can("CanPause"), .togglePlayPause: can("CanPlay") || can("CanPause"), .stop: control,
            .nextTrack: can("CanGoNext"), .previousTrack: can("CanGoPrevious"),
            .skipForward: can("CanSeek"), .skipBackward: can("CanSeek"), .changePlaybackPosition: can("CanSeek"),
            .seekForward: false, .seekBackward: false,
            .changeRepeatMode: control && properties["LoopStatus"].flatMap(LinkedMetadata.text) != nil,
            .changeShuffleMode: control && LinkedMetadata.boolean(properties["Shuffle"]) != nil,
        ]
    }

    /// The MPRIS call that carries out `request` on the player; nil when none does.
    func call(for request: CommandRequest, now: Double) -> PlayerCall? {
        func microseconds(_ seconds: Double) -> Int64 {
            Int64((min(max(seconds, -1e12), 1e12) * 1_000_000).rounded())
        }
        switch request.command {
        case .play: return .method("Play", [])
        case .pause: return .method("Pause", [])
        case .togglePlayPause: return .method("PlayPause", [])
        case .stop: return .method("Stop", [])
        case .nextTrack: return .method("Next", [])
        case .previousTrack: return .method("Previous", [])
        case .skipForward, .skipBackward:
            let interval = abs(request.interval ?? 15)
            return .method("Seek", [.int64(microseconds(request.command == .skipForward ? interval : -interval))])
        case .changePlaybackPosition:
            guard let target = request.position.map({ max(0, $0) }) else { return nil }
            // SetPosition names the track, so a late command cannot move the next one; a player
            // without a usable track id is moved by the difference.
            if let track = metadata.trackID, Self.isObjectPath(track) {
                return .method("SetPosition", [.objectPath(track), .int64(microseconds(target))])
            }
            return .method("Seek", [.int64(microseconds(target - elapsed(at: now)))])
        case .changeRepeatMode:
            let current = properties["LoopStatus"].flatMap(LinkedMetadata.text).flatMap(MPRISProperties.repeatMode) ?? .off
            let mode = request.repeatMode ?? {
                switch current {
                case .off: .all
                case .all: .one
                case .one: .off
                }
            }()
            return .set("LoopStatus", .string(MPRISProperties.loopStatus(mode)))
        case .changeShuffleMode:
            let on = request.shuffle ?? !(LinkedMetadata.boolean(properties["Shuffle"]) ?? false)
            return .set("Shuffle", .boolean(on))
        case .seekForward, .seekBackward:
            return nil
        }
    }

    /// D-Bus's object path syntax: "/", or "/"-separated elements of [A-Za-z0-9_].
    static func isObjectPath(_ path: String) -> Bool {
        guard path.hasPrefix("/") else { return false }
        if path == "/" { return true }
        return path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).allSatisfy { element in
            !element.isEmpty && element.utf8.allSatisfy {
                (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 95
            }
        }
    }
}

/// A call on the linked player's `org.mpris.MediaPlayer2.Player`.
enum PlayerCall: Equatable {
    case method(String, [DBusValue])
    /// A property to set (`LoopStatus`, `Shuffle`).
    case set(String, DBusValue)
}
