/// Why a FLAC file cannot be (fully) played. The description is one line that names the file.
public struct FLACError: Error, CustomStringConvertible, Sendable {
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        case cannotOpen(String)
        case empty
        case notFLAC
        case badMetadata(String)
        case noAudio
        case truncated(decodedFrames: Int, expectedFrames: Int)
        case decodeErrors(DecodeErrorCounts)
        case formatChange(String)
        case seekFailed(frame: Int)
        case decoder(String)

        /// What is wrong, without the path.
        public var description: String {
            switch self {
            case .cannotOpen(let why): "cannot open: \(why)"
            case .empty: "empty file"
            case .notFLAC: "not a FLAC file (no 'fLaC' stream marker)"
            case .badMetadata(let why): "corrupt metadata: \(why)"
            case .noAudio: "no audio frames"
            case .truncated(let decoded, let expected): "truncated: audio ends after \(decoded) of \(expected) frames"
            case .decodeErrors(let counts): "corrupt audio: \(counts)"
            case .formatChange(let what): "\(what) changes mid-stream; not supported"
            case .seekFailed(let frame): "cannot seek to frame \(frame)"
            case .decoder(let state): "decoder failed: \(state)"
            }
        }
    }

    public var path: String
    public var reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}

/// libFLAC's error callbacks, counted. They are never fatal to the process.
public struct DecodeErrorCounts: Sendable, Equatable, CustomStringConvertible {
    public var lostSync = 0
    public var badHeader = 0
    public var crcMismatch = 0
    public var unparseable = 0
    public var badMetadata = 0

    public var total: Int { lostSync + badHeader + crcMismatch + unparseable + badMetadata }

    public var description: String {
        let parts = [
            (lostSync, "lost sync"), (badHeader, "bad frame header"), (crcMismatch, "CRC mismatch"),
            (unparseable, "unparseable stream"), (badMetadata, "bad metadata"),
        ].filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }
        return "\(total) decode error\(total == 1 ? "" : "s") (\(parts.joined(separator: ", ")))"
    }
}
