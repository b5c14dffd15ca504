import ArgumentParser
import TonearmAudio
import TonearmControl
import TonearmControlPlane
import TonearmJSON
import TonearmPlayer

#if canImport(Glibc)
import Glibc
#endif

/// `--socket`, shared by every command that talks to the daemon.
struct Connection: ParsableArguments {
    @Option(help: ArgumentHelp("The daemon's control socket (default: $XDG_RUNTIME_DIR/tonearm.sock, or /run/tonearm/control.sock).", valueName: "path"))
    var socket: String?

    var path: String {
        if let socket { return socket }
        if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), !runtime.isEmpty {
            return runtime + "/tonearm.sock"
        }
        return "/run/tonearm/control.sock"
    }

    func connect() throws -> ControlClient {
        do {
            return try ControlClient(path: path)
        } catch {
            printError("tonearm: \(error)")
            throw ExitCode(1)
        }
    }

    /// Sends one request; prints the daemon's error and exits 1 when it fails.
    @discardableResult
    func send(_ command: String, _ arguments: [(String, JSONValue)] = []) throws -> JSONValue {
        let client = try connect()
        do {
            return try client.request(command, arguments)
        } catch {
            printError("tonearm: \(error)")
            throw ExitCode(1)
        }
    }

    /// A remote command, by its name in the command center (the daemon's vocabulary): prints
    /// nothing on success; otherwise its status, named as the user said it, exit 1.
    func transport(_ command: String, _ arguments: [(String, JSONValue)] = [], said word: String? = nil) throws {
        let result = try send(command, arguments)
        let status = result["status"]?.stringValue ?? "success"
        if status != "success" {
            printError("tonearm: \(word ?? command): \(status)")
            throw ExitCode(1)
        }
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what the daemon is playing.",
        discussion: "--json prints the daemon's status object: state, title, artist, album, duration, elapsed (extrapolated to now), rate (0 while paused, or while playing and nothing is heard), output (ok, or what the output waits for: the device lost, stopped responding or not there yet), queueIndex, queueCount, volume, repeat, shuffle, single, consume, replayGain (mode, preamp, missingPreamp, limit), eligible, commands (name → enabled), artwork, device, library, saveFailure (why the player's state cannot be saved now, or null), stream (for an http(s) item: state connecting, playing, reconnecting or failed, attempt, error, station, genre, contentType; else null), nowPlayingLink (session, player, present: the [[link]] whose program's Now Playing this is, or null for the player's own) and links.")
    @OptionGroup var connection: Connection
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let status = try connection.send("status")
        if json {
            print(status.serialized)
            return
        }
        print(StatusLine.render(status))
        if let output = status["output"]?.stringValue, output != "ok" {
            let error = status["device"]?["error"]?.stringValue
            print("output: \(output)" + (error.map { " (\($0))" } ?? ""))
        }
        if let device = status["device"] {
            print("device: \(device["name"]?.stringValue ?? "?") (\(device["state"]?.stringValue ?? "?")), \(device["underruns"]?.intValue ?? 0) underruns")
        }
        if let failure = status["saveFailure"]?.stringValue { print("state not saved: \(failure)") }
        if let stream = status["stream"], let state = stream["state"]?.stringValue {
            var line = "stream: \(state)"
            if let attempt = stream["attempt"]?.intValue { line += " (attempt \(attempt))" }
            if let error = stream["error"]?.stringValue { line += " after \(error)" }
            if let station = stream["station"]?.stringValue { line += ", station \(station)" }
            print(line)
        }
        let eligible = status["eligible"]?.boolValue == true
        print("now playing: \(eligible ? "eligible" : "not eligible (\(status["eligibility"]?.stringValue ?? ""))")")
    }
}

