import ArgumentParser
import TonearmControl
import TonearmControlPlane
import TonearmJSON

#if canImport(Glibc)
import Glibc
#endif

struct Sessions: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the audio sessions: the player's and those clients opened.",
        discussion: "Each session's name (the program's, for an ALSA program playing through the tonearm plugin), category, mode, options, whether it is active, interrupted, ducked or silenced by the mute input, and the gain applied to its output now. --json prints the daemon's answer: muted, nowPlayingOwner and sessions.")
    @OptionGroup var connection: Connection
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let report = try connection.send("sessions")
        if json {
            print(report.serialized)
            return
        }
        print("mute input: \(report["muted"]?.boolValue == true ? "on" : "off")")
        print("SESSION  NAME            OWNER      CATEGORY       MODE          ACTIVE  STATE         GAIN      OPTIONS")
        for session in report["sessions"]?.arrayValue ?? [] {
            var state: [String] = []
            if session["interrupted"]?.boolValue == true { state.append("interrupted") }
            if session["ducked"]?.boolValue == true { state.append("ducked") }
            if session["mutedByInput"]?.boolValue == true { state.append("muted") }
            if session["nowPlaying"]?.boolValue == true { state.append("nowPlaying") }
            let gain = session["gainDB"]?.doubleValue.map { "\(fixed($0, 1)) dB" } ?? "silent"
            let owner = session["owner"]?.stringValue ?? session["owner"]?.intValue.map { "client \($0)" } ?? "?"
            let options = (session["options"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ",")
            print([
                pad(String(session["session"]?.intValue ?? 0), 8), pad(session["name"]?.stringValue ?? "-", 15), pad(owner, 10),
                pad(session["category"]?.stringValue ?? "?", 14), pad(session["mode"]?.stringValue ?? "?", 13),
                pad(session["active"]?.boolValue == true ? "yes" : "no", 7), pad(state.isEmpty ? "-" : state.joined(separator: ","), 13),
                pad(gain, 9), options.isEmpty ? "-" : options,
            ].joined(separator: " "))
        }
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

struct Mute: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Turn the mute input \(OnOff.choices).",
        discussion: "Like a phone's silent switch: on silences sessions in categories ambient and soloAmbient; playback, playAndRecord and the rest ignore it.")
    @OptionGroup var connection: Connection
    @Argument(help: ArgumentHelp(OnOff.choices)) var setting: OnOff

    func run() throws { try connection.send("mute", [("on", .bool(setting == .on))]) }
}

