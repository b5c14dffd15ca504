import TonearmConfig

/// The systemd drop-in that lets the service unit (`Board/tonearmd.service`, which allows no IP
/// at all) use the network exactly as far as the profile's TCP listeners need: nothing when
/// every listener is a Unix socket; this machine only when each binds a loopback address; this
/// machine and the private ranges of a home or car network otherwise — never the internet.
/// `tonearmd --network-drop-in` prints it for the install steps.
public enum NetworkDropIn {
    /// How far the profile's listeners reach.
    public enum Reach: Equatable, Sendable {
        case none, loopback, localNetwork
    }

    /// The TCP listeners a profile asks for: what, and on which address.
    public static func listeners(_ config: DaemonConfig) -> [(name: String, bind: String)] {
        var all: [(name: String, bind: String)] = []
        if config.mpd.port != 0 { all.append(("[mpd] \(config.mpd.bind):\(config.mpd.port)", config.mpd.bind)) }
        if config.web.port != 0 { all.append(("[web] \(config.web.bind):\(config.web.port)", config.web.bind)) }
        return all
    }

    public static func reach(_ config: DaemonConfig) -> Reach {
        let binds = listeners(config).map(\.bind)
        if binds.isEmpty { return .none }
        return binds.allSatisfy(isLoopback) ? .loopback : .localNetwork
    }

    static func isLoopback(_ address: String) -> Bool {
        address == "localhost" || address == "::1" || address.hasPrefix("127.")
    }

    /// The drop-in's text: install it as /etc/systemd/system/tonearmd.service.d/network.conf.
    public static func text(_ config: DaemonConfig) -> String {
        let served = listeners(config).map(\.name).joined(separator: ", ")
        let head = """
            # Written by `tonearmd --network-drop-in` for the profile's TCP listeners\(served.isEmpty ? "" : ": \(served)").
            # Install as /etc/systemd/system/tonearmd.service.d/network.conf, then systemctl daemon-reload;
            # write it again whenever the profile's listeners change.

            """
        switch reach(config) {
        case .none:
            return head + "# Every listener is a Unix socket: the unit needs no IP, and this drop-in allows none.\n"
        case .loopback:
            return head + """
                # Clients on this machine only (127.0.0.1, ::1).
                [Service]
                PrivateNetwork=no
                RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
                IPAddressDeny=any
                IPAddressAllow=localhost

                """
        case .localNetwork:
            return head + """
                # Clients on this machine and on the home or car network (phones, tablets, Home
                # Assistant): the private ranges only, no internet, no multicast.
                [Service]
                PrivateNetwork=no
                RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
                IPAddressDeny=any
                IPAddressAllow=localhost 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 fe80::/10 fc00::/7

                """
        }
    }
}
