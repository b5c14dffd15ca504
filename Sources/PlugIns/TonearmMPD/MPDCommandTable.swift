extension MPDCommands {
    /// One command of the table: its name, who may use it, how many arguments it takes and
    /// what carries it out (as a row of mpd's `AllCommands.cxx`).
    struct Entry: Sendable {
        /// Who may use a command.
        enum Permission: Sendable {
            /// Any client, before it gives the password too.
            case open
            /// A client that gave the password (or any client, when none is set).
            case authorized
        }

        /// Carries out one command on the commands' actor; returns its answer (a long listing
        /// goes to the call's `out` a part at a time).
        typealias Handler = @Sendable (isolated MPDCommands, Call) async throws(MPDError) -> String

        let name: String
        let permission: Permission
        /// The fewest arguments it takes…
        let minimum: Int
        /// …and the most; nil for any number.
        let maximum: Int?
        /// nil: `MPDConnection` answers it itself (`close`, `idle`, `password`, the command
        /// lists). `commands` lists it; inside a command list it is unknown (but `close`).
        let handler: Handler?

        /// Refuses a wrong number of arguments before the handler runs. A command that takes
        /// any number beyond its fewest names itself (`too few arguments for "prio"`, as mpd
        /// says it); one with a most says only `too few arguments` or `too many arguments`.
        func check(_ arguments: [String]) throws(MPDError) {
            if arguments.count < minimum { throw .argument(maximum == nil ? "too few arguments for \"\(name)\"" : "too few arguments") }
            if let maximum, arguments.count > maximum { throw .argument("too many arguments") }
        }
    }

    /// Every command served, in the order `commands` lists them (sorted by name; a test checks
    /// it). A new command is a row here and its handler in the file of its area.
    static let table: [Entry] = [
        //  name                     permission   fewest most handler
        row("add",                   .authorized, 1, 2,   QueueCommands.add),
        row("addid",                 .authorized, 1, 2,   QueueCommands.add),
        row("albumart",              .authorized, 2, 2,   PictureCommands.picture),
        row("binarylimit",           .authorized, 1, 1,   ConnectionCommands.binaryLimit),
        row("clear",                 .authorized, 0, nil, QueueCommands.clear),
        row("clearerror",            .authorized, 0, 0,   StatusCommands.clearError),
        answeredByConnection("close", .open),
        answeredByConnection("command_list_begin", .authorized),
        answeredByConnection("command_list_end", .authorized),
        answeredByConnection("command_list_ok_begin", .authorized),
        row("commands",              .open,       0, nil, ConnectionCommands.commands),
        row("consume",               .authorized, 1, 1,   OptionCommands.consume),
        row("count",                 .authorized, 0, nil, DatabaseCommands.count),
        row("crossfade",             .authorized, 1, 1,   OptionCommands.crossfade),
        row("currentsong",           .authorized, 0, nil, StatusCommands.currentSong),
        row("decoders",              .authorized, 0, nil, ConnectionCommands.decoders),
        row("delete",                .authorized, 1, 1,   QueueCommands.delete),
        row("deleteid",              .authorized, 1, 1,   QueueCommands.deleteID),
        row("disableoutput",         .authorized, 1, 1,   OutputCommands.switchOutput),
        row("enableoutput",          .authorized, 1, 1,   OutputCommands.switchOutput),
        row("find",                  .authorized, 1, nil, DatabaseCommands.find),
        row("findadd",               .authorized, 1, nil, DatabaseCommands.findAdd),
        row("getvol",                .authorized, 0, nil, OptionCommands.getVolume),
        answeredByConnection("idle", .authorized),
        row("list",                  .authorized, 1, nil, DatabaseCommands.list),
        row("listall",               .authorized, 0, 1,   DatabaseCommands.listAll),
        row("listallinfo",           .authorized, 0, 1,   DatabaseCommands.listAll),
        row("listplaylist",          .authorized, 1, 2,   StoredPlaylistCommands.listPlaylist),
        row("listplaylistinfo",      .authorized, 1, 2,   StoredPlaylistCommands.listPlaylist),
        row("listplaylists",         .authorized, 0, nil, StoredPlaylistCommands.listPlaylists),
        row("load",                  .authorized, 1, 3,   StoredPlaylistCommands.load),
        row("lsinfo",                .authorized, 0, 1,   DatabaseCommands.lsinfo),
        row("mixrampdb",             .authorized, 1, 1,   OptionCommands.mixRampDB),
        row("mixrampdelay",          .authorized, 1, 1,   OptionCommands.mixRampDelay),
        row("move",                  .authorized, 2, 2,   QueueCommands.move),
        row("moveid",                .authorized, 2, 2,   QueueCommands.move),
        row("next",                  .authorized, 0, nil, PlaybackCommands.next),
        answeredByConnection("noidle", .authorized),
        row("notcommands",           .open,       0, nil, ConnectionCommands.notCommands),
        row("outputs",               .authorized, 0, nil, OutputCommands.outputs),
        answeredByConnection("password", .open),
        row("pause",                 .authorized, 0, 1,   PlaybackCommands.pause),
        row("ping",                  .open,       0, 0,   ConnectionCommands.ping),
        row("play",                  .authorized, 0, 1,   PlaybackCommands.play),
        row("playid",                .authorized, 0, 1,   PlaybackCommands.play),
        row("playlist",              .authorized, 0, nil, QueueCommands.playlist),
        row("playlistadd",           .authorized, 2, 3,   StoredPlaylistCommands.playlistAdd),
        row("playlistclear",         .authorized, 1, 1,   StoredPlaylistCommands.playlistClear),
        row("playlistdelete",        .authorized, 2, 2,   StoredPlaylistCommands.playlistDelete),
        row("playlistfind",          .authorized, 1, nil, QueueCommands.playlistFind),
        row("playlistid",            .authorized, 0, 1,   QueueCommands.playlistInfo),
        row("playlistinfo",          .authorized, 0, 1,   QueueCommands.playlistInfo),
        row("playlistmove",          .authorized, 3, 3,   StoredPlaylistCommands.playlistMove),
        row("playlistsearch",        .authorized, 1, nil, QueueCommands.playlistFind),
        row("plchanges",             .authorized, 1, 2,   QueueCommands.changes),
        row("plchangesposid",        .authorized, 1, 2,   QueueCommands.changes),
        row("previous",              .authorized, 0, nil, PlaybackCommands.previous),
        row("prio",                  .authorized, 2, nil, QueueCommands.priority),
        row("prioid",                .authorized, 2, nil, QueueCommands.priority),
        row("random",                .authorized, 1, 1,   OptionCommands.random),
        row("rangeid",               .authorized, 2, 2,   QueueCommands.rangeID),
        row("readpicture",           .authorized, 2, 2,   PictureCommands.picture),
        row("rename",                .authorized, 2, 2,   StoredPlaylistCommands.rename),
        row("repeat",                .authorized, 1, 1,   OptionCommands.repeatMode),
        row("replay_gain_mode",      .authorized, 1, 1,   OptionCommands.replayGainMode),
        row("replay_gain_status",    .authorized, 0, 0,   OptionCommands.replayGainStatus),
        row("rescan",                .authorized, 0, 1,   DatabaseCommands.update),
        row("rm",                    .authorized, 1, 1,   StoredPlaylistCommands.remove),
        row("save",                  .authorized, 1, 1,   StoredPlaylistCommands.save),
        row("search",                .authorized, 1, nil, DatabaseCommands.find),
        row("searchadd",             .authorized, 1, nil, DatabaseCommands.findAdd),
        row("searchaddpl",           .authorized, 2, nil, StoredPlaylistCommands.searchAddPlaylist),
        row("seek",                  .authorized, 2, 2,   PlaybackCommands.seek),
        row("seekcur",               .authorized, 1, 1,   PlaybackCommands.seekCurrent),
        row("seekid",                .authorized, 2, 2,   PlaybackCommands.seek),
        row("setvol",                .authorized, 1, 1,   OptionCommands.setVolume),
        row("shuffle",               .authorized, 0, 1,   QueueCommands.shuffle),
        row("single",                .authorized, 1, 1,   OptionCommands.single),
        row("stats",                 .authorized, 0, nil, StatusCommands.stats),
        row("status",                .authorized, 0, nil, StatusCommands.status),
        row("stop",                  .authorized, 0, nil, PlaybackCommands.stop),
        row("swap",                  .authorized, 2, 2,   QueueCommands.swap),
        row("swapid",                .authorized, 2, 2,   QueueCommands.swap),
        row("tagtypes",              .open,       0, nil, ConnectionCommands.tagTypes),
        row("toggleoutput",          .authorized, 1, 1,   OutputCommands.switchOutput),
        row("update",                .authorized, 0, 1,   DatabaseCommands.update),
        row("urlhandlers",           .authorized, 0, nil, ConnectionCommands.urlHandlers),
        row("volume",                .authorized, 1, 1,   OptionCommands.volume),
    ]

    /// The table by name.
    static let entries = Dictionary(uniqueKeysWithValues: table.map { ($0.name, $0) })

    /// The commands a client may use before it gives the password (as mpd).
    static let openCommands = Set(table.filter { $0.permission == .open }.map(\.name))

    private static func row(_ name: String, _ permission: Entry.Permission, _ minimum: Int, _ maximum: Int?,
                            _ handler: @escaping Entry.Handler) -> Entry {
        Entry(name: name, permission: permission, minimum: minimum, maximum: maximum, handler: handler)
    }

    private static func answeredByConnection(_ name: String, _ permission: Entry.Permission) -> Entry {
        Entry(name: name, permission: permission, minimum: 0, maximum: nil, handler: nil)
    }
}
