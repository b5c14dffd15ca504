import TonearmAudio
import TonearmControlPlane
import TonearmLibrary
import TonearmPlayback
import TonearmSystem
import TonearmPlayer
import TonearmSession

/// The control plane's one implementation: every plug-in's commands come through `send`,
/// whatever their source, and are answered with the command center's status.
extension PlayerDaemon: ControlPlane {
    public func send(_ command: Command, from source: CommandSource) async -> CommandResult {
        let now = Self.now()
        takeEngineEvents(now: now)
        defer { flush() }
        switch command {
        case .remote(let request):
            return remoteCommand(request, now: now)
        case .volume(let change):
            let percent: Double
            switch change {
            case .set(let value):
                guard (0...100).contains(value) else {
                    return .failed(.badArgument, "the volume must be between 0 and 100, not \(value)")
                }
                percent = value
            case .step(let step):
                percent = min(100, max(0, core.volume + step))
            }
            let outcome = core.setVolume(percent, now: now)
            apply(outcome)
            return CommandResult(status: outcome.status, payload: .queueCount(core.queue.count))
        case .mute(let mute):
            let on = switch mute {
            case .on: true
            case .off: false
            case .toggle: !book.muted
            }
            try? change(.setMute(on))
            return CommandResult(status: .success, payload: .muted(book.muted))
        case .ignition(let on):
            return ignition(on: on, from: source, now: now)
        case .queue(let edit):
            return await self.edit(edit, from: source, now: now)
        case .artwork(let id, let size):
            if let picture = links.picture(id: id) { return await linkedArtwork(id, picture, size: size, for: source) }
            guard let artwork = artworkSources[id] else { return .failed(.notFound, "no artwork with id '\(id)'") }
            if let size {
                do throws(CommandFailure) {
                    let image = try await scaledArtwork.image(id: id, size: size, for: source.name) { () throws(CommandFailure) -> [UInt8] in
                        do throws(LibraryError) {
                            return try MusicLibrary.artworkBytes(artwork)
                        } catch {
                            throw CommandFailure(error.failureCode, error.description)
                        }
                    }
                    return CommandResult(status: .success, payload: .artwork(id: id, mimeType: image.mimeType, bytes: image.bytes))
                } catch {
                    return CommandResult(status: .commandFailed, failure: error)
                }
            }
            do throws(LibraryError) {
                // Files are read on the library's worker pool: a large cover holds up no command.
                let bytes = try await WorkerPool.library.run(for: source.name) { () throws(LibraryError) in try MusicLibrary.artworkBytes(artwork) }
                return CommandResult(status: .success, payload: .artwork(id: id, mimeType: artwork.mimeType, bytes: bytes))
            } catch {
                return .failed(error.failureCode, error.description)
            }
        case .picture(let path, let embedded):
            let musicDirectory = settings.musicDirectory
            do throws(LibraryError) {
                let found = try await WorkerPool.library.run(for: source.name) { () throws(LibraryError) in
                    try MusicLibrary.picture(of: path, embedded: embedded, musicDirectory: musicDirectory)
                }
                // A file without one: success, and no picture.
                guard let picture = found else {
                    return CommandResult(status: .success)
                }
                return CommandResult(status: .success, payload: .artwork(id: "", mimeType: picture.mimeType, bytes: picture.bytes))
            } catch {
                return .failed(error.failureCode, error.description)
            }
        case .updateLibrary(let path):
            return updateLibrary(path)
        case .session(let sessionCommand):
            guard let client = source.client else {
                return .failed(.badArgument, "\(source) has no sessions of its own")
            }
            return session(sessionCommand, client: client)
        case .link(let linkCommand):
            guard let client = source.client else {
                return .failed(.badArgument, "\(source) is not a client that can speak for sessions")
            }
            return link(linkCommand, client: client)
        case .playerMode(let change):
            return playerMode(change)
        case .playlist(let edit):
            return await playlist(edit, for: source)
        case .output(let enabled):
            guard enabled != engine.isOutputEnabled else { return CommandResult(status: .success) }
            engine.setOutputEnabled(enabled)
            logger.notice("\(source): output \(enabled ? "on" : "off")")
            save()
            return CommandResult(status: .success)
        }
    }

    /// A linked program's picture, as it is or scaled as any cover is.
    func linkedArtwork(_ id: String, _ picture: LinkedArtwork, size: Int?, for source: CommandSource) async -> CommandResult {
        guard let size else { return CommandResult(status: .success, payload: .artwork(id: id, mimeType: picture.mimeType, bytes: picture.bytes)) }
        do throws(CommandFailure) {
            let bytes = picture.bytes
            let image = try await scaledArtwork.image(id: id, size: size, for: source.name) { () throws(CommandFailure) -> [UInt8] in bytes }
            return CommandResult(status: .success, payload: .artwork(id: id, mimeType: image.mimeType, bytes: image.bytes))
        } catch {
            return CommandResult(status: .commandFailed, failure: error)
        }
    }

