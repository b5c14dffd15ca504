import TonearmConfig
import XCTest

@testable import TonearmDaemon

final class DaemonSettingsTests: XCTestCase {
    /// The PCM socket sits beside the control socket unless the profile puts it elsewhere.
    func testTheProgramAudioSocketIsBesideTheControlSocket() {
        func pcm(socket: String, pcmSocket: String? = nil) -> String? {
            var config = DaemonConfig()
            config.daemon.socket = socket
            config.daemon.pcmSocket = pcmSocket
            return DaemonSettings(config: config).pcmSocketPath
        }
        XCTAssertEqual(pcm(socket: "/run/tonearm/control.sock"), "/run/tonearm/pcm.sock")
        XCTAssertEqual(pcm(socket: "/run/user/1000/tonearm.sock"), "/run/user/1000/tonearm-pcm.sock")
        XCTAssertEqual(pcm(socket: "/tmp/x/daemon"), "/tmp/x/daemon-pcm.sock")
        XCTAssertEqual(pcm(socket: "here.sock"), "here-pcm.sock")
        XCTAssertEqual(pcm(socket: "/run/tonearm/control.sock", pcmSocket: "/run/p.sock"), "/run/p.sock")
        XCTAssertNil(pcm(socket: "/run/tonearm/control.sock", pcmSocket: "off"))
    }
}
