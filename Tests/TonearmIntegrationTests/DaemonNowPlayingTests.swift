import Foundation
import TestSupport
import XCTest

/// What a Now Playing subscriber sees: one publication per event, in order, never on a timer,
/// and an `elapsed` that extrapolates to the real position: no less than the audio that reached
/// the device (`pacedsplitcapture`), however long a busy machine took to start it, and no more
/// than the time since the command was sent. Elapsed runs on the clock, as it must for a sound
/// card; the JACK dummy device, a process like any other, falls behind it on a busy machine.
final class DaemonNowPlayingTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    func testPublicationLog() throws {
        let world = try DaemonBench(device: "pacedsplitcapture")
        // Long enough that nothing ends by itself during the session and the quiet period.
        let tracks = try (1...2).map { try world.fixture("np\($0).flac", taggedFixture($0, seconds: 12)) }
        let control = try world.daemon.connect()
        let subscriber = try world.daemon.connect()
        // A device slower to start than the start tolerance adds a correction after a play,
        // seek or skip; this log is of the commands' own publications.
        subscriber.setsAsideStartCorrections = true
        let subscribed = try subscriber.result("subscribe", ["topics": ["nowPlaying"]])
        XCTAssertEqual(subscribed.array("topics") as? [String], ["nowPlaying"], jsonText(subscribed))

        // The add's own publication comes (a subscriber may hear it after the add is answered);
        // the log below starts after it.
        let added = try control.result("add", ["paths": tracks])
        XCTAssertEqual(added.int("added"), 2, jsonText(added))
        subscriber.collectEvents(timeout: 2, until: 1)
        XCTAssertEqual(subscriber.events.map { $0.message.object("data")?.string("reason") }, ["queueChanged"],
                       subscriber.events.map { jsonText($0.message) }.joined(separator: "\n"))
        subscriber.events.removeAll()

        var expected: [(reason: String, replace: Bool)] = []
        var sent: [String: Double] = [:]
        /// Sends a command and waits for the one publication it should cause.
        func step(_ command: String, _ arguments: [String: Any] = [:], expect reason: String, replace: Bool,
                  file: StaticString = #filePath, line: UInt = #line) throws {
            sent[command] = monotonicSeconds()
            let answer = try control.result(command, arguments)
            XCTAssertEqual(answer.string("status"), "success", "\(command): \(jsonText(answer))", file: file, line: line)
            expected.append((reason, replace))
            subscriber.collectEvents(timeout: 30, until: expected.count)
        }
        /// The subscriber's clock (the latest of `event` and the start corrections after it,
        /// extrapolated) from `position` is at least the audio captured since `capturedAtStart`
        /// and at most the time since `sentAt`, give or take the buffers.
        func assertExtrapolatesToHeard(_ event: (received: Double, message: [String: Any]), from position: Double,
                                       capturedAtStart: Double, sentAt: Double, slack: Double, _ what: String,
                                       file: StaticString = #filePath, line: UInt = #line) throws {
            let latest = ([event] + subscriber.startCorrections.filter { $0.received >= event.received })
                .max { $0.received < $1.received } ?? event
            let before = try world.capturedSeconds() - capturedAtStart
            let extrapolated = extrapolatedElapsed(latest)
            let since = monotonicSeconds() - sentAt
            let message = "\(what): extrapolated \(extrapolated) s, from \(position) s with \(before) s captured, \(since) s since the command: \(jsonText(latest.message))"
            XCTAssertGreaterThanOrEqual(extrapolated, position + before - slack, message, file: file, line: line)
            XCTAssertLessThanOrEqual(extrapolated, position + since + slack, message, file: file, line: line)
        }

        // The first play makes Track 1 current where nothing was: a full replacement, like a
        // track change. Pause, resume and seeks are merged partial updates.
        try step("play", expect: "playbackStarted", replace: true)
        // Once a second has reached the device, the published clock says what was heard.
        let opened = try world.waitForStatus(timeout: 30, "a second played") {
            $0.object("device")?.string("state") == "open" && ($0.double("elapsed") ?? 0) >= 1
        }
        let slack = DaemonBench.captureSlack(opened)
        if let started = subscriber.events.first {
            try assertExtrapolatesToHeard(started, from: 0, capturedAtStart: 0, sentAt: sent["play"]!, slack: slack,
                                          "the published clock after the play")
        }

