import TonearmControlPlane

/// What the driver sets on a Nextion: each field goes to one component (by name, as the
/// Nextion Editor shows it, `page.name` for a global one on another page).
public enum NextionField: String, CaseIterable, Sendable {
    /// Text components (`.txt`).
    case title, artist, album
    /// `.txt`: "playing", "paused" or "stopped".
    case state
    /// `.txt`: "3/12", "" when nothing is current.
    case queue
    /// Number components or variables (`.val`): whole seconds; duration 0 when unknown.
    case elapsed, duration
    /// A timer (`.en`): 1 while the clock runs (see `NextionDriver`).
    case clock
    /// `.val`: percent; 1 when muted, 0 otherwise.
    case volume, mute
}

/// Text encoding of the HMI project (Nextion Editor: Device › Character encoding).
public enum NextionTextEncoding: String, Sendable, CaseIterable {
    case iso8859_1 = "iso-8859-1", utf8 = "utf-8"
}

/// A touch event mapped to a command: a component's press (and, for seekForward and
/// seekBackward, its release).
public struct NextionTouch: Sendable, Equatable {
    public var page: UInt8
    /// The component's id (not its name): what the touch event carries.
    public var component: UInt8
    public var command: Command

    public init(page: UInt8, component: UInt8, command: Command) {
        self.page = page
        self.component = component
        self.command = command
    }

    /// From a profile's `"PAGE.COMPONENT"` (`"0.3"`); nil when it is not two numbers from 0
    /// to 255.
    public init?(key: String, command: Command) {
        let parts = key.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let page = UInt8(parts[0]), let component = UInt8(parts[1]) else { return nil }
        self.init(page: page, component: component, command: command)
    }
}

public struct NextionSettings: Sendable, Equatable {
    /// Component names by field; a field that is missing or "" is not sent.
    public var components: [NextionField: String]
    public var touch: [NextionTouch]
    public var encoding: NextionTextEncoding

    /// Each field's component is named like the field: `title`, `artist`, `album`, `state`,
    /// `queue`, `elapsed`, `duration`, `clock`, `volume`, `mute`.
    public static let defaultComponents = Dictionary(uniqueKeysWithValues: NextionField.allCases.map { ($0, $0.rawValue) })

    public init(components: [NextionField: String] = defaultComponents, touch: [NextionTouch] = [], encoding: NextionTextEncoding = .iso8859_1) {
        self.components = components
        self.touch = touch
        self.encoding = encoding
    }

    func validate(port: String) throws(SerialError) {
        for field in NextionField.allCases {
            guard let name = components[field], !name.isEmpty else { continue }
            let valid = name.utf8.count <= 64 && name.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || $0 == 0x2E
            }
            guard valid else {
                throw SerialError(
                    port: port, message: "nextion display on \(port): component '\(name)' for \(field.rawValue) is not a component name (letters, digits, '_' and '.')")
            }
        }
        var seen = Set<UInt16>()
        for entry in touch where !seen.insert(UInt16(entry.page) << 8 | UInt16(entry.component)).inserted {
            throw SerialError(port: port, message: "nextion display on \(port): touch \(entry.page).\(entry.component) is mapped twice")
        }
    }
}

