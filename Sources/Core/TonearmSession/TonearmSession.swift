// Audio sessions as iOS's AVAudioSession defines them, for several streams on one board: the
// category table (`SessionPolicy.rules(for:)`), the mode table (`SessionPolicy.categories(for:)`)
// and one pure function, `SessionPolicy.evaluate(sessions:request:muted:)`, that says who mixes,
// who is ducked, who is interrupted and who owns Now Playing. No I/O and no clock: the daemon
// applies the decision (events to owners, gains to the mixer, the display to the owner).
