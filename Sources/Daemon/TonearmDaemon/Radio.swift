import TonearmControlPlane
import TonearmPlayback
import TonearmPlayer
import TonearmStreams

/// What an http(s) item's stream has said: its state and station, for `status`.
struct RadioItem {
    var itemID: Int
    var url: String
    var state = StreamState.connecting
    var station = StationInfo()
    var title: String?
    /// The title a playlist gave the entry (#EXTINF, TitleN).
    var listedTitle: String?
    /// The reason last logged, so a long outage logs when it starts and when its cause changes.
    var loggedReason: String?
}

extension PlayerDaemon {
    /// The current item's stream, as `status` shows it; nil for a file.
    var streamStatus: StreamStatus? {
        guard let radio, radio.itemID == core.currentItemID else { return nil }
        var status = StreamStatus(state: "", station: radio.station.name, genre: radio.station.genre,
                                  contentType: radio.station.contentType)
        switch radio.state {
        case .connecting: status.state = "connecting"
        case .playing: status.state = "playing"
        case .reconnecting(let attempt, let error):
            status.state = "reconnecting"
            status.attempt = attempt
            status.error = error.reason.description
        case .finished(let error):
            status.state = error == nil ? "ended" : "failed"
            status.error = error?.reason.description
        }
        return status
    }

    /// A stream's report. Now Playing follows mpd: the whole `StreamTitle` is the title (mpd
    /// does not split "Artist - Title"); until the first one comes, the playlist's title for
    /// the entry, else the station's `icy-name`, stands in. The `icy-name` is the album line. While reconnecting nothing is
    /// heard: the clock stops (rate 0) as for a lost device, and runs again once bytes flow.
    func radioReported(_ itemID: Int, _ report: StreamEvent, now: Double) {
        guard let item = core.queue.first(where: { $0.id == itemID }) else { return }
        if radio?.itemID != itemID { radio = RadioItem(itemID: itemID, url: item.path, listedTitle: item.metadata.title) }
        switch report {
        case .station(let station):
            radio?.station = station
            let name = station.name.map { "\($0)" } ?? ""
            logger.info("\(item.path): \(name.isEmpty ? "station" : "'\(name)'") (\(station.contentType ?? "no content type"))")
        case .title(let title):
            radio?.title = title
        case .state(let state):
            let was = radio?.state
            radio?.state = state
            stateChanged(item, from: was, to: state, now: now)
        }
        var metadata = item.metadata
        metadata.isLiveStream = true
        metadata.title = radio?.title ?? radio?.listedTitle ?? radio?.station.name
        metadata.album = radio?.station.name
        metadata.genre = radio?.station.genre
        publish(core.updateMetadata(itemID: itemID, metadata, now: now))
    }

    private func stateChanged(_ item: QueueItem, from was: StreamState?, to state: StreamState, now: Double) {
        let current = item.id == core.currentItemID
        switch state {
        case .reconnecting(let attempt, let error):
            let reason = error.reason.description
            if radio?.loggedReason != reason {
                radio?.loggedReason = reason
                logger.warning("\(item.path): \(reason); reconnecting (attempt \(attempt), waits from 0.5 s doubling to 30 s)")
            }
            if current, case .playing = was {
                let heard = engine.position()
                publish(core.engineOutputStalled(itemID: heard?.itemID, at: heard?.seconds, now: now))
            }
        case .playing:
            if radio?.loggedReason != nil {
                radio?.loggedReason = nil
                logger.notice("\(item.path): connected again; playing on")
            }
            if current, case .reconnecting = was {
                let heard = engine.position()
                publish(core.engineOutputResumed(itemID: heard?.itemID, at: heard?.seconds, now: now))
            }
        case .connecting, .finished:
            break  // a failure is the engine's itemFailed, logged there
        }
    }
}