struct Announce: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play a prompt in a session of its own, by the session rules, and wait for it.",
        discussion: """
            Opens a session, activates it, plays FILE, deactivates it and exits when FILE has been heard. Without --category and --options the prompt ducks the others (category playback, option duckOthers). A non-mixable session interrupts the player: with --notify-others the player resumes when the prompt ends, without it the player stays paused.

            With --pcm, FILE is raw signed little-endian interleaved PCM ('-' for standard input), streamed to the daemon and resampled there as needed.

            Categories: ambient, soloAmbient, playback, record, playAndRecord, multiRoute. Options: mixWithOthers, duckOthers, interruptSpokenAudioAndMixWithOthers.

            Examples:
              tonearm announce turn-left.flac
              tonearm announce --category playAndRecord --notify-others ring.flac
              sox prompt.wav -t raw -r 22050 -c 1 -e signed -b 16 - | tonearm announce --pcm 22050:1:16 -
            """)
    @OptionGroup var connection: Connection
    @Option(help: "The session's category.") var category: String?
    @Option(help: "The session's mode (default, spokenAudio, voicePrompt, …).") var mode: String?
    @Option(help: ArgumentHelp("Category options, comma-separated.", valueName: "a,b")) var options: String?
    @Flag(help: "Deactivate with notifyOthersOnDeactivation: interrupted sessions resume.") var notifyOthers = false
    @Option(help: ArgumentHelp("FILE is raw PCM in this format.", valueName: "rate:channels:bits")) var pcm: String?
    @Argument(help: "An audio file, or raw PCM with --pcm.") var file: String

    func validate() throws {
        if let pcm { _ = try Self.format(pcm) }
    }

    static func format(_ text: String) throws -> (rate: Int, channels: Int, bits: Int) {
        let parts = text.split(separator: ":").map { Int($0) }
        guard parts.count == 3, let rate = parts[0], let channels = parts[1], let bits = parts[2],
              rate > 0, channels > 0, [8, 16, 24, 32].contains(bits) else {
            throw ValidationError("--pcm must be RATE:CHANNELS:BITS with BITS 8, 16, 24 or 32, e.g. 22050:1:16")
        }
        return (rate, channels, bits)
    }

    func run() throws {
        let client = try connection.connect()
        do {
            try announce(client)
        } catch let error as ControlError {
            printError("tonearm: \(error)")
            throw ExitCode(1)
        }
    }

    private func announce(_ client: ControlClient) throws {
        _ = try client.request("subscribe", [("topics", .array([.string("interruption"), .string("stream")]))])
        var configuration: [(String, JSONValue)] = []
        if category == nil && options == nil {
            configuration = [("category", .string("playback")), ("options", .array([.string("duckOthers")]))]
        } else {
            if let category { configuration.append(("category", .string(category))) }
            let names = (options ?? "").split(separator: ",").map { JSONValue.string(String($0)) }
            configuration.append(("options", .array(names)))
        }
        if let mode { configuration.append(("mode", .string(mode))) }
        let session = (try client.request("sessionOpen", configuration))["session"] ?? .null
        let id: [(String, JSONValue)] = [("session", session)]
        // Whatever happens from here, the session is closed: a prompt must not hold the player.
        defer { _ = try? client.request("sessionClose", id) }
        _ = (try client.request("sessionActivate", id))

        if let pcm {
            let format = try Self.format(pcm)
            _ = (try client.request("sessionPlay", id + [("format", .object([
                ("rate", .int(format.rate)), ("channels", .int(format.channels)), ("bits", .int(format.bits)),
            ]))]))
            try stream(file, frameBytes: format.channels * format.bits / 8, into: client, id)
        } else {
            _ = (try client.request("sessionPlay", id + [("path", .string(absolute(file)))]))
        }

        while let event = try client.readEvent(timeout: nil) {
            if event.topic == "interruption", let type = event.data["type"]?.stringValue {
                printError("tonearm: announce interruption \(type) (\(event.data["reason"]?.stringValue ?? ""))")
            }
            if event.topic == "stream", event.data["finished"]?.boolValue == true { break }
        }
        _ = (try client.request("sessionDeactivate", id + [("notifyOthers", .bool(notifyOthers))]))
    }

    /// Sends raw PCM in lines of at most 36 KiB (48 KiB of base64), waiting whenever the
    /// daemon's backlog is full.
    private func stream(_ path: String, frameBytes: Int, into client: ControlClient, _ id: [(String, JSONValue)]) throws {
        let fd = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            printError("tonearm: cannot open \(path): \(String(cString: strerror(errno)))")
            throw ExitCode(1)
        }
        defer { if fd != STDIN_FILENO { close(fd) } }
        let chunk = 36864 / frameBytes * frameBytes
        var buffer = [UInt8](repeating: 0, count: chunk)
        var filled = 0
        var atEnd = false
        while !atEnd {
            while filled < chunk {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, chunk - filled) }
                if n < 0 && errno == EINTR { continue }
                if n < 0 {
                    printError("tonearm: cannot read \(path): \(String(cString: strerror(errno)))")
                    throw ExitCode(1)
                }
                if n == 0 {
                    atEnd = true
                    break
                }
                filled += n
            }
            let whole = filled / frameBytes * frameBytes
            if whole > 0 {
                let data = JSONValue.string(Base64.encode(Array(buffer[..<whole])))
                while try !write(data, client, id) {
                    usleep(50_000)  // the daemon's backlog is full: it plays in real time
                }
            }
            buffer.replaceSubrange(0..<whole, with: [])
            buffer += [UInt8](repeating: 0, count: whole)
            filled -= whole
        }
        _ = (try client.request("sessionEnd", id))
    }

    /// One `sessionWrite`; false when the daemon's backlog is full (`busy`).
    private func write(_ data: JSONValue, _ client: ControlClient, _ id: [(String, JSONValue)]) throws(ControlError) -> Bool {
        do throws(ControlError) {
            _ = try client.request("sessionWrite", id + [("data", data)])
            return true
        } catch {
            if error.code == "busy" { return false }
            throw error
        }
    }

    private func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } + "/" + path
    }
}
