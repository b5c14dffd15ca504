import Synchronization
import TonearmBoard
import TonearmControlPlane
import TonearmSystem

/// Keys of a remote, a keyboard or a steering-wheel adapter, read as Linux input events and
/// sent as commands: one `[[input]]` of a profile, as a plug-in of the control plane.
///
/// `path` is a device (`/dev/input/event3`), a FIFO carrying the same records, or a glob(3)
/// pattern (`/dev/input/by-id/*-event-kbd`). A pattern is read on every device it matches:
/// one USB remote or keyboard often shows up as several event devices (its media keys on a
/// second "consumer control" interface), and reading only the first would lose those keys.
///
/// Devices come and go: one missing at start, or one that goes away (unplugged, ENODEV, a
/// FIFO whose writer closed it), is logged once and tried again every `retryInterval`
/// seconds, a pattern being expanded again each time, so new matches are picked up too. A
/// scan (fast-forward, rewind) held when its device goes is ended. Nothing here stops the
/// daemon.
///
/// `run` starts the "tonearm-input" thread, which reads the devices and hands their commands,
/// in order, to the control plane, each from "input PATH" (the device's path); cancelled, it
/// wakes and joins the thread, and the devices are closed.
public final class InputEventSource: PlugIn {
    /// "input /dev/input/event3".
    public let name: String
    public let path: String
    public let keyMap: InputKeyMap
    /// Seconds between attempts to open a device that is missing or went away.
    public let retryInterval: Double
    /// Each device is taken for this source alone (EVIOCGRAB) when opened.
    public let grab: Bool

    public init(path: String, keyMap: InputKeyMap = InputKeyMap(), retryInterval: Double = 0.5, grab: Bool = false) {
        self.name = "input \(path)"
        self.path = path
        self.keyMap = keyMap
        self.retryInterval = retryInterval
        self.grab = grab
    }

    /// A profile's `[[input]]`: its `path` and its `map` of key names or decimal codes to
    /// commands, over the default media keys (see `InputKeyMap.init(profile:)`); and `grab`.
    public convenience init(path: String, map: [String: Command], retryInterval: Double = 0.5, grab: Bool = false) throws(InputError) {
        self.init(path: path, keyMap: try InputKeyMap(profile: map), retryInterval: retryInterval, grab: grab)
    }

    public func run(_ plane: any ControlPlane, log: PlugInLog) async throws {
        let forwarder = CommandForwarder()
        let devices = DevicePoll()
        if let failure = devices.failure {
            log.warning("\(name): no wake-up pipe (\(failure)); stopping may take 100 ms")
        }
        let reader = InputDeviceLoop(
            pattern: path, keyMap: keyMap, retryInterval: retryInterval, grab: grab, devices: devices,
            send: forwarder.send, log: log)
        let loop = DeviceLoop(name: "tonearm-input", wake: devices.wake) { isStopping in reader.run(isStopping: isStopping) }
        // Until cancelled: the daemon stops.
        await forwarder.forward(to: plane, log: log)
        loop.stop()
    }
}