        try step("pause", expect: "paused", replace: false)
        try step("play", expect: "resumed", replace: false)
        try step("seek", ["position": 5.0], expect: "seek", replace: false)
        try step("next", expect: "trackChanged", replace: true)
        try step("skip", ["seconds": 2.0], expect: "seek", replace: false)
        // Counted from once the skip is published: what the device took before that (the end of
        // the audio before the skip, longer the busier the machine) is no audio from 2 s on.
        let capturedAtSkip = try world.capturedSeconds()

        // Three seconds of playing: nothing is published on a timer.
        let before = subscriber.events.count
        subscriber.collectEvents(timeout: 3)
        let quiet = subscriber.events[before...].map { jsonText($0.message) }
        XCTAssertEqual(quiet, [], "published while nothing happened")

        // Play, seek, next and skip each start the device anew: at most one correction each.
        XCTAssertLessThanOrEqual(subscriber.startCorrections.count, 4, "\(subscriber.startCorrections.map { jsonText($0.message) })")
        let events = subscriber.events
        let reasons = events.map { $0.message.object("data")?.string("reason") ?? "?" }
        XCTAssertEqual(reasons, expected.map(\.reason), "publication reasons:\n" + events.map { jsonText($0.message) }.joined(separator: "\n"))
        for (event, want) in zip(events, expected) {
            XCTAssertEqual(event.message.string("event"), "nowPlaying")
            let data = event.message.object("data") ?? [:]
            XCTAssertEqual(data.bool("replace"), want.replace, "replace on \(want.reason): \(jsonText(data))")
            let info = data.object("info") ?? [:]
            for key in ["elapsed", "rate", "timestamp", "age"] {
                XCTAssertNotNil(info.double(key), "\(want.reason): no \(key) in \(jsonText(info))")
            }
        }
        if events.count == expected.count {
            let infos = events.map { $0.message.object("data")?.object("info") ?? [:] }
            XCTAssertEqual(infos[0].string("title"), "Track 1")
            XCTAssertEqual(infos[0].double("rate"), 1)
            XCTAssertEqual(infos[1].double("rate"), 0, "paused")
            XCTAssertEqual(infos[2].double("rate"), 1, "resumed")
            XCTAssertEqual(infos[2].double("elapsed") ?? -1, infos[1].double("elapsed") ?? -2, accuracy: 0.05,
                           "resumed somewhere else than it paused")
            XCTAssertEqual(infos[3].double("elapsed") ?? -1, 5, accuracy: 0.05, "seek")
            XCTAssertEqual(infos[4].string("title"), "Track 2")
            XCTAssertEqual(infos[4].int("queueIndex"), 1)
            XCTAssertEqual(infos[4].double("elapsed") ?? -1, 0, accuracy: 0.05, "track change")
            XCTAssertEqual(infos[5].string("title"), "Track 2")
            XCTAssertEqual(infos[5].double("elapsed") ?? -1, 2, accuracy: 0.1, "skip +2 from the start of track 2")
            // Still extrapolating correctly after the quiet period: the skip's target and the
            // audio heard since.
            try assertExtrapolatesToHeard(events[5], from: infos[5].double("elapsed") ?? 0, capturedAtStart: capturedAtSkip,
                                          sentAt: sent["skip"]!, slack: slack, "the published clock after 3 s without publications")
            // And the daemon's own status agrees with what the subscriber last heard: the skip's
            // publication, or the correction of its start when the device took longer to start
            // again (set aside above, but a display applies it). The status is asked between two
            // readings of the subscriber's clock.
            let latest = ([events[5]] + subscriber.startCorrections.filter { $0.received >= events[5].received })
                .max { $0.received < $1.received } ?? events[5]
            let before = extrapolatedElapsed(latest)
            let status = try world.status()
            let after = extrapolatedElapsed(latest)
            let elapsed = status.double("elapsed") ?? -1
            XCTAssertGreaterThanOrEqual(elapsed, before - 0.05, jsonText(status))
            XCTAssertLessThanOrEqual(elapsed, after + 0.05, jsonText(status))
            XCTAssertEqual(status.object("device")?.int("underruns"), 0, jsonText(status))
        }
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }

    /// info.elapsed + rate × (age + time since the event was read).
    private func extrapolatedElapsed(_ event: (received: Double, message: [String: Any])) -> Double {
        let info = event.message.object("data")?.object("info") ?? [:]
        let elapsed = info.double("elapsed") ?? .nan
        let rate = info.double("rate") ?? .nan
        let age = info.double("age") ?? .nan
        return elapsed + rate * (age + monotonicSeconds() - event.received)
    }
}
