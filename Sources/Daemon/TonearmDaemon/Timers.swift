import NIOCore
import TonearmPlayback
import TonearmPlayer

/// The daemon's only timers, armed only while they have something to do: the steps of a held
/// seek (scanning, a few a second), the periodic save while playing, the next try of a save
/// that failed (backing off to a minute), and the next line of an underrun burst. Idle, nothing is
/// armed and the daemon sleeps until a command or the engine wakes it.
extension PlayerDaemon {
    static let scanStepSeconds = 0.25

    /// The next moment something is due, or nil.
    func nextDeadline() -> Double? {
        var deadline: Double?
        if core.scanRate != nil { deadline = lastScanStep + Self.scanStepSeconds }
        if let retry = saving.retryAt {
            deadline = min(deadline ?? retry, retry)
        } else if core.state == .playing {
            let save = lastSave + settings.saveIntervalSeconds
            deadline = min(deadline ?? save, save)
        }
        if let line = underrunLog.nextLineAt { deadline = min(deadline ?? line, line) }
        return deadline
    }

    /// Arms one timer for the next deadline, replacing one armed for another. It runs on the
    /// event loop, beside the sockets and the engine's doorbell.
    func scheduleTimer() {
        let deadline = stopped ? nil : nextDeadline()
        guard deadline != timerDeadline else { return }
        timer?.cancel()
        timerDeadline = deadline
        guard let deadline else {
            timer = nil
            return
        }
        let delay = TimeAmount.nanoseconds(Int64(max(0, deadline - Self.now()) * 1e9))
        timer = timerLoop.scheduleTask(in: delay) { [weak self] in
            Task { await self?.timerFired() }
        }
    }

    func timerFired() {
        timerDeadline = nil
        let now = Self.now()
        takeEngineEvents(now: now)
        if core.scanRate != nil && now - lastScanStep >= Self.scanStepSeconds - 0.001, let id = core.currentItemID,
           let item = core.queue.first(where: { $0.id == id }) {
            lastScanStep = now
            let target = max(0, core.position(at: now))
            if let duration = item.metadata.duration, target >= duration {
                apply(core.handle(CommandRequest(.seekForward, scanning: .end), now: now))
            } else {
                latestRequest = engine.play(core.engineItem(item), from: target, resume: core.state == .playing)
            }
        }
        if let line = underrunLog.line(now: now) { logger.warning("\(line)") }
        if saving.retryAt.map({ now >= $0 }) == true || (saving.retryAt == nil && core.state == .playing && now - lastSave >= settings.saveIntervalSeconds - 0.001) {
            save(urgent: true)
        }
        flush()
    }
}
