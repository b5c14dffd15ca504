import TonearmControlPlane
import TonearmLibrary
import TonearmPlayer
import TonearmSession

/// The links clients hold (`LinkCommand`), by session name: which client speaks for the
/// program behind those sessions, and what that program plays.
struct LinkBook {
    struct Link {
        var client: ClientID
        var player: String
        var playing: LinkedNowPlaying?
        /// The program's picture as the daemon serves it, named by its bytes.
        var artwork: Artwork?
        /// When it was claimed, for the order of reports.
        var claim: Int
    }

    private(set) var links: [String: Link] = [:]
    private var claims = 0
    /// Why the link that owns Now Playing last published, until the next flush tells it.
    var reason: PublicationReason?

    /// The link of sessions named `name`, while its program is there.
    func speaking(for name: String?) -> Link? {
        guard let name, let link = links[name], link.playing != nil else { return nil }
        return link
    }

    /// Claims or updates `linked.sessionName` for `client`; why not when another client holds it.
    /// Returns whether the program came or went.
    mutating func publish(_ linked: LinkedPlayer, from client: ClientID) throws(CommandFailure) -> (presenceChanged: Bool, new: Bool) {
        let name = linked.sessionName
        guard !name.isEmpty else { throw CommandFailure(.badArgument, "a link needs the name of the sessions it speaks for") }
        if let held = links[name], held.client != client {
            throw CommandFailure(.exists, "sessions named '\(name)' are spoken for already, by \(held.player)")
        }
        let before = links[name]
        var link = before ?? Link(client: client, player: linked.player, claim: claims)
        if before == nil { claims += 1 }
        link.player = linked.player
        if let picture = linked.playing?.artwork {
            // Hashed only when the bytes are new: a client that publishes again keeps the same array.
            if picture.bytes != link.playing?.artwork?.bytes || link.artwork == nil {
                link.artwork = Artwork(id: ArtworkSource.id(ofPicture: picture.bytes, prefix: "link"), mimeType: picture.mimeType,
                                       width: picture.width, height: picture.height, byteCount: picture.bytes.count)
            }
        } else {
            link.artwork = nil
        }
        link.playing = linked.playing
        links[name] = link
        return ((before?.playing != nil) != (linked.playing != nil), before == nil)
    }

    mutating func release(_ name: String, from client: ClientID) throws(CommandFailure) {
        guard let held = links[name] else { throw CommandFailure(.notFound, "no link for sessions named '\(name)'") }
        guard held.client == client else {
            throw CommandFailure(.badArgument, "sessions named '\(name)' are spoken for by another client (\(held.player))")
        }
        links[name] = nil
    }

    /// The names whose claims `client` held, now given up.
    mutating func clientLeft(_ client: ClientID) -> [String] {
        let gone = links.filter { $0.value.client == client }.map(\.key)
        for name in gone { links[name] = nil }
        return gone.sorted()
    }

    func state(_ name: String) -> LinkState? {
        links[name].map { LinkState(sessionName: name, player: $0.player, client: $0.client, present: $0.playing != nil) }
    }

    /// Every link, in the order they were claimed.
    var states: [LinkState] {
        links.sorted { $0.value.claim < $1.value.claim }.compactMap { state($0.key) }
    }

    /// The bytes of a picture a linked program shows now.
    func picture(id: String) -> LinkedArtwork? {
        links.values.first { $0.artwork?.id == id }?.playing?.artwork
    }
}

/// Whose transport, Now Playing and commands clients see: the built-in player's, or, while a
/// linked session owns Now Playing, its program's.
struct NowPlayingView {
    var transport: TransportState
    var info: NowPlayingInfo
    var enabledCommands: [RemoteCommand: Bool]
    var link: LinkState?
}

extension PlayerDaemon {
    /// The Now Playing owner's session and the link that speaks for it, when there is one and
    /// its program is there.
    var ownerLink: (session: SessionID, name: String, link: LinkBook.Link)? {
        guard let owner = book.nowPlayingOwner, owner != SessionsState.playerSession, let name = book.names[owner],
              let link = links.speaking(for: name) else { return nil }
        return (owner, name, link)
    }

    func nowPlayingView() -> NowPlayingView {
        guard let (_, name, link) = ownerLink, let playing = link.playing else {
            return NowPlayingView(transport: core.state, info: core.nowPlaying, enabledCommands: core.enabledCommands)
        }
        var info = playing.info
        info.artwork = link.artwork
        return NowPlayingView(transport: playing.transport, info: info, enabledCommands: playing.enabledCommands,
                              link: links.state(name))
    }

    /// A client's link: claimed, published again, or given up.
    func link(_ command: LinkCommand, client: ClientID) -> CommandResult {
        do throws(CommandFailure) {
            switch command {
            case .publish(let linked):
                let change = try links.publish(linked, from: client)
                if change.new { logger.info("sessions named '\(linked.sessionName)' are spoken for by \(linked.player)") }
                if change.presenceChanged {
                    logger.info("\(linked.player), linked to sessions named '\(linked.sessionName)', is \(linked.playing == nil ? "gone" : "there")")
                }
                if ownerLink?.name == linked.sessionName { links.reason = linked.playing?.reason }
            case .release(let name):
                try links.release(name, from: client)
                logger.info("sessions named '\(name)' are no longer spoken for")
            }
        } catch {
            return CommandResult(status: .commandFailed, failure: error)
        }
        changes.subsystems.insert(.sessions)
        return CommandResult(status: .success)
    }

    /// A remote command for the session a link speaks for: to that link's client, unless its
    /// program does not take it now. Skips carry the profile's interval when they have none.
    func forwardToLink(_ request: CommandRequest) -> CommandResult? {
        guard let (session, _, link) = ownerLink else { return nil }
        guard link.playing?.enabledCommands[request.command] == true else { return CommandResult(status: .disabled) }
        var request = request
        if request.interval == nil {
            if request.command == .skipForward { request.interval = settings.skipForwardSeconds }
            if request.command == .skipBackward { request.interval = settings.skipBackwardSeconds }
        }
        changes.notices.append(.remoteCommand(owner: link.client, session: session, request))
        return CommandResult(status: .success, forwardedTo: session)
    }

    /// What goes out about Now Playing in this flush. While a linked program owns it, the
    /// player's own publications describe what is not heard and are dropped; the program's
    /// changes are published instead, and a change of owner either way is one full
    /// replacement.
    func nowPlayingPublications(_ view: NowPlayingView, seen: PendingChanges.Seen) {
        defer { links.reason = nil }
        guard view.link != nil || seen.link != nil else { return }
        let handover = view.link?.sessionName != seen.link?.sessionName
        if view.link != nil { changes.publications = [] }
        guard handover || view.info != seen.nowPlaying else { return }
        let reason = handover ? .trackChanged : links.reason ?? .metadataChanged
        changes.publications.append(NowPlayingPublication(reason: reason, info: view.info, isReplacement: reason == .trackChanged,
                                                          artworkChanged: view.info.artwork?.id != seen.nowPlaying.artwork?.id))
    }
}
