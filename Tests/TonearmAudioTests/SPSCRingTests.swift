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

    func testSegmentChangeStopsTheReaderAtTheMark() {
        let ring = SPSCRing(capacity: 64)
        let first = [Int32](repeating: 1, count: 10)
        let second = [Int32](repeating: 2, count: 6)
        _ = first.withUnsafeBufferPointer { ring.write($0) }
        let next = StreamFormat(sampleRate: 48000, channels: 3, bitsPerSample: 24)
        let generation = ring.endSegment(with: next)
        _ = second.withUnsafeBufferPointer { ring.write($0) }
        XCTAssertFalse(ring.segmentTaken(generation))
        XCTAssertNil(ring.reachedSegmentChange)

        var out = [Int32](repeating: 0, count: 64)
        let n = out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: 64) }
        XCTAssertEqual(n, 10, "the reader must not cross the segment end")
        XCTAssertEqual(ring.reachedSegmentChange, next)
        ring.takeSegmentChange()
        XCTAssertTrue(ring.segmentTaken(generation))
        XCTAssertNil(ring.reachedSegmentChange)
        let m = out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: 64) }
        XCTAssertEqual(m, 6)
        XCTAssertEqual(Array(out[0..<6]), second)
    }

    func testDrainedOnlyAfterFinishAndLastRead() {
        let ring = SPSCRing(capacity: 4)
        _ = [Int32](repeating: 5, count: 2).withUnsafeBufferPointer { ring.write($0) }
        XCTAssertFalse(ring.isDrained)
        ring.finish()
        XCTAssertFalse(ring.isDrained)
        var out = [Int32](repeating: 0, count: 4)
        _ = out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: 4) }
        XCTAssertTrue(ring.isDrained)
    }

    /// A producer and a consumer thread hand over a million samples; every one arrives once,
    /// in order.
    func testConcurrentProducerAndConsumerLoseNothing() {
        let ring = SPSCRing(capacity: 1000)
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
            ring.finish()
        }
        producer.start()
        var received = 0
        var mismatches = 0
        var out = [Int32](repeating: 0, count: 257)
        while !ring.isDrained {
            let n = out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: 257) }
            for i in 0..<n where out[i] != Int32(truncatingIfNeeded: received + i) { mismatches += 1 }
            received += n
        }
        XCTAssertEqual(received, total)
        XCTAssertEqual(mismatches, 0)
    }
}
