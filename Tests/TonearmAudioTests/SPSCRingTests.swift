import Synchronization
import TonearmAudio
import XCTest

final class SPSCRingTests: XCTestCase {
    func testWritesAndReadsInOrderAcrossTheWrap() {
        let ring = SPSCRing(capacity: 10)
        var out = [Int32](repeating: 0, count: 10)
        var next: Int32 = 0
        var expected: Int32 = 0
        for _ in 0..<50 {
            let chunk = (0..<7).map { _ -> Int32 in defer { next += 1 }; return next }
            let written = chunk.withUnsafeBufferPointer { ring.write($0) }
            next -= Int32(7 - written)  // what did not fit is offered again next round
            let read = out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: 6) }
            for i in 0..<read {
                XCTAssertEqual(out[i], expected)
                expected += 1
            }
        }
        XCTAssertGreaterThan(expected, 200)
    }

    func testNeverAcceptsMoreThanItsCapacity() {
        let ring = SPSCRing(capacity: 8)
        let samples = [Int32](repeating: 1, count: 20)
        XCTAssertEqual(samples.withUnsafeBufferPointer { ring.write($0) }, 8)
        XCTAssertEqual(samples.withUnsafeBufferPointer { ring.write($0) }, 0)
        XCTAssertEqual(ring.freeSamples, 0)
        XCTAssertEqual(ring.readableSamples, 8)
    }

    func testWritesWholeFramesOnly() {
        let ring = SPSCRing(capacity: 7)
        let samples = [Int32](repeating: 1, count: 12)
        // Room for 7 samples, frames of 2: 3 frames fit.
        XCTAssertEqual(samples.withUnsafeBufferPointer { ring.write($0, frameSize: 2) }, 6)
        XCTAssertEqual(samples.withUnsafeBufferPointer { ring.write($0, frameSize: 2) }, 0)
    }

    private func write(_ ring: SPSCRing, _ value: Int32, count: Int) {
        _ = [Int32](repeating: value, count: count).withUnsafeBufferPointer { ring.write($0) }
    }

    private func readAll(_ ring: SPSCRing) -> [Int32] {
        var out = [Int32](repeating: 0, count: ring.capacity)
        let n = out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: ring.capacity) }
        return Array(out[0..<n])
    }

    func testACutAtTheEndPlaysOutWhatCameBefore() {
        let ring = SPSCRing(capacity: 64)
        write(ring, 1, count: 10)
        let next = StreamFormat(sampleRate: 48000, channels: 3, bitsPerSample: 24)
        let generation = ring.cutAtEnd(format: next)
        write(ring, 2, count: 6)
        XCTAssertFalse(ring.cutTaken(generation))
        XCTAssertNil(ring.reachedCut)
        XCTAssertEqual(readAll(ring), [Int32](repeating: 1, count: 10), "the reader must not cross the cut")
        XCTAssertEqual(ring.reachedCut, SPSCRing.Cut(format: next, playsOut: true))
        ring.takeCut()
        XCTAssertTrue(ring.cutTaken(generation))
        XCTAssertNil(ring.reachedCut)
        XCTAssertEqual(readAll(ring), [Int32](repeating: 2, count: 6))
    }

    func testACutNowAbandonsWhatWasReadAhead() {
        let ring = SPSCRing(capacity: 64)
        write(ring, 1, count: 40)
        XCTAssertEqual(readAll(ring).count, 40)
        write(ring, 1, count: 20)  // read ahead, never to be heard
        let generation = ring.cutNow(format: nil)
        write(ring, 3, count: 8)
        XCTAssertEqual(ring.readableSamples, 0)
        XCTAssertEqual(ring.reachedCut, SPSCRing.Cut(format: nil, playsOut: false))
        ring.takeCut()
        XCTAssertTrue(ring.cutTaken(generation))
        XCTAssertEqual(readAll(ring), [Int32](repeating: 3, count: 8))
        XCTAssertTrue(ring.isEmpty)
    }

    /// Replacing the next track: the cut sits where it begins; what precedes it still plays.
    func testACutInsideTheWrittenSamplesReplacesWhatFollowsIt() {
        let ring = SPSCRing(capacity: 64)
        write(ring, 1, count: 10)
        let nextTrackStart = ring.samplesWritten
        write(ring, 2, count: 10)
        _ = ring.cut(at: nextTrackStart, format: nil, playsOut: true)
        write(ring, 4, count: 5)
        XCTAssertEqual(readAll(ring), [Int32](repeating: 1, count: 10))
        XCTAssertNotNil(ring.reachedCut)
        ring.takeCut()
        XCTAssertEqual(readAll(ring), [Int32](repeating: 4, count: 5))
    }

    /// The reader already passed the cut point: it stops at once and skips ahead.
    func testACutBehindTheReaderTakesEffectAtOnce() {
        let ring = SPSCRing(capacity: 64)
        write(ring, 1, count: 10)
        XCTAssertEqual(readAll(ring).count, 10)
        _ = ring.cut(at: 4, format: nil, playsOut: true)
        write(ring, 5, count: 3)
        XCTAssertEqual(ring.readableSamples, 0)
        XCTAssertNotNil(ring.reachedCut)
        ring.takeCut()
        XCTAssertEqual(readAll(ring), [5, 5, 5])
    }

    /// A producer and a consumer thread hand over a million samples; every one arrives once,
    /// in order.
    func testConcurrentProducerAndConsumerLoseNothing() {
        let ring = SPSCRing(capacity: 1000)
        let done = Atomic<Bool>(false)
        let total = 1_000_000
        let producer = Thread {
            var chunk = [Int32](repeating: 0, count: 333)
            var next = 0
            while next < total {
                let n = min(chunk.count, total - next)
                for i in 0..<n { chunk[i] = Int32(truncatingIfNeeded: next + i) }
                var offset = 0
                while offset < n {
                    offset += chunk.withUnsafeBufferPointer {
                        ring.write(UnsafeBufferPointer(rebasing: $0[offset..<n]))
                    }
                }
                next += n
            }
            done.store(true, ordering: .releasing)
        }
        producer.start()
        var received = 0
        var mismatches = 0
        var out = [Int32](repeating: 0, count: 257)
        while !(done.load(ordering: .acquiring) && ring.isEmpty) {
            let n = out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: 257) }
            for i in 0..<n where out[i] != Int32(truncatingIfNeeded: received + i) { mismatches += 1 }
            received += n
        }
        XCTAssertEqual(received, total)
        XCTAssertEqual(mismatches, 0)
    }
}