/// A Nextion HMI touch display (Basic, Discovery, Enhanced, Intelligent), driven through its
/// serial instruction set.
///
/// ## To the display
///
/// Instructions are ASCII, each ended by `FF FF FF`. When the port opens the driver sends
/// `FF FF FF` alone (it ends any instruction the display holds half of), then every field;
/// after that only what changed, on events only:
///
///     title.txt="So What"ÿÿÿ     artist.txt=…  album.txt=…  (NextionField.title, …)
///     state.txt="playing"ÿÿÿ     "paused", "stopped"
///     queue.txt="1/5"ÿÿÿ         "" when nothing is current
///     volume.val=40ÿÿÿ           mute.val=0ÿÿÿ
///     duration.val=562ÿÿÿ        0 when unknown
///     elapsed.val=0ÿÿÿ           whole seconds at the moment of sending
///     clock.en=1ÿÿÿ              1 while playing, 0 otherwise
///     tsw 4,0ÿÿÿ                 touch of component 4 off: its command is disabled
///
/// (ÿ is 0xFF.) In texts, `"` is sent as `\"` and `\` as `\\`, control characters as
/// spaces; they are encoded as the HMI project is (`encoding`: ISO-8859-1 by default, where
/// what Latin-1 lacks is transliterated as on the LCD and ÿ itself is sent as `y`, or UTF-8),
/// and cut to 255 bytes. Set each text component's `txt_maxl` to what it should hold.
///
/// ## The clock
///
/// Not sent every second: the display ticks it. Give the HMI a Timer named `clock`
/// (`tim` = 1000, `en` = 0) whose Timer Event is
///
///     if(elapsed.val<duration.val||duration.val==0)
///     {
///       elapsed.val++
///     }
///
/// plus whatever formats `elapsed.val` for a text (`covx`). The driver sets `elapsed.val`
/// and `duration.val` when the position jumps (start, seek, track change) and `clock.en` when
/// playback starts or stops; the display's clock is then right within a second.
///
/// ## Disabled commands
///
/// For each touch entry on the current page, `tsw COMPONENT,0` when its command is disabled
/// and `tsw COMPONENT,1` when enabled: the button stays drawn but ignores touches. (Give it a
/// look of its own if you like, in the HMI; `tsw` has none.) `tsw` applies to the current
/// page only and a page forgets it when it loads, so the driver keeps track of the page: 0
/// after the display starts (0x88), then whatever the display reports with 0x66. Put
/// `sendme` in each page's Postinitialize Event: the display then reports every page it
/// loads, and the driver sends that page everything again.
///
/// ## From the display
///
/// Return data, each ended by `FF FF FF`:
///
/// - `65 PAGE COMPONENT EVENT`: a touch; EVENT 01 pressed, 00 released. Tick "Send Component
///   ID" for Touch Press Event (and Touch Release Event, for seekForward and seekBackward
///   buttons). A press sends the command the touch map gives for (PAGE, COMPONENT); a
///   seekForward or seekBackward button sends `begin` on press and `end` on release.
/// - `66 PAGE`: the current page (`sendme`): remembered, and everything is sent again.
/// - `88`: the display started: page 0, and everything is sent again.
/// - Parsed and ignored: `00` invalid instruction, `00 00 00` startup, `01` success, `02`…
///   `24` errors (`1A` invalid variable, `24` buffer overflow…), `67`/`68` touch
///   coordinates, `70 …` string data, `71 b0 b1 b2 b3` numeric data, `86` sleep, `87`
///   wake, `89` upgrade, `FD`/`FE` transparent data.
///
/// Garbage (a baud-rate mismatch, noise on the line) is skipped up to the next `FF FF FF`;
/// a touch event right after garbage still counts (its four bytes end the frame). At most
/// 64 bytes of a frame are kept.
public struct NextionDriver: SerialDisplayDriver {
    public let settings: NextionSettings
    /// The page the display shows, for `tsw`.
    public private(set) var page: UInt8 = 0
    private var sent: ControlState?
    private var frame: [UInt8] = []
    /// The frame outgrew `maxFrameBytes`: only its end is kept.
    private var overflowed = false

    static let terminator: [UInt8] = [0xFF, 0xFF, 0xFF]
    static let maxFrameBytes = 64
    static let maxTextBytes = 255

    public init(settings: NextionSettings = NextionSettings()) {
        self.settings = settings
    }

    /// Bytes of a partial frame held (at most `maxFrameBytes`).
    var bufferedByteCount: Int { frame.count }

    public var nextTick: Double? { nil }

    public mutating func tick(now: Double) -> [UInt8] { [] }

