import Foundation

/// One short piece of music in every format Tonearm is meant to play, each file made by the
/// Debian encoder a user's files come from: for tests that run over all decoders at once.
///
/// The signal is `PCMFixtures.signal` (tones plus seeded noise), stereo, 16 bits, 44.1 kHz,
/// written as WAV by sox; every other format is encoded from that WAV. Files carry a title, an
/// artist and, where the encoder embeds one, a picture, so tag and picture readers are in play.
public enum EncodedFixtures {
    public enum Format: String, CaseIterable, Sendable {
        case flac, mp3, vorbis, opus, aac, alac, wav, aiff

        public var suffix: String {
            switch self {
            case .flac: "flac"
            case .mp3: "mp3"
            case .vorbis: "ogg"
            case .opus: "opus"
            case .aac, .alac: "m4a"
            case .wav: "wav"
            case .aiff: "aiff"
            }
        }

        /// The program that makes a file of this format from a WAV.
        public var encoder: String {
            switch self {
            case .flac: "flac"
            case .mp3: "lame"
            case .vorbis: "oggenc"
            case .opus: "opusenc"
            case .aac, .alac: "ffmpeg"
            case .wav, .aiff: "sox"
            }
        }
    }

    public static let sampleRate = 44100
    public static let channels = 2
    public static let title = "Needle Drop"
    public static let artist = "The Test Pressings"

    /// `frames` of the test signal as a 16-bit stereo WAV at `path`, written by sox.
    @discardableResult
    public static func signalWAV(frames: Int, to path: String, seed: UInt64 = 1) throws -> String {
        guard toolsAvailable("sox") else { throw missing("sox") }
        let samples = PCMFixtures.signal(frames: frames, channels: channels, bits: 16, sampleRate: sampleRate, seed: seed)
        try PCMFixtures.sox(samples, bits: 16, channels: channels, sampleRate: sampleRate, to: path, type: "wav")
        return path
    }

    /// Encodes `wav` (from `signalWAV`) as `format` into `directory`; returns the file's path.
    /// Throws `MissingEncoder` when the format's encoder is not installed.
    public static func encode(_ wav: String, as format: Format, in directory: String) throws -> String {
        guard toolsAvailable(format.encoder) else { throw missing(format.encoder) }
        let out = directory + "/\(format.rawValue).\(format.suffix)"
        let picture = directory + "/cover.png"
        if !FileManager.default.fileExists(atPath: picture) {
            try Data(TinyPNG.make(width: 24, height: 16)).write(to: URL(fileURLWithPath: picture))
        }
        let tags = ["-metadata", "title=\(title)", "-metadata", "artist=\(artist)"]
        switch format {
        case .flac:
            try runChecked("flac", ["--silent", "--force", "--tag=TITLE=\(title)", "--tag=ARTIST=\(artist)",
                                    "--picture=\(picture)", "-o", out, wav])
        case .mp3:
            // An ID3v2 tag with text frames and an APIC frame in front, a Xing/LAME frame for gapless.
            try runChecked("lame", ["--quiet", "--tt", title, "--ta", artist, "--ti", picture, wav, out])
        case .vorbis:
            try runChecked("oggenc", ["--quiet", "-t", title, "-a", artist, "-o", out, wav])
        case .opus:
            try runChecked("opusenc", ["--quiet", "--title", title, "--artist", artist, "--picture", picture, wav, out])
        case .aac:
            // `moov` in front (as streaming tools write it), so the header mutations reach it.
            try PCMFixtures.ffmpeg(wav, ["-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart"] + tags, to: out)
        case .alac:
            // `moov` after `mdat`, ffmpeg's default: the other layout.
            try PCMFixtures.ffmpeg(wav, ["-c:a", "alac"] + tags, to: out)
        case .wav:
            try runChecked("sox", ["-D", wav, out])
        case .aiff:
            try runChecked("sox", ["-D", wav, "--comment", title, out])
        }
        return out
    }

    /// A format whose encoder is not installed.
    public struct MissingEncoder: Error, CustomStringConvertible {
        public var program: String
        public var description: String { "\(program) is not installed; run ./scripts/setup" }
    }

    private static func missing(_ program: String) -> MissingEncoder { MissingEncoder(program: program) }
}
