import TonearmConfig
import TonearmDaemon
import XCTest

/// How far the service may reach follows the profile's TCP listeners.
final class NetworkDropInTests: XCTestCase {
    private func reach(port: Int, bind: String, web: (port: Int, bind: String) = (0, "127.0.0.1")) -> NetworkDropIn.Reach {
        var config = DaemonConfig()
        config.mpd.port = port
        config.mpd.bind = bind
        config.web.port = web.port
        config.web.bind = web.bind
        return NetworkDropIn.reach(config)
    }

    func testTheReachFollowsTheBindAddress() {
        XCTAssertEqual(reach(port: 0, bind: "0.0.0.0"), .none, "no TCP listener")
        for loopback in ["127.0.0.1", "127.0.1.1", "::1", "localhost"] {
            XCTAssertEqual(reach(port: 6600, bind: loopback), .loopback, loopback)
        }
        for network in ["0.0.0.0", "::", "192.168.1.5", "10.0.0.2"] {
            XCTAssertEqual(reach(port: 6600, bind: network), .localNetwork, network)
        }
        // The web remote counts as much as the MPD server: the widest of the two wins.
        XCTAssertEqual(reach(port: 0, bind: "0.0.0.0", web: (8080, "127.0.0.1")), .loopback)
        XCTAssertEqual(reach(port: 6600, bind: "127.0.0.1", web: (8080, "0.0.0.0")), .localNetwork)
        XCTAssertEqual(reach(port: 0, bind: "127.0.0.1", web: (8080, "192.168.1.5")), .localNetwork)
    }

    func testTheTextAllowsOnlyWhatTheReachNeeds() {
        var config = DaemonConfig()
        config.mpd.port = 0
        XCTAssertTrue(NetworkDropIn.text(config).contains("[web] 127.0.0.1:8080"), "the web remote is on by default")
        config.web.port = 0
        XCTAssertFalse(NetworkDropIn.text(config).contains("[Service]"))
        config.mpd.port = 6600
        config.mpd.bind = "127.0.0.1"
        XCTAssertTrue(NetworkDropIn.text(config).contains("IPAddressDeny=any\nIPAddressAllow=localhost\n"))
        config.mpd.bind = "0.0.0.0"
        let lan = NetworkDropIn.text(config)
        XCTAssertTrue(lan.contains("IPAddressAllow=localhost 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 fe80::/10 fc00::/7\n"), lan)
        XCTAssertTrue(lan.contains("[mpd] 0.0.0.0:6600"), "names what it is for")
    }
}
