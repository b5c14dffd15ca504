import Glibc
import Synchronization
import SystemPackage
import TestSupport
import TonearmAudio
import TonearmControlPlane
import TonearmSession
import TonearmSystem
import XCTest

@testable import TonearmPCMSessions

/// A stream the test lets take what it likes: it keeps the bytes, takes at most `room` frames,
/// and is finished when the test says.
final class ScriptedInlet: StreamInlet, @unchecked Sendable {
    let format: StreamFormat
    let encoding: DeviceSampleFormat
    private struct State {
        var bytes: [UInt8] = []
        var room = 0
        var ended = false
        var finished = false
        var queued = 0
    }
    private let state = Mutex(State())
    private let wake = Wakeup()

    init(format: StreamFormat, encoding: DeviceSampleFormat) {
        self.format = format
        self.encoding = encoding
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        let frameBytes = format.channels * encoding.bytesPerSample
        return state.withLock { state in
            let frames = min(state.room, bytes.count / frameBytes)
            state.bytes += bytes[0..<(frames * frameBytes)]
            state.room -= frames
            return frames
        }
    }

    var wakeDescriptor: Int32 { wake.descriptor }
    func consumeWake() { wake.consume() }
    var queuedFrames: Int { state.withLock { $0.queued } }
    func end() { state.withLock { $0.ended = true } }
    var isFinished: Bool { state.withLock { $0.finished } }

    /// More room (the producer took frames), as the engine's feed posts it.
    func makeRoom(_ frames: Int, queued: Int) {
        state.withLock {
            $0.room += frames
            $0.queued = queued
        }
        wake.post()
    }

    func finish() {
        state.withLock { $0.finished = true }
        wake.post()
    }

    var bytes: [UInt8] { state.withLock { $0.bytes } }
    var ended: Bool { state.withLock { $0.ended } }
}

final class PCMConnectionTests: XCTestCase {
    var plane: TestControlPlane!
    var program: Int32 = -1
    var connection: PCMConnection!
    var thread: NamedThread?
    final class Inlets: Sendable { let list = Mutex<[ScriptedInlet]>([]) }
    let opened = Inlets()

