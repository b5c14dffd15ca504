/// The blocks a connection's queries expanded (tag rows, directories' records), kept while the
/// index is the one they were read from: a query asked again (a page of results turned, an
/// album's view shown again, a search after a find) expands nothing again. At most `budget`
/// bytes; each block is marked with the last query that read it, and a query that needs room
/// drops what earlier ones read and it has not, their records first, then their rows.
struct KeptBlocks {
    enum Block: Hashable {
        case row(Int)
        case directory(Int)
    }

    let budget: Int
    private var blocks: [Block: (expanded: [UInt8], query: Int)] = [:]
    private(set) var bytes = 0
    /// The query running now, counted from the first.
    private var query = 0
    /// What of the earlier queries' blocks this one has dropped to make room for its own:
    /// 0 nothing, 1 their records, 2 everything.
    private var dropped = 0
    /// The index's version the blocks were read in.
    private var version: Int?

    init(budget: Int) { self.budget = budget }

    /// At the start of a query: everything kept is forgotten if the index's version is not the
    /// one the blocks were read in.
    mutating func begin(version now: Int?) {
        if now != version {
            blocks = [:]
            bytes = 0
            version = now
        }
        query += 1
        dropped = 0
    }

    /// Block `which` expanded: as kept, or as `read` reads and expands it (nil when it is not
    /// a whole block), kept when it fits.
    mutating func expanded(_ which: Block, _ read: () -> [UInt8]?) -> [UInt8]? {
        if let kept = blocks[which] {
            blocks[which]?.query = query
            return kept.expanded
        }
        guard let expanded = read() else { return nil }
        if bytes + expanded.count > budget { makeRoom(for: expanded.count) }
        if bytes + expanded.count <= budget {
            blocks[which] = (expanded, query)
            bytes += expanded.count
        }
        return expanded
    }

    /// True when `which` is kept.
    func holds(_ which: Block) -> Bool { blocks[which] != nil }

    /// Drops the earlier queries' records, then their rows (a search for another title reads
    /// the same row of titles), until `count` more bytes fit. Each at most once a query: after
    /// it only this query's own blocks are left, and what does not fit is not kept.
    private mutating func makeRoom(for count: Int) {
        while dropped < 2 && bytes + count > budget {
            let rows = dropped == 1
            dropped += 1
            let query = query
            var freed = 0
            blocks = blocks.filter { block, kept in
                guard kept.query != query else { return true }
                if case .row = block, !rows { return true }
                freed += kept.expanded.count
                return false
            }
            bytes -= freed
        }
    }
}
