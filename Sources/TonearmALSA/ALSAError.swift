import CALSA

/// An alsa-lib call that failed, with the device it was for.
public struct ALSAError: Error, CustomStringConvertible, Sendable {
    public var device: String
    public var operation: String
    public var code: Int32

    public init(device: String, operation: String, code: Int32) {
        self.device = device
        self.operation = operation
        self.code = code
    }

    public var description: String {
        "cannot \(operation) ALSA PCM '\(device)': \(String(cString: snd_strerror(code)))"
    }

    /// The error says the device is gone rather than misused.
    public var isDeviceGone: Bool {
        let errno = -code
        return errno == ENODEV || errno == EBADFD || errno == EIO || errno == ENXIO || errno == ESHUTDOWN
    }
}

/// Why no acceptable configuration exists, in words.
public struct ALSAConfigurationError: Error, CustomStringConvertible, Sendable {
    public var device: String
    public var reason: String
    public var description: String { "cannot configure ALSA PCM '\(device)': \(reason)" }
}