/// One line describing the player: "▶ Title — Artist  1:02 / 3:45  [2/10]", or another
/// program's item: "▶ Title — Artist  0:42 / 3:00  (shairport-sync)".
enum StatusLine {
    static func render(_ status: JSONValue, extraSeconds: Double = 0) -> String {
        let state = status["state"]?.stringValue ?? "stopped"
        let glyph = state == "playing" ? "▶" : state == "paused" ? "❚❚" : "■"
        guard let title = status["title"]?.stringValue ?? status["queueIndex"]?.intValue.map({ "track \($0 + 1)" }) else {
            return "\(glyph) \(state), queue \(status["queueCount"]?.intValue ?? 0)"
        }
        var line = "\(glyph) \(title)"
        if let artist = status["artist"]?.stringValue { line += " — \(artist)" }
        let rate = status["rate"]?.doubleValue ?? 0
        var elapsed = (status["elapsed"]?.doubleValue ?? 0) + rate * extraSeconds
        if let duration = status["duration"]?.doubleValue {
            elapsed = min(elapsed, duration)
            line += "  \(clock(max(0, elapsed))) / \(clock(duration))"
        } else {
            line += "  \(clock(max(0, elapsed)))"
        }
        if let index = status["queueIndex"]?.intValue, let count = status["queueCount"]?.intValue {
            line += "  [\(index + 1)/\(count)]"
        }
        // Another program's, through its linked player.
        if let session = status["nowPlayingLink"]?["session"]?.stringValue { line += "  (\(session))" }
        return line
    }
}

struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Append files, directories or internet radio streams (http:// and https:// URLs) to the queue.",
        discussion: "Directories are added recursively, in disc, track number and name order. With a music directory configured, paths outside it are refused and relative paths are looked up in it. A URL is a live stream: no length, no seeking; a drop is reconnected.")
    @OptionGroup var connection: Connection
    @Argument(help: "Audio files, directories or http(s) URLs.") var paths: [String]

    func run() throws {
        // Paths that exist here are sent absolute: the daemon's working directory is not ours.
        let resolved = paths.map { path -> String in
            guard !path.hasPrefix("/"), access(path, F_OK) == 0, let cwd = getcwd(nil, 0) else { return path }
            defer { free(cwd) }
            return String(cString: cwd) + "/" + path
        }
        let result = try connection.send("add", [("paths", .array(resolved.map { .string($0) }))])
        for skipped in result["skipped"]?.arrayValue ?? [] {
            printError("tonearm: skipped \(skipped["path"]?.stringValue ?? "?"): \(skipped["reason"]?.stringValue ?? "")")
        }
        print("added \(result["added"]?.intValue ?? 0), queue \(result["queueCount"]?.intValue ?? 0)")
    }
}

struct Clear: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Empty the queue.")
    @OptionGroup var connection: Connection
    func run() throws { try connection.transport("clear") }
}

struct Queue: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the queue.")
    @OptionGroup var connection: Connection
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let queue = try connection.send("queue")
        if json {
            print(queue.serialized)
            return
        }
        let current = queue["currentIndex"]?.intValue
        for (index, item) in (queue["items"]?.arrayValue ?? []).enumerated() {
            let marker = index == current ? "▶" : " "
            let title = item["title"]?.stringValue ?? basename(item["path"]?.stringValue ?? "?")
            let artist = item["artist"]?.stringValue.map { " — \($0)" } ?? ""
            let length = item["duration"]?.doubleValue.map { "  \(clock($0))" } ?? ""
            print("\(marker) \(index + 1). \(title)\(artist)\(length)  (id \(item["id"]?.intValue ?? 0))")
        }
    }
}

struct Pause: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Pause (fades out; the position is kept).")
    @OptionGroup var connection: Connection
    func run() throws { try connection.transport("pause") }
}

struct Toggle: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Play or pause.")
    @OptionGroup var connection: Connection
    func run() throws { try connection.transport("togglePlayPause", said: "toggle") }
}

struct Stop: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop (the queue is kept).")
    @OptionGroup var connection: Connection
    func run() throws { try connection.transport("stop") }
}

struct Next: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Go to the next track.")
    @OptionGroup var connection: Connection
    func run() throws { try connection.transport("nextTrack", said: "next") }
}

struct Previous: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Restart the track, or go back when less than 3 s have played.")
    @OptionGroup var connection: Connection
    func run() throws { try connection.transport("previousTrack", said: "previous") }
}

struct Seek: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Go to a position in the current track.")
    @OptionGroup var connection: Connection
    @Argument(help: "Seconds from the start.") var seconds: Double

    func validate() throws {
        guard seconds >= 0 else { throw ValidationError("SECONDS must not be negative") }
    }

    func run() throws { try connection.transport("changePlaybackPosition", [("position", .double(seconds))], said: "seek") }
}

