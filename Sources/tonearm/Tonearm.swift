import ArgumentParser

@main
struct Tonearm: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tonearm",
        abstract: "Play FLAC files through ALSA, bit-perfect and gapless, and inspect them.",
        discussion: """
            Examples:
              tonearm play album/*.flac
              tonearm play --device hw:CARD=DAC,DEV=0 --period-frames 256 --buffer-frames 1024 track.flac
              tonearm info --json track.flac
            """,
        subcommands: [Play.self, Info.self]
    )
}
