import TonearmJSON

#if canImport(Glibc)
import Glibc
#endif

/// What the player needs to carry on after a restart or a power cut.
public struct PlayerStateRecord: Sendable, Equatable {
    /// Track paths, in queue order.
    public var queue: [String]
    /// Index into `queue` of the current track; nil when nothing is current.
    public var currentIndex: Int?
    /// Seconds into the current track.
    public var position: Double
    public var volume: Double
    /// The player's own name for it ("off", "one", "all"…); stored as given.
    public var repeatMode: String
    public var shuffle: Bool
    /// Play order as indexes into `queue`: a permutation of them.
    public var shuffleOrder: [Int]?
    /// Playing (not paused or stopped) when saved: resume on start.
    public var wasPlaying: Bool
    /// The player's modes, by their own names; nil in a file saved before they existed.
    public var single: String?
    public var consume: Bool?
    /// ReplayGain as a client last set it: the mode's name and the pre-amps in dB.
    public var replayGain: String?
    public var replayGainPreamp: Double?
    public var replayGainMissingPreamp: Double?
    /// False when a client turned the output off.
    public var outputEnabled: Bool?

    public init(queue: [String] = [], currentIndex: Int? = nil, position: Double = 0, volume: Double = 1,
                repeatMode: String = "off", shuffle: Bool = false, shuffleOrder: [Int]? = nil,
                wasPlaying: Bool = false, single: String? = nil, consume: Bool? = nil, replayGain: String? = nil,
                replayGainPreamp: Double? = nil, replayGainMissingPreamp: Double? = nil, outputEnabled: Bool? = nil) {
        self.outputEnabled = outputEnabled
        self.single = single
        self.consume = consume
        self.replayGain = replayGain
        self.replayGainPreamp = replayGainPreamp
        self.replayGainMissingPreamp = replayGainMissingPreamp
        self.queue = queue
        self.currentIndex = currentIndex
        self.position = position
        self.volume = volume
        self.repeatMode = repeatMode
        self.shuffle = shuffle
        self.shuffleOrder = shuffleOrder
        self.wasPlaying = wasPlaying
    }

    /// Why the record cannot be stored or trusted, or nil when it is consistent.
    public var inconsistency: String? {
        if let currentIndex, !queue.indices.contains(currentIndex) {
            return "current index \(currentIndex) is outside the queue of \(queue.count)"
        }
        if !position.isFinite || position < 0 { return "position \(position) is not a time" }
        if !volume.isFinite || volume < 0 { return "volume \(volume) is not a level" }
        if let shuffleOrder {
            guard shuffleOrder.count == queue.count else {
                return "shuffle order has \(shuffleOrder.count) entries for a queue of \(queue.count)"
            }
            var seen = [Bool](repeating: false, count: queue.count)
            for index in shuffleOrder {
                guard queue.indices.contains(index), !seen[index] else {
                    return "shuffle order is not a permutation of the queue (\(index))"
                }
                seen[index] = true
            }
        }
        return nil
    }
}

/// Keeps one `PlayerStateRecord` in `<directory>/state.json` so that a power cut at any
/// instant leaves either the previous record or the new one, never a mix.
///
/// A save writes `state.json.tmp`, fsyncs it, renames it over `state.json` and fsyncs the
/// directory (the rename is what makes the new record durable). The file carries a version
/// and an FNV-1a checksum of the state's exact text, so a torn or bit-rotted file is not
/// trusted: `load` moves it aside as `state.json.corrupt-<n>` and the player starts empty.
///
/// Not for sharing between threads: one owner (the player's actor) saves and loads.
public final class StateStore {
    public enum LoadResult: Sendable, Equatable {
        /// No state file: a first start.
        case none
        case restored(PlayerStateRecord)
        /// The file could not be trusted; it now lies at `movedTo` (still at the state path
        /// if even that rename failed, which `reason` then says).
        case setAside(reason: String, movedTo: String)
    }

    public static let formatVersion = 1
    /// A state file larger than this is not read (thousands of paths take well under 1 MiB).
    static let largestFile = 32 << 20

    public let directory: String
    /// `<directory>/state.json`.
    public var path: String { joinPath(directory, Self.fileName) }

    static let fileName = "state.json"
    static let temporaryName = "state.json.tmp"
    static let setAsidePrefix = "state.json.corrupt-"

    private let directoryDescriptor: Int32
    /// The bytes of the last save or load: an identical save is not written again, which
    /// spares the flash while paused.
    private var lastWritten: [UInt8]?

