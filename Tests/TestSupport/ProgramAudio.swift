import Foundation
import Synchronization

/// ALSA programs pointed at the daemon through the `tonearm` plugin, as a user would point them,
/// but with the plugin as built here rather than installed: `make -C ALSA` once per test run,
/// then an alsa-lib configuration naming the built library and including the conf.d snippet
/// the install puts in /etc/alsa/conf.d.
public enum ProgramAudio {
    private static let built = Mutex<(library: String?, failure: String)?>(nil)

    /// The plugin's library, built once per test run (`make -C ALSA`).
    public static func plugin() throws -> String {
        let outcome = built.withLock { cached in
            if let cached { return cached }
            let library = packageRoot + "/ALSA/build/libasound_module_pcm_tonearm.so"
            var outcome: (library: String?, failure: String)
            do {
                let result = try runProcess("make", ["-s", "-C", packageRoot + "/ALSA"], timeout: 120)
                outcome = result.status == 0 && FileManager.default.fileExists(atPath: library)
                    ? (library, "") : (nil, "make -C ALSA failed: \(result)")
            } catch {
                outcome = (nil, "make -C ALSA: \(error)")
            }
            cached = outcome
            return outcome
        }
        guard let library = outcome.library else { throw TestSupportError(outcome.failure) }
        return library
    }

    /// The environment for a program that plays through the plugin to the daemon listening on
    /// `socket`: the bench's alsa-lib configuration, the plugin and its snippet, and `extra`
    /// (more PCM definitions, e.g. `pcm.!default`).
    public static func environment(_ alsa: ALSAConfig, socket: String, extra: String = "", name: String = "programs") throws -> [String: String] {
        let path = alsa.directory + "/\(name).conf"
        let text = """
            <\(alsa.path)>
            pcm_type.tonearm { lib "\(try plugin())" }
            <\(packageRoot)/ALSA/50-tonearm.conf>
            \(extra)

            """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return ["ALSA_CONFIG_PATH": path, "TONEARM_PCM_SOCKET": socket]
    }

    /// 16-bit little-endian WAV of interleaved `samples`.
    public static func wav(_ samples: [Int16], channels: Int, rate: Int, to path: String) throws {
        var bytes = WAVFile.header(channels: channels, sampleRate: rate, containerBits: 16, validBits: 16, dataBytes: samples.count * 2)
        samples.withUnsafeBytes { bytes += $0 }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}