    /// Changes a stored playlist, on the playlists' writer (one thread: edits never interleave);
    /// subscribers to `storedPlaylists` hear of it.
    func playlist(_ edit: PlaylistEdit, for source: CommandSource) async -> CommandResult {
        guard let directory = library?.playlists else {
            return .failed(.unavailable, "there are no stored playlists: no playlist directory is configured ([library] playlist_dir)")
        }
        let root = library?.root ?? ""
        let queue: [String] = if case .saveQueue = edit {
            core.queue.map { item in item.path.hasPrefix(root + "/") ? String(item.path.dropFirst(root.count + 1)) : item.path }
        } else {
            []
        }
        do throws(LibraryError) {
            try await WorkerPool.playlists.run(for: source.name) { () throws(LibraryError) in
                try Self.change(directory, edit, queue: queue)
            }
        } catch {
            return .failed(error.failureCode, error.description)
        }
        changes.subsystems.insert(.storedPlaylists)
        return CommandResult(status: .success)
    }

    /// A stored playlist's change, carried out (file I/O: on the playlists' writer). `queue`: the
    /// entries `saveQueue` writes.
    static func change(_ directory: PlaylistDirectory, _ edit: PlaylistEdit, queue: [String]) throws(LibraryError) {
        switch edit {
        case .saveQueue(let name, let replacing):
            try directory.write(name, queue, replacing: replacing)
        case .add(let name, let entries, let position):
            var existing: [String] = []
            do throws(LibraryError) {
                existing = try directory.read(name).entries
            } catch {
                guard case .noSuchPlaylist = error else { throw error }
            }
            let at = position ?? existing.count
            guard (0...existing.count).contains(at) else { throw .badPlaylistPosition(name, position: at, count: existing.count) }
            existing.insert(contentsOf: entries, at: at)
            try directory.write(name, existing)
        case .clear(let name):
            try directory.edit(name) { $0 = [] }
        case .delete(let name, let positions):
            try directory.edit(name) { (entries) throws(LibraryError) in
                guard positions.lowerBound >= 0, positions.upperBound <= entries.count, !positions.isEmpty else {
                    throw .badPlaylistPosition(name, position: positions.upperBound > entries.count ? positions.upperBound - 1 : positions.lowerBound,
                                               count: entries.count)
                }
                entries.removeSubrange(positions)
            }
        case .move(let name, let from, let to):
            try directory.edit(name) { (entries) throws(LibraryError) in
                for position in [from, to] where !entries.indices.contains(position) {
                    throw .badPlaylistPosition(name, position: position, count: entries.count)
                }
                entries.insert(entries.remove(at: from), at: to)
            }
        case .rename(let name, let newName):
            try directory.rename(name, to: newName)
        case .remove(let name):
            try directory.remove(name)
        }
    }

    /// Single, consume and ReplayGain: the player's modes beyond the command center.
    func playerMode(_ change: PlayerModeChange) -> CommandResult {
        switch change {
        case .single(let mode):
            apply(core.setSingle(mode))
        case .consume(let on):
            apply(core.setConsume(on))
        case .replayGain(let mode, let preamp, let missingPreamp):
            var wanted = replayGain
            if let mode { wanted.mode = mode }
            for (name, value, keyPath) in [("pre-amp", preamp, \ReplayGainSettings.preamp),
                                           ("pre-amp for files without ReplayGain", missingPreamp, \ReplayGainSettings.missingPreamp)] {
                guard let value else { continue }
                guard ReplayGainSettings.preampRange.contains(value) else {
                    return .failed(.badArgument, "the ReplayGain \(name) must be between -15 and 15 dB, not \(value)")
                }
                wanted[keyPath: keyPath] = value
            }
            guard wanted != replayGain else { return CommandResult(status: .success) }
            replayGain = wanted
            engine.setReplayGain(wanted)
            save()
        }
        return CommandResult(status: .success)
    }

    public func snapshot() async -> ControlState {
        takeEngineEvents(now: Self.now())
        flush()
        return published
    }

    public nonisolated var published: ControlState { lastPublished.withLock { $0 } }

    public nonisolated func subscribe(_ subsystems: Set<Subsystem>) -> ChangeSubscription {
        feed.subscribe(subsystems)
    }

