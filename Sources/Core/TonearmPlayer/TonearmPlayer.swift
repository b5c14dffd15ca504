// TonearmPlayer: the player's logic with no I/O, no clock and no threads.
//
// `PlayerCore` is a value the daemon's actor holds and drives. Every source of commands (the
// control socket, GPIO, keys, a display) goes through `PlayerCore.handle(_:now:)`; the engine's
// reports come back through the `engine…` methods. Each call returns what the daemon must do:
// `EngineAction`s for the audio engine, in order, and `NowPlayingPublication`s for subscribers.
// Time is always passed in as `now`, seconds on a monotonic clock.

/// Where the transport is.
public enum TransportState: String, Sendable {
    case stopped, playing, paused
}

/// What happens when the current item ends, and whether `nextTrack` wraps at the last item.
public enum RepeatMode: String, Sendable, CaseIterable {
    case off, one, all
}

/// Whether the player stops after the current item (MPD's `single`): with repeat on it plays the
/// item again instead. `oneshot` does so once, then turns itself off.
public enum SingleMode: String, Sendable, CaseIterable {
    case off, on, oneshot
}
