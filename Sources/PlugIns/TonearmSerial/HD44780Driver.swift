import TonearmControlPlane

/// A character LCD's geometry and backpack.
public struct HD44780Settings: Sendable, Equatable {
    /// 16 or 20.
    public var columns: Int
    /// 2 or 4.
    public var rows: Int
    /// Sends the backpack its width and number of lines each time the port opens (0x7C 0x03
    /// or 0x04, then 0x7C 0x05 or 0x06). The backpack keeps them in EEPROM; turn this off for
    /// one configured once by hand.
    public var configureBackpack: Bool

    public init(columns: Int = 16, rows: Int = 2, configureBackpack: Bool = true) {
        self.columns = columns
        self.rows = rows
        self.configureBackpack = configureBackpack
    }

    func validate(port: String) throws(SerialError) {
        guard [16, 20].contains(columns), [2, 4].contains(rows) else {
            throw SerialError(
                port: port, message: "hd44780 display on \(port): \(columns)×\(rows) is not supported (16 or 20 columns, 2 or 4 rows)")
        }
    }
}

/// A 16×2 or 20×4 HD44780 character LCD behind a SparkFun SerLCD-compatible serial backpack
/// (SerLCD v2.5, OpenLCD, and the many clones).
///
/// ## Bytes
///
/// Text bytes are drawn at the cursor. 0xFE makes the next byte an HD44780 instruction; 0x7C
/// makes the next byte a backpack setting. The driver uses, when the port opens:
///
/// - `7C 04` or `7C 03`: 16 or 20 columns; `7C 06` or `7C 05`: 2 or 4 lines (unless
///   `configureBackpack` is off);
/// - `FE 0C`: display on, cursor and blink off;
/// - `FE 01`: clear;
///
/// then, to draw, only `FE 80|ADDRESS` (set the DDRAM address) followed by the characters.
/// Rows start at addresses 0x00, 0x40, COLUMNS and 0x40 + COLUMNS (0x14 and 0x54 on a 20×4).
/// The driver keeps a copy of the screen and sends only the runs of characters that differ
/// (runs one or two unchanged columns apart go as one).
///
/// The backpack sends nothing back; whatever arrives is ignored.
///
/// ## Layout
///
/// 16×2: row 0 is the title and the artist, as `TITLE - ARTIST`; row 1 the status line.
/// 20×4: rows 0, 1 and 2 are the title, artist and album; row 3 the status line.
///
/// A text longer than the row scrolls: it stands still for 1.6 s, then moves one character
/// every 0.4 s, runs around with three spaces after its end, and stands still again when its
/// start is back. It starts over when the text changes.
///
/// The status line: column 0 is the transport, `>` playing, `"` paused (two bars), `#`
/// stopped (a block); from column 2, the clock `ELAPSED/DURATION` (`1:23/4:56`, `1:02:03`
/// past an hour; ELAPSED alone when the duration is unknown or both do not fit), blank when
/// stopped; the last two columns show `<` when previousTrack is enabled and `>` when
/// nextTrack is, blank when disabled. ASCII rather than custom characters: defining those
/// differs between backpacks (OpenLCD stores them in EEPROM), and these read well.
///
/// ## Characters
///
/// The LCD's A00 ROM matches ASCII from 0x20 to 0x7D except 0x5C (¥). Text is shown in that
/// range: accented letters lose their accents (é → e, ß → ss), typographic quotes and dashes
/// become ASCII ones, `\` becomes `/`, `|` (the backpack's settings prefix) `!`, `~` `-`, and
/// anything else `?`.
///
/// ## The clock
///
/// The LCD cannot tick, so the driver redraws the clock: from `elapsed + rate × (now −
/// timestamp)`, at most once a second while playing (`nextTick`), and at once on an event
/// that moves it (play, pause, seek, track change). A tick rewrites only the digits that
/// changed, usually one character.
public struct HD44780Driver: SerialDisplayDriver {
    public let settings: HD44780Settings

    /// A scroll step, in seconds.
    static let scrollInterval = 0.4
    /// Steps a long text stands still at its start, besides the first.
    static let scrollHoldSteps = 3
    static let scrollGap: [UInt8] = Array("   ".utf8)

    private struct Marquee {
        /// In ROM characters.
        var text: [UInt8] = []
        /// When the text appeared.
        var since = 0.0
    }

    private var state = ControlState()
    /// What the LCD shows, row by row.
    private var screen: [[UInt8]]
    private var marquees: [Marquee]
    /// Whole seconds the clock shows; nil when blank.
    private var clockSeconds: Int?
    private var nextClock: Double?
    private var lastNow = 0.0

    public init(settings: HD44780Settings = HD44780Settings()) {
        self.settings = settings
        screen = Array(repeating: Array(repeating: 0x20, count: settings.columns), count: settings.rows)
        marquees = Array(repeating: Marquee(), count: settings.rows - 1)
    }

    private var blankScreen: [[UInt8]] {
        Array(repeating: Array(repeating: 0x20, count: settings.columns), count: settings.rows)
    }

    public mutating func start(_ state: ControlState, now: Double) -> [UInt8] {
        var out: [UInt8] = []
        if settings.configureBackpack {
            out += [0x7C, settings.columns == 20 ? 0x03 : 0x04, 0x7C, settings.rows == 4 ? 0x05 : 0x06]
        }
        out += [0xFE, 0x0C, 0xFE, 0x01]
        screen = blankScreen
        marquees = Array(repeating: Marquee(), count: settings.rows - 1)
        self.state = state
        lastNow = now
        setTexts(now: now)
        setClock(now: now)
        return out + redraw(now: now)
    }

