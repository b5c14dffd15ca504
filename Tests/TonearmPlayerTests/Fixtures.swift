import TonearmPlayer
import XCTest

let coverOne = Artwork(id: "cover-1", mimeType: "image/jpeg", width: 600, height: 600, byteCount: 48_000)
let coverTwo = Artwork(id: "cover-2", mimeType: "image/png", width: 1000, height: 1000, byteCount: 210_000)

/// `count` tracks titled "Track 1"…, 200 s long unless told, all with `coverOne` unless told.
func tracks(
    _ count: Int, duration: Double? = 200, artworks: [Artwork?]? = nil
) -> [(path: String, metadata: TrackMetadata)] {
    (1...max(count, 1)).prefix(count).map { number in
        let metadata = TrackMetadata(
            title: "Track \(number)", artist: "Artist", album: "Album", albumArtist: "Artist",
            trackNumber: number, discNumber: 1, duration: duration,
            artwork: artworks.map { $0[number - 1] } ?? coverOne)
        return (path: "/music/Album/\(number).flac", metadata: metadata)
    }
}

/// A player state, reached through the public API the way a listener would reach it.
struct Fixture: CustomStringConvertible {
    var count: Int
    /// The id of the current item (ids are 1…count); nil for a queue never played.
    var current: Int?
    var state: TransportState
    var repeatMode: RepeatMode = .off
    /// Seconds played of the current item when the command comes.
    var elapsed: Double = 10

    var description: String {
        "\(state) \(current.map { "on \($0)" } ?? "with no current item") of \(count), repeat \(repeatMode), at \(elapsed) s"
    }

    /// The core in this state, and the `now` at which to send the command.
    func make(seed: UInt64 = 7) -> (core: PlayerCore, now: Double) {
        var core = PlayerCore(randomSeed: seed)
        if count > 0 {
            _ = core.add(tracks(count), now: 0)
            _ = core.handle(CommandRequest(.changeRepeatMode, repeatMode: repeatMode), now: 0)
        }
        guard let current else { return (core, 0) }
        _ = core.handle(CommandRequest(.play), now: 0)
        _ = core.engineStartedItem(1, at: 0, heardAt: 0, now: 0)
        while core.currentItemID != current {
            _ = core.handle(CommandRequest(.nextTrack), now: 0)
            _ = core.engineStartedItem(core.currentItemID!, at: 0, heardAt: 0, now: 0)
        }
        switch state {
        case .playing:
            return (core, elapsed)
        case .paused:
            _ = core.handle(CommandRequest(.pause), now: elapsed)
            return (core, elapsed + 5)
        case .stopped:
            _ = core.handle(CommandRequest(.stop), now: elapsed)
            return (core, elapsed + 5)
        }
    }
}

/// A core playing `count` tracks from the first, reported started at 0.
func playing(_ count: Int = 3, duration: Double? = 200, artworks: [Artwork?]? = nil, seed: UInt64 = 7)
    -> PlayerCore
{
    var core = PlayerCore(randomSeed: seed)
    _ = core.add(tracks(count, duration: duration, artworks: artworks), now: 0)
    _ = core.handle(CommandRequest(.play), now: 0)
    _ = core.engineStartedItem(1, at: 0, heardAt: 0, now: 0)
    return core
}

extension PlayerCore {
    /// Sends a command and reports the `.play` it caused as started at once, as a prompt engine.
    mutating func send(_ request: CommandRequest, now: Double) -> CommandOutcome {
        let outcome = handle(request, now: now)
        for case .play(let itemID, let from) in outcome.actions {
            _ = engineStartedItem(itemID, at: from, heardAt: now, now: now)
        }
        return outcome
    }
}
