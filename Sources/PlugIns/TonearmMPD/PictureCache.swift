/// Pictures read for `albumart` and `readpicture`, shared by every client: a client reads a
/// picture a chunk at a time, and ten clients on ten pictures must not read each again for
/// every chunk. Kept per picture (the file, and whether the picture is the one in it), at
/// most `limit` bytes in all; the one used least recently goes first.
struct PictureCache {
    /// Two or three large covers.
    static let defaultLimit = 8 << 20

    struct Key: Hashable, Sendable {
        var path: String
        var embedded: Bool
    }

    struct Picture: Sendable, Equatable {
        var mimeType: String
        var bytes: [UInt8]
    }

    let limit: Int
    private var entries: [Key: (picture: Picture, used: Int)] = [:]
    private var clock = 0
    /// The bytes kept.
    private(set) var size = 0

    init(limit: Int) { self.limit = limit }

    /// The picture, marked as used now.
    subscript(key: Key) -> Picture? {
        mutating get {
            guard let entry = entries[key] else { return nil }
            clock += 1
            entries[key] = (entry.picture, clock)
            return entry.picture
        }
    }

    /// Keeps `picture`, making room: a picture larger than the whole limit is not kept.
    mutating func keep(_ picture: Picture, for key: Key) {
        if let old = entries.removeValue(forKey: key) { size -= old.picture.bytes.count }
        guard picture.bytes.count <= limit else { return }
        while size + picture.bytes.count > limit, let oldest = entries.min(by: { $0.value.used < $1.value.used }) {
            entries[oldest.key] = nil
            size -= oldest.value.picture.bytes.count
        }
        clock += 1
        entries[key] = (picture, clock)
        size += picture.bytes.count
    }

    /// Gives up a picture (to read it again).
    mutating func forget(_ key: Key) {
        if let old = entries.removeValue(forKey: key) { size -= old.picture.bytes.count }
    }

    var keys: Set<Key> { Set(entries.keys) }
}
