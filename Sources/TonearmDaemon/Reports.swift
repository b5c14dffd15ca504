import TonearmAudio
import TonearmJSON
import TonearmPlayback
import TonearmPlayer
import TonearmSession

#if canImport(Glibc)
import Glibc
#endif

/// The JSON shapes of the control protocol's answers and events.
enum Reports {
    static func nowPlaying(_ info: NowPlayingInfo, now: Double) -> JSONValue {
        .object([
            ("title", JSONValue(info.title)), ("artist", JSONValue(info.artist)), ("album", JSONValue(info.album)),
            ("albumArtist", JSONValue(info.albumArtist)), ("trackNumber", JSONValue(info.trackNumber)),
            ("duration", JSONValue(info.duration)), ("elapsed", .double(info.elapsed)), ("rate", .double(info.rate)),
            ("defaultRate", .double(info.defaultRate)), ("queueIndex", JSONValue(info.queueIndex)),
            ("queueCount", .int(info.queueCount)), ("isLiveStream", .bool(info.isLiveStream)),
            ("artwork", info.artwork.map(artwork) ?? .null),
            // `elapsed` is true at `timestamp` (seconds on the daemon's monotonic clock): when
            // that audio is heard, which may be a few milliseconds after this is sent while it
            // waits in the device buffer. `age` is how long ago that was when this was sent
            // (negative for a moment ahead), so a client on any clock can extrapolate:
            // elapsed + rate × (age + time since receipt).
            ("timestamp", .double(info.timestamp)), ("age", .double(now - info.timestamp)),
        ])
    }

    static func artwork(_ artwork: Artwork) -> JSONValue {
        .object([
            ("id", .string(artwork.id)), ("mimeType", .string(artwork.mimeType)), ("width", .int(artwork.width)),
            ("height", .int(artwork.height)), ("bytes", .int(artwork.byteCount)),
        ])
    }

    static func publication(_ publication: NowPlayingPublication) -> JSONValue {
        .object([
            ("reason", .string(publication.reason.rawValue)), ("replace", .bool(publication.isReplacement)),
            ("artworkChanged", .bool(publication.artworkChanged)),
            ("info", nowPlaying(publication.info, now: publication.info.timestamp)),
        ])
    }

    static func commands(_ enabled: [RemoteCommand: Bool]) -> JSONValue {
        .object(RemoteCommand.allCases.map { ($0.rawValue, .bool(enabled[$0] ?? false)) })
    }

    static func queue(_ core: PlayerCore) -> JSONValue {
        .object([
            ("currentIndex", JSONValue(core.currentIndex)), ("count", .int(core.queue.count)),
            ("items", .array(core.queue.map { item in
                .object([
                    ("id", .int(item.id)), ("path", .string(item.path)), ("title", JSONValue(item.metadata.title)),
                    ("artist", JSONValue(item.metadata.artist)), ("album", JSONValue(item.metadata.album)),
                    ("trackNumber", JSONValue(item.metadata.trackNumber)), ("discNumber", JSONValue(item.metadata.discNumber)),
                    ("duration", JSONValue(item.metadata.duration)),
                ])
            })),
        ])
    }

    static func device(_ status: DeviceStatus) -> JSONValue {
        .object([
            ("name", .string(status.name)), ("state", .string(status.state.rawValue)),
            ("format", JSONValue(status.format.map { $0.sampleFormat.rawValue })),
            ("rate", JSONValue(status.format?.sampleRate)), ("channels", JSONValue(status.format?.channels)),
            ("periodFrames", JSONValue(status.format?.periodFrames)), ("bufferFrames", JSONValue(status.format?.bufferFrames)),
            ("underruns", .int(status.underruns)), ("losses", .int(status.losses)),
            ("error", JSONValue(status.interruption?.description)),
        ])
    }

    /// Whether the output is heard: "ok", or what it waits for ("device lost, waiting for it",
    /// "device stopped responding, waiting for it", "waiting for the device"; "device back,
    /// starting" from the reopen until frames flow).
    static func output(_ status: DeviceStatus) -> String {
        guard let why = status.interruption else { return "ok" }
        return status.state == .open ? "device back, starting" : why.waiting
    }

    static func session(_ daemon: isolated PlayerDaemon) -> JSONValue {
        let session = daemon.settings.playerSession
        let state = daemon.book.session(SessionBook.playerSession)
        return .object([
            ("category", .string(session.category.rawValue)), ("mode", .string(session.mode.rawValue)),
            ("options", .array(session.options.names.map { .string($0) })), ("active", .bool(state?.active ?? false)),
            ("interrupted", .bool(state?.interrupted ?? false)),
        ])
    }