    public mutating func start(_ state: ControlState, now: Double) -> [UInt8] {
        sent = nil
        return Self.terminator + changes(to: state, now: now)
    }

    public mutating func update(_ state: ControlState, now: Double) -> [UInt8] {
        changes(to: state, now: now)
    }

    private mutating func changes(to state: ControlState, now: Double) -> [UInt8] {
        let old = sent
        var out: [UInt8] = []
        func set(_ field: NextionField, _ value: String) {
            guard let name = settings.components[field], !name.isEmpty else { return }
            out += "\(name).\(value)".utf8
            out += Self.terminator
        }

        let (was, info) = (old?.nowPlaying, state.nowPlaying)
        if old == nil || was?.title ?? "" != info.title ?? "" { setText(.title, info.title ?? "", into: &out) }
        if old == nil || was?.artist ?? "" != info.artist ?? "" { setText(.artist, info.artist ?? "", into: &out) }
        if old == nil || was?.album ?? "" != info.album ?? "" { setText(.album, info.album ?? "", into: &out) }
        if old?.transport != state.transport { setText(.state, state.transport.rawValue, into: &out) }
        if old == nil || was?.queueIndex != info.queueIndex || was?.queueCount != info.queueCount {
            setText(.queue, info.queueIndex.map { "\($0 + 1)/\(info.queueCount)" } ?? "", into: &out)
        }
        let volume = Self.percent(state.volume)
        if old.map({ Self.percent($0.volume) }) != volume { set(.volume, "val=\(volume)") }
        if old?.muted != state.muted { set(.mute, "val=\(state.muted ? 1 : 0)") }
        let duration = info.duration.map(Self.wholeSeconds) ?? 0
        if old.map({ $0.nowPlaying.duration.map(Self.wholeSeconds) ?? 0 }) != duration { set(.duration, "val=\(duration)") }
        if old.map({ sameClock($0, state, now: now) }) != true {
            set(.elapsed, "val=\(Self.wholeSeconds(info.elapsed(at: now)))")
        }
        let running = Self.clockRuns(state)
        if old.map(Self.clockRuns) != running { set(.clock, "en=\(running ? 1 : 0)") }
        for entry in settings.touch where entry.page == page {
            let enabled = state.isEnabled(entry.command)
            if old?.isEnabled(entry.command) != enabled { out += "tsw \(entry.component),\(enabled ? 1 : 0)".utf8 + Self.terminator }
        }

        sent = state.keepingClock(of: old, now: now)
        return out
    }

    private static func clockRuns(_ state: ControlState) -> Bool { state.transport == .playing && state.nowPlaying.rate > 0 }

    private static func wholeSeconds(_ value: Double) -> Int {
        value.isFinite ? Int(min(max(0, value), Double(Int32.max)).rounded(.down)) : 0
    }

    private static func percent(_ value: Double) -> Int {
        value.isFinite ? Int(min(100, max(0, value)).rounded()) : 0
    }