struct Skip: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Skip forward or back by some seconds.",
        discussion: "tonearm skip +30, tonearm skip -15 (a bare number skips forward).")
    @OptionGroup var connection: Connection
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("[+|-]SECONDS", valueName: "seconds")) var amount: [String] = []

    func run() throws {
        guard amount.count == 1, let seconds = Double(amount[0].hasPrefix("+") ? String(amount[0].dropFirst()) : amount[0]),
              seconds.isFinite, seconds != 0 else {
            throw ValidationError("give one non-zero number of seconds, e.g. +30 or -15")
        }
        try connection.transport(seconds < 0 ? "skipBackward" : "skipForward", [("interval", .double(abs(seconds)))], said: "skip")
    }
}

struct Repeat: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Set repeat: \(RepeatMode.choices).")
    @OptionGroup var connection: Connection
    @Argument(help: ArgumentHelp(RepeatMode.choices)) var mode: String

    func validate() throws { _ = try choice(mode, RepeatMode.self) }

    func run() throws { try connection.transport("changeRepeatMode", [("mode", .string(mode))], said: "repeat") }
}

struct Shuffle: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Turn shuffle \(OnOff.choices).")
    @OptionGroup var connection: Connection
    @Argument(help: ArgumentHelp(OnOff.choices)) var setting: OnOff

    func run() throws { try connection.transport("changeShuffleMode", [("on", .bool(setting == .on))], said: "shuffle") }
}

struct Single: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop after the current track: \(SingleMode.choices).",
        discussion: "With repeat on, the track plays again instead. oneshot does it once, then single turns itself off.")
    @OptionGroup var connection: Connection
    @Argument(help: ArgumentHelp(SingleMode.choices)) var mode: String

    func validate() throws { _ = try choice(mode, SingleMode.self) }

    func run() throws { try connection.transport("single", [("mode", .string(mode))], said: "single") }
}

struct Consume: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove each track from the queue once it has played: \(OnOff.choices).")
    @OptionGroup var connection: Connection
    @Argument(help: ArgumentHelp(OnOff.choices)) var setting: OnOff

    func run() throws { try connection.transport("consume", [("on", .bool(setting == .on))], said: "consume") }
}

struct Output: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Turn the output \(OnOff.choices).",
        discussion: "off closes the ALSA device, so another program may use it; nothing is heard and the position holds until it is on again. Kept across restarts.")
    @OptionGroup var connection: Connection
    @Argument(help: ArgumentHelp(OnOff.choices)) var setting: OnOff

    func run() throws { try connection.transport("output", [("on", .bool(setting == .on))], said: "output") }
}

struct ReplayGainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replaygain",
        abstract: "Show or set ReplayGain: \(ReplayGainMode.choices).",
        discussion: """
            off plays every file bit-perfect. track and album play each file at the loudness its \
            REPLAYGAIN_* tags ask for, limited by the stored peak so nothing clips; auto takes the \
            album's gain while the queue plays an album in order, the track's otherwise. Without \
            arguments, prints the mode and pre-amps. The setting is kept across restarts.
            """)
    @OptionGroup var connection: Connection
    @Argument(help: ArgumentHelp(ReplayGainMode.choices)) var mode: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("dB added to every file's gain (-15…15).", valueName: "dB")) var preamp: Double?
    @Option(parsing: .unconditional, help: ArgumentHelp("dB for files without ReplayGain tags (-15…15).", valueName: "dB")) var missingPreamp: Double?

    func validate() throws {
        if let mode { _ = try choice(mode, ReplayGainMode.self) }
        for (name, value) in [("--preamp", preamp), ("--missing-preamp", missingPreamp)] {
            if let value, !(-15...15).contains(value) { throw ValidationError("\(name) must be between -15 and 15 dB") }
        }
    }

    func run() throws {
        if mode != nil || preamp != nil || missingPreamp != nil {
            var arguments: [(String, JSONValue)] = []
            if let mode { arguments.append(("mode", .string(mode))) }
            if let preamp { arguments.append(("preamp", .double(preamp))) }
            if let missingPreamp { arguments.append(("missingPreamp", .double(missingPreamp))) }
            try connection.transport("replayGain", arguments, said: "replaygain")
            return
        }
        let gain = try connection.send("status")["replayGain"]
        let mode = gain?["mode"]?.stringValue ?? "?"
        let preamp = gain?["preamp"]?.doubleValue ?? 0
        let missing = gain?["missingPreamp"]?.doubleValue ?? 0
        print("\(mode), pre-amp \(fixed(preamp, 1)) dB, files without tags \(fixed(missing, 1)) dB")
    }
}

