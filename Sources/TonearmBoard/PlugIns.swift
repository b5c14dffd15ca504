/// The daemon's plug-in seams for the board (and, later, MPRIS, MPD, a web remote).
///
/// A command source turns something physical into `BoardCommand`s; a display publisher shows
/// `BoardDisplayState`s. The daemon starts and stops them in one place and knows nothing of
/// GPIO, evdev or termios.

/// Sends commands from its own thread(s) once started, until stopped. A source whose device is
/// missing or goes away says so through `log` and keeps trying; it never stops the daemon.
public protocol BoardCommandSource: AnyObject, Sendable {
    /// A name for logs: "button next (gpiochip0 line 17)", "input /dev/input/event3".
    var name: String { get }
    func start(send: @escaping @Sendable (BoardCommand) -> Void, log: @escaping @Sendable (BoardLogLevel, String) -> Void)
    /// Stops and waits for its threads. Idempotent.
    func stop()
}

/// Shows what the daemon publishes. `show` is called on events only and must not block for
/// long: a display that is slow or unplugged keeps only the latest state.
public protocol BoardDisplayPublisher: AnyObject, Sendable {
    var name: String { get }
    func show(_ state: BoardDisplayState)
}

public enum BoardLogLevel: Sendable {
    case info, notice, warning, error
}