    public nonisolated var catalog: (any LibraryCatalog)? { library?.catalog }

    /// Queues a scan of the music directory, or of a directory or file in it (which need not
    /// exist any more: a scan of a path that is gone prunes it).
    func updateLibrary(_ path: String?) -> CommandResult {
        guard let library else {
            return .failed(.unavailable, "there is no library: no music directory is configured ([daemon] music_dir, --music-dir)")
        }
        var relative = path ?? ""
        if relative.hasPrefix("/") {
            if relative == library.root || relative == settings.musicDirectory {
                relative = ""
            } else if relative.hasPrefix(library.root + "/") {
                relative = String(relative.dropFirst(library.root.count + 1))
            } else if let configured = settings.musicDirectory, relative.hasPrefix(configured + "/") {
                relative = String(relative.dropFirst(configured.count + 1))
            } else {
                return .failed(.forbidden, "'\(relative)' is outside the music directory \(library.root)")
            }
        }
        guard !relative.split(separator: "/").contains("..") else {
            return .failed(.forbidden, "'\(relative)' leads out of the music directory \(library.root)")
        }
        return CommandResult(status: .success, payload: .scanQueued(job: library.scan(relative)))
    }

    public nonisolated func newClient() -> ClientID {
        ClientID(clients.add(1, ordering: .relaxed).oldValue)
    }

    /// A client went away: its sessions close (a close is a deactivation without notifying).
    public func clientLeft(_ client: ClientID) async {
        for state in book.sessions where state.owner == client && client != SessionsState.playerOwner {
            closeSession(state.id)
        }
        for name in links.clientLeft(client) {
            logger.info("sessions named '\(name)' are no longer spoken for: their client left")
            changes.subsystems.insert(.sessions)
        }
        flush()
    }

    // MARK: Routing

    /// A remote command from any source (the socket, MPD, a button, a key, a display), for the
    /// Now Playing owner (the seeds' rule): the player's core, or a client's session, whose
    /// client — or the client that speaks for its program (`LinkCommand`) — is told
    /// (`Notice.remoteCommand`) and answers for itself.
    func remoteCommand(_ request: CommandRequest, now: Double) -> CommandResult {
        if let forwarded = forwardToLink(request) { return forwarded }
        var request = request
        // A button has no menu: without a mode, repeat steps off → all → one, shuffle toggles.
        if request.command == .changeRepeatMode && request.repeatMode == nil {
            request.repeatMode = switch core.repeatMode {
            case .off: .all
            case .all: .one
            case .one: .off
            }
        }
        if request.command == .changeShuffleMode && request.shuffle == nil { request.shuffle = !core.shuffle }
        if let owner = book.nowPlayingOwner, owner != SessionsState.playerSession, let state = book.session(owner) {
            changes.notices.append(.remoteCommand(owner: state.owner, session: owner, request))
            return CommandResult(status: .success, forwardedTo: owner)
        }
        let outcome = core.handle(request, now: now)
        apply(outcome)
        return CommandResult(status: outcome.status)
    }

    // MARK: Queue

    /// What `add` found, read on the library's workers: files through the library's checks,
    /// URLs as they are, playlist files (m3u, extended m3u, pls) by their entries, all in the
    /// order given.
    enum FoundEntry: Sendable {
        case track(LibraryTrack)
        case stream(url: String, title: String?)
    }

    static func entries(_ paths: [String], musicDirectory: String?) throws(LibraryError) -> (found: [FoundEntry], skipped: [SkippedPath]) {
        var found: [FoundEntry] = []
        var skipped: [SkippedPath] = []
        var files: [String] = []
        func scanFiles() throws(LibraryError) {
            guard !files.isEmpty else { return }
            let scan = try MusicLibrary.tracks(at: files, musicDirectory: musicDirectory)
            found += scan.tracks.map { .track($0) }
            skipped += scan.skipped.map { SkippedPath(path: $0.path, reason: $0.reason) }
            files = []
        }
        func addEntry(_ path: String, title: String?) throws(LibraryError) {
            if PlaybackEngine.isStreamURL(path) {
                try scanFiles()
                found.append(.stream(url: path, title: title))
            } else {
                files.append(path)
            }
        }
        for path in paths {
            if PlaylistDirectory.isPlaylistFile(path) {
                let playlist = try MusicLibrary.resolve(path, musicDirectory: musicDirectory)
                for entry in try PlaylistDirectory.entries(ofFile: playlist) { try addEntry(entry.location, title: entry.title) }
            } else {
                try addEntry(path, title: nil)
            }
        }
        try scanFiles()
        return (found, skipped)
    }

