import TonearmControlPlane
import TonearmDBus
import TonearmSystem

/// A bus connection kept up: `attempt` connects and serves until it returns; after a D-Bus
/// failure it is tried again, 1 s later, doubling up to 30 s. A failure is a warning the first
/// time, the same one again only in the debug log.
enum BusRetry {
    static func keep(_ label: String, log: PlugInLog, isStopped: () -> Bool, sleep: (Double) -> Void,
                     describe: (DBusError) -> String = { "\($0)" }, failed: () -> Void = {},
                     _ attempt: (_ connected: () -> Void) throws(DBusError) -> Void) {
        var delay = 1.0
        var lastFailure = ""
        while !isStopped() {
            do throws(DBusError) {
                try attempt {
                    delay = 1
                    lastFailure = ""
                }
                return
            } catch {
                failed()
                let failure = describe(error)
                log(failure == lastFailure ? .debug : .warning, "\(label): \(failure); trying again in \(Int(delay)) s")
                lastFailure = failure
                sleep(delay)
                delay = min(delay * 2, 30)
            }
        }
    }
}
