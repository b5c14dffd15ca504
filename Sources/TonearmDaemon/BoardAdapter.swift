import TonearmBoard
import TonearmControlPlane
import TonearmPlayer
import TonearmSystem

struct BoardPlugIns {
    var sources: [BoardCommandSource] = []
    var displays: [BoardDisplayPublisher] = []
}

struct BoardSourcePlugIn: PlugIn {
    let source: BoardCommandSource
    var name: String { source.name }

    func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let (commands, continuation) = AsyncStream<BoardCommand>.makeStream()
        source.start(send: { continuation.yield($0) }, log: { level, message in
            switch level {
            case .info: log.info(message)
            case .notice: log.notice(message)
            case .warning: log.warning(message)
            case .error: log.error(message)
            }
        })
        defer { source.stop() }
        for await board in commands {
            let argument = board.value.map { $0 == $0.rounded() ? String(Int($0)) : String($0) } ?? board.phase?.rawValue ?? board.mode
            guard case .success(let command) = Command.parse(board.name.rawValue, argument: argument) else { continue }
            let result = await plane.send(command, from: CommandSource(source.name))
            if result.status == .disabled {
                log.notice("\(source.name): \(command) is disabled now; ignored")
            } else if result.status != .success {
                log.notice("\(source.name): \(command): \(result.failure?.message ?? result.status.rawValue)")
            }
        }
    }
}

struct BoardDisplayPlugIn: PlugIn {
    let display: BoardDisplayPublisher
    var name: String { "display \(display.name)" }

    func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let changes = plane.subscribe([.player, .mixer, .options, .queue])
        var last: BoardDisplayState?
        func show() async {
            let state = Self.boardState(await plane.snapshot())
            if state != last {
                last = state
                display.show(state)
            }
        }
        await show()
        for await _ in changes { await show() }
    }

    static func boardState(_ state: ControlState) -> BoardDisplayState {
        let info = state.nowPlaying
        var enabled: [BoardCommand.Name: Bool] = [:]
        for name in BoardCommand.Name.allCases {
            if let known = CommandName(rawValue: name.rawValue) { enabled[name] = state.isEnabled(known) }
        }
        let transport: BoardDisplayState.Transport = switch state.transport {
        case .playing: .playing
        case .paused: .paused
        case .stopped: .stopped
        }
        return BoardDisplayState(
            transport: transport, title: info.title, artist: info.artist, album: info.album, duration: info.duration,
            elapsed: info.elapsed, rate: info.rate, timestamp: info.timestamp, queueIndex: info.queueIndex,
            queueCount: info.queueCount, volume: state.volume, muted: state.muted, enabled: enabled)
    }
}