    public mutating func update(_ state: ControlState, now: Double) -> [UInt8] {
        let old = self.state
        self.state = state
        lastNow = now
        setTexts(now: now)
        if old.transport != state.transport || !sameClock(old, state, now: now) { setClock(now: now) }
        return redraw(now: now)
    }

    public var nextTick: Double? {
        var next = nextClock
        for marquee in marquees where marquee.text.count > settings.columns {
            let steps = ((lastNow - marquee.since) / Self.scrollInterval + 1e-9).rounded(.down)
            var step = marquee.since + (steps + 1) * Self.scrollInterval
            if step <= lastNow { step += Self.scrollInterval }
            next = min(next ?? step, step)
        }
        return next
    }

    public mutating func tick(now: Double) -> [UInt8] {
        lastNow = now
        if let due = nextClock, now >= due { setClock(now: now) }
        return redraw(now: now)
    }

    public mutating func receive(_ bytes: UnsafeRawBufferPointer) -> [DisplayInput] { [] }

    // MARK: Drawing

    /// The rows above the status line, in ROM characters; a new text starts its scroll over.
    private mutating func setTexts(now: Double) {
        let texts: [String]
        if settings.rows == 2 {
            texts = [[state.nowPlaying.title, state.nowPlaying.artist].compactMap { $0?.isEmpty == false ? $0 : nil }.joined(separator: " - ")]
        } else {
            texts = [state.nowPlaying.title ?? "", state.nowPlaying.artist ?? "", state.nowPlaying.album ?? ""]
        }
        for (row, text) in texts.enumerated() {
            let bytes = DisplayText.lcdBytes(text)
            if bytes != marquees[row].text { marquees[row] = Marquee(text: bytes, since: now) }
        }
    }

    /// Reads the clock at `now` and schedules its next redraw: when the whole second changes,
    /// but not within a second of this one.
    private mutating func setClock(now: Double) {
        guard state.transport != .stopped else {
            (clockSeconds, nextClock) = (nil, nil)
            return
        }
        let clock = state.nowPlaying
        let elapsed = clock.elapsed(at: now)
        let seconds = Int((elapsed + 1e-6).rounded(.down))
        clockSeconds = seconds
        if clock.rate > 0, clock.duration.map({ elapsed < $0 }) ?? true {
            let crossing = now + (Double(seconds + 1) - elapsed) / clock.rate
            nextClock = max(now + 1, crossing)
        } else {
            nextClock = nil
        }
    }

    private mutating func redraw(now: Double) -> [UInt8] {
        let wanted = render(now: now)
        var out: [UInt8] = []
        let offsets = [0x00, 0x40, settings.columns, 0x40 + settings.columns]
        for row in 0..<settings.rows {
            for run in Self.differingRuns(screen[row], wanted[row]) {
                out += [0xFE, UInt8(0x80 | (offsets[row] + run.lowerBound))]
                out += wanted[row][run]
            }
        }
        screen = wanted
        return out
    }

    /// The columns where `old` and `new` differ, as runs; runs less than three columns apart
    /// are joined (moving the cursor costs two bytes).
    static func differingRuns(_ old: [UInt8], _ new: [UInt8]) -> [ClosedRange<Int>] {
        var runs: [ClosedRange<Int>] = []
        for column in new.indices where old[column] != new[column] {
            if let last = runs.last, column - last.upperBound <= 3 {
                runs[runs.count - 1] = last.lowerBound...column
            } else {
                runs.append(column...column)
            }
        }
        return runs
    }

    private func render(now: Double) -> [[UInt8]] {
        var rows = marquees.map { window($0, now: now) }
        rows.append(statusLine())
        return rows
    }

    /// What a text row shows at `now`.
    private func window(_ marquee: Marquee, now: Double) -> [UInt8] {
        let width = settings.columns
        guard marquee.text.count > width else {
            return marquee.text + Array(repeating: 0x20, count: width - marquee.text.count)
        }
        let loop = marquee.text + Self.scrollGap
        let steps = Int(((now - marquee.since) / Self.scrollInterval + 1e-9).rounded(.down))
        let position = max(0, steps % (loop.count + Self.scrollHoldSteps) - Self.scrollHoldSteps)
        return Array((loop + loop)[position..<position + width])
    }

    private func statusLine() -> [UInt8] {
        let width = settings.columns
        var line = [UInt8](repeating: 0x20, count: width)
        switch state.transport {
        case .playing: line[0] = UInt8(ascii: ">")
        case .paused: line[0] = UInt8(ascii: "\"")
        case .stopped: line[0] = UInt8(ascii: "#")
        }
        if let seconds = clockSeconds {
            let room = width - 5
            let elapsed = clockText(Double(seconds))
            var text = elapsed
            if let duration = state.nowPlaying.duration { text += "/" + clockText(duration) }
            if text.utf8.count > room { text = elapsed }
            for (i, byte) in text.utf8.prefix(room).enumerated() { line[2 + i] = byte }
        }
        if state.isEnabled(.previousTrack) { line[width - 2] = UInt8(ascii: "<") }
        if state.isEnabled(.nextTrack) { line[width - 1] = UInt8(ascii: ">") }
        return line
    }
}
