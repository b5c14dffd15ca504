import Logging
import Synchronization
import TonearmControlPlane
import TonearmPlayer
import TonearmSession

/// The board's plug-ins (controls, keys, displays), run against the daemon through
/// `BoardControlPlane`: a thin adapter that serves them the control plane until the daemon is
/// one itself.
struct BoardPlugIns {
    var plugIns: [any PlugIn] = []
    var running: [Task<Void, Never>] = []
    let feed = ChangeFeed()
    /// The last state published, so plug-ins hear only of changes.
    var lastState: ControlState?
    /// The ignition went off while playing: it plays again when the ignition comes back.
    var pausedByIgnition = false
}

/// The control plane as the board's plug-ins see it, served by the daemon's actor.
final class BoardControlPlane: ControlPlane {
    let daemon: PlayerDaemon
    let feed: ChangeFeed
    private let clients = Atomic<Int>(1)

    init(daemon: PlayerDaemon, feed: ChangeFeed) {
        self.daemon = daemon
        self.feed = feed
    }

    func send(_ command: Command, from source: CommandSource) async -> CommandResult {
        await daemon.perform(command, from: source)
    }

    func snapshot() async -> ControlState { await daemon.controlState() }

    func subscribe(_ subsystems: Set<Subsystem>) -> ChangeSubscription { feed.subscribe(subsystems) }

    func newClient() -> ClientID { ClientID(clients.add(1, ordering: .relaxed).oldValue) }

    func clientLeft(_ client: ClientID) async {}
}

extension PlayerDaemon {
    /// Runs every board plug-in, each in its own task.
    func startBoard() {
        let log = logger
        let plane = BoardControlPlane(daemon: self, feed: board.feed)
        let plugInLog = PlugInLog { level, message in
            switch level {
            case .debug: log.debug("\(message)")
            case .info: log.info("\(message)")
            case .notice: log.notice("\(message)")
            case .warning: log.warning("\(message)")
            case .error: log.error("\(message)")
            }
        }
        for plugIn in board.plugIns {
            log.info("board: \(plugIn.name)")
            board.running.append(Task {
                do {
                    try await plugIn.run(plane, log: plugInLog)
                } catch {
                    log.error("\(plugIn.name): \(error)")
                }
            })
        }
        showBoardState()
    }

    /// Stops every board plug-in and waits for it (its threads are joined).
    func stopBoard() async {
        for task in board.running { task.cancel() }
        for task in board.running { await task.value }
        board.running = []
        board.feed.finish()
    }

    /// A board control's command, through the remote command center like any other: a
    /// disabled command does nothing and says so (the plug-in logs it).
    func perform(_ command: Command, from source: CommandSource) -> CommandResult {
        let now = Self.now()
        switch command {
        case .remote(var request):
            if book.nowPlayingOwner == nil || book.nowPlayingOwner == SessionBook.playerSession,
               core.enabledCommands[request.command] == false {
                return CommandResult(status: .disabled)
            }
            // A button has no menu: changeRepeatMode steps off → all → one, changeShuffleMode
            // toggles.
            if request.command == .changeRepeatMode, request.repeatMode == nil {
                request.repeatMode = switch core.repeatMode {
                case .off: .all
                case .all: .one
                case .one: .off
                }
            }
            if request.command == .changeShuffleMode, request.shuffle == nil { request.shuffle = !core.shuffle }
            if [.seekForward, .seekBackward].contains(request.command), request.scanning == nil { request.scanning = .begin }
            let (status, forwardedTo) = remoteCommand(request, now: now)
            return CommandResult(status: CommandStatus(rawValue: status) ?? .commandFailed, forwardedTo: forwardedTo)
        case .volume(let change):
            let percent = switch change {
            case .set(let percent): percent
            case .step(let step): core.volume + step
            }
            apply(core.setVolume(min(100, max(0, percent)), now: now))
            return CommandResult(status: .success)
        case .mute(let change):
            let on = switch change {
            case .on: true
            case .off: false
            case .toggle: !book.muted
            }
            try? self.change(.setMute(on))
            showBoardState()
            return CommandResult(status: .success, payload: .muted(on))
        case .ignition(on: false):
            // Power goes soon: stop sounding and make sure the place is saved.
            board.pausedByIgnition = core.state == .playing
            if board.pausedByIgnition { apply(core.handle(CommandRequest(.pause), now: now)) }
            save()
            logger.notice("\(source): ignition off; paused and saved")
            return CommandResult(status: .success)
        case .ignition(on: true):
            if board.pausedByIgnition {
                board.pausedByIgnition = false
                apply(core.handle(CommandRequest(.play), now: now))
            }
            return CommandResult(status: .success)
        case .queue, .artwork, .session:
            return .failed(.unavailable, "\(source): not a board command")
        }
    }

    /// What the board's plug-ins see: the player's part of the control plane's state.
    func controlState() -> ControlState {
        var state = ControlState()
        state.transport = core.state
        state.nowPlaying = core.nowPlaying
        state.queue = QueueState(items: core.queue, currentItemID: core.currentItemID, currentIndex: core.currentIndex)
        state.volume = core.volume
        state.muted = book.muted
        state.repeatMode = core.repeatMode
        state.shuffle = core.shuffle
        state.enabledCommands = core.enabledCommands
        return state
    }

    /// Tells the board's plug-ins that the state changed, if it did. Called after every
    /// command, engine event and mute change; nothing changes between events, so nothing is
    /// published on a timer.
    func showBoardState() {
        guard !board.plugIns.isEmpty else { return }
        let state = controlState()
        guard state != board.lastState else { return }
        board.lastState = state
        board.feed.publish(ChangeBatch(subsystems: [.player, .mixer, .options, .queue]))
    }
}
