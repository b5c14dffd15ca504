import TonearmAudio
import TonearmControlPlane
import TonearmPlayer

extension MPDCommands {
    /// Playback options: the volume, `repeat`, `random`, `single`, `consume`, ReplayGain, and
    /// crossfade and MixRamp, which can only be off.
    enum OptionCommands {
        static func setVolume(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let text = call.arguments[0]
            guard let volume = Int(text), (0...100).contains(volume) else { throw .argument("Invalid volume value: \(text)") }
            return try await mpd.send(.volume(.set(Double(volume))))
        }

        /// `volume STEP`: up or down by at most 100.
        static func volume(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let text = call.arguments[0]
            guard let step = Int(text), (-100...100).contains(step) else { throw .argument("Invalid volume value: \(text)") }
            return try await mpd.send(.volume(.step(Double(step))))
        }

        static func getVolume(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            "volume: \(Int((await mpd.plane.snapshot().volume).rounded()))\n"
        }

        static func repeatMode(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let on = try mpd.boolean(call.arguments[0])
            let state = await mpd.plane.snapshot()
            // MPD's repeat + single is the command center's repeat one; leaving it keeps single.
            if !on, state.repeatMode == .one { _ = try await mpd.send(.playerMode(.single(.on))) }
            return try await mpd.remote(CommandRequest(.changeRepeatMode, repeatMode: on ? (state.repeatMode == .off ? .all : state.repeatMode) : .off))
        }

        static func random(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            try await mpd.remote(CommandRequest(.changeShuffleMode, shuffle: try mpd.boolean(call.arguments[0])))
        }

        /// `single 0|1|oneshot`.
        static func single(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let text = call.arguments[0]
            let mode: SingleMode = text == "oneshot" ? .oneshot : try mpd.boolean(text) ? .on : .off
            if mode == .off, await mpd.plane.snapshot().repeatMode == .one {
                // Repeat one is repeat with single: without single it is repeat all.
                _ = try await mpd.remote(CommandRequest(.changeRepeatMode, repeatMode: .all))
            }
            return try await mpd.send(.playerMode(.single(mode)))
        }

        /// `consume 0|1`: mpd 0.23 knows only these (oneshot came with 0.24).
        static func consume(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            try await mpd.send(.playerMode(.consume(try mpd.boolean(call.arguments[0]))))
        }

        static func replayGainMode(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            guard let mode = ReplayGainMode(rawValue: call.arguments[0]) else { throw .argument("Unrecognized replay gain mode") }
            return try await mpd.send(.playerMode(.replayGain(mode: mode, preamp: nil, missingPreamp: nil)))
        }

        static func replayGainStatus(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            "replay_gain_mode: \((await mpd.plane.snapshot().replayGain.mode).rawValue)\n"
        }

        /// Tracks join gaplessly, sample for sample; there is no crossfade to set.
        static func crossfade(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let text = call.arguments[0]
            guard let seconds = UInt(text) else { throw .argument("Integer expected: \(text)") }
            guard seconds == 0 else { throw .argument("crossfade is not supported: tracks join gaplessly") }
            return ""
        }

        static func mixRampDB(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let text = call.arguments[0]
            guard let decibels = Double(text) else { throw .argument("Float expected: \(text)") }
            guard decibels == 0 else { throw .argument("MixRamp is not supported: tracks join gaplessly") }
            return ""
        }

        /// A negative delay or "nan" turns MixRamp off, which it always is.
        static func mixRampDelay(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let text = call.arguments[0]
            guard let seconds = Double(text) else { throw .argument("Float expected: \(text)") }
            guard seconds.isNaN || seconds < 0 else { throw .argument("MixRamp is not supported: tracks join gaplessly") }
            return ""
        }
    }
}
