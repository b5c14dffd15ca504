#if canImport(Glibc)
import Glibc
#endif
import TonearmALSA
import TonearmAudio
import TonearmConfig
import TonearmGPIO
import TonearmInput
import TonearmSerial

/// `tonearmd --selftest`: on a real board, checks what a profile names — the ALSA device, every
/// GPIO chip and line, the input devices, the serial port — and says what it found. Nothing is
/// kept open; run it with the service stopped (the device and lines are then free).
public enum BoardSelfTest {
    public struct Finding: Sendable {
        public var ok: Bool
        public var text: String
    }

    public static func run(_ profile: DaemonConfig) -> [Finding] {
        var findings: [Finding] = []
        findings.append(alsa(profile.output))
        findings += gpio(profile)
        for input in profile.inputs { findings.append(inputDevices(input.path)) }
        if let display = profile.display { findings.append(serialPort(display)) }
        return findings
    }

    static func alsa(_ output: DaemonConfig.Output) -> Finding {
        if output.device.hasPrefix("pipe:") {
            // A named pipe (Snapcast's pipe source): it must be there and be a FIFO.
            let path = String(output.device.dropFirst(5))
            var status = stat()
            guard stat(path, &status) == 0 else {
                return Finding(ok: false, text: "pipe '\(path)': \(String(cString: strerror(errno))) (snapserver makes it: source = pipe://\(path)?mode=create)")
            }
            guard status.st_mode & S_IFMT == S_IFIFO else { return Finding(ok: false, text: "pipe '\(path)': not a named pipe (FIFO)") }
            return Finding(ok: true, text: "pipe '\(path)': a named pipe; written as S16_LE 48000 Hz 2 ch")
        }
        let stream = StreamFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)
        let request = output.bufferMilliseconds.map { OutputRequest(stream: stream, bufferMilliseconds: $0) }
            ?? OutputRequest(stream: stream, periodFrames: output.periodFrames, bufferFrames: output.bufferFrames)
        do {
            let device = try PCMDevice(name: output.device, request: request)
            let format = device.format
            let opened = "ALSA '\(output.device)': opens for 44.1 kHz 16-bit stereo as \(format)"
            guard format.isRewoundWherePossible else {
                return Finding(ok: true, text: opened + "; a buffer under \(DeviceFormat.shortestRewoundMilliseconds) ms is not rewound")
            }
            // As the daemon opens it: does it take back what it has not played?
            let late = output.bufferMilliseconds == nil
                ? "commands are heard a buffer late (\(format.bufferFrames * 1000 / max(1, format.sampleRate)) ms)"
                : "the daemon plays with period_frames/buffer_frames (\(output.periodFrames)/\(output.bufferFrames)) instead"
            return Finding(ok: true, text: opened + "; "
                + (device.canRewind() ? "rewinds, so commands are heard within rewind_guard_ms (\(output.rewindGuardMilliseconds) ms)"
                                      : "is not rewound (no sound card behind it, or snd_pcm_rewind refused): " + late))
        } catch {
            return Finding(ok: false, text: "ALSA '\(output.device)': \(error) (aplay -L lists the devices; is tonearmd running?)")
        }
    }

    static func gpio(_ profile: DaemonConfig) -> [Finding] {
        var findings: [Finding] = []
        var chips: [String: Result<GPIOChip, GPIOError>] = [:]
        for (user, chipName, line) in profile.gpioLines {
            if chips[chipName] == nil {
                do throws(GPIOError) {
                    let chip = try GPIOChip(chipName)
                    chips[chipName] = .success(chip)
                    findings.append(Finding(ok: true, text: "GPIO chip '\(chipName)': \(chip.kernelName) (\(chip.label)), \(chip.lineCount) lines"))
                } catch {
                    chips[chipName] = .failure(error)
                    findings.append(Finding(ok: false, text: "GPIO chip '\(chipName)': \(error.reason) (gpiodetect lists the chips)"))
                }
            }
            guard case .success(let chip) = chips[chipName] else {
                findings.append(Finding(ok: false, text: "\(user): \(line) on chip '\(chipName)': the chip is missing"))
                continue
            }
            do throws(GPIOError) {
                let offset: Int
                switch line {
                case .offset(let value):
                    try chip.checkLine(offset: value)
                    offset = value
                case .name(let name):
                    offset = try chip.lineOffset(named: name)
                }
                let info = chip.lineInfo(offset: offset)
                let named = info.name.map { " '\($0)'" } ?? ""
                if let holder = info.usedBy {
                    findings.append(Finding(ok: false, text: "\(user): line \(offset)\(named) on \(chip.kernelName) is in use by '\(holder)'"))
                } else {
                    findings.append(Finding(ok: true, text: "\(user): line \(offset)\(named) on \(chip.kernelName), free"))
                }
            } catch {
                findings.append(Finding(ok: false, text: "\(user): \(error) (gpioinfo \(chip.kernelName) lists its lines)"))
            }
        }
        return findings
    }

    static func serialPort(_ display: DaemonConfig.Display) -> Finding {
        do throws(SerialError) {
            let port = try SerialPort(BoardSetup.portSettings(display))
            port.close()
            return Finding(ok: true, text: "serial '\(display.port)': opens at \(display.baud) baud 8N1, flow control \(display.flowControl.rawValue) (\(display.driver.rawValue) display)")
        } catch {
            return Finding(ok: false, text: "\(error) (is the user in group dialout? is the serial console off?)")
        }
    }

    static func inputDevices(_ pattern: String) -> Finding {
        let paths = InputEventSource.paths(matching: pattern)
        guard !paths.isEmpty else {
            return Finding(ok: false, text: "input '\(pattern)': no device matches (ls /dev/input/by-id/)")
        }
        var found: [String] = []
        var problems: [String] = []
        for path in paths {
            if let problem = InputEventSource.openingProblem(path) {
                problems.append("\(path): \(problem)")
            } else {
                found.append(path)
            }
        }
        if !problems.isEmpty {
            return Finding(ok: false, text: "input '\(pattern)': \(problems.joined(separator: "; ")) (is the user in group input?)")
        }
        return Finding(ok: true, text: "input '\(pattern)': \(found.joined(separator: ", ")), readable")
    }
}
