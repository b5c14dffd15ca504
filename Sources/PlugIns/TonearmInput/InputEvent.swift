/// One `struct input_event` from `<linux/input.h>`, without its timestamp (commands act when
/// they arrive, not when the kernel stamped them).
public struct InputEvent: Equatable, Sendable {
    /// EV_SYN: the end of a batch of events (and SYN_DROPPED).
    public static let synchronization: UInt16 = 0x00
    /// EV_KEY: a key or button; `value` is 1 pressed, 0 released, 2 autorepeat.
    public static let key: UInt16 = 0x01
    /// EV_MSC: MSC_SCAN and friends, which keyboards send before each key.
    public static let miscellaneous: UInt16 = 0x04

    public enum KeyValue {
        public static let released: Int32 = 0
        public static let pressed: Int32 = 1
        public static let autorepeat: Int32 = 2
    }

    public var type: UInt16
    public var code: UInt16
    public var value: Int32

    public init(type: UInt16, code: UInt16, value: Int32) {
        self.type = type
        self.code = code
        self.value = value
    }

    /// Bytes in one record: a `struct timeval` of two `long`s (the kernel keeps them `long`-sized
    /// even where user space has a 64-bit time_t), then type, code and value. 24 on 64-bit
    /// boards, 16 on 32-bit ones.
    public static let recordSize = 2 * MemoryLayout<Int>.size + 8

    /// Decodes one record at the start of `bytes` (native byte order, as the kernel writes it).
    public init(record bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count >= Self.recordSize)
        let fields = 2 * MemoryLayout<Int>.size
        type = bytes.loadUnaligned(fromByteOffset: fields, as: UInt16.self)
        code = bytes.loadUnaligned(fromByteOffset: fields + 2, as: UInt16.self)
        value = bytes.loadUnaligned(fromByteOffset: fields + 4, as: Int32.self)
    }
}

/// Whole records out of a byte stream that may arrive in pieces: evdev always gives whole
/// records, but a FIFO (or a `read` into a buffer that is not a multiple of the record size)
/// need not.
struct InputRecordFramer {
    private var pending: [UInt8] = []

    /// Appends `bytes` and returns every record now complete; keeps the remainder.
    mutating func events(appending bytes: UnsafeRawBufferPointer) -> [InputEvent] {
        pending.append(contentsOf: bytes)
        let whole = pending.count - pending.count % InputEvent.recordSize
        guard whole > 0 else { return [] }
        var events: [InputEvent] = []
        events.reserveCapacity(whole / InputEvent.recordSize)
        pending.withUnsafeBytes { raw in
            for offset in stride(from: 0, to: whole, by: InputEvent.recordSize) {
                events.append(InputEvent(record: UnsafeRawBufferPointer(rebasing: raw[offset..<offset + InputEvent.recordSize])))
            }
        }
        pending.removeFirst(whole)
        return events
    }

    /// Bytes of a record not yet complete.
    var pendingByteCount: Int { pending.count }
}
