import TonearmControlPlane
import TonearmJSON
import TonearmPlayer
import TonearmSession

#if canImport(Glibc)
import Glibc
#endif

/// The JSON shapes of the control protocol's answers and events, all drawn from the
/// published state.
package enum Reports {
    package static func nowPlaying(_ info: NowPlayingInfo, now: Double) -> JSONValue {
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

    package static func publication(_ publication: NowPlayingPublication) -> JSONValue {
        .object([
            ("reason", .string(publication.reason.rawValue)), ("replace", .bool(publication.isReplacement)),
            ("artworkChanged", .bool(publication.artworkChanged)),
            ("info", nowPlaying(publication.info, now: publication.info.timestamp)),
        ])
    }

    package static func commands(_ enabled: [RemoteCommand: Bool]) -> JSONValue {
        .object(RemoteCommand.allCases.map { ($0.rawValue, .bool(enabled[$0] ?? false)) })
    }

    package static func queue(_ queue: QueueState) -> JSONValue {
        .object([
            ("currentIndex", JSONValue(queue.currentIndex)), ("currentItem", JSONValue(queue.currentItemID)),
            ("count", .int(queue.items.count)),
            ("version", .int(queue.version)),
            ("items", .array(queue.items.map { item in
                .object([
                    ("id", .int(item.id)), ("path", .string(item.path)), ("title", JSONValue(item.metadata.title)),
                    ("artist", JSONValue(item.metadata.artist)), ("album", JSONValue(item.metadata.album)),
                    ("trackNumber", JSONValue(item.metadata.trackNumber)), ("discNumber", JSONValue(item.metadata.discNumber)),
                    ("duration", JSONValue(item.metadata.duration)),
                ])
            })),
        ])
    }

    static func device(_ output: OutputState) -> JSONValue {
        .object([
            ("name", .string(output.device)), ("enabled", .bool(output.enabled)), ("state", .string(output.state.rawValue)),
            ("format", JSONValue(output.sampleFormat)),
            ("rate", JSONValue(output.sampleRate)), ("channels", JSONValue(output.channels)),
            ("periodFrames", JSONValue(output.periodFrames)), ("bufferFrames", JSONValue(output.bufferFrames)),
            ("underruns", .int(output.underruns)), ("losses", .int(output.losses)),
            ("rewinds", JSONValue(output.rewinds)), ("rewindCount", .int(output.rewindCount)),
            ("error", JSONValue(output.error)),
        ])
    }

    /// A session as `sessionOpen` and the other session commands answer it.
    static func session(_ report: SessionReport) -> JSONValue {
        let state = report.state
        return .object([
            ("session", .int(state.id.value)), ("name", JSONValue(report.name)),
            ("category", .string(state.category.rawValue)), ("mode", .string(state.mode.rawValue)),
            ("options", .array(state.options.names.map { .string($0) })), ("active", .bool(state.active)),
            ("interrupted", .bool(state.interrupted)), ("ducked", .bool(report.output.ducked)),
        ])
    }

    /// The player's own session, for `doctor`.
    static func playerSession(_ sessions: SessionsState) -> JSONValue {
        guard let player = sessions.session(SessionsState.playerSession)?.state else { return .null }
        return .object([
            ("category", .string(player.category.rawValue)), ("mode", .string(player.mode.rawValue)),
            ("options", .array(player.options.names.map { .string($0) })), ("active", .bool(player.active)),
            ("interrupted", .bool(player.interrupted)),
        ])
    }

    /// `sessions`: every audio session, the mute input and the Now Playing owner.
    package static func sessions(_ sessions: SessionsState) -> JSONValue {
        let list: [JSONValue] = sessions.sessions.map { report in
            let state = report.state
            let gain = report.gain
            return .object([
                ("session", .int(state.id.value)), ("name", JSONValue(report.name)),
                ("owner", state.owner == SessionsState.playerOwner ? .string("player") : .int(state.owner.value)),
                ("category", .string(state.category.rawValue)), ("mode", .string(state.mode.rawValue)),
                ("options", .array(state.options.names.map { .string($0) })),
                ("active", .bool(state.active)), ("interrupted", .bool(state.interrupted)),
                ("ducked", .bool(report.output.ducked)), ("duckedBy", .array(report.output.duckedBy.map { .int($0.value) })),
                ("mutedByInput", .bool(report.output.silencedByMute)),
                ("gain", .double(Double(gain))), ("gainDB", gain > 0 ? .double(20 * log10(Double(gain))) : .null),
                ("stream", JSONValue(report.stream)), ("nowPlaying", .bool(report.ownsNowPlaying)),
            ])
        }
        return .object([
            ("muted", .bool(sessions.muted)),
            ("nowPlayingOwner", sessions.nowPlayingOwner.map { .int($0.value) } ?? .null),
            ("sessions", .array(list)),
        ])
    }

    /// `status`: the player at a glance. `elapsed` is extrapolated to now from the last
    /// published (elapsed, rate, timestamp), the same rule every display uses.
    package static func status(_ state: ControlState, now: Double) -> JSONValue {
        let info = state.nowPlaying
        return .object([
            ("state", .string(state.transport.rawValue)),
            ("title", JSONValue(info.title)), ("artist", JSONValue(info.artist)), ("album", JSONValue(info.album)),
            ("duration", JSONValue(info.duration)), ("elapsed", .double(info.elapsed(at: now))), ("rate", .double(info.rate)),
            ("output", .string(state.output.heard)),
            ("queueIndex", JSONValue(info.queueIndex)), ("queueCount", .int(info.queueCount)),
            ("volume", .double(state.volume)), ("repeat", .string(state.repeatMode.rawValue)), ("shuffle", .bool(state.shuffle)),
            ("single", .string(state.single.rawValue)), ("consume", .bool(state.consume)),
            ("replayGain", .object([
                ("mode", .string(state.replayGain.mode.rawValue)), ("preamp", .double(state.replayGain.preamp)),
                ("missingPreamp", .double(state.replayGain.missingPreamp)), ("limit", .bool(state.replayGain.preventsClipping)),
            ])),
            ("eligible", .bool(state.eligibility.eligible)), ("eligibility", .string(state.eligibility.reason)),
            ("commands", commands(state.enabledCommands)),
            ("artwork", info.artwork.map(artwork) ?? .null),
            ("device", device(state.output)),
            ("library", library(state.library)),
            ("saveFailure", JSONValue(state.saveFailure)),
            ("stream", state.stream.map(stream) ?? .null),
            ("nowPlayingLink", state.nowPlayingLink.map(link) ?? .null),
            ("links", .array(state.links.map(link))),
        ])
    }

    /// An http(s) item's stream: its connection's state and its station.
    static func stream(_ stream: StreamStatus) -> JSONValue {
        .object([
            ("state", .string(stream.state)), ("attempt", JSONValue(stream.attempt)), ("error", JSONValue(stream.error)),
            ("station", JSONValue(stream.station)), ("genre", JSONValue(stream.genre)),
            ("contentType", JSONValue(stream.contentType)),
        ])
    }

    /// A link: the sessions' name, the program's player, and whether it is there.
    static func link(_ link: LinkState) -> JSONValue {
        .object([("session", .string(link.sessionName)), ("player", .string(link.player)), ("present", .bool(link.present))])
    }

    /// `doctor`: the seed's mandatory first steps, and every red flag of its decision tree that
    /// applies, each with what to do about it.
    static func doctor(_ state: ControlState, now: Double) -> JSONValue {
        let info = state.nowPlaying
        let output = state.output
        let player = state.sessions.session(SessionsState.playerSession)?.state
        var flags: [(String, String, String)] = []
        if !state.enabledCommands.values.contains(true) {
            flags.append(("noEnabledCommand", "no remote command is enabled, so nothing can control playback and the session is not Now Playing eligible",
                          "add tracks (tonearm add PATH) — play, next and the rest enable themselves from the queue"))
        }
        if let player, player.isMixable {
            flags.append(("mixableCategory", "category '\(player.category.rawValue)' mixes with others, so it cannot own Now Playing",
                          "set [player] category = \"playback\" in the board profile"))
        }
        if state.transport == .stopped && !state.queue.items.isEmpty {
            flags.append(("sessionInactive", "the player session is not active (stopped)", "tonearm play"))
        }
        let reopening = "Tonearm reopens it by itself every \(output.reopenIntervalMilliseconds) ms and carries on where the audio stopped"
        if let error = output.error {
            flags.append(("outputInterrupted", "nothing is heard (\(output.heard)): \(error); Now Playing says rate 0 until audio flows again",
                          "check the device name (aplay -L), the cable or USB DAC, or the sound server; \(reopening)"))
        } else if state.transport == .playing && output.state != .open {
            flags.append(("deviceNotOpen", "playing, but the ALSA device '\(output.device)' is \(output.state.rawValue)",
                          "check the device name (aplay -L), the cable or USB DAC; \(reopening)"))
        }
        let linked = state.nowPlayingLink != nil
        if !linked && state.queue.currentItemID != nil && info.artwork == nil {
            flags.append(("noArtwork", "the current track has no artwork",
                          "embed a front cover (metaflac --import-picture-from=cover.jpg) or put cover.jpg beside the track"))
        }
        if state.transport == .playing && info.rate == 0 && output.heard == "ok" {
            flags.append(("rateZeroWhilePlaying", "playing, but Now Playing says rate 0, so displays show it paused",
                          "this is a bug: report it with the output of tonearm doctor"))
        }
        if !linked && state.transport != .stopped && info.title == nil {
            flags.append(("noTitle", "the current track has no TITLE tag", "tag it (metaflac --set-tag=TITLE=…)"))
        }
        if let owner = state.sessions.nowPlayingOwner, let name = state.sessions.session(owner)?.name,
           let link = state.links.first(where: { $0.sessionName == name && !$0.present }) {
            flags.append(("linkedPlayerAbsent", "session \(owner) ('\(name)') owns Now Playing, but \(link.player), linked to it, is not there: Now Playing shows Tonearm's own player, and commands go to the session's program",
                          "make sure the program publishes its MPRIS player (shairport-sync's is on the bus its mpris_service_bus names), and that [[link]]'s mpris and bus say where (busctl --system list)"))
        }
        if output.underruns > 0 {
            flags.append(("underruns", "\(output.underruns) underruns so far",
                          "raise [output] buffer_ms, or give the service real-time priority (LimitRTPRIO)"))
        }
        if let failure = state.saveFailure {
            flags.append(("stateNotSaved", "\(failure): a power cut now loses the queue and the position",
                          "free space on that file system, or check that the card has not turned read-only (dmesg); tonearmd tries again, backing off to once a minute, and logs when it saved again"))
        }
        if output.rewinds == false {
            let late = (output.bufferFrames ?? 0) * 1000 / max(1, output.sampleRate ?? 1)
            flags.append(("noRewind", "'\(output.device)' is not rewound (no sound card behind it, or snd_pcm_rewind refused): it plays with a buffer of \(output.bufferFrames ?? 0) frames, and commands are heard \(late) ms late",
                          "play to the card itself (hw:CARD=…, aplay -L) rather than through a plugin that cannot rewind"))
        }
        return .object([
            ("session", playerSession(state.sessions)),
            ("eligible", .bool(state.eligibility.eligible)), ("eligibility", .string(state.eligibility.reason)),
            ("commands", commands(state.enabledCommands)),
            ("nowPlaying", nowPlaying(info, now: now)),
            ("output", .string(output.heard)),
            ("device", device(output)),
            ("links", .array(state.links.map(link))),
            ("redFlags", .array(flags.map { .object([("flag", .string($0.0)), ("detail", .string($0.1)), ("fix", .string($0.2))]) })),
        ])
    }
}

// MARK: The library

extension Reports {
    /// The library's state: the scan, the totals, what is unmounted.
    package static func library(_ library: LibraryState) -> JSONValue {
        .object([
            ("indexed", .bool(library.isIndexed)), ("scan", scan(library.scan)),
            ("songs", .int(library.totals.songs)), ("lastUpdate", .int(library.totals.lastUpdate)),
            ("unavailable", .array(library.unavailable.map { .string($0) })),
        ])
    }

    static func scan(_ scan: ScanProgress) -> JSONValue {
        .object([
            ("scanning", .bool(scan.isScanning)), ("job", .int(scan.job)), ("finishedJob", .int(scan.finishedJob)),
            ("seen", .int(scan.seen)), ("indexed", .int(scan.indexed)), ("unchanged", .int(scan.unchanged)),
            ("removed", .int(scan.removed)), ("failed", .int(scan.failed)), ("seconds", .double(scan.seconds)),
        ])
    }

    /// A song: its path, format and every tag (a tag with several values as an array).
    static func song(_ song: LibrarySong) -> JSONValue {
        var tags: [(String, JSONValue)] = []
        for tag in Tag.allCases {
            let values = song.tags.filter { $0.tag == tag }.map { JSONValue.string($0.value) }
            if values.count == 1 { tags.append((tag.rawValue, values[0])) } else if values.count > 1 { tags.append((tag.rawValue, .array(values))) }
        }
        return .object([
            ("file", .string(song.path)), ("duration", JSONValue(song.duration)),
            ("format", .object([("rate", .int(song.sampleRate)), ("bits", .int(song.bitsPerSample)), ("channels", .int(song.channels))])),
            ("size", .int(song.size)), ("modified", .int(song.modified)), ("picture", .bool(song.hasPicture)),
            ("tags", .object(tags)),
        ])
    }

    static func listing(_ listing: DirectoryListing) -> JSONValue {
        func entry(_ e: DirectoryListing.Entry) -> JSONValue { .object([("path", .string(e.path)), ("modified", .int(e.modified))]) }
        return .object([
            ("directories", .array(listing.directories.map(entry))), ("songs", .array(listing.songs.map(song))),
            ("playlists", .array(listing.playlists.map(entry))),
        ])
    }

    static func count(_ count: SongCount) -> JSONValue {
        var fields: [(String, JSONValue)] = []
        if let group = count.group { fields.append(("group", .string(group))) }
        return .object(fields + [("songs", .int(count.songs)), ("playtime", .double(count.playTime))])
    }

    package static func stats(_ totals: LibraryTotals) -> JSONValue {
        .object([
            ("artists", .int(totals.artists)), ("albums", .int(totals.albums)), ("songs", .int(totals.songs)),
            ("playtime", .double(totals.playTime)), ("dbUpdate", .int(totals.lastUpdate)),
        ])
    }

    package static func playlist(_ playlist: StoredPlaylist) -> JSONValue {
        .object([("name", .string(playlist.name)), ("modified", .int(playlist.modified)),
                 ("entries", .array(playlist.entries.map { .string($0) }))])
    }
}
