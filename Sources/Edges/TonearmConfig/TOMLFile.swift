#if canImport(Glibc)
import Glibc
#endif

extension TOMLTable {
    /// A board profile is a few kilobytes; a file this large is something else.
    static let maximumFileSize = 1 << 20

    /// Reads and parses the file at `path`; errors name it ("cannot read /etc/tonearm.toml: No
    /// such file or directory", "/etc/tonearm.toml:3:7: ...").
    public static func load(path: String) throws(TOMLError) -> TOMLTable {
        try parse(bytes: readFile(path), fileName: path)
    }
}

private func readFile(_ path: String) throws(TOMLError) -> [UInt8] {
    func failure(_ reason: String) -> TOMLError {
        TOMLError(kind: .unreadableFile, message: "cannot read \(path): \(reason)", line: 0, column: 0, fileName: path)
    }
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw failure(String(cString: strerror(errno))) }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16 * 1024)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            throw failure(String(cString: strerror(errno)))
        }
        if count == 0 { return bytes }
        bytes.append(contentsOf: chunk[..<count])
        if bytes.count > TOMLTable.maximumFileSize {
            throw failure("larger than \(TOMLTable.maximumFileSize / 1024) KiB, too large for a board profile")
        }
    }
}
