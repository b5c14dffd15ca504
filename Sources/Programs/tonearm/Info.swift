import ArgumentParser
import TonearmDecoding
import TonearmJSON

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the format and metadata of audio files.",
        discussion: """
            FLAC, MP3, AAC and ALAC (M4A), Ogg Vorbis, Opus, WAV and AIFF, known by their \
            first bytes. The format shown is that of the decoded audio; when the header \
            (FLAC's STREAMINFO) disagrees with it, both are shown. With --json, one object per \
            file and line, with the keys file, codec, sampleRate, channels, bitsPerSample, totalFrames, duration (null when the file \
            does not say), title, artist, album, albumArtist, trackNumber, trackTotal, \
            discNumber, date, genre, replayGain and pictures (type, mimeType, width, height, bytes).
            """
    )

    @Flag(help: "Print JSON (one object per file and line).")
    var json = false

    @Argument(help: "Audio files.")
    var files: [String]

    func run() throws {
        var failed = false
        for path in files {
            do {
                let info = try Decoders.open(path: path).info
                print(json ? Self.json(info).serialized : Self.text(info))
            } catch {
                printError("tonearm: \(error)")
                failed = true
            }
        }
        if failed { throw ExitCode(1) }
    }

    static func json(_ info: TrackInfo) -> JSONValue {
        let rg = info.replayGain
        return .object([
            ("file", .string(info.path)),
            ("codec", .string(info.codec)),
            ("sampleRate", .int(info.format.sampleRate)),
            ("channels", .int(info.format.channels)),
            ("bitsPerSample", .int(info.format.bitsPerSample)),
            ("totalFrames", JSONValue(info.totalFrames)),
            ("duration", JSONValue(info.duration)),
            ("title", JSONValue(info.title)),
            ("artist", JSONValue(info.artist)),
            ("album", JSONValue(info.album)),
            ("albumArtist", JSONValue(info.albumArtist)),
            ("trackNumber", JSONValue(info.trackNumber)),
            ("trackTotal", JSONValue(info.trackTotal)),
            ("discNumber", JSONValue(info.discNumber)),
            ("date", JSONValue(info.date)),
            ("genre", JSONValue(info.genre)),
            ("replayGain", .object([
                ("trackGain", JSONValue(rg.trackGain)), ("trackPeak", JSONValue(rg.trackPeak)),
                ("albumGain", JSONValue(rg.albumGain)), ("albumPeak", JSONValue(rg.albumPeak)),
            ])),
            ("pictures", .array(info.pictures.map { p in
                .object([
                    ("type", .string(p.typeName)), ("mimeType", .string(p.mimeType)),
                    ("width", .int(p.width)), ("height", .int(p.height)), ("bytes", .int(p.byteCount)),
                ])
            })),
        ])
    }

    static func text(_ info: TrackInfo) -> String {
        var lines = [info.path]
        func add(_ label: String, _ value: String?) {
            if let value { lines.append("  " + (label + ":").padding(14) + value) }
        }
        add("format", "\(info.codec) \(info.format)")
        if info.headerFormat != info.format { add("header", "\(info.headerFormat) (frames disagree)") }
        if let total = info.totalFrames, let d = info.duration {
            add("length", "\(clock(d)) (\(total) frames, \(fixed(d, 3)) s)")
        } else {
            add("length", "unknown (the file does not say)")
        }
        add("title", info.title)
        add("artist", info.artist)
        add("album", info.album)
        add("album artist", info.albumArtist)
        add("track", info.trackNumber.map { n in info.trackTotal.map { "\(n)/\($0)" } ?? "\(n)" })
        add("disc", info.discNumber.map(String.init))
        add("date", info.date)
        add("genre", info.genre)
        if let g = info.replayGain.trackGain { add("track gain", "\(fixed(g, 2)) dB") }
        if let g = info.replayGain.albumGain { add("album gain", "\(fixed(g, 2)) dB") }
        for p in info.pictures {
            add("picture", "\(p.typeName), \(p.mimeType), \(p.width)×\(p.height), \(p.byteCount) bytes")
        }
        return lines.joined(separator: "\n")
    }
}

extension String {
    func padding(_ width: Int) -> String { count >= width ? self + " " : self + String(repeating: " ", count: width - count) }
}
