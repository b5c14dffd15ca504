import TonearmControlPlane
import TonearmPlayer
import TonearmSystem

extension MPDCommands {
    /// Transport: `play`, `playid`, `pause`, `stop`, `next`, `previous`, `seek`, `seekid`,
    /// `seekcur`. They go to the command center, so they follow the Now Playing owner rule like
    /// any button.
    enum PlaybackCommands {
        /// `play [POS]` and `playid [ID]`; without one (or -1), the command center's play.
        static func play(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            guard let argument = call.arguments.first, argument != "-1" else { return try await mpd.remote(CommandRequest(.play)) }
            let id = try await mpd.itemID(argument, byPosition: call.name == "play")
            return try await mpd.send(.queue(.play(itemID: id)))
        }

        /// `pause [0|1]`. Asking for the state the player is in is done, as MPD answers it (the
        /// command center would call the command disabled).
        static func pause(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let transport = await mpd.plane.snapshot().transport
            switch call.arguments.first {
            case nil: return try await mpd.remote(CommandRequest(.togglePlayPause))
            case "1": return transport == .playing ? try await mpd.remote(CommandRequest(.pause)) : ""
            case "0": return transport == .playing ? "" : try await mpd.remote(CommandRequest(.play))
            default: throw .argument("Boolean (0/1) expected: \(call.arguments[0])")
            }
        }

        static func stop(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            await mpd.plane.snapshot().transport == .stopped ? "" : try await mpd.remote(CommandRequest(.stop))
        }

        static func next(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            try await mpd.remote(CommandRequest(.nextTrack))
        }

        static func previous(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            try await mpd.remote(CommandRequest(.previousTrack))
        }

        /// `seek POS SECONDS` and `seekid ID SECONDS`: that song, played first if it is not the
        /// current one.
        static func seek(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments
            let id = try await mpd.itemID(args[0], byPosition: call.name == "seek")
            let seconds = try mpd.number(args[1])
            if await mpd.plane.snapshot().queue.currentItemID != id { _ = try await mpd.send(.queue(.play(itemID: id))) }
            return try await mpd.remote(CommandRequest(.changePlaybackPosition, position: seconds))
        }

        /// `seekcur SECONDS`, or `+SECONDS`/`-SECONDS` from where the song is.
        static func seekCurrent(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let text = call.arguments[0]
            let amount = try mpd.number(text.hasPrefix("+") ? String(text.dropFirst()) : text)
            var target = amount
            if text.hasPrefix("+") || text.hasPrefix("-") {
                let state = await mpd.plane.snapshot()
                target = state.nowPlaying.elapsed(at: monotonicSeconds()) + amount
            }
            return try await mpd.remote(CommandRequest(.changePlaybackPosition, position: max(0, target)))
        }
    }
}
