import TonearmBoard
import TonearmPlayer
import TonearmSession

/// The board's command sources and displays, as plug-ins: the daemon starts them, hands their
/// commands to the remote command center, and shows them the display state on events.
struct BoardPlugIns {
    var sources: [BoardCommandSource] = []
    var displays: [BoardDisplayPublisher] = []
    /// The last state shown, so a display hears only of changes.
    var lastShown: BoardDisplayState?
    /// The ignition went off while playing: it plays again when the ignition comes back.
    var pausedByIgnition = false
}

extension PlayerDaemon {
    /// Starts every board source; their commands come back to the actor.
    func startBoard() {
        let log = logger
        for source in board.sources {
            log.info("board: \(source.name)")
            source.start(
                send: { [weak self] command in
                    guard let self else { return }
                    Task { await self.perform(command, from: source.name) }
                },
                log: { level, message in
                    switch level {
                    case .info: log.info("\(message)")
                    case .notice: log.notice("\(message)")
                    case .warning: log.warning("\(message)")
                    case .error: log.error("\(message)")
                    }
                })
        }
        for display in board.displays { log.info("board: display \(display.name)") }
        showBoardState()
    }

    func stopBoard() {
        for source in board.sources { source.stop() }
    }

    /// A board control's command, through the remote command center like any other: a
    /// disabled command is logged (one line) and does nothing.
    func perform(_ command: BoardCommand, from source: String) {
        let now = Self.now()
        if let remote = RemoteCommand(rawValue: command.name.rawValue) {
            let request = commandRequest(for: remote, command)
            if book.nowPlayingOwner == nil || book.nowPlayingOwner == SessionBook.playerSession,
               core.enabledCommands[remote] == false {
                logger.notice("\(source): \(command) is disabled now; ignored")
                return
            }
            let (status, _) = remoteCommand(request, now: now)
            if status != CommandStatus.success.rawValue { logger.notice("\(source): \(command): \(status)") }
            return
        }
        switch command.name {
        case .volumeUp, .volumeDown:
            let step = (command.value ?? 5) * (command.name == .volumeUp ? 1 : -1)
            apply(core.setVolume(min(100, max(0, core.volume + step)), now: now))
        case .setVolume:
            guard let percent = command.value, (0...100).contains(percent) else {
                logger.notice("\(source): \(command): the volume must be between 0 and 100")
                return
            }
            apply(core.setVolume(percent, now: now))
        case .toggleMute, .muteOn, .muteOff:
            let on = command.name == .toggleMute ? !book.muted : command.name == .muteOn
            try? change(.setMute(on))
            showBoardState()
        case .ignitionOff:
            // Power goes soon: stop sounding and make sure the place is saved.
            board.pausedByIgnition = core.state == .playing
            if board.pausedByIgnition { apply(core.handle(CommandRequest(.pause), now: now)) }
            save()
            logger.notice("\(source): ignition off; paused and saved")
        case .ignitionOn:
            if board.pausedByIgnition {
                board.pausedByIgnition = false
                apply(core.handle(CommandRequest(.play), now: now))
            }
        default:
            break
        }
    }

    /// The core's request for a board command. Without a mode, changeRepeatMode steps through
    /// off → all → one and changeShuffleMode toggles: a button has no menu.
    private func commandRequest(for remote: RemoteCommand, _ command: BoardCommand) -> CommandRequest {
        switch remote {
        case .skipForward, .skipBackward:
            return CommandRequest(remote, interval: command.value)
        case .changePlaybackPosition:
            return CommandRequest(remote, position: command.value)
        case .seekForward, .seekBackward:
            return CommandRequest(remote, scanning: command.phase.flatMap { ScanPhase(rawValue: $0.rawValue) } ?? .begin)
        case .changeRepeatMode:
            let next: RepeatMode = switch core.repeatMode {
            case .off: .all
            case .all: .one
            case .one: .off
            }
            return CommandRequest(remote, repeatMode: command.mode.flatMap(RepeatMode.init(rawValue:)) ?? next)
        case .changeShuffleMode:
            return CommandRequest(remote, shuffle: command.mode.map { $0 == "on" } ?? !core.shuffle)
        default:
            return CommandRequest(remote)
        }
    }

    /// What the displays show now.
    func boardDisplayState() -> BoardDisplayState {
        let info = core.nowPlaying
        var enabled: [BoardCommand.Name: Bool] = [:]
        for (remote, on) in core.enabledCommands {
            if let name = BoardCommand.Name(rawValue: remote.rawValue) { enabled[name] = on }
        }
        for name in [BoardCommand.Name.volumeUp, .volumeDown, .setVolume, .toggleMute, .muteOn, .muteOff] {
            enabled[name] = true
        }
        let transport: BoardDisplayState.Transport = switch core.state {
        case .playing: .playing
        case .paused: .paused
        case .stopped: .stopped
        }
        return BoardDisplayState(
            transport: transport, title: info.title, artist: info.artist, album: info.album, duration: info.duration,
            elapsed: info.elapsed, rate: info.rate, timestamp: info.timestamp, queueIndex: info.queueIndex,
            queueCount: info.queueCount, volume: core.volume, muted: book.muted, enabled: enabled)
    }

    /// Shows the displays the current state if it changed. Called after every command, engine
    /// event and mute change; nothing changes between events, so nothing is sent on a timer.
    func showBoardState() {
        guard !board.displays.isEmpty else { return }
        let state = boardDisplayState()
        guard state != board.lastShown else { return }
        board.lastShown = state
        for display in board.displays { display.show(state) }
    }
}
