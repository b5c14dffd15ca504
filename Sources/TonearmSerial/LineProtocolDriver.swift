import TonearmBoard

/// The `line` protocol (see `LineProtocol`): text lines for a display on a microcontroller.
public struct LineProtocolDriver: SerialDisplayDriver {
    /// What the display was last told; nil before `start`.
    private var sent: BoardDisplayState?
    /// The display's partial line.
    private var line: [UInt8] = []
    /// A line went over the limit: its bytes are dropped up to the next LF.
    private var discarding = false

    public init() {}

    /// Bytes of a partial line held (at most `LineProtocol.maxLineBytes`).
    var bufferedByteCount: Int { line.count }

    public var nextTick: Double? { nil }

    public mutating func tick(now: Double) -> [UInt8] { [] }

    public mutating func start(_ state: BoardDisplayState, now: Double) -> [UInt8] {
        sent = nil
        var out = Array("hello tonearm \(LineProtocol.version)\n".utf8)
        out += changes(to: state, now: now)
        return out
    }

    public mutating func update(_ state: BoardDisplayState, now: Double) -> [UInt8] {
        changes(to: state, now: now)
    }

    /// The lines for what differs from `sent` (everything when nothing was sent), then `end`.
    private mutating func changes(to state: BoardDisplayState, now: Double) -> [UInt8] {
        let old = sent
        var out: [UInt8] = []
        func emit(_ text: String) { out += text.utf8; out.append(0x0A) }

        if old?.transport != state.transport { emit("state \(state.transport.rawValue)") }
        if old == nil || old?.title ?? "" != state.title ?? "" { emitText("title", state.title, into: &out) }
        if old == nil || old?.artist ?? "" != state.artist ?? "" { emitText("artist", state.artist, into: &out) }
        if old == nil || old?.album ?? "" != state.album ?? "" { emitText("album", state.album, into: &out) }
        if old?.queueIndex != state.queueIndex || old?.queueCount != state.queueCount {
            let position = state.queueIndex.map { String($0 + 1) } ?? "-"
            emit("queue \(position) \(state.queueCount)")
        }
        let volume = percent(state.volume)
        if old.map({ percent($0.volume) }) != volume { emit("volume \(volume)") }
        if old?.muted != state.muted { emit("mute \(state.muted ? "on" : "off")") }
        if old.map({ sameClock($0, state, now: now) }) != true {
            let duration = state.duration.map(fixed3) ?? "-"
            emit("clock \(fixed3(state.elapsed(at: now))) \(fixed3(state.rate)) \(duration)")
        }
        for name in BoardCommand.Name.allCases where old?.isEnabled(name) != state.isEnabled(name) {
            emit("command \(name.rawValue) \(state.isEnabled(name) ? "enabled" : "disabled")")
        }

        // The clock the display keeps is the one last sent: keep its anchor, not the new one.
        var remembered = state
        if let old, sameClock(old, state, now: now) {
            (remembered.elapsed, remembered.timestamp) = (old.elapsed, old.timestamp)
        }
        sent = remembered
        guard !out.isEmpty else { return [] }
        emit("end")
        return out
    }

    private func percent(_ value: Double) -> Int {
        value.isFinite ? Int(min(100, max(0, value)).rounded()) : 0
    }

    /// `keyword TEXT`, escaped, cut on a character boundary so the line fits in
    /// `LineProtocol.maxLineBytes`.
    private func emitText(_ keyword: String, _ text: String?, into out: inout [UInt8]) {
        out += keyword.utf8
        let text = text ?? ""
        if !text.isEmpty {
            out.append(0x20)
            let room = LineProtocol.maxLineBytes - keyword.utf8.count - 2
            var used = 0
            for scalar in text.unicodeScalars {
                let escaped = Self.escape(scalar)
                guard used + escaped.count <= room else { break }
                out += escaped
                used += escaped.count
            }
        }
        out.append(0x0A)
    }

