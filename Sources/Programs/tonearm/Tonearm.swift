import ArgumentParser

@main
struct Tonearm: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tonearm",
        abstract: "Control the Tonearm daemon, or play and inspect audio files directly.",
        discussion: """
            Examples:
              tonearm add ~/Music/Album && tonearm play      (through the daemon, tonearmd)
              tonearm status --json
              tonearm skip -15
              tonearm announce --notify-others prompt.flac   (ducks or interrupts by the session rules)
              tonearm play --device hw:CARD=DAC,DEV=0 track.flac   (directly, no daemon)
              tonearm info --json track.flac
            Every daemon command takes --socket PATH.
            """,
        subcommands: [
            Status.self, Add.self, Clear.self, Queue.self, Play.self, Pause.self, Toggle.self, Stop.self,
            Next.self, Previous.self, Seek.self, Skip.self, Repeat.self, Shuffle.self, Single.self, Consume.self,
            ReplayGainCommand.self, Output.self, Volume.self, Watch.self,
            Sessions.self, Announce.self, Mute.self, Doctor.self, Info.self,
            Update.self, Ls.self, List.self, Find.self, Search.self, FindAdd.self, Stats.self,
        ]
    )

    /// `tonearm --socket PATH status` as well as `tonearm status --socket PATH`.
    @OptionGroup var connection: Connection
}
