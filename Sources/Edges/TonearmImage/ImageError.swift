/// The module's one error: what failed, on which picture (format and dimensions when known) and
/// the library's own words, e.g. "cannot decode JPEG cover (3000×3000): Premature end of JPEG file".
public struct ImageError: Error, Sendable, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }

    /// A decoder refused the picture: format and dimensions (from its header) lead the message.
    static func decoding(_ format: PictureFormat, _ width: Int, _ height: Int, _ reason: String) -> ImageError {
        ImageError("cannot decode \(format.name) cover (\(width)×\(height)): \(reason)")
    }
}
