import Foundation
import Synchronization
import TestSupport
import XCTest

// The abuse suite's yardstick: while an attack runs against the playing daemon, another client
// keeps asking `status` on the control socket, and the daemon's memory and descriptors are
// watched from /proc. A stall shows as answers seconds late; a leak as descriptors or memory
// that do not come back.

/// What one attack did to the daemon, seen from outside.
struct AttackReport: CustomStringConvertible {
    let attack: String
    /// How long each `status` asked while the attack ran took to be answered.
    let statusSeconds: [Double]
    let median: Double
    let maximum: Double
    let rssStartKB: Int
    let rssPeakKB: Int
    let rssEndKB: Int
    let fdsStart: Int
    let fdsEnd: Int
    /// How long each round of the attack took.
    let roundSeconds: [Double]

    var description: String {
        func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
        let rounds = roundSeconds.sorted()
        return "\(attack): \(roundSeconds.count) rounds (median \(ms(rounds.isEmpty ? 0 : rounds[rounds.count / 2]))); "
            + "status ×\(statusSeconds.count) median \(ms(median)), max \(ms(maximum)); "
            + "RSS \(rssStartKB / 1024) → peak \(rssPeakKB / 1024) → \(rssEndKB / 1024) MB; fds \(fdsStart) → \(fdsEnd)"
    }
}

/// What the attacking thread and the watcher share.
private final class AttackProgress: Sendable {
    struct State {
        var roundSeconds: [Double] = []
        var attackFailure: String?
        var attackDone = false
        var answered = 0
    }

    let state = Mutex(State())
}

/// A daemon's resident size and open descriptors, from /proc.
struct ProcessFootprint {
    let pid: Int32

    var residentKB: Int {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    var descriptors: Int { ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count }
}

extension DaemonBench {
    /// Plays `track` (a 60 s fixture of the bench's own when nil) on the paced device, over
    /// and over (`repeat one`: an attack on a busy machine may outlast it, and the player must
    /// still be playing after); returns once it plays on an open device.
    func playForAbuse(_ track: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws {
        let path = try track ?? fixture("abuse.flac", taggedFixture(1, seconds: 60))
        try ok(["add", path], file: file, line: line)
        try ok(["repeat", "one"], file: file, line: line)
        try ok(["play"], file: file, line: line)
        try waitForStatus(timeout: 10, file: file, line: line, "playing on an open device") {
            $0.string("state") == "playing" && $0.object("device")?.string("state") == "open"
        }
    }

    /// Runs `round` again and again on a thread of its own until `rounds` rounds have finished
    /// and at least `statusAnswers` `status` requests were answered meanwhile on the control
    /// socket; then checks what the daemon went through. Fails (naming `attack`) when the
    /// statuses were not answered while the attack went on (a daemon the attack starves answers
    /// them late, after it, or not at all), one stalled (5 s), an underrun happened, the peak RSS
    /// grew by more than 10 MB, the descriptors and memory did not come back within 10 s of the
    /// end, or the saved state is no longer readable. How long the statuses took is printed, a
    /// benchmark's figure: on a busy machine it says more about the machine.
    @discardableResult
    func withstands(_ attack: String, rounds: Int = 1, statusAnswers: Int = 5, file: StaticString = #filePath, line: UInt = #line,
                    _ round: @escaping @Sendable () throws -> Void) throws -> AttackReport {
        guard let pid = daemon.pid else { throw TestSupportError("\(attack): tonearmd is not running") }
        let footprint = ProcessFootprint(pid: pid)
        let underrunsBefore = try status(file: file, line: line).object("device")?.int("underruns") ?? 0
        let (rssStart, fdsStart) = (footprint.residentKB, footprint.descriptors)
        let savedBefore = daemon.savedState() != nil

        let shared = AttackProgress()
        let attacker = Thread {
            // Rounds go on until the watcher has seen enough answers; a round that stalls the
            // daemon shows as late answers, never as a wait here.
            let limit = monotonicSeconds() + 120
            while true {
                let enough = shared.state.withLock { $0.roundSeconds.count >= rounds && $0.answered >= statusAnswers }
                if enough || monotonicSeconds() > limit { break }
                let started = monotonicSeconds()
                do {
                    try round()
                } catch {
                    shared.state.withLock { $0.attackFailure = "\(error)" }
                    break
                }
                let took = monotonicSeconds() - started
                shared.state.withLock { $0.roundSeconds.append(took) }
            }
            shared.state.withLock { $0.attackDone = true }
        }
        attacker.start()

        var seconds: [Double] = []
        var rssPeak = rssStart
        var watcherFailure: String?
        var client = try daemon.connect()
        while !shared.state.withLock({ $0.attackDone }) {
            let asked = monotonicSeconds()
            do {
                let answer = try client.request("status", timeout: 10)
                guard answer.bool("ok") == true else { throw TestSupportError("status answered \(jsonText(answer))") }
            } catch {
                watcherFailure = "status during the attack: \(error)"
                client.close()
                client = try daemon.connect()
                continue
            }
            seconds.append(monotonicSeconds() - asked)
            rssPeak = max(rssPeak, footprint.residentKB)
            shared.state.withLock { $0.answered += 1 }
            // Not a clock the test waits on: a breath between questions so the watcher does not
            // become an attack of its own.
            usleep(10_000)
        }
        client.close()
        let outcome = shared.state.withLock { $0 }

        // What the attack left behind goes away once its connections have closed.
        _ = waitUntil(timeout: 10) { footprint.descriptors <= fdsStart && footprint.residentKB <= rssStart + 10 * 1024 }
        let (rssEnd, fdsEnd) = (footprint.residentKB, footprint.descriptors)
        let sorted = seconds.sorted()
        let report = AttackReport(attack: attack, statusSeconds: seconds, median: sorted.isEmpty ? .infinity : sorted[sorted.count / 2],
                                  maximum: sorted.last ?? .infinity, rssStartKB: rssStart, rssPeakKB: max(rssPeak, rssEnd),
                                  rssEndKB: rssEnd, fdsStart: fdsStart, fdsEnd: fdsEnd, roundSeconds: outcome.roundSeconds)
        print("abuse: \(report)")

        func fail(_ message: String) { XCTFail("\(attack): \(message)\n\(report)\n\(daemonReport(daemon))", file: file, line: line) }
        if let failure = outcome.attackFailure { fail("the attack itself failed: \(failure)") }
        if let failure = watcherFailure { fail(failure) }
        if outcome.roundSeconds.count < rounds { fail("only \(outcome.roundSeconds.count) of \(rounds) rounds finished in 120 s") }
        if seconds.count < statusAnswers { fail("status was answered \(seconds.count) times while the attack ran") }
        if report.maximum > 5 { fail("a status stalled: it took \(report.maximum) s") }
        if rssPeak > rssStart + 10 * 1024 { fail("RSS grew by \((rssPeak - rssStart) / 1024) MB") }
        if rssEnd > rssStart + 10 * 1024 { fail("RSS stayed \((rssEnd - rssStart) / 1024) MB above the start") }
        if fdsEnd > fdsStart { fail("\(fdsEnd - fdsStart) descriptors were not given back") }
        if savedBefore && daemon.savedState() == nil { fail("the saved state is gone or unreadable") }
        let after = try status(file: file, line: line)
        let underruns = (after.object("device")?.int("underruns") ?? 0) - underrunsBefore
        if underruns != 0 { fail("\(underruns) underruns during the attack") }
        if after.string("state") != "playing" { fail("the player is \(after.string("state") ?? "?") after the attack") }
        return report
    }
}
