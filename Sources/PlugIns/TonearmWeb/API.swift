/// The web remote's HTTP interface, served by `WebPlugIn` on the daemon's one SwiftNIO event
/// loop (`[web] bind`, default 127.0.0.1, and `port`, default 8080).
///
/// (This text lives in a Swift file rather than a Markdown one because SwiftPM warns about
/// files in a target that it does not build.)
///
/// ## Who may ask
///
/// Every request is checked first for the box's own name: its `Host` must be `localhost`, a
/// loopback address (127.0.0.0/8, `[::1]`), the box's hostname or `HOSTNAME.local`, one of its
/// interfaces' addresses (read again, at most every 5 s, when a request names one not known,
/// as DHCP may have changed them), or a name in `[web] allowed_hosts`; and its port, when it
/// gives one, the server's. Anything else is refused with 421 (400 for a malformed or missing
/// `Host` on HTTP/1.1), a WebSocket upgrade included: a page from another site whose name was
/// pointed at this box (DNS rebinding) sends its own name and cannot drive it.
///
/// With `[web] token` set, everything but the page's own files (`/`, `/page.js`, `/page.css`)
/// needs it: `/api`, `/api/REPORT`, the WebSocket's upgrade and `/art/ID`; 401 `unauthorized`
/// without it. A script sends `Authorization: Bearer TOKEN`. The page logs in once:
///
///     POST /login    {"token":"…"}    (Content-Type: application/json)
///
/// answers 204 with a session cookie (`HttpOnly; SameSite=Strict; Path=/`), or 401. A cookie
/// because the browser sends it by itself where a page cannot add a header, on the WebSocket's
/// upgrade and on the covers' `<img>`; the alternatives are worse: a token in the URL lands in
/// logs and history, and one in the WebSocket's first message lets anyone open a socket before
/// being checked. `HttpOnly` keeps it from scripts, `SameSite=Strict` from other sites' pages.
/// The cookie is a random key made at start, not the token, so a restart ends every session
/// (the page asks again). A wrong token makes its address wait before its next one is
/// checked, 1 s and twice as long after each more, up to 60 s (IPv6 per /64; at most 256
/// addresses remembered); meanwhile tokens from it get 429 with `Retry-After`.
///
/// ## The page
///
/// `GET /` is the page; `GET /page.js` and `GET /page.css` are its script and style. They are
/// embedded in the binary (no build step, nothing fetched from elsewhere), sent with an `ETag`
/// and `Cache-Control: no-cache`, so a browser asks again and gets `304 Not Modified` until the
/// daemon is updated.
///
/// ## Commands and queries: `POST /api`
///
/// The body is one request object of the control socket's protocol
/// (`TonearmControl/Protocol.swift`), with the same commands, arguments and answers:
///
///     curl -s -H 'Content-Type: application/json' -d '{"command":"pause"}' http://127.0.0.1:8080/api
///     {"id":null,"ok":true,"result":{"status":"success"}}
///
/// The status is 200 for an answer with `"ok":true`; for one with `"ok":false` it follows the
/// error's code: 400 `malformed`, `badRequest`, `badArgument`; 404 `unknownCommand`,
/// `notFound`; 403 `forbidden`; 409 `exists`; 422 `notPlayable`; 503 `unavailable`, `busy`;
/// 500 `internal`. The body is the same JSON either way.
///
/// - The body must be `Content-Type: application/json` (415 otherwise: a form on another site
///   cannot post one without the browser asking first) and at most 64 KiB (413).
/// - A request with an `Origin` header is answered only when the origin is this server
///   (the `Host` it was asked by); 403 otherwise.
/// - With `[web] token` set, the session cookie or `Authorization: Bearer TOKEN` (see above).
/// - Audio sessions (`session…`) belong to a connection that stays open, so they are refused
///   here (400 `badArgument`): use the control socket. The `sessions` report is available.
///
/// `GET /api/REPORT` is `POST /api` with `{"command":"REPORT"}` for the reports that take no
/// arguments: `status`, `queue`, `nowPlaying`, `sessions`, `doctor`, `stats`, `playlists`.
///
/// ## Events: `GET /ws`
///
/// One WebSocket per page. The server pushes, as text messages,
///
///     {"event":"status","data":{…}}      the `status` report
///     {"event":"queue","data":{…}}       the `queue` report
///     {"event":"sessions","data":{…}}    the `sessions` report
///     {"event":"playlists","data":{…}}   the `playlists` report
///     {"event":"library","data":{…}}     `status`'s `library`
///
/// all of them once when the socket opens, then each only when what it reports changed: on
/// events, never on a timer. `status`'s `elapsed` is true when the message is sent; the page
/// moves the seek bar on by itself (`elapsed + rate × time since receipt`). What the page
/// sends is ignored (pings are answered). The `Origin` must be this server's, as for `/api`,
/// and with a token the upgrade needs it (refused: 401, no upgrade). A page that stops
/// reading is disconnected once 1 MiB waits for it; one that goes away (its socket closed or
/// reset) is let go at once.
///
/// ## Art: `GET /art/ID?size=N`
///
/// The cover whose artwork id is ID (`status`'s `artwork.id`), as a JPEG that fits N × N
/// pixels (N from 16 to 1024, 512 when not given; never larger than the original), decoded
/// at the smallest scale that suffices and cached per size. The id names the picture's bytes,
/// so the answer never changes: `Cache-Control: public, max-age=31536000, immutable`.
/// `ID` `placeholder` is the picture for a track without one, drawn as SVG (`image/svg+xml`,
/// N × N). An unknown id is 404. With a token, it needs it as `/api` does.
///
/// ## Limits
///
/// At most 64 connections (more are closed at once); a request's head at most 16 KiB (431);
/// a connection that sends nothing for 30 s, or takes longer than that to send a request, is
/// closed. A client that closes its side (or resets) frees its place at once, after the answer
/// to a request it sent before. Paths are matched exactly: nothing is read from disk by its
/// path.
public enum WebAPI {
    /// The reports `GET /api/NAME` answers.
    public static let getReports: Set<String> = ["status", "queue", "nowPlaying", "sessions", "doctor", "stats", "playlists"]
}
