import TonearmControlPlane
import TonearmPlayer
import TonearmSystem

extension MPDCommands {
    /// What the player is doing: `status`, `currentsong`, `stats`, `clearerror`. (`idle` is
    /// `MPDConnection`'s.)
    enum StatusCommands {
        static func status(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            statusText(mpd.plane.published, now: monotonicSeconds())
        }

        /// `status` from the plane's published state: clients poll it, so it is read at once,
        /// and alone it is answered on the network thread (`answerAtOnce`).
        static func statusText(_ state: ControlState, now: Double) -> String {
            var out: [UInt8] = []
            appendStatus(state, now: now, to: &out)
            return String(decoding: out, as: UTF8.self)
        }

        /// `statusText` appended to `out` as UTF-8, with no string made on the way: clients
        /// poll it, twice a second each while a song plays.
        static func appendStatus(_ state: ControlState, now: Double, to out: inout [UInt8]) {
            func line(_ name: String, _ number: Int) {
                out += name.utf8
                out.appendDigits(number)
                out.append(MPDSong.newline)
            }
            func times(elapsed: Double, duration: Double?) {
                out += "time: ".utf8
                out.appendDigits(Int(elapsed.rounded()))
                out.append(UInt8(ascii: ":"))
                out.appendDigits(Int((duration ?? 0).rounded()))
                out += "\nelapsed: ".utf8
                MPDSong.appendDecimal(elapsed, to: &out)
                out.append(MPDSong.newline)
                if let duration {
                    out += "duration: ".utf8
                    MPDSong.appendDecimal(duration, to: &out)
                    out.append(MPDSong.newline)
                }
            }
            let queue = state.queue
            line("volume: ", Int(state.volume.rounded()))
            line("repeat: ", state.repeatMode == .off ? 0 : 1)
            line("random: ", state.shuffle ? 1 : 0)
            out += "single: ".utf8
            out += (state.single == .oneshot ? "oneshot" : state.single == .on || state.repeatMode == .one ? "1" : "0").utf8
            out.append(MPDSong.newline)
            line("consume: ", state.consume ? 1 : 0)
            out += "partition: default\n".utf8
            line("playlist: ", queue.version)
            line("playlistlength: ", queue.items.count)
            out += "mixrampdb: 0.000000\n".utf8
            // An interrupted or ducked-out player is paused as far as MPD clients can tell.
            let playing = state.transport == .playing && state.nowPlaying.rate != 0
            let word = switch state.transport {
            case .stopped: "state: stop\n"
            case .paused: "state: pause\n"
            case .playing: playing ? "state: play\n" : "state: pause\n"
            }
            out += word.utf8
            if state.nowPlayingLink != nil {
                // Another program's item: not in the queue, so no song number; its times only.
                if state.transport != .stopped {
                    times(elapsed: state.nowPlaying.elapsed(at: now), duration: state.nowPlaying.duration)
                }
            } else if let id = queue.currentItemID, let position = currentPosition(queue, id) {
                line("song: ", position)
                line("songid: ", id)
                if state.transport != .stopped {
                    times(elapsed: state.nowPlaying.elapsed(at: now), duration: queue.items[position].metadata.duration)
                    if let rate = state.output.sampleRate, let format = state.output.sampleFormat, let channels = state.output.channels {
                        out += "audio: ".utf8
                        out.appendDigits(rate)
                        out.append(UInt8(ascii: ":"))
                        MPDSong.appendBits(format, to: &out)
                        out.append(UInt8(ascii: ":"))
                        out.appendDigits(channels)
                        out.append(MPDSong.newline)
                    }
                }
                let repeatsSong = state.repeatMode == .one || (state.single != .off && state.repeatMode == .all)
                if !state.shuffle, position + 1 < queue.items.count || state.repeatMode != .off, !queue.items.isEmpty {
                    let next = repeatsSong ? position : (position + 1) % queue.items.count
                    line("nextsong: ", next)
                    line("nextsongid: ", queue.items[next].id)
                }
            }
            // From the `update` that queued it, as mpd: a client that polls for the end of its
            // scan must not take one not started yet for one done.
            let scan = state.library.scan
            if scan.isScanning || scan.job > scan.finishedJob { line("updating_db: ", scan.job) }
        }

        /// Where the current item is in the queue: as published, without a walk of a long queue
        /// on the network thread (a walk only where the state does not say).
        static func currentPosition(_ queue: QueueState, _ id: Int) -> Int? {
            if let index = queue.currentIndex, index < queue.items.count, queue.items[index].id == id { return index }
            return queue.items.firstIndex { $0.id == id }
        }

        /// The song playing or paused: the queue's, or what a linked program plays.
        static func currentSong(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let known = mpd.shared.withLock { $0.currentSong }
            let catalog = mpd.plane.catalog
            switch currentSong(in: mpd.plane.published, known: known, musicDirectory: mpd.settings.musicDirectory,
                               indexed: catalog != nil, tags: call.client.tags) {
            case .answer(let bytes):
                return String(decoding: bytes, as: UTF8.self)
            case .fromIndex(let item, let path, let position, let scan):
                guard let catalog else { return MPDCommands.song(item, path: path, song: nil, position: position, tags: call.client.tags) }
                let song = try await mpd.work { () throws(MPDError) -> LibrarySong? in try? MPDCommands.librarySong(path, catalog) }
                mpd.shared.withLock { $0.currentSong = scan.map { (path, $0, song) } }
                return MPDCommands.song(item, path: path, song: song, position: position, tags: call.client.tags)
            }
        }

        enum CurrentSong {
            case answer([UInt8])
            /// The index's song for `path` is needed first; `scan`, the scan it is good until
            /// another is done (nil while one runs).
            case fromIndex(QueueItem, path: String, position: Int, scan: Int?)
        }

        /// `currentsong` from the state and the index's song known for it. Clients ask for it
        /// with every `status`: the index's song is read once per song and scan done.
        static func currentSong(in state: ControlState, known: KnownSong?, musicDirectory: String?, indexed: Bool,
                                tags: [Tag]) -> CurrentSong {
            if let link = state.nowPlayingLink { return .answer(Array(MPDSong.block(linked: link, state.nowPlaying, tags: tags).utf8)) }
            guard let id = state.queue.currentItemID, let position = currentPosition(state.queue, id) else {
                return .answer([])
            }
            let item = state.queue.items[position]
            let path = MPDCommands.uri(item.path, in: musicDirectory)
            let scan = state.library.scan
            let settled = !scan.isScanning && scan.job == scan.finishedJob
            var out: [UInt8] = []
            if settled, let known, known.path == path, known.scan == scan.finishedJob {
                MPDCommands.appendSong(item, path: path, song: known.song, position: position, tags: tags, to: &out)
                return .answer(out)
            }
            guard indexed else {
                MPDCommands.appendSong(item, path: path, song: nil, position: position, tags: tags, to: &out)
                return .answer(out)
            }
            return .fromIndex(item, path: path, position: position, scan: settled ? scan.finishedJob : nil)
        }

        static func stats(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let library = await mpd.plane.snapshot().library
            let uptime = Int(monotonicSeconds() - mpd.started)
            guard library.isIndexed else { return "uptime: \(uptime)\n" }
            let totals = library.totals
            return """
                artists: \(totals.artists)
                albums: \(totals.albums)
                songs: \(totals.songs)
                uptime: \(uptime)
                db_playtime: \(Int(totals.playTime.rounded()))
                db_update: \(totals.lastUpdate)

                """
        }

        /// `status` shows no player error, so there is none to clear.
        static func clearError(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String { "" }
    }
}
