import TonearmAudio
import TonearmControlPlane
import TonearmPlayback
import TonearmPlayer
import TonearmSession

/// The audio sessions the daemon arbitrates: the built-in player's and those clients open on
/// the control socket. The policy (`SessionPolicy.evaluate`) decides; this applies its
/// decisions: the player pauses and resumes, streams are held and released, gains ramp, and
/// owners hear about it.
struct SessionBook {
    /// The level of a ducked session: −15 dB.
    static let duckLevel: Float = 0.177_827_94

    var sessions: [SessionState] = []
    var muted = false
    var outputs: [SessionID: OutputGain] = [:]
    var nowPlayingOwner: SessionID?
    var nextID = 2
    /// The names clients gave their sessions.
    var names: [SessionID: String] = [SessionsState.playerSession: "player"]
    /// The streams playing in sessions, and what they are.
    var streams: [SessionID: SessionStream] = [:]
    /// The player was playing when an interruption began: it resumes when the interruption ends
    /// with shouldResume.
    var playerResumes = false

    func session(_ id: SessionID) -> SessionState? { sessions.first { $0.id == id } }
}

/// A stream played into a session.
struct SessionStream {
    var handle: StreamHandle
    /// The raw PCM format a client streams in; nil for a file.
    var pcm: StreamFormat?
    /// The client sent `sessionEnd`: further writes are refused as `notStreaming`, not `busy`.
    var ended = false
    /// Its program paused it (`pauseStream`): held, as an interruption holds it.
    var paused = false
}

extension PlayerDaemon {
    // MARK: Policy

    /// Opens the built-in player's session (inactive until it plays).
    func openPlayerSession() {
        let (category, mode, options) = settings.playerSession
        do throws(SessionError) {
            try change(.open(SessionsState.playerSession, owner: SessionsState.playerOwner, category: category, mode: mode,
                             options: options, hasEnabledCommand: core.enabledCommands.values.contains(true)))
        } catch {
            // The profile was validated against the same tables.
            logger.error("the player's session cannot be opened: \(error)")
        }
    }

    /// Asks the policy for `request` and carries out its decision.
    func change(_ request: SessionRequest) throws(SessionError) {
        let decision = try SessionPolicy.evaluate(sessions: book.sessions, request: request, muted: book.muted)
        let before = book.outputs
        book.sessions = decision.sessions
        book.muted = decision.muted
        book.outputs = decision.outputs

        for began in decision.interruptionsBegan {
            logger.notice("session \(began.session) interrupted by session \(began.interrupter) (\(began.reason))")
            if began.session == SessionsState.playerSession {
                book.playerResumes = core.state == .playing
                if book.playerResumes { apply(core.handle(CommandRequest(.pause), now: Self.now())) }
            }
            if began.owner != SessionsState.playerOwner { changes.notices.append(.interruptionBegan(began)) }
        }
        for ended in decision.interruptionsEnded {
            logger.notice("session \(ended.session): interruption ended by session \(ended.endedBy), should resume")
            if ended.session == SessionsState.playerSession {
                if book.playerResumes && ended.shouldResume {
                    book.playerResumes = false
                    apply(core.handle(CommandRequest(.play), now: Self.now()))
                }
            }
            if ended.owner != SessionsState.playerOwner { changes.notices.append(.interruptionEnded(ended)) }
        }

        for state in decision.sessions {
            guard let output = decision.outputs[state.id] else { continue }
            let duck: Float = output.ducked ? SessionBook.duckLevel : 1
            let fade: Float = output.silencedByMute ? 0 : 1
            if state.id == SessionsState.playerSession {
                engine.setPlayerDuck(duck)
                engine.setPlayerFade(fade)
            } else if let stream = book.streams[state.id] {
                // Interrupted: held (faded out, kept); otherwise sounding again if it was held
                // (the interruption ended, or its owner activated it again). Then the gains,
                // which a held stream keeps at fade 0.
                holdOrRelease(state.id)
                engine.setStream(stream.handle, duck: duck, fade: fade)
            }
            if (before[state.id]?.ducked ?? false) != output.ducked && state.owner != SessionsState.playerOwner {
                changes.notices.append(.duck(owner: state.owner, session: state.id, ducked: output.ducked, by: output.duckedBy))
            }
        }

        if decision.nowPlayingOwner != book.nowPlayingOwner {
            book.nowPlayingOwner = decision.nowPlayingOwner
            logger.info("Now Playing belongs to \(decision.nowPlayingOwner.map { "session \($0)" } ?? "no session")")
        }
        changes.subsystems.insert(.sessions)
    }

    /// Keeps the player's session in step with the transport: playing activates it (and so
    /// interrupts whatever the rules say), stopping deactivates it. Paused stays active.
    func syncPlayerSession() {
        guard let player = book.session(SessionsState.playerSession) else { return }
        let hasCommand = core.enabledCommands.values.contains(true)
        if player.hasEnabledCommand != hasCommand {
            try? change(.setHasEnabledCommand(SessionsState.playerSession, hasCommand))
        }
        switch core.state {
        case .playing where !player.isSounding:
            book.playerResumes = false
            try? change(.activate(SessionsState.playerSession))
        case .stopped where player.active:
            book.playerResumes = false
            try? change(.deactivate(SessionsState.playerSession))
        default:
            break
        }
    }

    /// A session's stream is held while the session is interrupted or its program paused it,
    /// and sounds otherwise.
    func holdOrRelease(_ id: SessionID) {
        guard let stream = book.streams[id] else { return }
        if book.session(id)?.interrupted == true || stream.paused {
            engine.holdStream(stream.handle)
        } else {
            engine.releaseStream(stream.handle)
        }
    }

    func closeSession(_ id: SessionID) {
        stopSessionStream(id)
        book.names[id] = nil
        try? change(.close(id))
    }

    func stopSessionStream(_ id: SessionID) {
        guard let stream = book.streams.removeValue(forKey: id) else { return }
        engine.stopStream(stream.handle)
    }

    /// A stream has been heard to its end: its owner is told.
    func streamFinished(_ handle: StreamHandle) {
        guard let (id, _) = book.streams.first(where: { $0.value.handle == handle }) else { return }
        book.streams[id] = nil
        if let owner = book.session(id)?.owner {
            changes.notices.append(.streamFinished(owner: owner, session: id))
        }
        changes.subsystems.insert(.sessions)
    }
}
