/// The page's files, served as they are: no build step, nothing fetched from elsewhere (the box
/// is offline), nothing read from disk. They are the files in `Page/`, compiled into the binary
/// as bytes (`.embedInCode` in Package.swift: `PackageResources`). `WebRoutes` gives each an
/// ETag. What the page reads and sends is `API.swift`'s.
enum PageFiles {
    struct File { let path: String; let contentType: String; let body: [UInt8] }
    static let all: [File] = [index, script, style]

    /// The page: now playing beside the queue, the library, playlists and sessions.
    static let index = File(path: "/", contentType: "text/html; charset=utf-8", body: PackageResources.index_html)

    /// One dependency-free script: the WebSocket's events in, `POST /api` out.
    static let script = File(path: "/page.js", contentType: "text/javascript; charset=utf-8", body: PackageResources.page_js)

    /// Dark, phone first; two columns from 900 px, three on a kiosk.
    static let style = File(path: "/page.css", contentType: "text/css; charset=utf-8", body: PackageResources.page_css)
}