    /// `NAME.txt="TEXT"ÿÿÿ`, escaped and encoded.
    private func setText(_ field: NextionField, _ value: String, into out: inout [UInt8]) {
        guard let name = settings.components[field], !name.isEmpty else { return }
        var bytes = settings.encoding == .utf8 ? DisplayText.utf8Bytes(value) : DisplayText.latin1Bytes(value)
        if bytes.count > Self.maxTextBytes {
            var cut = Self.maxTextBytes
            // Not inside a UTF-8 sequence.
            if settings.encoding == .utf8 { while cut > 0 && bytes[cut] & 0xC0 == 0x80 { cut -= 1 } }
            bytes.removeSubrange(cut...)
        }
        out += "\(name).txt=\"".utf8
        for byte in bytes {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
        out += Self.terminator
    }

    // MARK: From the display

    public mutating func receive(_ bytes: UnsafeRawBufferPointer) -> [DisplayInput] {
        var inputs: [DisplayInput] = []
        for byte in bytes {
            // A frame never starts with 0xFF: a stray one (or a fourth) is skipped.
            if frame.isEmpty && byte == 0xFF { continue }
            frame.append(byte)
            let n = frame.count
            if n >= 3 && frame[n - 1] == 0xFF && frame[n - 2] == 0xFF && frame[n - 3] == 0xFF {
                let event = Self.event(frame[..<(n - 3)], overflowed: overflowed)
                frame.removeAll(keepingCapacity: true)
                overflowed = false
                if let input = handle(event) { inputs.append(input) }
            } else if n > Self.maxFrameBytes {
                // Keep what could still end a touch event: four bytes and two of a terminator.
                frame.removeFirst(n - 6)
                overflowed = true
            }
        }
        return inputs
    }

    private mutating func handle(_ event: NextionEvent) -> DisplayInput? {
        switch event {
        case .touch(let page, let component, let pressed):
            guard let entry = settings.touch.first(where: { $0.page == page && $0.component == component }) else { return nil }
            let command = entry.command
            if command.name == .seekForward || command.name == .seekBackward {
                return .command(command.scanning(pressed ? .begin : .end))
            }
            return pressed ? .command(command) : nil
        case .page(let page):
            self.page = page
            return .resend
        case .ready:
            page = 0
            return .resend
        default:
            return nil
        }
    }

    /// A frame without its `FF FF FF`. `overflowed`: only the frame's end was kept.
    public static func event(_ body: ArraySlice<UInt8>, overflowed: Bool = false) -> NextionEvent {
        let body = Array(body)
        let n = body.count
        if !overflowed, let code = body.first {
            switch (code, n) {
            case (0x65, 4) where body[3] <= 1: return .touch(page: body[1], component: body[2], pressed: body[3] == 1)
            case (0x66, 2): return .page(body[1])
            case (0x67, 6), (0x68, 6):
                return .touchCoordinates(
                    x: UInt16(body[1]) << 8 | UInt16(body[2]), y: UInt16(body[3]) << 8 | UInt16(body[4]), pressed: body[5] == 1)
            case (0x71, 5):
                let value = UInt32(body[1]) | UInt32(body[2]) << 8 | UInt32(body[3]) << 16 | UInt32(body[4]) << 24
                return .number(Int32(bitPattern: value))
            default: break
            }
        }
        // Garbage before a touch event: the event is the frame's last four bytes.
        if n >= 4 && body[n - 4] == 0x65 && body[n - 1] <= 1 {
            return .touch(page: body[n - 3], component: body[n - 2], pressed: body[n - 1] == 1)
        }
        guard !overflowed, let code = body.first else { return .garbage }
        switch (code, n) {
        case (0x70, _): return .string(Array(body.dropFirst()))
        case (0x00, 3) where body == [0, 0, 0]: return .startup
        case (0x86, 1): return .sleep
        case (0x87, 1): return .wake
        case (0x88, 1): return .ready
        case (0x89, 1): return .upgrade
        case (0x00...0x24, 1), (0xFD, 1), (0xFE, 1): return .returnCode(code)
        default: return .garbage
        }
    }
}

/// What a Nextion sent, one frame.
public enum NextionEvent: Equatable, Sendable {
    case touch(page: UInt8, component: UInt8, pressed: Bool)
    /// 0x66: the current page.
    case page(UInt8)
    /// 0x67 (awake) and 0x68 (asleep).
    case touchCoordinates(x: UInt16, y: UInt16, pressed: Bool)
    /// 0x70.
    case string([UInt8])
    /// 0x71.
    case number(Int32)
    /// 0x00 0x00 0x00.
    case startup
    /// 0x86, 0x87.
    case sleep, wake
    /// 0x88.
    case ready
    /// 0x89.
    case upgrade
    /// A one-byte code: 0x00 invalid instruction, 0x01 success, 0x02…0x24 errors, 0xFD and
    /// 0xFE transparent data.
    case returnCode(UInt8)
    /// Nothing the display sends.
    case garbage
}