    private static func escape(_ scalar: Unicode.Scalar) -> [UInt8] {
        switch scalar {
        case "\\": return Array(#"\\"#.utf8)
        case "\n": return Array(#"\n"#.utf8)
        case "\r": return Array(#"\r"#.utf8)
        case "\t": return Array(#"\t"#.utf8)
        case "\u{0}"..."\u{1F}", "\u{7F}":
            let hex = Array("0123456789abcdef".utf8)
            let value = Int(scalar.value)
            return [UInt8(ascii: "\\"), UInt8(ascii: "x"), hex[value >> 4], hex[value & 15]]
        default:
            return Array(String(scalar).utf8)
        }
    }

    // MARK: From the display

    public mutating func receive(_ bytes: UnsafeRawBufferPointer) -> [DisplayInput] {
        var inputs: [DisplayInput] = []
        for byte in bytes {
            if byte == 0x0A {
                if discarding {
                    discarding = false
                    inputs.append(Self.error(.lineTooLong))
                } else if let input = Self.interpret(line) {
                    inputs.append(input)
                }
                line.removeAll(keepingCapacity: true)
            } else if discarding {
                continue
            } else if line.count + 1 >= LineProtocol.maxLineBytes {
                // No room for this byte and the LF.
                discarding = true
                line.removeAll(keepingCapacity: true)
            } else {
                line.append(byte)
            }
        }
        return inputs
    }

    /// One line without its LF: nil for a blank line.
    static func interpret(_ bytes: [UInt8]) -> DisplayInput? {
        var bytes = bytes[...]
        if bytes.last == 0x0D { bytes = bytes.dropLast() }
        guard !bytes.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }),
              let text = String(validating: bytes, as: UTF8.self)
        else { return error(.malformed) }
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard let first = words.first else { return nil }
        let arguments = words.dropFirst()
        switch first {
        case "hello" where arguments.isEmpty: return .resend
        case "ping" where arguments.isEmpty: return .reply(Array("pong\n".utf8))
        default: break
        }
        guard let name = BoardCommand.Name(rawValue: String(first)) else {
            return error(.unknownCommand, prefix(first, bytes: 32))
        }
        switch parseArguments(name, Array(arguments)) {
        case .success(let command): return .command(command)
        case .failure(let usage): return error(.badArgument, usage.description)
        }
    }

    private struct Usage: Error, CustomStringConvertible {
        var description: String
    }

    /// The command named `name` with its arguments, or what the command takes.
    private static func parseArguments(_ name: BoardCommand.Name, _ words: [Substring]) -> Result<BoardCommand, Usage> {
        let n = name.rawValue
        func one(_ valid: (Substring) -> BoardCommand?, _ usage: String, optional: Bool = false) -> Result<BoardCommand, Usage> {
            if words.isEmpty && optional { return .success(BoardCommand(name)) }
            guard words.count == 1, let command = valid(words[0]) else { return .failure(Usage(description: "\(n) \(usage)")) }
            return .success(command)
        }
        switch name {
        case .skipForward, .skipBackward:
            return one({ number($0).flatMap { $0 > 0 ? BoardCommand(name, value: $0) : nil } },
                       "takes an optional number of seconds, more than 0", optional: true)
        case .changePlaybackPosition:
            return one({ number($0).map { BoardCommand(name, value: $0) } }, "needs a position in seconds, 0 or more")
        case .setVolume:
            return one({ number($0).flatMap { $0 <= 100 ? BoardCommand(name, value: $0) : nil } },
                       "needs a percent from 0 to 100")
        case .volumeUp, .volumeDown:
            return one({ number($0).flatMap { $0 > 0 && $0 <= 100 ? BoardCommand(name, value: $0) : nil } },
                       "takes an optional step in percent, more than 0 and at most 100", optional: true)
        case .seekForward, .seekBackward:
            return one({ BoardCommand.Phase(rawValue: String($0)).map { BoardCommand(name, phase: $0) } },
                       "needs begin or end")
        case .changeRepeatMode:
            return one({ ["off", "one", "all"].contains($0) ? BoardCommand(name, mode: String($0)) : nil },
                       "needs off, one or all")
        case .changeShuffleMode:
            return one({ ["on", "off"].contains($0) ? BoardCommand(name, mode: String($0)) : nil }, "needs on or off")
        default:
            guard words.isEmpty else { return .failure(Usage(description: "\(n) takes no argument")) }
            return .success(BoardCommand(name))
        }
    }

    /// Digits with an optional fraction: "30", "42.5".
    private static func number(_ word: Substring) -> Double? {
        let parts = word.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard word.utf8.count <= 16,
              parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } })
        else { return nil }
        return Double(word)
    }

    /// The longest start of `text` within `bytes` UTF-8 bytes, on a character boundary.
    private static func prefix(_ text: Substring, bytes: Int) -> String {
        var result = ""
        var used = 0
        for character in text {
            used += character.utf8.count
            guard used <= bytes else { break }
            result.append(character)
        }
        return result
    }

    private static func error(_ code: LineProtocol.ErrorCode, _ detail: String = "") -> DisplayInput {
        let text = detail.isEmpty ? "error \(code.rawValue)\n" : "error \(code.rawValue) \(detail)\n"
        return .reply(Array(text.utf8))
    }
}
