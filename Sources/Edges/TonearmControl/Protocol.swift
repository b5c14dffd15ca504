/// The control protocol spoken on tonearmd's Unix socket: served by `ControlServer` (in
/// TonearmNetwork, on the daemon's one SwiftNIO event loop), spoken by `ControlClient`.
///
/// (This text lives in a Swift file rather than a Markdown one because SwiftPM warns about
/// files in a target that it does not build.)
///
/// ## Framing
///
/// JSON lines: each message is one JSON text (RFC 8259, UTF-8, parsed strictly: no comments,
/// trailing commas, NaN or duplicate keys) followed by `\n`. A `\r` before the `\n` is
/// ignored, and so are blank lines. A line longer than `maxLineBytes` (64 KiB by default) is
/// refused with `lineTooLong` and discarded up to the next newline. Try it by hand:
///
///     socat - UNIX-CONNECT:/run/tonearm/control.sock
///     {"id":1,"command":"status"}
///
/// ## Requests and responses
///
/// A request is an object with `"command"` (a string), an optional `"id"` (any scalar: string,
/// number, boolean or null; echoed back, null when absent) and the command's arguments as
/// further keys:
///
///     {"id":7,"command":"seek","position":42.5}
///
/// `id` and `command` are therefore never argument names (a key may appear only once in an
/// object): an argument naming a queue item is `"item"`, not `"id"`.
///
/// Every request gets exactly one response line, with its id:
///
///     {"id":7,"ok":true,"result":{…}}
///     {"id":7,"ok":false,"error":{"code":"badArgument","message":"'position' must be a number"}}
///
/// Responses come as the daemon completes them, not necessarily in request order: match them
/// by id. A request the daemon drops without answering gets `internal`, so no client waits
/// forever.
///
/// ## Error codes
///
/// Answered by the server itself, the connection staying open (the id is null when the line
/// could not be read as an object):
///
/// - `malformed`: the line is not JSON, or not UTF-8; the message is the parser's
///   ("invalid JSON: expected ',' or '}' at byte 17, found ']'").
/// - `badRequest`: not an object, no string `command`, or an `id` that is an array or object.
/// - `lineTooLong`: the line is over `maxLineBytes`.
///
/// Answered by the daemon's command handler:
///
/// - `unknownCommand`: no such command.
/// - `badArgument`: an argument is missing or of the wrong type, or a topic is unknown.
/// - `internal`: the daemon failed, or dropped the request.
///
/// And once, before the server closes the connection:
///
/// - `tooManyClients`: `maxClients` (32) are already connected. The line has no id:
///   `{"ok":false,"error":{"code":"tooManyClients","message":"…"}}`.
///
/// ## Events
///
/// `subscribe` and `unsubscribe` are handled by the server:
///
///     {"id":1,"command":"subscribe","topics":["nowPlaying","state"]}
///     {"id":1,"ok":true,"result":{"topics":["nowPlaying","state"]}}
///
/// Without `"topics"` they apply to every topic the daemon has; an unknown topic is a
/// `badArgument` and changes nothing. The result lists what the client is subscribed to
/// afterwards. From the subscribe response on, each event of a subscribed topic arrives as
///
///     {"event":"nowPlaying","data":{…}}
///
/// interleaved with responses. Event lines never have `"id"`, responses always do.
///
/// ## tonearmd's commands
///
/// Reports:
///
/// - `status` → `state` (playing, paused, stopped), `title`, `artist`, `album`, `duration`,
///   `elapsed` (extrapolated to the moment of the answer), `rate`, `output`, `queueIndex`,
///   `queueCount`, `volume`, `repeat`, `shuffle`, `eligible` and `eligibility` (why),
///   `commands` (remote command name → enabled), `artwork`, `device` (`name`, `state` — open,
///   closed, lost, unavailable —, `format`, `rate`, `channels`, `periodFrames`,
///   `bufferFrames`, `underruns`, `losses`, `error`), `library`, `saveFailure` (why the player's
///   state cannot be saved now — a full or read-only card —, or null; saves are tried again,
///   backing off from 1 s to a minute), `nowPlayingLink` and `links` (below).
///
///   While a session spoken for by a `[[link]]` (a profile's link between the sessions of a
///   name — an ALSA program's — and that program's MPRIS player) owns Now Playing, `state`,
///   the Now Playing fields, `rate` and `commands` are that player's, `queueIndex` is null and
///   `nowPlayingLink` names the link: `session` (the sessions' name), `player` (its bus name and
///   bus), `present`; it is null while the Now Playing is the player's own. `links` lists every
///   link the same way; `present` is false while its player is not on its bus, and its
///   sessions are then as any other.
///
///   `output` is `ok` while what plays is heard; otherwise it says what the output waits for:
///   `device lost, waiting for it` (alsa-lib reported an error, as when a USB DAC is
///   unplugged), `device stopped responding, waiting for it` (no period completed within the
///   stall timeout), `waiting for the device` (it could not be opened), `device back,
///   starting` (reopened, audio not flowing yet); `device.error` says what happened ("ALSA PCM
///   'hw:X' lost: No such device"). Meanwhile the state stays `playing` (nobody paused) but
///   Now Playing is published with `rate` 0 and the elapsed time actually heard, and again
///   with `rate` 1 once audio flows.
/// - `queue` → `currentIndex`, `currentItem` (the current item's id), `count`, `version` (changes with every change of the queue),
///   `items` (`id` — stable across moves —, `path`, `title`, `artist`, `album`, `trackNumber`,
///   `discNumber`, `duration`).
/// - `nowPlaying` → the Now Playing dictionary: `title`, `artist`, `album`, `albumArtist`,
///   `trackNumber`, `duration`, `elapsed`, `rate`, `defaultRate`, `queueIndex`, `queueCount`,
///   `isLiveStream`, `artwork` (`id`, `mimeType`, `width`, `height`, `bytes`), `timestamp`
///   (when the audio at `elapsed` is heard, on the daemon's monotonic clock: the device's
///   start or a gapless step as it plays, not when it was asked for or noticed; a play is
///   published at once and corrected with a `seek` when its audio starts more than 40 ms
///   later) and `age` (seconds since then when sent; negative while that audio still waits in
///   the device buffer). Extrapolate: `elapsed + rate × (age + time since receipt)`.
/// - `artwork` `{"artwork":ID, "size":N}` → `id`, `mimeType`, `bytes`, `data` (base64): the
///   picture as it is, or with `size` (16…1024) a JPEG scaled to fit N × N pixels (never
///   enlarged; a JPEG that fits already comes as it is). A linked player's cover has an id
///   `link-…` while that player shows it.
/// - `doctor` → `session`, `eligible`, `eligibility`, `commands`, `nowPlaying`, `output`,
///   `device`, `links` (as `status`'s), `redFlags` (`flag`, `detail`, `fix`;
///   `outputInterrupted` while nothing is heard, `stateNotSaved` while the state cannot be
///   saved, `linkedPlayerAbsent` while the Now Playing owner's linked player is not there).
///
/// Queue: `add` `{"paths":[…], "position":INDEX}` (files or directories, at the end or inserted
/// before `position`; → `added`, `skipped`, `queueCount`; errors `notFound`, `forbidden` outside
/// the music directory, `notPlayable`), `clear`, `remove` `{"item":ID}`, `move`
/// `{"item":ID,"to":INDEX}`, `playItem` `{"item":ID}` (plays that item from its start).
///
/// Library (the index of the music directory; `unavailable` without one). Paths are relative
/// to the music directory; tags go by MPD's names in any case (`Artist`, `AlbumArtist`,
/// `Album`, `Title`, `Track`, `Genre`, `Date`, `Composer`, `Performer`, `Comment`, `Disc`,
/// the sort tags, the `MUSICBRAINZ_*` ids…), and a filter is `{"tag":NAME,"value":TEXT}`,
/// NAME also `any`, `file` or `base` (everything under a directory):
///
/// - `update` `{"path":P, "wait":BOOL}` → `job` at once, or with `wait` the scan's figures once
///   it is done (`seen`, `indexed`, `unchanged`, `removed`, `failed`, `seconds`, `job`,
///   `finishedJob`, `scanning`). A path that is gone is pruned; one outside the music
///   directory is `forbidden`.
/// - `ls` `{"path":DIR}` → `directories` (`path`, `modified`), `songs`, `playlists`; a song is
///   `file`, `duration`, `format` (`rate`, `bits`, `channels`), `size`, `modified`, `picture`,
///   `tags` (tag → value, or an array when it has several).
/// - `list` `{"tag":T, "filters":[…], "group":[T…]}` → `items`, objects of the lower-cased
///   group tags and T: the distinct values, by the sort tags; AlbumArtist falls back to Artist.
/// - `find` and `search` `{"filters":[…], "offset":N, "limit":N}` → `songs` (in path order, at
///   most `limit`, 1000 unless given) and `total`: `find` matches whole values, case-sensitively;
///   `search` substrings, ignoring case.
/// - `findadd` and `searchadd` `{"filters":[…], "position":INDEX}`: the matching songs into the
///   queue, answered as `add`.
/// - `count` `{"filters":[…], "group":T, "substring":BOOL}` → `counts` (`group`, `songs`,
///   `playtime`); `stats` → `artists`, `albums`, `songs`, `playtime`, `dbUpdate` (seconds since
///   the epoch); `playlists` → `playlists` (`name`, `modified`, `entries`); `failures` →
///   `failures` (`path`, `reason`): the files the scans could not read.
///
/// Songs on a medium that is not mounted are left out of every answer, and `status`'s
/// `library` (`indexed`, `scan`, `songs`, `lastUpdate`, `unavailable`) names the directories
/// whose medium is gone; queue items on one are skipped (the `state` event's `error` says
/// so) until it is back.
///
/// Commands by the remote command center's names, the same a board profile and a serial
/// display use, each answered `{"status":S}` with S one of `success`, `disabled`,
/// `noSuchContent`, `noActionableNowPlayingItem`, `commandFailed`: `play`, `pause`,
/// `togglePlayPause`, `stop`, `nextTrack`, `previousTrack`, `skipForward` and `skipBackward`
/// `{"interval":SECONDS}` (optional, more than 0), `seekForward` and `seekBackward`
/// `{"phase":"begin"|"end"}`, `changePlaybackPosition` `{"position":SECONDS}` (0 or more),
/// `changeRepeatMode` `{"mode":"off"|"one"|"all"}` and `changeShuffleMode` `{"on":BOOL}` (without
/// them, repeat steps off → all → one and shuffle toggles, as a button does); and the board's own: `setVolume` `{"percent":0…100}` (answers
/// `queueCount` too), `volumeUp` and `volumeDown` `{"step":PERCENT}` (5 unless given),
/// `toggleMute`, `muteOn`, `muteOff`, `ignitionOn`, `ignitionOff`. The short names of earlier
/// versions stay as aliases, with the arguments they always took: `toggle`, `next`, `previous`,
/// `seek` `{"position":SECONDS}`, `skip` `{"seconds":±N}`, `repeat` `{"mode":M}` and `shuffle`
/// `{"on":BOOL}` (both required there), `volume` `{"percent":P}`. The general form `command`
/// `{"name":NAME, "interval":N, "position":N, "mode":M, "on":B, "phase":P, "percent":P,
/// "step":N}` takes any of these names.
///
/// The player's modes, each answered `{"status":S}`: `single` `{"mode":"off"|"on"|"oneshot"}`
/// (stop after the current item, or with repeat play it again; oneshot once), `consume`
/// `{"on":BOOL}` (items leave the queue once played), `replayGain` `{"mode":"off"|"track"|
/// "album"|"auto", "preamp":DB, "missingPreamp":DB}` (each optional: what is given changes;
/// pre-amps −15…15 dB). `status` shows them as `single`, `consume` and `replayGain` (`mode`,
/// `preamp`, `missingPreamp`, `limit`). `output` `{"on":BOOL}` turns the player's output off
/// (the ALSA device is closed, free for other programs; nothing is heard and the position holds,
/// as while a device is lost) or on again; `status`'s `device` shows `enabled`.
///
/// Every remote command, whatever its form and whoever sends it (this socket, a button, a key,
/// a display), goes to the Now Playing owner: the player, or a client's session (see below),
/// whose client then gets a `remoteCommand` event and the request answers
/// `{"status":"success","forwardedTo":SESSION}`. A session a `[[link]]` speaks for (and whose
/// linked player is there) is answered the same, but the linked player gets the command (its
/// MPRIS methods), not the session's client; a command the player does not take now (its
/// `Can…` properties; it has no scanning) answers `disabled`.
///
/// Audio sessions (the category rules of AVAudioSession; the player is session 1, category
/// from the profile's `[player]`):
///
/// - `sessions` → `muted`, `nowPlayingOwner`, `sessions` (`session`, `name`, `owner` — `"player"` or
///   a client number —, `category`, `mode`, `options`, `active`, `interrupted`, `ducked`,
///   `duckedBy`, `mutedByInput`, `gain` and `gainDB` as applied to the output now, `stream`,
///   `nowPlaying`).
/// - `mute` `{"on":BOOL}`: the mute input; silences ambient and soloAmbient sessions.
/// - `sessionOpen` `{"category":C, "mode":M, "options":[…], "remoteCommands":BOOL, "name":N}` → the
///   new session (`session`, `name`, `category`, `mode`, `options` with their implications, `active`,
///   `interrupted`, `ducked`). Category soloAmbient and mode default unless given;
///   `remoteCommands` true makes it eligible for Now Playing when non-mixable. A combination
///   the rules refuse is a `badArgument` naming it ("category ambient does not accept option
///   mixWithOthers (accepted only by playback, playAndRecord and multiRoute)").
/// - `sessionSetCategory` `{"session":S, "category":C, "mode":M, "options":[…]}`: options
///   are not sticky, the new set replaces the old.
/// - `sessionActivate` `{"session":S}`; `sessionDeactivate` `{"session":S,
///   "notifyOthers":BOOL}` (notifyOthersOnDeactivation: the sessions it interrupted resume);
///   `sessionClose` `{"session":S}` (a deactivation without notifying; a client's sessions
///   close when it disconnects).
/// - `sessionPlay` `{"session":S, "path":FILE}` or `{"session":S, "format":{"rate":HZ,
///   "channels":N, "bits":8|16|24|32}}` for raw PCM (signed little-endian, interleaved),
///   then `sessionWrite` `{"session":S, "data":BASE64}` (whole frames; → `accepted` frames
///   and `backlogFrames`; `busy` while about 2 s wait: send again shortly) and `sessionEnd`.
///   Converted to the device's rate and channels. Activates an inactive session. Errors
///   `notFound`, `notPlayable`, `busy` (every stream slot playing), `notStreaming`.
/// - `sessionStop` `{"session":S}`: fades its stream out.
///
/// Only the client that opened a session may change it (`badArgument` otherwise).
///
/// Topics: `nowPlaying` (`reason`, `replace`, `artworkChanged`, `info`), published on playback
/// start, pause, resume, seek, track change, rate change (scanning, and the output stopping
/// or coming back), metadata or artwork change and stop — never on a timer; a linked player's
/// while its session owns Now Playing, and a `trackChanged` replacement whenever Now Playing
/// passes between the player and a linked player; `state` (`state`, or `error` and `item` when a file fails); `library` (as
/// `status`'s `library`, while a scan goes and when it ends, and when a medium goes or comes back); `queue`
/// (as the `queue` report); `commands` (name → enabled); `sessions` (the `sessions` report,
/// on every change). And, for a client's own sessions only: `interruption` (`session`,
/// `type` began or ended, `reason` — `nonMixableActivated`, `spokenAudioInterrupted`,
/// `interrupterDeactivated` —, `interrupter` or `endedBy`, `shouldResume`), `duck`
/// (`session`, `ducked`, `by`), `stream` (`session`, `finished`: its stream has been heard to
/// the end) and `remoteCommand` (`session`, `name` and the command's arguments).
///
/// ## Slow clients
///
/// The server never waits for a client. Output a client has not read yet is buffered, up to
/// `maxPendingOutputBytes` (1 MiB); a client over that (it stopped reading) is disconnected.
/// Each client's requests are read at most 64 KiB at a time, in turn with the others, so one
/// that floods cannot hold the rest up.
/// A client may half-close its side after its last request (`shutdown(SHUT_WR)`, as `socat`
/// does at the end of its input): its responses are still sent before the server closes.
public enum ControlErrorCode {
    public static let malformed = "malformed"
    public static let badRequest = "badRequest"
    public static let lineTooLong = "lineTooLong"
    public static let tooManyClients = "tooManyClients"
    public static let unknownCommand = "unknownCommand"
    public static let badArgument = "badArgument"
    public static let `internal` = "internal"
}
