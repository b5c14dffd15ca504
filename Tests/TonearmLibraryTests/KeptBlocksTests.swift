@testable import TonearmLibrary
import XCTest

/// What a connection keeps of the blocks its queries expanded: a block kept is not read again
/// while the index's version stays; the budget holds; a query that needs room drops what
/// earlier queries read and it has not, their records before their rows, and never its own.
final class KeptBlocksTests: XCTestCase {
    /// Blocks of `size` bytes; `reads` counts the blocks read (not found kept).
    private struct Reads {
        var blocks = KeptBlocks(budget: 100)
        var reads: [KeptBlocks.Block] = []

        /// One query at `version` reading `which` in turn, each `size` bytes.
        mutating func query(_ which: [KeptBlocks.Block], size: Int = 10, version: Int = 1) {
            blocks.begin(version: version)
            for block in which {
                let got = blocks.expanded(block) {
                    reads.append(block)
                    return [UInt8](repeating: 7, count: size)
                }
                XCTAssertEqual(got?.count, size)
            }
        }

        /// The blocks read since the last call.
        mutating func taken() -> [KeptBlocks.Block] {
            defer { reads = [] }
            return reads
        }
    }

    func testAQueryAskedAgainReadsNothing() {
        var state = Reads()
        state.query([.row(1), .directory(1), .directory(2)])
        XCTAssertEqual(state.taken(), [.row(1), .directory(1), .directory(2)])
        state.query([.row(1), .directory(1), .directory(2)])
        XCTAssertEqual(state.taken(), [])
        XCTAssertEqual(state.blocks.bytes, 30)
    }

    /// A search, a find, the search again: both fit, so the second search reads nothing.
    func testQueriesInTurnThatFitTogetherReadNothingTheSecondTime() {
        var state = Reads()
        let search: [KeptBlocks.Block] = [.row(1)] + (1...4).map { .directory($0) }
        let find: [KeptBlocks.Block] = [.row(2), .directory(9)]
        state.query(search)
        state.query(find)
        XCTAssertEqual(state.taken().count, 7)
        state.query(search)
        state.query(find)
        XCTAssertEqual(state.taken(), [])
    }

    func testANewVersionOfTheIndexIsReadAgain() {
        var state = Reads()
        state.query([.row(1), .directory(1)], version: 1)
        state.query([.row(1), .directory(1)], version: 2)
        XCTAssertEqual(state.taken(), [.row(1), .directory(1), .row(1), .directory(1)])
        XCTAssertEqual(state.blocks.bytes, 20, "the old version's blocks are gone, not counted twice")
        state.query([.row(1), .directory(1)], version: 2)
        XCTAssertEqual(state.taken(), [])
        state.blocks.begin(version: nil)
        XCTAssertEqual(state.blocks.bytes, 0, "an unknown version keeps nothing")
    }

    /// Room is made from the earlier queries' records first: their rows stay while the new
    /// query's blocks fit beside them.
    func testRoomComesFromEarlierRecordsBeforeEarlierRows() {
        var state = Reads()
        state.query([.row(1), .row(2)] + (1...8).map { .directory($0) })  // 100 bytes: full
        state.query([.row(3), .directory(20)])
        XCTAssertEqual(state.blocks.bytes, 40, "the earlier records went, both rows stayed")
        for kept in [KeptBlocks.Block.row(1), .row(2), .row(3), .directory(20)] {
            XCTAssertTrue(state.blocks.holds(kept), "\(kept)")
        }
        XCTAssertFalse(state.blocks.holds(.directory(1)))
        _ = state.taken()
        state.query([.row(1), .row(2), .row(3)])
        XCTAssertEqual(state.taken(), [])
    }

    /// When dropping the records is not room enough, the earlier rows go too; the query's own
    /// blocks never do, and what does not fit beside them is read but not kept.
    func testAQueryLargerThanTheRoomKeepsWhatFitsOfItsOwn() {
        var state = Reads()
        state.query([.row(1), .directory(1)])
        state.query((10...21).map { .directory($0) })  // 120 bytes
        XCTAssertEqual(state.blocks.bytes, 100)
        XCTAssertFalse(state.blocks.holds(.row(1)))
        XCTAssertFalse(state.blocks.holds(.directory(1)))
        XCTAssertTrue(state.blocks.holds(.directory(19)))
        XCTAssertFalse(state.blocks.holds(.directory(20)), "no room left beside the query's own")
        _ = state.taken()
        state.query([.directory(10), .directory(21)])
        XCTAssertEqual(state.taken(), [.directory(21)])
    }

    /// A block bigger than the whole budget is read every time and never kept.
    func testABlockLargerThanTheBudgetIsNeverKept() {
        var state = Reads()
        state.query([.row(1)])
        state.query([.row(5)], size: 101)
        state.query([.row(5)], size: 101)
        XCTAssertEqual(state.taken(), [.row(1), .row(5), .row(5)])
        XCTAssertEqual(state.blocks.bytes, 0)
    }

    /// A block read in this query counts as this query's: when the query makes room, the
    /// earlier queries' blocks it did not read go, and the one it read again stays.
    func testABlockReadAgainIsTheLatestQuerysOwn() {
        var state = Reads()
        state.query([.directory(1), .directory(2)])
        state.query([.directory(1)] + (3...11).map { .directory($0) })  // 100 bytes with 1
        XCTAssertEqual(state.blocks.bytes, 100)
        XCTAssertTrue(state.blocks.holds(.directory(1)))
        XCTAssertFalse(state.blocks.holds(.directory(2)))
        XCTAssertTrue(state.blocks.holds(.directory(11)))
        _ = state.taken()
        state.query([.directory(1), .directory(11)])
        XCTAssertEqual(state.taken(), [])
    }
}
