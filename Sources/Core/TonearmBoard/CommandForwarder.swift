import TonearmControlPlane

/// How a board plug-in hands on the commands its device thread makes: the thread `send`s
/// without waiting, and the plug-in's `run` forwards them to the control plane one at a time,
/// in the order they were made, each from the control that made it ("button next (gpiochip0
/// line 17)", "input /dev/input/event3"). A command the plane refuses is logged in one line;
/// the control goes on.
public final class CommandForwarder: Sendable {
    private let commands: AsyncStream<(Command, CommandSource)>
    private let continuation: AsyncStream<(Command, CommandSource)>.Continuation

    public init() {
        // Unbounded: a command is a few bytes, and none may be lost or reordered (a scan's end).
        (commands, continuation) = AsyncStream.makeStream()
    }

    /// From any thread; never waits.
    public func send(_ command: Command, from source: String) {
        continuation.yield((command, CommandSource(source)))
    }

    /// Sends every command to `plane`, awaiting each result before the next, until the task
    /// is cancelled.
    public func forward(to plane: any ControlPlane, log: PlugInLog) async {
        for await (command, source) in commands {
            let result = await plane.send(command, from: source)
            switch result.status {
            case .success: break
            case .disabled: log.notice("\(source): \(command) is disabled now; ignored")
            default: log.notice("\(source): \(command): \(result.failure?.message ?? result.status.rawValue)")
            }
        }
    }
}
