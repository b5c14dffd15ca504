import Synchronization
import TestSupport
import TonearmBoard
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

/// What a display sent to the daemon and told its log, from any thread.
final class Recorder: Sendable {
    private let state = Mutex<(commands: [BoardCommand], log: [(BoardLogLevel, String)])>(([], []))

    var commands: [BoardCommand] { state.withLock { $0.commands } }
    var log: [String] { state.withLock { $0.log.map(\.1) } }

    func send(_ command: BoardCommand) { state.withLock { $0.commands.append(command) } }
    func log(_ level: BoardLogLevel, _ message: String) { state.withLock { $0.log.append((level, message)) } }

    func waitForCommands(_ count: Int, timeout: Double = 3) -> [BoardCommand] {
        _ = waitUntil(timeout: timeout) { commands.count >= count }
        return commands
    }

    func waitForLog(containing text: String, timeout: Double = 3) -> Bool {
        waitUntil(timeout: timeout) { log.contains { $0.contains(text) } }
    }

    func start(_ display: SerialDisplay) {
        display.start(send: { self.send($0) }, log: { self.log($0, $1) })
    }
}

/// Bytes as text for failure messages: printable ASCII as is, others as <HH>.
func readable(_ bytes: [UInt8]) -> String {
    bytes.map { $0 >= 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : "<" + String($0, radix: 16, uppercase: true) + ">" }.joined()
}

/// Bytes of a string followed by Nextion's terminator.
func nextion(_ instructions: String...) -> [UInt8] {
    instructions.flatMap { Array($0.utf8) + [0xFF, 0xFF, 0xFF] }
}

/// A playing or paused state with the usual commands enabled.
func trackState(
    _ transport: BoardDisplayState.Transport = .playing, title: String? = "So What", artist: String? = "Miles Davis",
    album: String? = "Kind of Blue", duration: Double? = 562, elapsed: Double = 0, timestamp: Double = 1000,
    index: Int? = 0, count: Int = 5, volume: Double = 40, muted: Bool = false,
    enabled: [BoardCommand.Name] = [.play, .pause, .togglePlayPause, .stop, .nextTrack, .previousTrack, .changePlaybackPosition]
) -> BoardDisplayState {
    BoardDisplayState(
        transport: transport, title: title, artist: artist, album: album, duration: duration, elapsed: elapsed,
        rate: transport == .playing ? 1 : 0, timestamp: timestamp, queueIndex: index, queueCount: count,
        volume: volume, muted: muted, enabled: Dictionary(uniqueKeysWithValues: enabled.map { ($0, true) }))
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
