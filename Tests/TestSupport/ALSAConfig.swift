import Foundation

/// An alsa-lib configuration for one test, in the test's directory.
///
/// PCMs it defines (see /work/shared/TESTING.md):
/// - `capture`: the `file` plugin over `null`, WAV into `capturePath`. Fast, unpaced.
/// - `captureperformat`: the same, but one file per device format (alsa-lib expands %r, %c
///   and %f in the name when the PCM is configured); see `captureFile(rate:channels:format:)`.
///   The `file` plugin truncates its file every time the PCM is reopened, so a format change
///   between tracks would otherwise leave only the last format's audio.
/// - `jackraw`: the ALSA `jack` plugin on system:playback_1/2 (48 kHz from the dummy
///   server, 2 channels, FLOAT_LE only).
/// - `jackrawcapture`: `file` over `jackraw` into `jackrawCapturePath` (FLOAT_LE data; the
///   header wrongly says integer PCM, see `WAVFile.samplesAsFloat32`).
/// - `paced`: `plug` over `jackraw`: keeps real time, converts sample formats.
/// - `pacedcapture`: `file` over `paced` into `pacedCapturePath`.
/// - `pacedsplitcapture`: the same with `truncate false`: every reopen of the PCM (after a
///   device loss, a format change) starts a new file, `pacedsplitcapture.wav`, then
///   `….wav.0001`, `….wav.0002`…; see `splitCaptureFiles()`.
public struct ALSAConfig: Sendable {
    public let path: String
    public let capturePath: String
    public let pacedCapturePath: String
    public let jackrawCapturePath: String
    public let pacedSplitCapturePath: String
    public let directory: String
    public let jackServerName: String?

    public init(directory: TemporaryDirectory, jackServerName: String? = nil) throws {
        self.directory = directory.path
        self.jackServerName = jackServerName
        path = directory.file("asound.conf")
        capturePath = directory.file("capture.wav")
        pacedCapturePath = directory.file("pacedcapture.wav")
        jackrawCapturePath = directory.file("jackrawcapture.wav")
        pacedSplitCapturePath = directory.file("pacedsplitcapture.wav")
        let text = """
            </usr/share/alsa/alsa.conf>
            pcm.capture {
                type file
                slave.pcm null
                file "\(capturePath)"
                format "wav"
            }
            pcm.captureperformat {
                type file
                slave.pcm null
                file "\(directory.path)/capture-%r-%c-%f.wav"
                format "wav"
            }
            pcm.jackraw {
                type jack
                playback_ports {
                    0 system:playback_1
                    1 system:playback_2
                }
            }
            pcm.jackrawcapture {
                type file
                slave.pcm jackraw
                file "\(jackrawCapturePath)"
                format "wav"
            }
            pcm.paced {
                type plug
                slave.pcm jackraw
            }
            pcm.pacedcapture {
                type file
                slave.pcm paced
                file "\(pacedCapturePath)"
                format "wav"
            }
            pcm.pacedsplitcapture {
                type file
                slave.pcm paced
                file "\(pacedSplitCapturePath)"
                format "wav"
                truncate false
            }

            """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Where `captureperformat` writes the audio it got in one device format, e.g.
    /// (44100, 2, "S16_LE").
    public func captureFile(rate: Int, channels: Int, format: String) -> String {
        "\(directory)/capture-\(rate)-\(channels)-\(format).wav"
    }

    /// The files `pacedsplitcapture` wrote, in the order it opened them.
    public func splitCaptureFiles() -> [String] {
        let base = URL(fileURLWithPath: pacedSplitCapturePath).lastPathComponent
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0 == base || $0.hasPrefix(base + ".") }.sorted().map { directory + "/" + $0 }
    }

    /// The environment for a process that should use this configuration (and the JACK
    /// server, when there is one; never one started on demand).
    public var environment: [String: String] {
        var env = ["ALSA_CONFIG_PATH": path, "JACK_NO_START_SERVER": "1"]
        if let jackServerName { env["JACK_DEFAULT_SERVER"] = jackServerName }
        return env
    }
}
