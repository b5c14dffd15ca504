import Foundation
import TestSupport
import TonearmControlPlane
import XCTest
@testable import TonearmLibrary

/// The MusicBrainz ids of files tagged by Picard reach the index whatever the format: Vorbis
/// comments name them MUSICBRAINZ_ALBUMID and so on, ID3 (here in a WAV's "id3 " chunk) keeps
/// them in TXXX frames and MP4 in "----" items described "MusicBrainz Album Id" and so on.
final class MusicBrainzTagTests: IndexTestCase {
    private static func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }

    private static func riffChunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
        Array(id.utf8) + le32(body.count) + body + (body.count % 2 == 1 ? [0] : [])
    }

    /// 0.1 s of 16-bit mono silence with `id3` in an "id3 " chunk after the samples.
    private static func wav(id3: [UInt8]) -> [UInt8] {
        let format: [UInt8] = [1, 0, 1, 0] + le32(44100) + le32(88200) + [2, 0, 16, 0]
        let body = Array("WAVE".utf8) + riffChunk("fmt ", format) + riffChunk("data", [UInt8](repeating: 0, count: 8820))
            + riffChunk("id3 ", id3)
        return Array("RIFF".utf8) + le32(body.count) + body
    }

    /// One ALAC frame of 16-bit mono in an M4A whose 'ilst' holds `items`.
    private static func m4a(items: [[UInt8]]) throws -> MP4Bytes {
        let samples = MP4Fixtures.signal(frames: 4096, channels: 1, bits: 16, sampleRate: 44100)
        let frame = MP4Bytes.uncompressedALACFrame(samples[0..<4096], channels: 1, bits: 16, frameLength: 4096)
        var movie = MP4Bytes(bytes: MP4Bytes.movie(
            sampleEntry: MP4Bytes.alacEntry(bits: 16, channels: 1, sampleRate: 44100, frameLength: 4096),
            samples: [frame], durations: [4096], timescale: 44100))
        let hdlr = MP4Bytes.box("hdlr", MP4Bytes.be32(0) + MP4Bytes.be32(0) + Array("mdirappl".utf8) + [UInt8](repeating: 0, count: 9))
        let meta = MP4Bytes.box("meta", MP4Bytes.be32(0) + hdlr + MP4Bytes.box("ilst", items.flatMap { $0 }))
        try movie.append(MP4Bytes.box("udta", meta), into: ["moov"])
        return movie
    }

    private func scan() throws -> any LibraryCatalog {
        let (index, _) = try makeIndex()
        try scan(index)
        XCTAssertEqual([index.progress.indexed, index.progress.failed], [3, 0])
        return index.catalog
    }

    private func songs(_ catalog: any LibraryCatalog, _ tag: Tag, _ value: String) throws -> [LibrarySong] {
        try songs(catalog, [TagFilter(.tag(tag), value)], .exact)
    }

    func testPicardsIdsAreIndexedFromVorbisCommentsID3AndMP4() throws {
        try Tracks.write(music + "/a.flac", tags: [
            ("TITLE", "A"), ("MUSICBRAINZ_ALBUMID", "album-1"), ("MUSICBRAINZ_TRACKID", "track-a")])

        let txxx = { (description: String, value: String) in
            ID3Bytes.frame24("TXXX", ID3Bytes.text(3, description) + [0] + Array(value.utf8))
        }
        try writeBytes(Self.wav(id3: ID3Bytes.tag(version: 4, frames: [
            ID3Bytes.frame24("TIT2", ID3Bytes.text(3, "B")), txxx("MusicBrainz Album Id", "album-1"),
            txxx("MusicBrainz Artist Id", "artist-1"), txxx("MusicBrainz Album Artist Id", "album-artist-1"),
            txxx("MusicBrainz Release Track Id", "release-track-b"), txxx("MusicBrainz Work Id", "work-b"),
        ])), to: music + "/b.wav")

        try Self.m4a(items: [
            MP4Bytes.box("\u{A9}nam", MP4Bytes.data(type: 1, Array("C".utf8))),
            MP4Bytes.freeform("MusicBrainz Album Id", "album-1"), MP4Bytes.freeform("MusicBrainz Track Id", "track-c"),
        ]).write(to: music + "/c.m4a")

        let catalog = try scan()
        XCTAssertEqual(try songs(catalog, .musicBrainzAlbumID, "album-1").map(\.path), ["a.flac", "b.wav", "c.m4a"])
        XCTAssertEqual(try songs(catalog, .musicBrainzTrackID, "track-a").map(\.path), ["a.flac"])
        XCTAssertEqual(try songs(catalog, .musicBrainzTrackID, "track-c").map(\.path), ["c.m4a"])

        let b = try XCTUnwrap(try songs(catalog, .musicBrainzArtistID, "artist-1").first)
        XCTAssertEqual(b.path, "b.wav")
        XCTAssertEqual(b.first(.title), "B")
        XCTAssertEqual(b.first(.musicBrainzAlbumArtistID), "album-artist-1")
        XCTAssertEqual(b.first(.musicBrainzReleaseTrackID), "release-track-b")
        XCTAssertEqual(b.first(.musicBrainzWorkID), "work-b")
    }
}
