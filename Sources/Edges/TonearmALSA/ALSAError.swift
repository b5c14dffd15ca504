import CALSA

/// An alsa-lib call that failed, with the device it was for.
public struct ALSAError: Error, CustomStringConvertible, Sendable {
    public var device: String
    public var operation: String
    public var code: Int32
    /// What `device` names: "ALSA PCM" or "ALSA mixer".
    public var subject: String

    public init(device: String, operation: String, code: Int32, subject: String = "ALSA PCM") {
        self.device = device
        self.operation = operation
        self.code = code
        self.subject = subject
    }

    public var description: String {
        "cannot \(operation) \(subject) '\(device)': \(reason)"
    }

    /// alsa-lib's words for `code` ("No such device").
    public var reason: String { String(cString: snd_strerror(code)) }

    /// The error says the device is gone rather than misused.
    public var isDeviceGone: Bool {
        let errno = -code
        return errno == ENODEV || errno == EBADFD || errno == EIO || errno == ENXIO || errno == ESHUTDOWN
    }
}

/// alsa-lib prints its own diagnostics to stderr; Tonearm reports each failure in one line of
/// its own, so they are silenced on every thread that calls into ALSA (the handler is
/// per-thread). Set TONEARM_ALSA_DEBUG to keep them.
func silenceALSADiagnostics() {
    guard getenv("TONEARM_ALSA_DEBUG") == nil else { return }
    tonearm_alsa_silence_thread()
}
