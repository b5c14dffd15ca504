import SystemPackage
import TonearmControlPlane
import TonearmDBus
import TonearmPlayer
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// The bus thread of a link: one connection that follows the linked player — who owns its
/// name, its Player properties, its seeks — into a `LinkedPlayerMirror`, publishes what changed
/// (`publish`, nil while the player is not there), and carries out the commands the mailbox
/// brings. Lives on "tonearm-link" only.
final class MPRISLinkConnection {
    private let connection: DBusConnection
    private let busName: String
    /// "link shairport-sync to org.mpris.MediaPlayer2.ShairportSync", for the log.
    private let label: String
    private let mailbox: LinkMailbox
    private let log: PlugInLog
    private let publish: (LinkedNowPlaying?) -> Void

    /// The unique name of the player's connection; nil while nobody owns its name.
    private var owner: String?
    /// Whether the owner's properties have been read (`GetAll`).
    private var loaded = false
    private var mirror = LinkedPlayerMirror()
    /// Why to publish, once the position read under way (if any) is answered.
    private var pendingReason: PublicationReason?
    /// The number of the latest `Position` read: an answer to an older one, or to one made for
    /// another owner, is stale.
    private var positionRead = 0
    private var readingPosition = false
    /// The cover as last read, by its URL.
    private var cover: (url: String, artwork: LinkedArtwork?)?
    /// When to read the owner's properties again after a failed read, and the wait after that
    /// one. A name can come before its object: shairport-sync owns its name, then exports the
    /// player, and nothing is signalled when the object appears.
    private var rereadAt: Double?
    private var rereadDelay = MPRISLinkConnection.firstRereadDelay
    private static let firstRereadDelay = 0.1
    private static let longestRereadDelay = 5.0

    private static let objectPath = MPRISProperties.objectPath
    private static let player = MPRISProperties.player

    /// Connects and follows the player until the plug-in stops; a bus that is not there, or
    /// goes, is tried again with back-off, the player meanwhile not there.
    static func follow(bus: DBusConnection.Bus, busName: String, label: String, mailbox: LinkMailbox, log: PlugInLog,
                       publish: @escaping (LinkedNowPlaying?) -> Void) {
        BusRetry.keep(label, log: log, isStopped: { mailbox.isStopped },
                      sleep: { _ = try? mailbox.poll.wait(for: [], until: monotonicSeconds() + $0) },
                      failed: { publish(nil) }) { connected throws(DBusError) in
            let link = try MPRISLinkConnection(bus: bus, busName: busName, label: label, mailbox: mailbox, log: log, publish: publish)
            connected()
            try link.run()
        }
    }

    private init(bus: DBusConnection.Bus, busName: String, label: String, mailbox: LinkMailbox, log: PlugInLog,
                 publish: @escaping (LinkedNowPlaying?) -> Void) throws(DBusError) {
        connection = try DBusConnection(bus)
        self.busName = busName
        self.label = label
        self.mailbox = mailbox
        self.log = log
        self.publish = publish
        // By the well-known name: the bus delivers only the owner's signals; each handler
        // checks the sender again against the owner it knows.
        try connection.subscribe(DBusConnection.matchRule(sender: busName, path: Self.objectPath, interface: DBusConnection.propertiesInterface,
                                                          member: "PropertiesChanged", arg0: Self.player)) { [weak self] message in
            self?.propertiesChanged(message)
        }
        try connection.subscribe(DBusConnection.matchRule(sender: busName, path: Self.objectPath, interface: Self.player, member: "Seeked")) {
            [weak self] message in
            self?.seeked(message)
        }
        try connection.followOwner(of: busName) { [weak self] owner in self?.ownerChanged(to: owner) }
    }

    /// Handles the bus and the mailbox until the plug-in stops; throws when the bus goes away.
    private func run() throws(DBusError) {
        while true {
            try connection.process()
            if let rereadAt, monotonicSeconds() >= rereadAt {
                self.rereadAt = nil
                readState()
            }
            let (commands, stopped) = mailbox.take()
            if stopped { return }
            for request in commands { carryOut(request) }
            if !commands.isEmpty { connection.flush() }
            try wait()
        }
    }

    /// Sleeps until the bus has something, the mailbox rings, or sd-bus's own deadline.
    private func wait() throws(DBusError) {
        let timeout = connection.timeoutMilliseconds
        var until = timeout < 0 ? nil : monotonicSeconds() + Double(timeout) / 1000
        if let rereadAt { until = min(until ?? rereadAt, rereadAt) }
        do {
            _ = try mailbox.poll.wait(for: [(FileDescriptor(rawValue: connection.descriptor), PollEvents(rawValue: connection.events))],
                                      until: until)
        } catch {
            throw DBusError(bus: connection.bus, operation: "wait for the bus", code: -error.rawValue)
        }
    }

    // MARK: Following the player

    private func ownerChanged(to newOwner: String?) {
        guard newOwner != owner else { return }
        owner = newOwner
        loaded = false
        mirror = LinkedPlayerMirror()
        pendingReason = nil
        positionRead += 1
        readingPosition = false
        cover = nil
        rereadAt = nil
        rereadDelay = Self.firstRereadDelay
        guard newOwner != nil else {
            publish(nil)
            return
        }
        readState()
    }

