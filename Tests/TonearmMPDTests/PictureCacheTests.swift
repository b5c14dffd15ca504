@testable import TonearmMPD
import XCTest

/// The pictures MPD clients read a chunk at a time: kept per picture, shared, bounded in bytes,
/// the least recently used given up first.
final class PictureCacheTests: XCTestCase {
    private func picture(_ size: Int) -> PictureCache.Picture {
        PictureCache.Picture(mimeType: "image/png", bytes: [UInt8](repeating: 7, count: size))
    }

    func testPicturesAreKeptPerFileAndKindWithinTheBound() {
        var cache = PictureCache(limit: 10)
        let cover = PictureCache.Key(path: "/music/A/1.flac", embedded: false)
        let embedded = PictureCache.Key(path: "/music/A/1.flac", embedded: true)
        let other = PictureCache.Key(path: "/music/B/1.flac", embedded: true)
        cache.keep(picture(4), for: cover)
        cache.keep(picture(3), for: embedded)
        XCTAssertEqual(cache[cover], picture(4))
        XCTAssertEqual(cache[embedded], picture(3), "the cover beside a song and its own picture are two pictures")
        XCTAssertEqual(cache.size, 7)
        // The cover was used before the embedded one: it goes first.
        _ = cache[embedded]
        cache.keep(picture(5), for: other)
        XCTAssertEqual(cache.keys, [embedded, other])
        XCTAssertEqual(cache.size, 8)
        XCTAssertNil(cache[cover])
        // Used again, the embedded one stays when room is made once more.
        _ = cache[embedded]
        cache.keep(picture(6), for: cover)
        XCTAssertEqual(cache.keys, [embedded, cover])
        XCTAssertLessThanOrEqual(cache.size, 10)
    }

    func testAPictureLargerThanTheBoundIsNotKeptAndOneKeptAgainReplacesItself() {
        var cache = PictureCache(limit: 10)
        let key = PictureCache.Key(path: "/music/A/1.flac", embedded: true)
        cache.keep(picture(11), for: key)
        XCTAssertNil(cache[key])
        XCTAssertEqual(cache.size, 0)
        cache.keep(picture(6), for: key)
        cache.keep(picture(8), for: key)
        XCTAssertEqual(cache[key], picture(8))
        XCTAssertEqual(cache.size, 8)
        cache.forget(key)
        XCTAssertNil(cache[key])
        XCTAssertEqual(cache.size, 0)
        XCTAssertEqual(PictureCache.defaultLimit, 8 << 20)
    }
}
