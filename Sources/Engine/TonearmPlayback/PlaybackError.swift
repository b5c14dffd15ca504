import TonearmALSA
import TonearmAudio
import TonearmDecoding

/// Why the engine could not play.
public enum PlaybackError: Error, CustomStringConvertible, Sendable {
    case device(ALSAError)
    case file(DecodeError)
    case resampler(String)
    /// Every secondary stream slot is playing. `stream` names what was to be played: a file's
    /// path in quotes, or the format of raw PCM.
    case noFreeStreamSlot(stream: String, slots: Int)
    /// A raw PCM stream (`startStream(format:)`) in a format the engine does not take.
    case unsupportedStreamFormat(StreamFormat, problem: String)

    public var description: String {
        switch self {
        case .device(let e): e.description
        case .file(let e): e.description
        case .resampler(let why): "cannot create the resampler: \(why)"
        case .noFreeStreamSlot(let stream, let slots):
            "cannot play \(stream): all \(slots) stream slots are in use"
        case .unsupportedStreamFormat(let format, let problem):
            "cannot play raw PCM in \(format): \(problem)"
        }
    }
}
