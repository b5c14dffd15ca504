import TonearmALSA
import TonearmFLAC

/// Why the engine could not play.
public enum PlaybackError: Error, CustomStringConvertible, Sendable {
    case device(ALSAError)
    case file(FLACError)
    case resampler(String)
    /// Every secondary stream slot is playing.
    case noFreeStreamSlot(path: String, slots: Int)

    public var description: String {
        switch self {
        case .device(let e): e.description
        case .file(let e): e.description
        case .resampler(let why): "cannot create the resampler: \(why)"
        case .noFreeStreamSlot(let path, let slots):
            "cannot play '\(path)': all \(slots) stream slots are in use"
        }
    }
}