    override func setUp() {
        plane = TestControlPlane()
        plane.answer { [opened] command in
            guard case .session(let session) = command else { return nil }
            switch session {
            case .open(let setup, _, _):
                let state = SessionState(id: 5, owner: 2, category: setup.category, mode: setup.mode, options: setup.options)
                return CommandResult(status: .success, payload: .session(SessionReport(state: state, output: OutputGain(mixes: false),
                                                                                          gain: 1, stream: nil, ownsNowPlaying: false)))
            case .openInlet(_, let format, let encoding, _):
                let inlet = ScriptedInlet(format: format, encoding: encoding)
                inlet.makeRoom(256, queued: 0)
                opened.list.withLock { $0.append(inlet) }
                return CommandResult(status: .success, payload: .inlet(InletReference(inlet)))
            default:
                return nil
            }
        }
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair), 0)
        program = pair[1]
        connection = PCMConnection(socket: FileDescriptor(rawValue: pair[0]), client: 2, plane: plane, log: .silent)
        let connection = self.connection!
        thread = NamedThread(name: "test-program") { connection.run() }
    }

    override func tearDown() {
        if program >= 0 { close(program) }
        thread?.join()
    }

    // MARK: The program's side

    func send(_ type: Character, epoch: UInt32 = 0, flags: UInt8 = 0, _ body: [UInt8] = []) {
        var message: [UInt8] = [UInt8(ascii: type.unicodeScalars.first!), flags, 0, 0]
        withUnsafeBytes(of: epoch.littleEndian) { message += $0 }
        message += body
        XCTAssertEqual(message.withUnsafeBytes { Glibc.send(program, $0.baseAddress, $0.count, 0) }, message.count)
    }

    func words(_ values: [UInt32]) -> [UInt8] { values.flatMap { value in withUnsafeBytes(of: value.littleEndian) { Array($0) } } }

    /// The next message from the daemon, within 5 s.
    func receive(file: StaticString = #filePath, line: UInt = #line) -> (type: Character, epoch: UInt32, body: [UInt8])? {
        var entry = pollfd(fd: program, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 5000) == 1 else {
            XCTFail("nothing came", file: file, line: line)
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: 70000)
        let count = recv(program, &buffer, buffer.count, 0)
        guard count >= 8 else { return count == 0 ? ("\0", 0, []) : nil }
        let epoch = buffer[4..<8].withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
        return (Character(UnicodeScalar(buffer[0])), epoch, Array(buffer[8..<count]))
    }

    func word(_ body: [UInt8], _ index: Int) -> UInt64 { body.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8 * index, as: UInt64.self) } }

    /// Positions until one says `accepted` frames were taken.
    func waitForPosition(accepted: UInt64, file: StaticString = #filePath, line: UInt = #line) -> [UInt8]? {
        while let message = receive(file: file, line: line) {
            guard message.type == "p" else {
                XCTFail("\(message.type) came before the position", file: file, line: line)
                return nil
            }
            if word(message.body, 0) == accepted { return message.body }
        }
        return nil
    }

    func openAndPrepare(bufferFrames: UInt32 = 1024) {
        send("O", Array(#"{"name":"aplay","preset":"nav","notify":true}"#.utf8))
        let opened = receive()
        XCTAssertEqual(opened?.type, "o")
        XCTAssertEqual(opened.map { word($0.body, 0) }, 5)
        send("F", epoch: 1, words([48000, 2, 1, bufferFrames, 256]))
        XCTAssertEqual(receive()?.type, "f")
    }

    // MARK: Tests

    func testAProgramOpensAtItsPresetAndItsFramesFlowAsTheStreamHasRoom() throws {
        openAndPrepare()
        guard case .session(.open(let setup, false, "aplay"))? = plane.commands.first else {
            return XCTFail("the session opened as \(plane.commands)")
        }
        XCTAssertEqual(setup, SessionSetup(category: .playback, mode: .voicePrompt, options: [.duckOthers, .interruptSpokenAudioAndMixWithOthers]))

        // 512 frames before start: held, nothing taken, no inlet asked for.
        let frames = (0..<(512 * 4)).map { UInt8(truncatingIfNeeded: $0 * 7) }
        send("D", epoch: 1, frames)
        send("S", epoch: 1)
        // The stream had room for 256: the program hears 256 taken, then the rest as room comes.
        let first = try XCTUnwrap(waitForPosition(accepted: 256))
        XCTAssertEqual(word(first, 1), 0)
        guard case .session(.openInlet(5, let format, .s16LE, 1024))? = plane.commands.last else {
            return XCTFail("the inlet opened as \(plane.commands)")
        }
        XCTAssertEqual(format, StreamFormat(sampleRate: 48000, channels: 2, bitsPerSample: 16))
        let inlet = try XCTUnwrap(opened.list.withLock { $0.first })
        inlet.makeRoom(1000, queued: 700)
        let second = try XCTUnwrap(waitForPosition(accepted: 512))
        XCTAssertEqual(word(second, 1), 700, "frames still to be heard")
        XCTAssertEqual(inlet.bytes, frames, "the program's bytes, in order, whole")

        // Frames that find room go straight in.
        send("D", epoch: 1, [UInt8](repeating: 9, count: 400))
        _ = waitForPosition(accepted: 612)

        // Drain: the stream ends, and once it is heard the program is told and the session
        // deactivates, letting what it interrupted resume (notify).
        send("N", epoch: 1)
        XCTAssertTrue(waitUntil(timeout: 5) { inlet.ended }, "the stream was ended")
        inlet.finish()
        var message = receive()
        while message?.type == "p" { message = receive() }
        XCTAssertEqual(message?.type, "n")
        XCTAssertEqual(message?.epoch, 1)
        XCTAssertTrue(waitUntil(timeout: 5) { plane.commands.contains(.session(.deactivate(5, notifyOthers: true))) }, "\(plane.commands)")

        // Closing the PCM: the client leaves, so its session closes.
        close(program)
        program = -1
        XCTAssertTrue(waitUntil(timeout: 5) { plane.clientsLeft == [2] })
    }

    /// alsa-lib drops a running PCM before closing it: a drop, then the end of the connection.
    /// The session still deactivates, letting what it interrupted resume.
    func testAProgramThatDropsAndClosesDeactivatesItsSession() throws {
        openAndPrepare()
        send("D", epoch: 1, [UInt8](repeating: 3, count: 256 * 4))
        send("S", epoch: 1)
        _ = waitForPosition(accepted: 256)
        send("X", epoch: 1)
        XCTAssertTrue(waitUntil(timeout: 5) { plane.commands.contains(.session(.stop(5))) }, "\(plane.commands)")
        XCTAssertFalse(plane.commands.contains(.session(.deactivate(5, notifyOthers: true))), "a drop leaves the session active")
        close(program)
        program = -1
        XCTAssertTrue(waitUntil(timeout: 5) { plane.clientsLeft == [2] })
        XCTAssertEqual(plane.commands.filter { $0 == .session(.deactivate(5, notifyOthers: true)) }.count, 1, "\(plane.commands)")
    }

    func testAnInterruptionSuspendsTheProgramAndItsEndWithShouldResumeResumesIt() {
        openAndPrepare()
        connection.deliver(.interruptionBegan(InterruptionBegan(session: 5, owner: 2, interrupter: 1, reason: .nonMixableActivated)))
        XCTAssertEqual(receive()?.type, "s")
        connection.deliver(.interruptionEnded(InterruptionEnded(session: 5, owner: 2, endedBy: 1, shouldResume: false)))
        connection.deliver(.interruptionEnded(InterruptionEnded(session: 5, owner: 2, endedBy: 1, shouldResume: true)))
        XCTAssertEqual(receive()?.type, "r", "only an end that says resume resumes it")
        connection.deliver(.interruptionBegan(InterruptionBegan(session: 9, owner: 2, interrupter: 1, reason: .nonMixableActivated)))
        send("F", epoch: 2, words([48000, 2, 1, 1024, 256]))
        XCTAssertEqual(receive()?.type, "f", "another session's interruption says nothing to this program")
    }

    func testAProgramThatSendsMoreThanItsBufferOrGarbageIsToldAndClosed() {
        openAndPrepare(bufferFrames: 256)
        send("D", epoch: 1, [UInt8](repeating: 0, count: 256 * 4))
        send("D", epoch: 1, [UInt8](repeating: 0, count: 4))
        let refusal = receive()
        XCTAssertEqual(refusal?.type, "e")
        XCTAssertEqual(refusal.map { String(decoding: $0.body, as: UTF8.self) }, "the program sent more than its buffer of 256 frames ahead of the daemon")
        XCTAssertEqual(receive()?.type, "\0", "and the connection closed")
        XCTAssertTrue(waitUntil(timeout: 5) { plane.clientsLeft == [2] })
    }

    func testFramesOfAnEarlierPrepareAreDroppedAndABadFormatIsRefused() {
        openAndPrepare()
        send("F", epoch: 2, words([48000, 2, 9, 1024, 256]))
        let refusal = receive()
        XCTAssertEqual(refusal?.type, "e")
        XCTAssertEqual(refusal?.epoch, 2)
        send("F", epoch: 3, words([44100, 1, 5, 1024, 256]))
        XCTAssertEqual(receive()?.type, "f")
        send("D", epoch: 2, [UInt8](repeating: 1, count: 8))
        send("S", epoch: 2)
        send("D", epoch: 3, [UInt8](repeating: 2, count: 8))
        send("S", epoch: 3)
        XCTAssertNotNil(waitForPosition(accepted: 2), "the two float frames of epoch 3, not epoch 2's")
        XCTAssertEqual(opened.list.withLock { $0.map(\.bytes) }, [[UInt8](repeating: 2, count: 8)])
    }

    func testTheFirstMessageMustOpen() {
        send("F", epoch: 1, words([48000, 2, 1, 1024, 256]))
        let refusal = receive()
        XCTAssertEqual(refusal?.type, "e")
        XCTAssertEqual(refusal.map { String(decoding: $0.body, as: UTF8.self) }, "the first message must open the session")
    }
}
