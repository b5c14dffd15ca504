import TonearmControlPlane
import TonearmDecoding

extension MPDCommands {
    /// The connection's settings and what the server says of itself: `ping`, `tagtypes`,
    /// `binarylimit`, `commands`, `notcommands`, `urlhandlers`, `decoders`. (`close`,
    /// `password`, `idle` and the command lists are `MPDConnection`'s.)
    enum ConnectionCommands {
        static func ping(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String { "" }

        /// `tagtypes [clear | all | enable TAG… | disable TAG…]`: the tags this connection's
        /// song answers carry, always in MPD's order.
        static func tagTypes(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let args = call.arguments, client = call.client
            guard let sub = args.first?.lowercased() else {
                return client.tags.map { "tagtype: \($0.rawValue)\n" }.joined()
            }
            func named(_ names: ArraySlice<String>) throws(MPDError) -> Set<Tag> {
                var tags = Set<Tag>()
                for name in names {
                    guard let tag = Tag(named: name) else { throw .argument("Unknown tag type: \(name)") }
                    tags.insert(tag)
                }
                return tags
            }
            switch sub {
            case "clear": client.tags = []
            case "all": client.tags = MPDSong.tagOrder
            case "enable":
                let more = try named(args.dropFirst())
                client.tags = MPDSong.tagOrder.filter { client.tags.contains($0) || more.contains($0) }
            case "disable":
                let fewer = try named(args.dropFirst())
                client.tags = client.tags.filter { !fewer.contains($0) }
            default: throw .argument("Unknown sub command: \(args[0])")
            }
            let own = client.tags != MPDSong.tagOrder
            mpd.shared.withLock { shared in
                if own { shared.ownTags.insert(client.id) } else { shared.ownTags.remove(client.id) }
            }
            return ""
        }

        /// `binarylimit SIZE`: the most bytes of a picture one answer carries, from 64 B to 1 MiB.
        static func binaryLimit(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let text = call.arguments[0]
            guard let limit = Int(text), limit >= 64 else { throw .argument("Value too small: \(text)") }
            call.client.binaryLimit = min(limit, 1 << 20)
            return ""
        }

        /// The commands this client may use now, as the table lists them.
        static func commands(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let authorized = call.client.authorized
            return table.filter { authorized || openCommands.contains($0.name) }.map { "command: \($0.name)\n" }.joined()
        }

        /// The commands this client may not use until it gives the password.
        static func notCommands(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            guard !call.client.authorized else { return "" }
            return table.filter { !openCommands.contains($0.name) }.map { "command: \($0.name)\n" }.joined()
        }

        static func urlHandlers(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            "handler: http://\nhandler: https://\n"
        }

        static func decoders(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String { decoderList }

        /// Every decoder plug-in with its suffixes and MIME types, as mpd lists its own;
        /// plug-ins of one library (mpd's name) are one entry, as in mpd.
        static let decoderList: String = {
            var names: [String] = []
            var suffixes: [String: [String]] = [:]
            var mimeTypes: [String: [String]] = [:]
            for plugIn in Decoders.all {
                if suffixes[plugIn.name] == nil { names.append(plugIn.name) }
                suffixes[plugIn.name, default: []] += plugIn.suffixes.filter { !(suffixes[plugIn.name] ?? []).contains($0) }
                mimeTypes[plugIn.name, default: []] += plugIn.mimeTypes.filter { !(mimeTypes[plugIn.name] ?? []).contains($0) }
            }
            return names.map { name in
                "plugin: \(name)\n" + suffixes[name, default: []].map { "suffix: \($0)\n" }.joined()
                    + mimeTypes[name, default: []].map { "mime_type: \($0)\n" }.joined()
            }.joined()
        }()
    }
}
