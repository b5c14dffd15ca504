import TonearmControlPlane

extension Command {
    /// A command as a profile or a display writes it: "nextTrack", "skipForward 30",
    /// "seekForward begin".
    init(_ text: String) {
        let words = text.split(separator: " ", maxSplits: 1).map(String.init)
        self = try! Command.parse(words[0], argument: words.count > 1 ? words[1] : nil).get()
    }
}
