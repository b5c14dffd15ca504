/// Why a file or stream cannot be (fully) played, whatever its format. The description is one
/// line that names the file.
public struct DecodeError: Error, CustomStringConvertible, Sendable {
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        case cannotOpen(String)
        case empty
        /// The bytes are not the format the plug-in was chosen for (by the file's suffix): why.
        case notFormat(String)
        /// No plug-in recognises the bytes, and the name's suffix is none of theirs.
        case unrecognised
        /// The format is recognised but this kind of it is not played: what.
        case unsupported(String)
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
            case .notFormat(let why): why
            case .unrecognised: "not a format Tonearm plays"
            case .unsupported(let what): "unsupported: \(what)"
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

/// A decoder's recoverable errors (lost sync, bad frame header, CRC mismatch, …), counted.
/// They are never fatal to the process.
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
