/// The `line` display protocol: plain text lines between tonearmd and a display built on a
/// microcontroller (an Arduino, an ESP32, a Pico), written by `LineProtocolDriver`.
///
/// (This text lives in a Swift file rather than a Markdown one because SwiftPM warns about
/// files in a target that it does not build.)
///
/// ## Framing
///
/// UTF-8 text, one message a line, each ended by LF (0x0A). The daemon ends lines with LF
/// only; a display may end its lines with CR LF (the CR is dropped). Words are separated by
/// spaces; on the display's lines, runs of spaces and tabs count as one, and spaces at either
/// end and blank lines are ignored. Names are case-sensitive.
///
/// Every line the daemon sends is at most 256 bytes with its LF, so a 256-byte buffer is
/// enough on the display (texts are cut, on a character boundary, to fit). A display's lines
/// have the same limit (`LineProtocol.maxLineBytes`, line ending included); a longer one is
/// discarded up to the next LF and answered `error lineTooLong`.
///
/// ## Texts
///
/// `title`, `artist` and `album` carry a text: the rest of the line after one space,
/// exactly (leading and trailing spaces are part of it). An empty or absent text is the
/// keyword alone (`title`). Escapes: `\\` is a backslash, `\n` a line feed, `\r` a carriage
/// return, `\t` a tab, and `\xHH` (two lowercase hex digits) any other control character
/// (U+0000–U+001F, U+007F). Nothing else is escaped; other characters are sent as UTF-8.
///
/// ## From the daemon
///
/// When the port opens, and whenever the display sends `hello`, the daemon sends
/// `hello tonearm 1` (the protocol's version) then every message below, then `end`. After
/// that, on each event (start, pause, seek, track change, volume, a command enabled or
/// disabled), it sends only the messages whose value changed, then `end`; nothing when
/// nothing changed, and nothing on a timer. In this order:
///
/// - `state playing`, `state paused`, `state stopped`.
/// - `title TEXT`, `artist TEXT`, `album TEXT`.
/// - `queue POSITION COUNT`: the current item's position, from 1, and how many there are:
///   `queue 3 12`; `queue - 0` when nothing is current.
/// - `volume PERCENT`: an integer from 0 to 100.
/// - `mute on`, `mute off`.
/// - `clock ELAPSED RATE DURATION`: seconds into the track at the moment the line is sent,
///   the playback rate (1 playing, 0 paused or stopped) and the track's length, each with
///   exactly three decimals, the length `-` when unknown: `clock 42.500 1.000 215.000`.
///   The display has no access to the daemon's clock, so it keeps its own: it notes its
///   time when the line arrives (`millis()`) and shows
///   `ELAPSED + RATE × (its time now − that time)`, within 0 and DURATION, redrawing as
///   often as it likes. The only error is the line's transmission time (about 1 ms a byte
///   at 9600 baud). A display without floating point reads milliseconds by dropping the
///   dot. `clock` is sent again only when the trajectory changes: play, pause, seek, track
///   change, rate change, a new duration.
/// - `command NAME enabled`, `command NAME disabled`: one for every command below (the
///   display may show only those it has a control for). A display shows a disabled command
///   greyed out or hides it; the daemon refuses a disabled command anyway. Volume, mute and
///   ignition commands are always enabled.
/// - `end`: the end of a batch; the display redraws now.
///
/// Answers to the display's lines:
///
/// - `pong`: to `ping`.
/// - `error CODE DETAIL`: to a line the daemon did not use; the line is ignored. CODE is
///   `unknownCommand` (DETAIL: the word, cut to 32 bytes), `badArgument` (DETAIL: what the
///   command takes, in the control plane's words: `setVolume takes percent, 0 to 100`),
///   `lineTooLong` or `malformed` (not UTF-8, or a control character other than tab). At most four answers a second are sent; a display sending garbage gets no
///   flood back.
///
/// ## From the display
///
/// - `hello`: the display (re)started; the daemon sends everything again.
/// - `ping`: the daemon answers `pong`.
/// - A command, by its name in the control plane's vocabulary (`CommandName`: the remote
///   command center's names and the board's own; the control socket's short aliases such as
///   `next` and `toggle` are understood too), with its argument:
///
///       play | pause | togglePlayPause | stop | nextTrack | previousTrack
///       skipForward [SECONDS] | skipBackward [SECONDS]   more than 0; none: the daemon's interval
///       seekForward begin|end | seekBackward begin|end   a scan button pressed, released
///       changePlaybackPosition SECONDS                   0 or more
///       changeRepeatMode [off|one|all]                   none: the next mode (off, all, one)
///       changeShuffleMode [on|off]                       none: the other one
///       volumeUp [STEP] | volumeDown [STEP]              percent, more than 0, at most 100; none: 5
///       setVolume PERCENT                                0 to 100
///       toggleMute | muteOn | muteOff
///       ignitionOn | ignitionOff
///
///   Numbers are decimal digits with an optional fraction (`30`, `42.5`): no sign, exponent
///   or hex. Commands get no answer when they are used; what they change comes back as
///   state (a disabled command does nothing, as its `command NAME disabled` said).
///
/// ## A session
///
///     → hello tonearm 1
///     → state playing
///     → title So What
///     → artist Miles Davis
///     → album Kind of Blue
///     → queue 1 5
///     → volume 40
///     → mute off
///     → clock 0.000 1.000 562.000
///     → command play enabled
///       … (every command)
///     → end
///     ← togglePlayPause
///     → state paused
///     → clock 12.250 0.000 562.000
///     → end
///     ← setVolume 140
///     → error badArgument setVolume takes percent, 0 to 100
public enum LineProtocol {
    /// The version `hello tonearm VERSION` announces.
    public static let version = 1
    /// The longest line either side sends, with its line ending.
    public static let maxLineBytes = 256

    /// The error codes of `error CODE DETAIL`.
    public enum ErrorCode: String, Sendable {
        case unknownCommand, badArgument, lineTooLong, malformed
    }
}
