import Foundation
import TestSupport
import TonearmControlPlane
import TonearmInput
import XCTest

/// Records written to a real FIFO in the kernel's binary layout, read by a running source.
///
/// Each test ends its records with a sentinel key and waits for it: the reader handles a
/// FIFO's bytes in order, so once the sentinel's command is in, anything the earlier records
/// (wrongly) sent is in too, and comparing the whole list catches it.
final class InputEventTests: XCTestCase {
    override func setUpWithError() throws {
        guard MemoryLayout<Int>.size == 8 else { throw XCTSkip("the records here are the 64-bit layout") }
        signal(SIGPIPE, SIG_IGN)
    }

    func testPressesSendTheirCommandsAndReleasesNothing() throws {
        let fixture = try FIFOFixture()
        let writer = try fixture.writer()
        var bytes: [UInt8] = []
        for code in [keyPlayPause, keyNextSong, keyPreviousSong, keyStopCD, keyStop, keyPause, keyMute, keyVolumeUp, keyVolumeDown, keyA] {
            bytes += press(code)
        }
        try writer.write(bytes + press(keyPlay))
        let expected: [Command] = [
            Command("togglePlayPause"), Command("nextTrack"), Command("previousTrack"), Command("stop"),
            Command("stop"), Command("pause"), Command("toggleMute"), Command("volumeUp"),
            Command("volumeDown"), Command("play"),
        ]
        XCTAssertEqual(fixture.recorder.waitForCommands(expected.count), expected)
        XCTAssertEqual(fixture.recorder.logs, ["input \(fixture.fifo.path): opened"])
    }

    func testAutorepeatRepeatsTheVolumeKeysOnly() throws {
        let fixture = try FIFOFixture()
        let writer = try fixture.writer()
        var bytes = key(keyVolumeUp, 1)
        for _ in 0..<3 { bytes += key(keyVolumeUp, 2) }
        bytes += key(keyVolumeUp, 0) + key(keyVolumeDown, 1) + key(keyVolumeDown, 2) + key(keyVolumeDown, 2) + key(keyVolumeDown, 0)
        bytes += key(keyNextSong, 1)
        for _ in 0..<3 { bytes += key(keyNextSong, 2) }
        bytes += key(keyNextSong, 0) + key(keyPlayPause, 1) + key(keyPlayPause, 2) + key(keyPlayPause, 0)
        try writer.write(bytes + press(keyPlay))
        let expected = Array(repeating: Command("volumeUp"), count: 4) + Array(repeating: Command("volumeDown"), count: 3)
            + [Command("nextTrack"), Command("togglePlayPause"), Command("play")]
        XCTAssertEqual(fixture.recorder.waitForCommands(expected.count), expected)
    }

    func testFastForwardAndRewindBeginOnPressAndEndOnRelease() throws {
        let fixture = try FIFOFixture()
        let writer = try fixture.writer()
        try writer.write(key(keyFastForward, 1) + key(keyFastForward, 2) + key(keyFastForward, 2) + key(keyFastForward, 0)
            + key(keyRewind, 1) + key(keyRewind, 0) + press(keyPlay))
        let expected: [Command] = [
            .seek(.seekForward, .begin), .seek(.seekForward, .end), .seek(.seekBackward, .begin), .seek(.seekBackward, .end),
            Command("play"),
        ]
        XCTAssertEqual(fixture.recorder.waitForCommands(expected.count), expected)
    }

    func testAProfileMapOverridesAndAddsKeys() throws {
        let map = try InputKeyMap(profile: [
            "KEY_F1": Command("nextTrack"),
            "KEY_NEXTSONG": Command("skipForward 30"),
            "30": Command("previousTrack"),
            "KEY_F2": Command("seekForward"),
        ])
        let fixture = try FIFOFixture(keyMap: map)
        let writer = try fixture.writer()
        try writer.write(press(keyF1) + press(keyNextSong) + press(keyA) + key(keyF2, 1) + key(keyF2, 2) + key(keyF2, 0)
            + press(keyPlayPause))
        let expected: [Command] = [
            Command("nextTrack"), Command("skipForward 30"), Command("previousTrack"),
            .seek(.seekForward, .begin), .seek(.seekForward, .end), Command("togglePlayPause"),
        ]
        XCTAssertEqual(fixture.recorder.waitForCommands(expected.count), expected)
    }

    func testEventsOtherThanKeysAreIgnored() throws {
        let fixture = try FIFOFixture()
        let writer = try fixture.writer()
        var bytes: [UInt8] = []
        // The same code and value as a key press, under every other type.
        for type in [evSyn, evRel, evAbs, evMsc, 0x11 /* EV_LED */, 0x14 /* EV_REP */] {
            bytes += record(type: type, code: keyNextSong, value: 1)
        }
        bytes += record(type: evSyn, code: 0, value: 0) + record(type: evMsc, code: 4, value: Int32(keyPlayPause))
        try writer.write(bytes + press(keyPlay))
        XCTAssertEqual(fixture.recorder.waitForCommands(1), [Command("play")])
    }

    func testARecordSplitAcrossWritesStillDecodes() throws {
        let fixture = try FIFOFixture()
        let writer = try fixture.writer()
        let first = record(type: evKey, code: keyNextSong, value: 1)
        let second = record(type: evKey, code: keyPlayPause, value: 1)
        try writer.write(Array(first[..<10]))
        usleep(30_000)  // the reader has the first 10 bytes by itself
        try writer.write(Array(first[10...]) + Array(second[..<23]))
        XCTAssertEqual(fixture.recorder.waitForCommands(1), [Command("nextTrack")])
        usleep(30_000)
        XCTAssertEqual(fixture.recorder.commands, [Command("nextTrack")], "23 bytes are not a record")
        try writer.write([second[23]])
        XCTAssertEqual(fixture.recorder.waitForCommands(2), [Command("nextTrack"), Command("togglePlayPause")])
    }

    func testANewWriterAfterTheFirstClosesIsRead() throws {
        let fixture = try FIFOFixture()
        let path = fixture.fifo.path
        let first = try fixture.writer()
        try first.write(press(keyPlayPause))
        fixture.recorder.waitForCommands(1)
        first.close()
        XCTAssertTrue(fixture.recorder.waitForLog(containing: "gone"), "\(fixture.recorder.logs)")

        let second = try fixture.writer()
        try second.write(press(keyNextSong))
        XCTAssertEqual(fixture.recorder.waitForCommands(2), [Command("togglePlayPause"), Command("nextTrack")])
        XCTAssertEqual(fixture.recorder.logs, [
            "input \(path): opened",
            "input \(path): gone (end of file); waiting for it",
            "input \(path): opened",
        ])
    }

    func testAScanHeldWhenTheDeviceGoesIsEnded() throws {
        let fixture = try FIFOFixture()
        let writer = try fixture.writer()
        try writer.write(key(keyFastForward, 1) + key(keyFastForward, 2))
        fixture.recorder.waitForCommands(1)
        writer.close()
        XCTAssertEqual(fixture.recorder.waitForCommands(2), [.seek(.seekForward, .begin), .seek(.seekForward, .end)])
    }
}
