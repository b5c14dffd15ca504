import Foundation
import Glibc
import Synchronization
import TestSupport
import TonearmAudio
@testable import TonearmPlayback
import XCTest

/// Counts an engine's announcements (`notify`).
final class Announcements: Sendable {
    private let count = Mutex(0)

    var notify: @Sendable () -> Void { { [self] in count.withLock { $0 += 1 } } }
    var calls: Int { count.withLock { $0 } }
}

/// The engine announces what `nextEvents` has to say: every kind of event is collected here only
/// after a call of `notify`, and nothing is announced while nothing happens. A daemon that
/// polled every 50 ms woke a thousand times in 10 s doing nothing.
final class EventAnnouncementTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    private func fixture(_ name: String, seconds: Double, sampleRate: Int = 48000) throws -> String {
        try FLACFixture(frames: Int(seconds * Double(sampleRate)), sampleRate: sampleRate, channels: 2,
                        tones: [Tone(440, level: 0.5)]).write(to: directory.file(name))
    }

    private func engine(_ announcements: Announcements, device: String = "null", items: [EngineItem] = [],
                        configure: (inout PlaybackOptions) -> Void = { _ in },
                        upcoming: (@Sendable (Int) -> EngineItem?)? = nil,
                        beforeStart: (PlaybackEngine) -> Void = { _ in }) -> PlaybackEngine {
        var options = PlaybackOptions()
        options.device = device
        configure(&options)
        let engine = PlaybackEngine(options: options, notify: announcements.notify,
                                    upcoming: upcoming ?? { id in items.first(where: { $0.id == id + 1 }) })
        beforeStart(engine)
        engine.start()
        addTeardownBlock { engine.shutdown() }
        return engine
    }

    /// Collects events only after announcements, until one matches `match`; all collected so
    /// far, or nil when none matched within `seconds`.
    private func collect(_ engine: PlaybackEngine, _ announcements: Announcements, within seconds: Double = 10,
                         until match: (PlaybackEvent) -> Bool) -> [PlaybackEvent]? {
        var events: [PlaybackEvent] = []
        var handled = 0
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let calls = announcements.calls
            guard calls > handled else {
                usleep(1000)
                continue
            }
            handled = calls
            let batch = engine.nextEvents(now: monotonicSeconds())
            events += batch
            if batch.contains(where: match) { return events }
        }
        return nil
    }

    /// No announcement for `seconds`, and nothing to collect.
    private func assertQuiet(_ engine: PlaybackEngine, _ announcements: Announcements, for seconds: Double,
                             _ when: String, file: StaticString = #filePath, line: UInt = #line) {
        let before = announcements.calls
        usleep(UInt32(seconds * 1_000_000))
        XCTAssertEqual(announcements.calls, before, "announced \(when) with nothing new", file: file, line: line)
        XCTAssertEqual(engine.nextEvents(now: monotonicSeconds()).count, 0, "unannounced events \(when)", file: file, line: line)
    }

    func testNothingIsAnnouncedWhileNothingHappens() throws {
        let path = try fixture("short.flac", seconds: 0.25)
        let announcements = Announcements()
        let engine = engine(announcements)
        // What starting up says (a refused SCHED_FIFO when not privileged), then nothing.
        usleep(200_000)
        if announcements.calls > 0 { _ = engine.nextEvents(now: monotonicSeconds()) }
        assertQuiet(engine, announcements, for: 0.5, "while idle")

        engine.play(EngineItem(id: 0, path: path))
        XCTAssertNotNil(collect(engine, announcements) { if case .endOfQueue = $0 { true } else { false } }, "never ended")
        assertQuiet(engine, announcements, for: 0.5, "after the end of the queue")

        engine.pause()
        engine.resume()
        assertQuiet(engine, announcements, for: 0.3, "after a pause and a resume at the end")
    }

    func testStartsFailuresAndTheEndOfTheQueueAreAnnounced() throws {
        let items = [
            EngineItem(id: 0, path: try fixture("one.flac", seconds: 0.25)),
            EngineItem(id: 1, path: directory.file("missing.flac")),
            EngineItem(id: 2, path: try fixture("three.flac", seconds: 0.25, sampleRate: 44100)),
        ]
        let announcements = Announcements()
        let engine = engine(announcements, items: items)
        let request = engine.play(items[0])
        let events = try XCTUnwrap(collect(engine, announcements) { if case .endOfQueue = $0 { true } else { false } },
                                   "the queue never ended")
        var starts: [ItemStart] = []
        var failures: [Int] = []
        for event in events {
            if case .itemStarted(let start) = event { starts.append(start) }
            if case .itemFailed(let id, _) = event { failures.append(id) }
        }
        XCTAssertEqual(starts.map(\.itemID), [0, 2])
        XCTAssertTrue(starts.allSatisfy { $0.request == request && $0.heardAt.isFinite })
        XCTAssertEqual(failures, [1])
    }

    func testAStartWhilePausedIsAnnounced() throws {
        let path = try fixture("long.flac", seconds: 30)
        let announcements = Announcements()
        let engine = engine(announcements)
        engine.play(EngineItem(id: 0, path: path))
        XCTAssertNotNil(collect(engine, announcements) { if case .itemStarted = $0 { true } else { false } })
        engine.pause()
        XCTAssertTrue(waitUntil(5) { engine.isPausedOrIdle }, "never paused")
        // A seek while paused: its start is reached, and no period follows it.
        let request = engine.play(EngineItem(id: 0, path: path), from: 10, resume: false)
        let events = collect(engine, announcements) {
            if case .itemStarted(let start) = $0 { start.request == request } else { false }
        }
        XCTAssertNotNil(events, "the start of a seek while paused was not announced")
    }

    func testAStreamHeardToItsEndIsAnnounced() throws {
        let path = try fixture("chime.flac", seconds: 0.25)
        let announcements = Announcements()
        let engine = engine(announcements)
        let handle = try engine.startStream(path: path)
        let events = collect(engine, announcements) {
            if case .streamFinished(let finished) = $0 { finished == handle } else { false }
        }
        XCTAssertNotNil(events, "the end of the stream was not announced")
        XCTAssertTrue(engine.streamFinished(handle))
        // The slot is reused; the next stream's end is its own event.
        let again = try engine.startStream(path: path)
        XCTAssertEqual(again.slot, handle.slot)
        XCTAssertNotNil(collect(engine, announcements) {
            if case .streamFinished(let finished) = $0 { finished == again } else { false }
        })
    }

    func testRefusedRealtimeAndMemoryLockAreAnnounced() throws {
        let announcements = Announcements()
        // An impossible priority is refused (EINVAL) even when privileged; the memory lock is
        // refused by a stand-in, as a low RLIMIT_MEMLOCK would refuse it.
        let engine = engine(announcements, configure: { $0.realtimePriority = 1000 },
                            beforeStart: { $0.lockMemoryRegions = { _ in ENOMEM } })
        var realtime = false
        var memory = false
        XCTAssertNotNil(collect(engine, announcements) { event in
            if case .realtimeRefused = event { realtime = true }
            if case .memoryLockRefused = event { memory = true }
            return realtime && memory
        }, "realtime refused: \(realtime), memory lock refused: \(memory)")
    }

    /// A device that cannot be opened interrupts; once it can, it reopens and is heard again.
    func testAnOutputThatOpensLateIsAnnounced() throws {
        let config = directory.file("asound.conf")
        let include = "</usr/share/alsa/alsa.conf>\n"
        try include.write(toFile: config, atomically: true, encoding: .utf8)
        setenv("ALSA_CONFIG_PATH", config, 1)
        addTeardownBlock { unsetenv("ALSA_CONFIG_PATH") }
        let path = try fixture("long.flac", seconds: 30)
        let announcements = Announcements()
        let engine = engine(announcements, device: "tonearmlater", configure: { $0.reopenIntervalMilliseconds = 50 })
        engine.play(EngineItem(id: 0, path: path))
        XCTAssertNotNil(collect(engine, announcements) {
            if case .outputInterrupted(.unavailable, _) = $0 { true } else { false }
        }, "the device that is not there was not announced")

        try (include + "pcm.tonearmlater { type null }\n").write(toFile: config, atomically: true, encoding: .utf8)
        var reopened = false
        let events = collect(engine, announcements) { event in
            if case .deviceReopened = event { reopened = true }
            if case .outputResumed = event { return reopened }
            return false
        }
        XCTAssertNotNil(events, "reopened: \(reopened)")
    }

    /// On a device that keeps time, a decoder that falls behind makes underruns, and a device
    /// that stops responding (its JACK server killed) interrupts, then reopens and resumes.
    func testUnderrunsAndAStalledDeviceAreAnnounced() throws {
        let jack = try JackServer(directory: directory)
        let alsa = try ALSAConfig(directory: directory, jackServerName: jack.name)
        for (name, value) in alsa.environment { setenv(name, value, 1) }
        addTeardownBlock { for name in alsa.environment.keys { unsetenv(name) } }
        let first = EngineItem(id: 0, path: try fixture("first.flac", seconds: 0.5))
        let second = EngineItem(id: 1, path: try fixture("second.flac", seconds: 20))
        let announcements = Announcements()
        // The decoder is held up at the end of the first file, long enough to empty a small
        // read-ahead and the device buffer.
        let engine = engine(announcements, device: "paced", configure: {
            $0.readAheadSeconds = 0.1
            $0.stallTimeoutMilliseconds = 300
            $0.reopenIntervalMilliseconds = 100
        }, upcoming: { id in
            guard id == 0 else { return nil }
            usleep(300_000)
            return second
        })
        engine.play(first)
        var underran = false
        var secondStarted = false
        XCTAssertNotNil(collect(engine, announcements) { event in
            if case .underruns(let total) = event, total > 0 { underran = true }
            if case .itemStarted(let start) = event, start.itemID == 1 { secondStarted = true }
            return underran && secondStarted
        }, "underran: \(underran), second item started: \(secondStarted)")
        jack.kill()
        XCTAssertNotNil(collect(engine, announcements) {
            if case .outputInterrupted(.stalled, _) = $0 { true } else { false }
        }, "the stall was not announced")
        try jack.start()
        var reopened = false
        XCTAssertNotNil(collect(engine, announcements, within: 20) { event in
            if case .deviceReopened = event { reopened = true }
            if case .outputResumed = event { return reopened }
            return false
        }, "reopened: \(reopened)")
    }

    /// Idle, the decoder and output threads sleep until given work: no wake-ups at all.
    func testIdleThreadsSleep() throws {
        let path = try fixture("short.flac", seconds: 0.25)
        let announcements = Announcements()
        let engine = engine(announcements)
        usleep(100_000)
        assertAsleep("idle before anything played")

        engine.play(EngineItem(id: 0, path: path))
        XCTAssertNotNil(collect(engine, announcements) { if case .endOfQueue = $0 { true } else { false } })
        usleep(100_000)
        assertAsleep("at the end of the queue")
        _ = engine
    }

    private func assertAsleep(_ when: String, file: StaticString = #filePath, line: UInt = #line) {
        let before = contextSwitches()
        usleep(500_000)
        let after = contextSwitches()
        for name in ["tonearm-decoder", "tonearm-output"] {
            let woke = (after[name] ?? 0) - (before[name] ?? 0)
            XCTAssertLessThanOrEqual(woke, 1, "\(name) woke \(woke) times in 0.5 s \(when)", file: file, line: line)
        }
    }

    /// Context switches of this process's threads, summed by thread name.
    private func contextSwitches() -> [String: Int] {
        var counts: [String: Int] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                  let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8) else { continue }
            let switches = status.split(separator: "\n")
                .filter { $0.hasPrefix("voluntary_ctxt_switches") || $0.hasPrefix("nonvoluntary_ctxt_switches") }
                .compactMap { Int($0.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)) }
                .reduce(0, +)
            counts[name.trimmingCharacters(in: .whitespacesAndNewlines), default: 0] += switches
        }
        return counts
    }
}