    /// Opens `directory`, creating it (and its parents) with mode 0750 when missing.
    public init(directory: String) throws(LibraryError) {
        self.directory = directory
        do throws(SystemError) {
            try FileSystem.makeDirectories(directory, mode: 0o750)
        } catch {
            throw .stateDirectoryUnavailable(directory, cause: "cannot create it: \(error.text)")
        }
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw .stateDirectoryUnavailable(directory, cause: SystemError().text)
        }
        guard access(directory, W_OK) == 0 else {
            let cause = SystemError().text
            close(fd)
            throw .stateDirectoryUnavailable(directory, cause: "not writable: \(cause)")
        }
        directoryDescriptor = fd
    }

    deinit {
        close(directoryDescriptor)
    }

    /// Replaces the stored record, durably. A record with an `inconsistency` is refused, since
    /// `load` would refuse it.
    public func save(_ record: PlayerStateRecord) throws(LibraryError) {
        if let problem = record.inconsistency { throw .cannotSaveState(path, cause: problem) }
        let bytes = Self.encode(record)
        if bytes == lastWritten { return }
        do throws(SystemError) {
            try writeReplacing(bytes)
        } catch {
            _ = unlinkat(directoryDescriptor, Self.temporaryName, 0)
            throw .cannotSaveState(path, cause: error.text)
        }
        lastWritten = bytes
    }

    private func writeReplacing(_ bytes: [UInt8]) throws(SystemError) {
        try FileSystem.replace(Self.fileName, in: directoryDescriptor, temporary: Self.temporaryName, with: bytes, mode: 0o640)
    }

    /// The stored record. Never throws: a file that cannot be trusted is moved aside. A
    /// leftover `state.json.tmp` (a save cut short before its rename) is ignored.
    public func load() -> LoadResult {
        let bytes: [UInt8]
        do throws(SystemError) {
            guard let read = try readStateFile() else { return .none }
            bytes = read
        } catch {
            return setAside(reason: "cannot read it: \(error.text)")
        }
        switch Self.decode(bytes) {
        case .success(let record):
            lastWritten = bytes
            return .restored(record)
        case .failure(let problem):
            return setAside(reason: problem.reason)
        }
    }

    private func readStateFile() throws(SystemError) -> [UInt8]? {
        let fd = openat(directoryDescriptor, Self.fileName, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw SystemError()
        }
        defer { close(fd) }
        let status = try FileSystem.status(of: fd)
        guard status.kind == .regular else { throw SystemError(EISDIR) }
        guard status.size <= Self.largestFile else { throw SystemError(EFBIG) }
        return try FileSystem.read(fd, offset: 0, count: status.size)
    }

    /// Renames the state file to the next free `state.json.corrupt-<n>`.
    private func setAside(reason: String) -> LoadResult {
        lastWritten = nil
        var next = 1
        if let listing = try? FileSystem.entries(directory) {
            for entry in listing where entry.name.hasPrefix(Self.setAsidePrefix) {
                if let n = Int(entry.name.dropFirst(Self.setAsidePrefix.count)), n >= next { next = n + 1 }
            }
        }
        let name = Self.setAsidePrefix + String(next)
        guard renameat(directoryDescriptor, Self.fileName, directoryDescriptor, name) == 0 else {
            let cause = SystemError().text
            return .setAside(reason: "\(reason); moving it aside failed: \(cause)", movedTo: path)
        }
        _ = fsync(directoryDescriptor)
        return .setAside(reason: reason, movedTo: joinPath(directory, name))
    }

    // MARK: The file format

    // {"version":1,"checksum":"<16 hex digits>","state":{…}}\n
    // The checksum covers the bytes of the state object exactly as written, so the layout is
    // fixed: version, checksum, then the state last.
    private static let head = Array("{\"version\":\(formatVersion),\"checksum\":\"".utf8)
    private static let middle = Array("\",\"state\":".utf8)
    private static let tail = Array("}\n".utf8)

    static func encode(_ record: PlayerStateRecord) -> [UInt8] {
        let state = JSONValue.object([
            ("queue", .array(record.queue.map { .string($0) })),
            ("currentIndex", JSONValue(record.currentIndex)),
            ("position", .double(record.position)),
            ("volume", .double(record.volume)),
            ("repeatMode", .string(record.repeatMode)),
            ("shuffle", .bool(record.shuffle)),
            ("shuffleOrder", record.shuffleOrder.map { .array($0.map { .int($0) }) } ?? .null),
            ("wasPlaying", .bool(record.wasPlaying)),
            ("single", record.single.map { .string($0) } ?? .null),
            ("consume", record.consume.map { .bool($0) } ?? .null),
            ("replayGain", record.replayGain.map { .string($0) } ?? .null),
            ("replayGainPreamp", record.replayGainPreamp.map { .double($0) } ?? .null),
            ("replayGainMissingPreamp", record.replayGainMissingPreamp.map { .double($0) } ?? .null),
            ("outputEnabled", record.outputEnabled.map { .bool($0) } ?? .null),
        ])
        let body = state.serializedBytes
        var hash = FNV1a64()
        hash.combine(body)
        return head + Array(hex(hash.value).utf8) + middle + body + tail
    }

    struct Problem: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    static func decode(_ bytes: [UInt8]) -> Result<PlayerStateRecord, Problem> {
        if bytes.isEmpty { return .failure(Problem("the file is empty")) }
        let document: JSONValue
        do throws(JSONParseError) {
            document = try JSONValue.parse(bytes)
        } catch {
            return .failure(Problem("not valid JSON: \(error.description)"))
        }
        guard let version = document["version"]?.intValue else {
            return .failure(Problem("no format version"))
        }
        guard version == formatVersion else {
            return .failure(Problem("format version \(version); this daemon reads version \(formatVersion)"))
        }
        // The state's text lies between the fixed head (with the checksum) and the tail.
        let bodyStart = head.count + 16 + middle.count
        let tailLength = bytes.last == UInt8(ascii: "\n") ? 2 : 1
        guard bytes.count > bodyStart + tailLength, bytes.starts(with: head),
              bytes[(head.count + 16)..<bodyStart].elementsEqual(middle),
              bytes[bytes.count - tailLength] == UInt8(ascii: "}"),
              let stored = UInt64(String(decoding: bytes[head.count..<(head.count + 16)], as: UTF8.self), radix: 16)
        else {
            return .failure(Problem("not laid out as this daemon writes it"))
        }
        var hash = FNV1a64()
        hash.combine(Array(bytes[bodyStart..<(bytes.count - tailLength)]))
        guard hash.value == stored else {
            return .failure(Problem("checksum mismatch (stored \(hex(stored)), content \(hex(hash.value)))"))
        }
        guard let state = document["state"] else { return .failure(Problem("no state")) }
        return decodeState(state)
    }

    private static func decodeState(_ state: JSONValue) -> Result<PlayerStateRecord, Problem> {
        func field<T>(_ key: String, _ kind: String, _ value: (JSONValue) -> T?) throws(Problem) -> T {
            guard let raw = state[key] else { throw Problem("'\(key)' is missing") }
            guard let typed = value(raw) else { throw Problem("'\(key)' is not \(kind)") }
            return typed
        }
        func optionalField<T>(_ key: String, _ kind: String, _ value: (JSONValue) -> T?) throws(Problem) -> T? {
            guard let raw = state[key] else { throw Problem("'\(key)' is missing") }
            if raw.isNull { return nil }
            guard let typed = value(raw) else { throw Problem("'\(key)' is not \(kind) or null") }
            return typed
        }
        /// A field later versions added: absent from older files.
        func addedField<T>(_ key: String, _ kind: String, _ value: (JSONValue) -> T?) throws(Problem) -> T? {
            guard state[key] != nil else { return nil }
            return try optionalField(key, kind, value)
        }
        func array<T>(_ items: [JSONValue]?, _ element: (JSONValue) -> T?) -> [T]? {
            guard let items else { return nil }
            var out: [T] = []
            out.reserveCapacity(items.count)
            for item in items {
                guard let value = element(item) else { return nil }
                out.append(value)
            }
            return out
        }
        do throws(Problem) {
            let record = PlayerStateRecord(
                queue: try field("queue", "a list of paths") { array($0.arrayValue) { $0.stringValue } },
                currentIndex: try optionalField("currentIndex", "an integer") { $0.intValue },
                position: try field("position", "a number") { $0.doubleValue },
                volume: try field("volume", "a number") { $0.doubleValue },
                repeatMode: try field("repeatMode", "a string") { $0.stringValue },
                shuffle: try field("shuffle", "true or false") { $0.boolValue },
                shuffleOrder: try optionalField("shuffleOrder", "a list of integers") { array($0.arrayValue) { $0.intValue } },
                wasPlaying: try field("wasPlaying", "true or false") { $0.boolValue },
                single: try addedField("single", "a string") { $0.stringValue },
                consume: try addedField("consume", "true or false") { $0.boolValue },
                replayGain: try addedField("replayGain", "a string") { $0.stringValue },
                replayGainPreamp: try addedField("replayGainPreamp", "a number") { $0.doubleValue },
                replayGainMissingPreamp: try addedField("replayGainMissingPreamp", "a number") { $0.doubleValue },
                outputEnabled: try addedField("outputEnabled", "true or false") { $0.boolValue })
            if let problem = record.inconsistency { throw Problem(problem) }
            return .success(record)
        } catch {
            return .failure(error)
        }
    }
}
