import TonearmControlPlane
import TonearmPlayer

/// The `line` protocol (see `LineProtocol`): text lines for a display on a microcontroller.
public struct LineProtocolDriver: SerialDisplayDriver {
    /// What the display was last told; nil before `start`.
    private var sent: ControlState?
    /// The display's partial line.
    private var line: [UInt8] = []
    /// A line went over the limit: its bytes are dropped up to the next LF.
    private var discarding = false

    public init() {}

    /// Bytes of a partial line held (at most `LineProtocol.maxLineBytes`).
    var bufferedByteCount: Int { line.count }

    public var nextTick: Double? { nil }

    public mutating func tick(now: Double) -> [UInt8] { [] }

    public mutating func start(_ state: ControlState, now: Double) -> [UInt8] {
        sent = nil
        var out = Array("hello tonearm \(LineProtocol.version)\n".utf8)
        out += changes(to: state, now: now)
        return out
    }

    public mutating func update(_ state: ControlState, now: Double) -> [UInt8] {
        changes(to: state, now: now)
    }

    /// The lines for what differs from `sent` (everything when nothing was sent), then `end`.
    private mutating func changes(to state: ControlState, now: Double) -> [UInt8] {
        let old = sent
        var out: [UInt8] = []
        func emit(_ text: String) { out += text.utf8; out.append(0x0A) }

        if old?.transport != state.transport { emit("state \(state.transport.rawValue)") }
        let (was, info) = (old?.nowPlaying, state.nowPlaying)
        if old == nil || was?.title ?? "" != info.title ?? "" { emitText("title", info.title, into: &out) }
        if old == nil || was?.artist ?? "" != info.artist ?? "" { emitText("artist", info.artist, into: &out) }
        if old == nil || was?.album ?? "" != info.album ?? "" { emitText("album", info.album, into: &out) }
        if old == nil || was?.queueIndex != info.queueIndex || was?.queueCount != info.queueCount {
            let position = info.queueIndex.map { String($0 + 1) } ?? "-"
            emit("queue \(position) \(info.queueCount)")
        }
        let volume = percent(state.volume)
        if old.map({ percent($0.volume) }) != volume { emit("volume \(volume)") }
        if old?.muted != state.muted { emit("mute \(state.muted ? "on" : "off")") }
        if old.map({ sameClock($0, state, now: now) }) != true {
            let duration = info.duration.map(fixed3) ?? "-"
            emit("clock \(fixed3(info.elapsed(at: now))) \(fixed3(info.rate)) \(duration)")
        }
        for name in CommandName.allCases where old?.isEnabled(name) != state.isEnabled(name) {
            emit("command \(name.rawValue) \(state.isEnabled(name) ? "enabled" : "disabled")")
        }

        sent = state.keepingClock(of: old, now: now)
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
        guard let name = CommandName(named: String(first)) else {
            return error(.unknownCommand, prefix(first, bytes: 32))
        }
        let argument = arguments.first.map(String.init)
        // The protocol's own rules over the parser's: one argument at most, numbers as plain
        // decimals, and a scan says whether it begins or ends (a display that said neither
        // would leave it running).
        let isScan = name == .seekForward || name == .seekBackward
        guard arguments.count <= 1, !(isScan && argument == nil), argument.map({ !takesNumber(name) || isNumber($0) }) ?? true,
              case .success(let command) = Command.parse(name, argument: argument)
        else {
            let takes = isScan ? ScanPhase.choices : name.argument ?? "no argument"
            return error(.badArgument, "\(name.rawValue) takes \(takes)")
        }
        return .command(command)
    }

    private static func takesNumber(_ name: CommandName) -> Bool {
        [.skipForward, .skipBackward, .changePlaybackPosition, .volumeUp, .volumeDown, .setVolume].contains(name)
    }

    /// Digits with an optional fraction: "30", "42.5".
    private static func isNumber(_ word: String) -> Bool {
        let parts = word.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        return word.utf8.count <= 16 && parts.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
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
