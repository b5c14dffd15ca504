import Synchronization
import TestSupport
import TonearmControlPlane
import TonearmPlayer
import TonearmSerial
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A clock the test moves.
final class TestClock: Sendable {
    private let value: Mutex<Double>
    init(_ start: Double = 1000) { value = Mutex(start) }
    var now: Double { value.withLock { $0 } }
    func set(_ time: Double) { value.withLock { $0 = time } }
    func advance(_ seconds: Double) { value.withLock { $0 += seconds } }
}

/// A display's control plane: what the display sent to it and told its log, and the states
/// the test shows it (published as changes, read back as snapshots).
final class Recorder: Sendable {
    let plane = TestControlPlane()
    let testLog = TestLog()

    var commands: [Command] { plane.commands }
    var log: [String] { testLog.texts }

    func waitForCommands(_ count: Int, timeout: Double = 3) -> [Command] { plane.waitForCommands(count, timeout: timeout) }

    func waitForLog(containing text: String, timeout: Double = 3) -> Bool { testLog.waitFor(text, timeout: timeout) }

    /// Runs `display` against the plane until the returned plug-in is stopped.
    func start(_ display: SerialDisplay) -> RunningPlugIn { RunningPlugIn(display, on: plane, log: testLog.log) }

    /// The state from now on, as the daemon publishes it.
    func show(_ state: ControlState) { plane.publish(state, [.player]) }
}

/// Bytes as text for failure messages: printable ASCII as is, others as <HH>.
func readable(_ bytes: [UInt8]) -> String {
    bytes.map { $0 >= 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : "<" + String($0, radix: 16, uppercase: true) + ">" }.joined()
}

/// Bytes of a string followed by Nextion's terminator.
func nextion(_ instructions: String...) -> [UInt8] {
    instructions.flatMap { Array($0.utf8) + [0xFF, 0xFF, 0xFF] }
}

/// A playing or paused state with the usual commands enabled (volume, mute and ignition
/// always are).
func trackState(
    _ transport: TransportState = .playing, title: String? = "So What", artist: String? = "Miles Davis",
    album: String? = "Kind of Blue", duration: Double? = 562, elapsed: Double = 0, timestamp: Double = 1000,
    index: Int? = 0, count: Int = 5, volume: Double = 40, muted: Bool = false,
    enabled: [RemoteCommand] = [.play, .pause, .togglePlayPause, .stop, .nextTrack, .previousTrack, .changePlaybackPosition]
) -> ControlState {
    var state = ControlState()
    state.transport = transport
    state.nowPlaying = NowPlayingInfo(
        title: title, artist: artist, album: album, duration: duration, elapsed: elapsed, rate: transport == .playing ? 1 : 0,
        queueIndex: index, queueCount: count, timestamp: timestamp)
    (state.volume, state.muted) = (volume, muted)
    state.enabledCommands = Dictionary(uniqueKeysWithValues: enabled.map { ($0, true) })
    return state
}

/// A state with only Now Playing's texts set, nothing playing.
func textState(title: String? = nil, artist: String? = nil, album: String? = nil) -> ControlState {
    var state = ControlState()
    (state.nowPlaying.title, state.nowPlaying.artist, state.nowPlaying.album) = (title, artist, album)
    return state
}

/// `count` pseudo-random bytes, the same for the same seed (xorshift64*: fast in debug builds).
func randomBytes(_ count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
    var x = seed
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { raw in
        var i = 0
        while i < count {
            x ^= x >> 12
            x ^= x << 25
            x ^= x >> 27
            var word = x &* 0x2545_F491_4F6C_DD1D
            for _ in 0..<8 where i < count {
                raw[i] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                i += 1
            }
        }
    }
    return bytes
}

/// The parts, one after another (one call rather than a chain of `+` the type checker weighs).
func bytes(_ parts: [UInt8]...) -> [UInt8] {
    parts.flatMap { $0 }
}

/// The UTF-8 bytes of a text.
func ascii(_ text: String) -> [UInt8] {
    Array(text.utf8)
}
