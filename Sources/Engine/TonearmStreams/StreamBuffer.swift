/// The bytes between the stream's thread and the reader: what is unread, up to `capacity`,
/// the last `history` bytes read (so a decoder may look at the first bytes again), and where
/// each connection's bytes end. Not locked itself: `HTTPSource` holds its lock around it.
struct StreamBuffer {
    /// What `read` may take back with `rewind`.
    static let history = 64 * 1024

    private var storage: UnsafeMutableRawBufferPointer
    /// Indices into `storage`: the oldest byte kept, the next to read, the end of what came.
    private var kept = 0
    private var head = 0
    private var tail = 0
    /// Bytes read since the start, over every connection (boundaries are counted in it).
    private var readTotal = 0
    /// Where connections' bytes end, as counts of bytes since the start, oldest first.
    private var boundaries: [Int] = []
    private var lastBoundary = 0

    /// The most unread bytes the stream's thread adds before it pauses.
    private(set) var capacity = 128 * 1024
    /// The unread bytes a connection gathers before its first byte is read.
    private(set) var prebuffer = 16 * 1024

    init() {
        storage = .allocate(byteCount: 2 * (capacity + Self.history), alignment: 16)
    }

    /// Deallocates the storage: called once, by the owner's deinit.
    func release() { storage.deallocate() }

    /// Unread bytes, over every connection.
    var unread: Int { tail - head }
    /// Unread bytes of the connection being read.
    var readable: Int { min(unread, (boundaries.first ?? .max) - readTotal) }
    /// The connection being read has ended (its last bytes may still be unread).
    var connectionEnded: Bool { !boundaries.isEmpty }
    /// The reader has taken all of a connection that has ended.
    var atBoundary: Bool { boundaries.first == readTotal }

    /// Sizes the buffer for a connection: it gathers `prebuffer` bytes before its first read
    /// and holds at most 64 KiB more.
    mutating func size(prebuffer: Int) {
        self.prebuffer = prebuffer
        capacity = max(capacity, prebuffer + 64 * 1024)
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        if tail + bytes.count > storage.count { makeRoom(for: bytes.count) }
        UnsafeMutableRawBufferPointer(rebasing: storage[tail..<(tail + bytes.count)]).copyMemory(from: bytes)
        tail += bytes.count
    }

    /// Moves what is kept to the front, growing the storage when that is not enough.
    private mutating func makeRoom(for count: Int) {
        let from = max(kept, head - Self.history)
        let keep = tail - from
        let needed = max(2 * (capacity + Self.history), keep + count)
        if needed > storage.count {
            let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: needed, alignment: 16)
            grown.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[from..<tail]))
            storage.deallocate()
            storage = grown
        } else if from > 0 {
            storage.baseAddress!.copyMemory(from: storage.baseAddress! + from, byteCount: keep)
        }
        kept -= from
        head -= from
        tail -= from
    }

    mutating func take(into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = min(out.count, readable)
        guard n > 0 else { return 0 }
        out.baseAddress!.copyMemory(from: storage.baseAddress! + head, byteCount: n)
        head += n
        readTotal += n
        return n
    }

    /// Goes back `count` bytes read of this connection, if they are still kept.
    mutating func rewind(by count: Int) -> Bool {
        guard count <= head - kept, count <= Self.history else { return false }
        head -= count
        readTotal -= count
        return true
    }

    /// The connection whose bytes were appended last has ended.
    mutating func markBoundary() {
        let end = readTotal + unread
        guard end > lastBoundary else { return }
        boundaries.append(end)
        lastBoundary = end
    }

    /// The reader goes on to the next connection's bytes; the last one's cannot be read again.
    mutating func passBoundary() {
        guard atBoundary else { return }
        boundaries.removeFirst()
        kept = head
    }
}
