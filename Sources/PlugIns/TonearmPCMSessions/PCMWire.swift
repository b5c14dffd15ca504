import TonearmAudio
import TonearmControlPlane
import TonearmJSON
import TonearmSession

/// The wire between the `tonearm` ALSA plugin (`ALSA/tonearm_pcm.c`) and the daemon: one Unix
/// sequenced-packet connection per open PCM, each message starting with an 8-byte header in
/// host order — `uint8 type; uint8 flags; uint16 reserved; uint32 epoch`. The epoch numbers
/// the program's prepares; what comes with an older one is dropped.
///
/// Program → daemon:
/// - `O` open (epoch 0, first and once): a JSON object `{"name", "preset", "category", "mode",
///   "options": [], "notify", "pid"}`; answered `o` (with the session number) or `e`.
/// - `F` format (each prepare, a new epoch): five `uint32` — rate, channels, encoding (1 S16_LE,
///   2 S24_LE, 3 S24_3LE, 4 S32_LE, 5 FLOAT_LE), buffer frames, period frames; answered `f`
///   or `e`.
/// - `D` data: whole interleaved frames. Held until `S`.
/// - `S` start: activates the session (the category rules apply) and plays what came.
/// - `N` drain: plays out what came, answered `n` once heard; the session deactivates.
/// - `X` drop: stops now and drops what waits. `P` pause (flags 1) or play on (0).
/// - Closing the connection deactivates and closes the session.
///
/// Daemon → program: `o` opened (`uint64` session), `e` error (text), `f` format taken, `p`
/// position (`uint64` frames of the epoch taken — the program's hardware pointer, never ahead of
/// what it sent and 0 until `S` —, `int64` frames taken but not yet heard, `uint64`
/// CLOCK_MONOTONIC nanoseconds when that was measured), `s` interrupted, `r` the interruption
/// ended and the session should resume, `n` drained.
enum PCMWire {
    static let headerBytes = 8
    /// The largest message taken: the plugin sends data in messages of at most 32 KiB.
    static let maxMessageBytes = 64 * 1024

    enum FromProgram: UInt8 {
        case open = 0x4F, format = 0x46, data = 0x44, start = 0x53, drain = 0x4E, drop = 0x58, pause = 0x50
    }

    enum ToProgram: UInt8 {
        case opened = 0x6F, error = 0x65, formatTaken = 0x66, position = 0x70, suspended = 0x73, resumed = 0x72,
             drained = 0x6E
    }

    struct Header: Equatable {
        var type: UInt8
        var flags: UInt8
        var epoch: UInt32
    }