    /// Adds to the queue what `paths` name, read on the library's workers in `source`'s turn,
    /// at `position` (nil: at the end).
    func add(_ paths: [String], at position: Int?, for source: CommandSource) async -> CommandResult {
        guard !paths.isEmpty else { return .failed(.badArgument, "nothing to add: no paths given") }
        let musicDirectory = settings.musicDirectory
        let read: (found: [FoundEntry], skipped: [SkippedPath])
        do throws(LibraryError) {
            read = try await WorkerPool.library.run(for: source.name) { () throws(LibraryError) in
                try Self.entries(paths, musicDirectory: musicDirectory)
            }
        } catch {
            return .failed(error.failureCode, error.description)
        }
        let entries: [(path: String, metadata: TrackMetadata)] = read.found.map { entry in
            switch entry {
            case .track(let track): (path: track.path, metadata: metadata(for: track))
            case .stream(let url, let title): (path: url, metadata: TrackMetadata(title: title, isLiveStream: true))
            }
        }
        // The reading took time, and other commands may have run meanwhile: the queue as it is now.
        let now = Self.now()
        takeEngineEvents(now: now)
        let added = core.add(entries, now: now)
        apply(added)
        if let position, added.status == .success {
            // Inserted: the new items move, in order, to the position asked for.
            let ids = core.queue.suffix(entries.count).map(\.id)
            for (offset, id) in ids.enumerated() { apply(core.move(itemID: id, to: position + offset, now: now)) }
        }
        upcoming.update(core)
        return CommandResult(
            status: added.status,
            payload: .added(count: entries.count, skipped: read.skipped, queueCount: core.queue.count))
    }

    func edit(_ edit: QueueEdit, from source: CommandSource, now: Double) async -> CommandResult {
        let outcome: CommandOutcome
        switch edit {
        case .add(let paths, let position):
            return await add(paths, at: position, for: source)
        case .clear:
            outcome = core.clear(now: now)
        case .remove(let ids):
            var last = CommandOutcome(status: .noSuchContent)
            for id in ids {
                last = core.remove(itemID: id, now: now)
                apply(last)
                if last.status != .success { break }
            }
            return CommandResult(status: last.status, payload: .queueCount(core.queue.count))
        case .move(let id, let position):
            outcome = core.move(itemID: id, to: position, now: now)
        case .play(let id):
            outcome = core.playItem(id, now: now)
        case .shuffle(let range):
            if let range, range.lowerBound < 0 || range.upperBound > core.queue.count {
                return .failed(.badArgument, "positions \(range.lowerBound)…\(range.upperBound - 1) are outside the queue of \(core.queue.count)")
            }
            outcome = core.shuffleQueue(range, now: now)
        case .priority(let priority, let ids):
            guard QueueItem.priorities.contains(priority) else {
                return .failed(.badArgument, "a priority is 0 to 255, not \(priority)")
            }
            outcome = core.setPriority(priority, of: ids, now: now)
        case .range(let id, let range):
            outcome = core.setRange(range, of: id, now: now)
            if outcome.status == .disabled {
                return .failed(.badArgument, "the current song's range cannot change while it plays")
            }
        }
        apply(outcome)
        return CommandResult(status: outcome.status, payload: .queueCount(core.queue.count))
    }

    // MARK: The board's own

    /// The ignition-sense line: power goes soon, so stop sounding and make sure the place is
    /// saved; play again when it comes back, if it was playing.
    func ignition(on: Bool, from source: CommandSource, now: Double) -> CommandResult {
        if on {
            if pausedByIgnition {
                pausedByIgnition = false
                apply(core.handle(CommandRequest(.play), now: now))
            }
        } else {
            pausedByIgnition = core.state == .playing
            if pausedByIgnition { apply(core.handle(CommandRequest(.pause), now: now)) }
            save(urgent: true)
            logger.notice("\(source): ignition off; paused, and the state saved at once")
        }
        return CommandResult(status: .success)
    }
}

extension LibraryError {
    /// The control plane's failure code for a library error.
    var failureCode: CommandFailure.Code {
        switch self {
        case .notFound: .notFound
        case .outsideMusicDirectory: .forbidden
        case .notPlayable: .notPlayable
        case .noSuchPlaylist: .notFound
        case .playlistExists: .exists
        case .badPlaylistName, .badPlaylistPosition: .badArgument
        case .musicDirectoryUnavailable, .cannotAccess, .artworkUnavailable, .stateDirectoryUnavailable, .cannotSaveState,
             .databaseUnavailable, .playlistsUnavailable: .unavailable
        }
    }
}