    /// `sessions`: every audio session, the mute input and the Now Playing owner.
    static func sessions(_ daemon: isolated PlayerDaemon) -> JSONValue {
        let book = daemon.book
        let list: [JSONValue] = book.sessions.map { state in
            let output = book.outputs[state.id] ?? OutputGain(mixes: false)
            let stream = book.streams[state.id]
            let gain: Float
            if state.id == SessionBook.playerSession {
                gain = daemon.engine.appliedGain(slot: 0)
            } else if let stream {
                gain = daemon.engine.appliedGain(stream.handle)
            } else {
                gain = output.linearGain(duckGain: SessionBook.duckLevel)
            }
            let playing: JSONValue = if state.id == SessionBook.playerSession {
                .string("player")
            } else if let stream {
                .string(stream.pcm.map { "pcm \($0)" } ?? "file")
            } else {
                .null
            }
            return .object([
                ("session", .int(state.id.value)),
                ("owner", state.owner == SessionBook.playerOwner ? .string("player") : .int(state.owner.value)),
                ("category", .string(state.category.rawValue)), ("mode", .string(state.mode.rawValue)),
                ("options", .array(state.options.names.map { .string($0) })),
                ("active", .bool(state.active)), ("interrupted", .bool(state.interrupted)),
                ("ducked", .bool(output.ducked)), ("duckedBy", .array(output.duckedBy.map { .int($0.value) })),
                ("mutedByInput", .bool(output.silencedByMute)),
                ("gain", .double(Double(gain))), ("gainDB", gain > 0 ? .double(20 * log10(Double(gain))) : .null),
                ("stream", playing), ("nowPlaying", .bool(book.nowPlayingOwner == state.id)),
            ])
        }
        return .object([
            ("muted", .bool(book.muted)),
            ("nowPlayingOwner", book.nowPlayingOwner.map { .int($0.value) } ?? .null),
            ("sessions", .array(list)),
        ])
    }

    /// `status`: the player at a glance. `elapsed` is extrapolated to now from the last
    /// published (elapsed, rate, timestamp), the same rule every display uses.
    static func status(_ daemon: isolated PlayerDaemon, now: Double) -> JSONValue {
        let core = daemon.core
        let info = core.nowPlaying
        let device = daemon.engine.deviceStatus
        let eligibility = core.eligibility(categoryIsMixable: daemon.settings.categoryIsMixable)
        return .object([
            ("state", .string(core.state.rawValue)),
            ("title", JSONValue(info.title)), ("artist", JSONValue(info.artist)), ("album", JSONValue(info.album)),
            ("duration", JSONValue(info.duration)), ("elapsed", .double(info.elapsed(at: now))), ("rate", .double(info.rate)),
            ("output", .string(output(device))),
            ("queueIndex", JSONValue(info.queueIndex)), ("queueCount", .int(info.queueCount)),
            ("volume", .double(core.volume)), ("repeat", .string(core.repeatMode.rawValue)), ("shuffle", .bool(core.shuffle)),
            ("eligible", .bool(eligibility.eligible)), ("eligibility", .string(eligibility.reason)),
            ("commands", commands(core.enabledCommands)),
            ("artwork", info.artwork.map(artwork) ?? .null),
            ("device", Self.device(device)),
        ])
    }

    /// `doctor`: the seed's mandatory first steps, and every red flag of its decision tree that
    /// applies, each with what to do about it.
    static func doctor(_ daemon: isolated PlayerDaemon, now: Double) -> JSONValue {
        let core = daemon.core
        let info = core.nowPlaying
        let device = daemon.engine.deviceStatus
        let enabled = core.enabledCommands
        var flags: [(String, String, String)] = []
        if !enabled.values.contains(true) {
            flags.append(("noEnabledCommand", "no remote command is enabled, so nothing can control playback and the session is not Now Playing eligible",
                          "add tracks (tonearm add PATH) — play, next and the rest enable themselves from the queue"))
        }
        if daemon.settings.categoryIsMixable {
            flags.append(("mixableCategory", "category '\(daemon.settings.playerSession.category.rawValue)' mixes with others, so it cannot own Now Playing",
                          "set [player] category = \"playback\" in the board profile"))
        }
        if core.state == .stopped && !core.queue.isEmpty {
            flags.append(("sessionInactive", "the player session is not active (stopped)", "tonearm play"))
        }
        let reopening = "Tonearm reopens it by itself every \(daemon.settings.playback.reopenIntervalMilliseconds) ms and carries on where the audio stopped"
        if let why = device.interruption {
            flags.append(("outputInterrupted", "nothing is heard (\(output(device))): \(why); Now Playing says rate 0 until audio flows again",
                          "check the device name (aplay -L), the cable or USB DAC, or the sound server; \(reopening)"))
        } else if core.state == .playing && device.state != .open {
            flags.append(("deviceNotOpen", "playing, but the ALSA device '\(device.name)' is \(device.state.rawValue)",
                          "check the device name (aplay -L), the cable or USB DAC; \(reopening)"))
        }
        if core.currentItemID != nil && info.artwork == nil {
            flags.append(("noArtwork", "the current track has no artwork",
                          "embed a front cover (metaflac --import-picture-from=cover.jpg) or put cover.jpg beside the track"))
        }
        if core.state == .playing && info.rate == 0 && !core.outputStalled {
            flags.append(("rateZeroWhilePlaying", "playing, but Now Playing says rate 0, so displays show it paused",
                          "this is a bug: report it with the output of tonearm doctor"))
        }
        if core.state != .stopped && info.title == nil {
            flags.append(("noTitle", "the current track has no TITLE tag", "tag it (metaflac --set-tag=TITLE=…)"))
        }
        if device.underruns > 0 {
            flags.append(("underruns", "\(device.underruns) underruns so far",
                          "raise [output] buffer_frames, or give the service real-time priority (LimitRTPRIO)"))
        }
        let eligibility = core.eligibility(categoryIsMixable: daemon.settings.categoryIsMixable)
        return .object([
            ("session", session(daemon)),
            ("eligible", .bool(eligibility.eligible)), ("eligibility", .string(eligibility.reason)),
            ("commands", commands(enabled)),
            ("nowPlaying", nowPlaying(info, now: now)),
            ("output", .string(output(device))),
            ("device", Self.device(device)),
            ("redFlags", .array(flags.map { .object([("flag", .string($0.0)), ("detail", .string($0.1)), ("fix", .string($0.2))]) })),
        ])
    }
}
