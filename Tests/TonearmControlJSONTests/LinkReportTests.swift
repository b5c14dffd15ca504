@testable import TonearmControlJSON
import TonearmControlPlane
import TonearmJSON
import TonearmPlayer
import TonearmSession
import XCTest

/// Links in `status` and `doctor`.
final class LinkReportTests: XCTestCase {
    private let shairport = LinkState(sessionName: "shairport-sync", player: "org.mpris.MediaPlayer2.ShairportSync on the system bus",
                                      client: 4, present: true)

    /// A client's session named `name` that owns Now Playing, with the queue's item playing.
    private func state(owner name: String) -> ControlState {
        var state = ControlState()
        state.queue = QueueState(version: 1, items: [QueueItem(id: 1, path: "/m/a.flac", metadata: TrackMetadata())], currentItemID: 1, currentIndex: 0)
        state.transport = .playing
        state.nowPlaying = NowPlayingInfo(rate: 1)
        state.enabledCommands = [.pause: true]
        state.output.state = .open
        let session = SessionState(id: 2, owner: 3, category: .playback, active: true, hasEnabledCommand: true)
        state.sessions = SessionsState(nowPlayingOwner: 2, sessions: [
            SessionReport(state: session, output: OutputGain(mixes: false), gain: 1, stream: nil, ownsNowPlaying: true, name: name),
        ])
        return state
    }

    private func flags(_ report: JSONValue) -> [String] {
        report["redFlags"]?.arrayValue?.compactMap { $0["flag"]?.stringValue } ?? []
    }

    func testStatusSaysWhoseNowPlayingItIs() {
        var state = state(owner: "shairport-sync")
        state.links = [shairport, LinkState(sessionName: "bluealsa-aplay", player: "org.mpris.MediaPlayer2.bluez on the system bus",
                                            client: 5, present: false)]
        var status = Reports.status(state, now: 0)
        XCTAssertEqual(status["nowPlayingLink"], .null, "the player's own")
        XCTAssertEqual(status["links"]?.arrayValue?.count, 2)
        XCTAssertEqual(status["links"]?.arrayValue?.last, .object([
            ("session", .string("bluealsa-aplay")), ("player", .string("org.mpris.MediaPlayer2.bluez on the system bus")), ("present", .bool(false)),
        ]))
        state.nowPlayingLink = shairport
        status = Reports.status(state, now: 0)
        XCTAssertEqual(status["nowPlayingLink"]?["session"]?.stringValue, "shairport-sync")
        XCTAssertEqual(status["nowPlayingLink"]?["present"]?.boolValue, true)
    }

    func testDoctorNamesALinkedPlayerThatIsNotThere() {
        var state = state(owner: "shairport-sync")
        XCTAssertEqual(flags(Reports.doctor(state, now: 0)), ["noArtwork", "noTitle"], "unlinked: the queue's item is judged")
        state.links = [shairport]
        state.nowPlayingLink = shairport
        var doctor = Reports.doctor(state, now: 0)
        XCTAssertEqual(flags(doctor), [], "a linked program's item is not the queue's to tag")
        XCTAssertEqual(doctor["links"]?.arrayValue?.first?["present"]?.boolValue, true)

        state.nowPlayingLink = nil
        state.links[0].present = false
        doctor = Reports.doctor(state, now: 0)
        XCTAssertTrue(flags(doctor).contains("linkedPlayerAbsent"), "\(flags(doctor))")
        let detail = doctor["redFlags"]?.arrayValue?.first { $0["flag"]?.stringValue == "linkedPlayerAbsent" }?["detail"]?.stringValue
        XCTAssertEqual(detail, "session 2 ('shairport-sync') owns Now Playing, but org.mpris.MediaPlayer2.ShairportSync on the system bus, "
            + "linked to it, is not there: Now Playing shows Tonearm's own player, and commands go to the session's program")
        XCTAssertFalse(flags(Reports.doctor(self.state(owner: "aplay"), now: 0)).contains("linkedPlayerAbsent"), "a session nobody links")
    }
}
