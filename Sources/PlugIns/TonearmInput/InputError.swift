/// A key map a profile cannot have, naming the key and what is wrong with it ("unknown key
/// 'KEY_PLAYPAUS' in the input map: …"). Devices that are missing or unreadable are not errors
/// of this kind: the source logs them and keeps trying.
public struct InputError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The key as the profile wrote it.
    public var key: String
    public var description: String

    public init(key: String, description: String) {
        self.key = key
        self.description = description
    }
}