    static func header(_ message: UnsafeRawBufferPointer) -> Header? {
        guard message.count >= headerBytes else { return nil }
        return Header(type: message[0], flags: message[1],
                      epoch: UInt32(littleEndian: message.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
    }

    /// A message: the header, then `words` (each 8 bytes) or `text`.
    static func message(_ type: ToProgram, epoch: UInt32 = 0, words: [UInt64] = [], text: String = "") -> [UInt8] {
        var bytes: [UInt8] = [type.rawValue, 0, 0, 0]
        withUnsafeBytes(of: epoch.littleEndian) { bytes += $0 }
        for word in words { withUnsafeBytes(of: word.littleEndian) { bytes += $0 } }
        bytes += Array(text.utf8)
        return bytes
    }

    /// The encodings' numbers on the wire.
    static let encodings: [UInt32: DeviceSampleFormat] = [1: .s16LE, 2: .s24LE, 3: .s24_3LE, 4: .s32LE, 5: .floatLE]

    /// What `F` carries.
    struct Format: Equatable {
        var rate: Int
        var channels: Int
        var encoding: DeviceSampleFormat
        var bufferFrames: Int
        var periodFrames: Int

        var frameBytes: Int { channels * encoding.bytesPerSample }
        var stream: StreamFormat { StreamFormat(sampleRate: rate, channels: channels, bitsPerSample: encoding.significantBits) }
    }

    /// The format in an `F` message's body, or what is wrong with it.
    static func format(_ body: UnsafeRawBufferPointer) -> Result<Format, WireError> {
        guard body.count >= 20 else { return .failure(WireError("a format message holds 20 bytes after its header, not \(body.count)")) }
        func word(_ index: Int) -> Int { Int(UInt32(littleEndian: body.loadUnaligned(fromByteOffset: 4 * index, as: UInt32.self))) }
        let (rate, channels, code, buffer, period) = (word(0), word(1), word(2), word(3), word(4))
        guard let encoding = encodings[UInt32(code)] else {
            return .failure(WireError("sample format \(code) is not one of S16_LE, S24_LE, S24_3LE, S32_LE, FLOAT_LE"))
        }
        guard (8000...384_000).contains(rate) else { return .failure(WireError("the rate must be 8000 to 384000 Hz, not \(rate)")) }
        guard (1...8).contains(channels) else { return .failure(WireError("there must be 1 to 8 channels, not \(channels)")) }
        guard period > 0, buffer >= period, buffer <= 4 * 384_000 else {
            return .failure(WireError("a buffer of \(buffer) frames in periods of \(period) is not one the daemon takes"))
        }
        return .success(Format(rate: rate, channels: channels, encoding: encoding, bufferFrames: buffer, periodFrames: period))
    }

    /// What `O` asks for: the session's setup, whether it takes remote commands, its name, and
    /// whether its end lets the sessions it interrupted resume.
    struct Open: Equatable {
        var setup: SessionSetup
        var remoteCommands: Bool
        var name: String
        var notify: Bool
    }

    /// The session an `O` message's JSON asks for. A preset gives category, mode and options;
    /// those given beside it replace its own. Without a preset the category is `playback` and
    /// the session takes remote commands when it does not mix, as a music player's would.
    static func open(_ text: String) -> Result<Open, WireError> {
        let object: JSONValue
        do {
            object = try JSONValue.parse(text)
        } catch {
            return .failure(WireError("the open request is not JSON: \(error)"))
        }
        guard case .object = object else { return .failure(WireError("the open request is not a JSON object")) }
        func string(_ key: String) -> String? {
            guard case .string(let value)? = object[key], !value.isEmpty else { return nil }
            return value
        }
        var preset: SessionPreset?
        if let name = string("preset") {
            guard let known = SessionPreset(rawValue: name) else {
                return .failure(WireError("there is no preset '\(name)' (presets: \(SessionPreset.allCases.map(\.rawValue).joined(separator: ", ")))"))
            }
            preset = known
        }
        var setup = SessionSetup(category: preset?.category ?? .playback, mode: preset?.mode ?? .default,
                                 options: preset?.options ?? [])
        if let name = string("category") {
            guard let category = SessionCategory(rawValue: name) else {
                return .failure(WireError("there is no category '\(name)' (categories: \(SessionCategory.allCases.map(\.rawValue).joined(separator: ", ")))"))
            }
            setup.category = category
        }
        if let name = string("mode") {
            guard let mode = SessionMode(rawValue: name) else {
                return .failure(WireError("there is no mode '\(name)' (modes: \(SessionMode.allCases.map(\.rawValue).joined(separator: ", ")))"))
            }
            setup.mode = mode
        }
        if case .array(let names)? = object["options"], !names.isEmpty {
            var options: SessionOptions = []
            for value in names {
                guard case .string(let name) = value, let option = SessionOptions(name: name) else {
                    return .failure(WireError("there is no option \(value.serialized) (options: \(SessionOptions.named.map(\.name).joined(separator: ", ")))"))
                }
                options.insert(option)
            }
            setup.options = options
        }
        let remoteCommands = preset?.takesRemoteCommands
            ?? (setup.category == .playback && setup.options.withImplications.isDisjoint(with: .mixWithOthers))
        var notify = true
        if case .bool(let value)? = object["notify"] { notify = value }
        return .success(Open(setup: setup, remoteCommands: remoteCommands, name: string("name") ?? "program", notify: notify))
    }
}

/// A program broke the wire's rules, or asked for what the daemon does not do.
struct WireError: Error, Equatable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