    /// Reads the owner's Player properties; until that works it is taken as not there (what an
    /// earlier owner said is not this one's) and asked again, less and less often.
    private func readState() {
        guard let asked = owner else { return }
        do throws(DBusError) {
            try connection.getAllProperties(busName, Self.objectPath, Self.player) { [weak self] result in
                guard let self, owner == asked else { return }
                switch result {
                case .success(let properties):
                    loaded = true
                    settle(mirror.replaceAll(properties, now: monotonicSeconds()))
                case .failure(let error):
                    readFailed(error)
                }
            }
        } catch {
            readFailed(error)
        }
    }

    private func readFailed(_ error: DBusError) {
        let again = rereadDelay, first = again == Self.firstRereadDelay
        log(first ? .warning : .debug, "\(label): cannot read the player's state: \(error); trying again in \(again) s")
        if first { publish(nil) }
        rereadAt = monotonicSeconds() + again
        rereadDelay = min(again * 2, Self.longestRereadDelay)
    }

    private func propertiesChanged(_ message: DBusMessage) {
        guard loaded, message.sender == owner, message.arguments.count >= 2, message.arguments[0].string == Self.player else { return }
        let changed: [(String, DBusValue)] = if case .dictionary(let entries) = message.arguments[1] { entries } else { [] }
        settle(mirror.apply(changed, now: monotonicSeconds()))
        // Properties said to have changed without their values (large ones, as the spec
        // allows): read each.
        let invalidated = message.arguments.count > 2 ? message.arguments[2].items?.compactMap(\.string) ?? [] : []
        for name in invalidated where name != "Position" {
            let asked = owner
            do throws(DBusError) {
                try connection.getProperty(busName, Self.objectPath, Self.player, name) { [weak self] result in
                    guard let self, owner == asked, case .success(let value) = result else { return }
                    settle(mirror.apply([(name, value)], now: monotonicSeconds()))
                }
            } catch {
                log.warning("\(label): cannot read \(name): \(error)")
            }
        }
    }

    private func seeked(_ message: DBusMessage) {
        guard loaded, message.sender == owner, let position = message.arguments.first.flatMap(LinkedMetadata.integer) else { return }
        mirror.setPosition(microseconds: Int64(position), at: monotonicSeconds())
        settle(LinkedPlayerMirror.Change(reason: .seek))
    }

    /// Publishes a change: at once, or once the position it needs has been read.
    private func settle(_ change: LinkedPlayerMirror.Change) {
        guard let reason = change.reason else { return }
        pendingReason = pendingReason.map { Self.weightier($0, reason) } ?? reason
        if change.readPosition { readPosition() }
        if !readingPosition { publishNow() }
    }

    private func readPosition() {
        positionRead += 1
        let read = positionRead
        readingPosition = true
        do throws(DBusError) {
            try connection.getProperty(busName, Self.objectPath, Self.player, "Position") { [weak self] result in
                guard let self, read == positionRead else { return }
                readingPosition = false
                // A player that cannot say keeps the position extrapolated so far.
                if case .success(let value) = result, let microseconds = LinkedMetadata.integer(value) {
                    mirror.setPosition(microseconds: Int64(microseconds), at: monotonicSeconds())
                }
                publishNow()
            }
        } catch {
            readingPosition = false
        }
    }

    private func publishNow() {
        guard loaded, owner != nil, let reason = pendingReason else { return }
        pendingReason = nil
        publish(mirror.nowPlaying(reason: reason, artwork: currentCover()))
    }

    /// The picture `mpris:artUrl` names, read once per URL.
    private func currentCover() -> LinkedArtwork? {
        guard let url = mirror.metadata.artURL else {
            cover = nil
            return nil
        }
        if let cover, cover.url == url { return cover.artwork }
        var artwork: LinkedArtwork?
        switch LinkedCover.read(url) {
        case .picture(let picture): artwork = picture
        case .notLocal: log(.debug, "\(label): the cover \(url) is not a file of this machine; left out")
        case .refused(let why): log.warning("\(label): \(why); left out")
        }
        cover = (url, artwork)
        return artwork
    }

    /// Of two reasons for one publication, the one a client must not miss.
    private static func weightier(_ a: PublicationReason, _ b: PublicationReason) -> PublicationReason {
        let order: [PublicationReason] = [.trackChanged, .playbackStarted, .stopped, .paused, .resumed, .seek, .rateChanged, .metadataChanged]
        return (order.firstIndex(of: a) ?? order.count) <= (order.firstIndex(of: b) ?? order.count) ? a : b
    }

    // MARK: Commands

    private func carryOut(_ request: CommandRequest) {
        guard owner != nil, let call = mirror.call(for: request, now: monotonicSeconds()) else {
            log(.debug, "\(label): \(request.command.rawValue) has no MPRIS call, or the player is not there")
            return
        }
        let label = self.label
        let log = self.log
        do throws(DBusError) {
            switch call {
            case .method(let member, let arguments):
                try connection.call(busName, Self.objectPath, Self.player, member, arguments) { result in
                    if case .failure(let error) = result { log.warning("\(label): \(member): \(error)") }
                }
            case .set(let property, let value):
                try connection.setProperty(busName, Self.objectPath, Self.player, property, value) { result in
                    if case .failure(let error) = result { log.warning("\(label): setting \(property): \(error)") }
                }
            }
        } catch {
            log.warning("\(label): \(error)")
        }
    }
}
