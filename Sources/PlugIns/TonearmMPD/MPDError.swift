/// What MPD answers instead of `OK`: its error number and message, as an `ACK` line says them.
/// The one error of the MPD protocol, from a request line that cannot be read to a command that
/// cannot be carried out.
struct MPDError: Error, Equatable {
    /// MPD's error numbers (its `ack.h`).
    enum Code: Int {
        case notList = 1
        case argument = 2
        case password = 3
        case permission = 4
        case unknown = 5
        case noExist = 50
        case playlistMax = 51
        case system = 52
        case playlistLoad = 53
        case updateAlready = 54
        case playerSync = 55
        case exist = 56
    }

    var code: Code
    var message: String
    /// The command the `ACK` names, when not the one that failed (MPD leaves it empty for an
    /// unknown command and for a line that is no command).
    var command: String?

    init(_ code: Code, _ message: String, command: String? = nil) {
        self.code = code
        self.message = message
        self.command = command
    }

    static func argument(_ message: String) -> MPDError { MPDError(.argument, message) }

    /// `ACK [code@index] {command} message`, naming `failed` unless the error names another.
    func line(index: Int = 0, failed: String) -> String {
        "ACK [\(code.rawValue)@\(index)] {\(command ?? failed)} \(message)\n"
    }
}
