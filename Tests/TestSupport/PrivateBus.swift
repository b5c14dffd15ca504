import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A dbus-daemon of a test's own, listening at `address` (a `unix:path=` address). It is
/// ready when it prints its address: dbus-daemon does that once it listens, while the socket
/// file appears already at `bind`, before a connection would be accepted.
public struct PrivateBus {
    public let process: RunningProcess
    public let address: String

    /// `as` runs dbus-daemon through another program (e.g. `setpriv` as another user).
    public init(address: String, config: String = "/usr/share/dbus-1/session.conf", log: String, as runner: [String] = []) throws {
        self.address = address
        let command = runner + ["/usr/bin/dbus-daemon", "--config-file=" + config, "--nofork", "--print-address", "--address=" + address]
        process = try RunningProcess(command[0], Array(command.dropFirst()), stdoutPath: log + ".out", stderrPath: log + ".err")
        let ready = waitUntil(timeout: 30) {
            readText(log + ".out").hasSuffix("\n") || !process.isRunning
        }
        guard ready, process.isRunning else {
            process.send(SIGTERM)
            process.wait(timeout: 5)
            throw TestSupportError("the bus at \(address) did not start: \(readText(log + ".err"))")
        }
    }

    public func stop() {
        process.send(SIGTERM)
        process.wait(timeout: 5)
    }

    /// Debian's system bus configuration, listening at `address` instead, run in the
    /// foreground as whoever starts it, with `policy` as the only service policy.
    public static func systemConfig(listening address: String, including policy: String) throws -> String {
        var text = try String(contentsOfFile: "/usr/share/dbus-1/system.conf", encoding: .utf8)
        for pattern in [#/<user>[^<]*</user>/#, #/<fork/>/#, #/<pidfile>[^<]*</pidfile>/#, #/<syslog/>/#, #/<servicehelper>[^<]*</servicehelper>/#,
                        #/<standard_system_servicedirs/>/#, #/<includedir>[^<]*</includedir>/#, #/<include [^>]*>[^<]*</include>/#] {
            text.replace(pattern, with: "")
        }
        text.replace(#/<listen>[^<]*</listen>/#, with: "<listen>\(address)</listen>")
        text.replace("</busconfig>", with: "  <include>\(policy)</include>\n</busconfig>")
        return text
    }
}
