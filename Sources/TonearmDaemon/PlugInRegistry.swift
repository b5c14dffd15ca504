import NIOCore
import TonearmControlPlane
import TonearmControlSocket

/// Every client the daemon runs, built from the profile: adding one is a new module, a line
/// here and a section of the profile. Plug-ins that open something the daemon cannot do
/// without (the control socket, a required GPIO line) fail here, before anything starts.
public enum PlugInRegistry {
    /// `group` is the one event loop every socket is served on.
    public static func plugIns(for settings: DaemonSettings, group: any EventLoopGroup, log: PlugInLog) throws -> [any PlugIn] {
        var plugIns: [any PlugIn] = []
        plugIns.append(try ControlSocketPlugIn(path: settings.socketPath, group: group, log: log))
        plugIns += try BoardSetup.plugIns(for: settings.profile)
        return plugIns
    }
}