struct Volume: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Set the volume in percent.")
    @OptionGroup var connection: Connection
    @Argument(help: "0 to 100") var percent: Double

    func validate() throws {
        guard (0...100).contains(percent) else { throw ValidationError("PERCENT must be between 0 and 100") }
    }

    func run() throws { try connection.transport("setVolume", [("percent", .double(percent))], said: "volume") }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follow the player live.",
        discussion: "On a terminal: one line that updates itself (the clock is extrapolated here from the last published elapsed, rate and age; the daemon publishes only on events). Piped: the events as JSON lines.")
    @OptionGroup var connection: Connection

    func run() throws {
        let client = try connection.connect()
        do {
            _ = try client.request("subscribe", [])
            let live = isatty(STDOUT_FILENO) != 0
            guard live else {
                while let event = try client.readEvent(timeout: nil) {
                    print(JSONValue.object([("event", .string(event.topic)), ("data", event.data)]).serialized)
                    fflushStdout()
                }
                return
            }
            var status = try client.request("status", [])
            var received = monotonicNow()
            while true {
                let line = StatusLine.render(status, extraSeconds: monotonicNow() - received)
                print("\r\u{1B}[2K" + line, terminator: "")
                fflushStdout()
                if try client.readEvent(timeout: 0.5) != nil {
                    status = try client.request("status", [])
                    received = monotonicNow()
                }
            }
        } catch {
            printError("\ntonearm: \(error)")
            throw ExitCode(1)
        }
    }
}

struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Diagnose Now Playing, commands and the output device.",
        discussion: "Shows the session (category, options, active), each command's enabled flag, the Now Playing dictionary, whether the output is heard, the output device, each [[link]] and whether its player is there, and every red flag that applies with what to do about it.")
    @OptionGroup var connection: Connection
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let report = try connection.send("doctor")
        if json {
            print(report.serialized)
            return
        }
        let session = report["session"]
        print("session:     category \(session?["category"]?.stringValue ?? "?"), mode \(session?["mode"]?.stringValue ?? "?"), options [\((session?["options"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ", "))], \(session?["active"]?.boolValue == true ? "active" : "inactive")")
        print("now playing: \(report["eligible"]?.boolValue == true ? "eligible" : "NOT eligible") (\(report["eligibility"]?.stringValue ?? ""))")
        let commands = report["commands"]?.objectValue ?? []
        print("commands:    " + commands.map { "\($0.0) \($0.1.boolValue == true ? "on" : "off")" }.joined(separator: ", "))
        print("info:")
        for (key, value) in report["nowPlaying"]?.objectValue ?? [] {
            print("  \(key): \(value.serialized)")
        }
        if let output = report["output"]?.stringValue {
            print("output:      \(output)" + (report["device"]?["error"]?.stringValue.map { " (\($0))" } ?? ""))
        }
        if let device = report["device"] {
            let format = device["format"]?.stringValue.map { "\($0) \(device["rate"]?.intValue ?? 0) Hz \(device["channels"]?.intValue ?? 0) ch, period \(device["periodFrames"]?.intValue ?? 0), buffer \(device["bufferFrames"]?.intValue ?? 0)" } ?? "not configured"
            print("device:      \(device["name"]?.stringValue ?? "?") — \(device["state"]?.stringValue ?? "?"), \(format), \(device["underruns"]?.intValue ?? 0) underruns")
        }
        for link in report["links"]?.arrayValue ?? [] {
            let there = link["present"]?.boolValue == true ? "there" : "NOT there"
            print("link:        sessions '\(link["session"]?.stringValue ?? "?")' ↔ \(link["player"]?.stringValue ?? "?") — \(there)")
        }
        let flags = report["redFlags"]?.arrayValue ?? []
        if flags.isEmpty {
            print("red flags:   none")
        }
        for flag in flags {
            print("✗ \(flag["flag"]?.stringValue ?? ""): \(flag["detail"]?.stringValue ?? "")")
            print("    → \(flag["fix"]?.stringValue ?? "")")
        }
    }
}

func monotonicNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func fflushStdout() { fflush(nil) }

/// A switch's two positions, as the commands that turn something on or off take them.
extension OnOff: ExpressibleByArgument {}

/// `word` as a case of `Mode`, or a usage error that lists the cases ("MODE must be off, one or all").
func choice<Mode: CaseIterable & RawRepresentable<String>>(_ word: String, _: Mode.Type) throws -> Mode {
    guard let mode = Mode(rawValue: word) else { throw ValidationError("MODE must be \(Mode.choices)") }
    return mode
}
