import TonearmAudio
import TonearmControlPlane
import TonearmSession
import XCTest

@testable import TonearmPCMSessions

/// What the plugin's messages mean: the open request's presets and overrides, and the format.
final class PCMWireTests: XCTestCase {
    func open(_ json: String) -> Result<PCMWire.Open, WireError> { PCMWire.open(json) }

    func testEachPresetIsItsCategoryModeAndOptions() throws {
        let expected: [(String, SessionCategory, SessionMode, SessionOptions, Bool)] = [
            ("media", .playback, .default, [], true),
            ("nav", .playback, .voicePrompt, [.duckOthers, .interruptSpokenAudioAndMixWithOthers], false),
            ("call", .playAndRecord, .voiceChat, [], false),
            ("chime", .ambient, .default, [], false),
        ]
        XCTAssertEqual(expected.map(\.0), SessionPreset.allCases.map(\.rawValue), "every preset is checked")
        for (preset, category, mode, options, remote) in expected {
            let request = try open(#"{"name":"aplay","preset":"\#(preset)","category":"","mode":"","options":[],"notify":true,"pid":1}"#).get()
            XCTAssertEqual(request.setup, SessionSetup(category: category, mode: mode, options: options), preset)
            XCTAssertEqual(request.remoteCommands, remote, "\(preset) takes remote commands")
            XCTAssertEqual(request.name, "aplay")
            XCTAssertTrue(request.notify)
        }
    }

    func testWhatIsGivenBesideAPresetReplacesItsOwn() throws {
        let request = try open(#"{"name":"x","preset":"nav","category":"ambient","mode":"default","options":["mixWithOthers"],"notify":false}"#).get()
        XCTAssertEqual(request.setup, SessionSetup(category: .ambient, mode: .default, options: [.mixWithOthers]))
        XCTAssertFalse(request.notify)
        XCTAssertFalse(request.remoteCommands, "a preset decides remote commands")
    }

    func testWithoutAPresetAProgramIsAMusicPlayerUnlessItMixes() throws {
        let plain = try open(#"{"name":"","preset":"","category":"","mode":"","options":[],"notify":true}"#).get()
        XCTAssertEqual(plain.setup, SessionSetup(category: .playback))
        XCTAssertTrue(plain.remoteCommands)
        XCTAssertEqual(plain.name, "program", "an empty name is the fallback's")
        let mixing = try open(#"{"options":["duckOthers"]}"#).get()
        XCTAssertFalse(mixing.remoteCommands, "duckOthers mixes")
        let ambient = try open(#"{"category":"ambient"}"#).get()
        XCTAssertFalse(ambient.remoteCommands)
        XCTAssertTrue(ambient.notify, "notify is on unless it is turned off")
    }

    func testEveryBadOpenRequestSaysWhatIsWrong() {
        let cases: [(String, String)] = [
            ("{", "is not JSON"),
            ("[1]", "is not a JSON object"),
            (#"{"preset":"loud"}"#, "there is no preset 'loud' (presets: media, nav, call, chime)"),
            (#"{"category":"music"}"#, "there is no category 'music'"),
            (#"{"mode":"quiet"}"#, "there is no mode 'quiet'"),
            (#"{"options":["duck"]}"#, "there is no option \"duck\""),
            (#"{"options":[3]}"#, "there is no option 3"),
        ]
        for (json, message) in cases {
            switch open(json) {
            case .success(let request): XCTFail("\(json) was taken as \(request)")
            case .failure(let error): XCTAssertTrue(error.description.contains(message), "\(json): \(error)")
            }
        }
    }

    func format(_ words: [UInt32]) -> Result<PCMWire.Format, WireError> {
        words.map(\.littleEndian).withUnsafeBytes { PCMWire.format($0) }
    }

    func testFormatsTheDaemonTakesAndThoseItRefuses() throws {
        let encodings: [UInt32: DeviceSampleFormat] = [1: .s16LE, 2: .s24LE, 3: .s24_3LE, 4: .s32LE, 5: .floatLE]
        for (code, encoding) in encodings {
            let taken = try format([44100, 2, code, 8192, 1024]).get()
            XCTAssertEqual(taken, PCMWire.Format(rate: 44100, channels: 2, encoding: encoding, bufferFrames: 8192, periodFrames: 1024))
            XCTAssertEqual(taken.frameBytes, 2 * encoding.bytesPerSample)
            XCTAssertEqual(taken.stream, StreamFormat(sampleRate: 44100, channels: 2, bitsPerSample: encoding.significantBits))
        }
        XCTAssertNoThrow(try format([8000, 1, 1, 64, 32]).get())
        XCTAssertNoThrow(try format([384_000, 8, 5, 384_000, 1024]).get())
        let refused: [([UInt32], String)] = [
            ([48000, 2, 0, 4096, 1024], "sample format 0"),
            ([48000, 2, 6, 4096, 1024], "sample format 6"),
            ([7999, 2, 1, 4096, 1024], "rate must be 8000 to 384000 Hz, not 7999"),
            ([384_001, 2, 1, 4096, 1024], "not 384001"),
            ([48000, 0, 1, 4096, 1024], "1 to 8 channels, not 0"),
            ([48000, 9, 1, 4096, 1024], "not 9"),
            ([48000, 2, 1, 512, 1024], "a buffer of 512 frames in periods of 1024"),
            ([48000, 2, 1, 4096, 0], "periods of 0"),
            ([48000, 2, 1, 2_000_000, 1024], "a buffer of 2000000 frames"),
            ([48000, 2, 1, 4096], "holds 20 bytes after its header, not 16"),
        ]
        for (words, message) in refused {
            switch format(words) {
            case .success(let taken): XCTFail("\(words) was taken as \(taken)")
            case .failure(let error): XCTAssertTrue(error.description.contains(message), "\(words): \(error)")
            }
        }
    }

    func testMessagesAreAHeaderThenTheirWords() {
        let message = PCMWire.message(.position, epoch: 7, words: [1, UInt64(bitPattern: -2), 3])
        XCTAssertEqual(message.count, 8 + 24)
        message.withUnsafeBytes { raw in
            XCTAssertEqual(PCMWire.header(raw), PCMWire.Header(type: UInt8(ascii: "p"), flags: 0, epoch: 7))
            XCTAssertEqual(raw.loadUnaligned(fromByteOffset: 16, as: Int64.self), -2)
        }
        XCTAssertEqual(PCMWire.message(.error, epoch: 2, text: "no"), [UInt8(ascii: "e"), 0, 0, 0, 2, 0, 0, 0, UInt8(ascii: "n"), UInt8(ascii: "o")])
        [UInt8](repeating: 0, count: 7).withUnsafeBytes { XCTAssertNil(PCMWire.header($0), "7 bytes are no header") }
    }
}
