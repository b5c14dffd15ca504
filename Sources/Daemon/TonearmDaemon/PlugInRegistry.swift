#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import TonearmControlPlane
import TonearmControlSocket
import TonearmMPD
import TonearmMPRIS
import TonearmNetwork
import TonearmPCMSessions
import TonearmWeb

/// Every client the daemon runs, built from the profile: adding one is a new module, a line
/// here and a section of the profile. Plug-ins that open something the daemon cannot do
/// without (the control socket, a required GPIO line) fail here, before anything starts.
public enum PlugInRegistry {
    /// `group` is the one event loop every socket is served on.
    public static func plugIns(for settings: DaemonSettings, group: any EventLoopGroup, log: PlugInLog) throws -> [any PlugIn] {
        var plugIns: [any PlugIn] = []
        plugIns.append(try ControlSocketPlugIn(path: settings.socketPath, group: group, log: log))
        if let path = settings.pcmSocketPath {
            plugIns.append(try PCMSessionsPlugIn(path: path, group: settings.profile.daemon.pcmGroup, log: log))
        }
        if settings.profile.mpd.isEnabled { plugIns.append(mpd(settings, group: group)) }
        let mpris = settings.profile.mpris
        let covers = settings.runtimeDirectory + "/covers-" + mpris.name
        let adapters = mpris.avrcpAdapters.map(Set.init)
        switch mpris.bus {
        case .session: plugIns.append(MPRISPlugIn(bus: .session, name: mpris.name, coverDirectory: covers, avrcpAdapters: adapters))
        case .system: plugIns.append(MPRISPlugIn(bus: .system, name: mpris.name, coverDirectory: covers, avrcpAdapters: adapters))
        case .off: break
        }
        for link in settings.profile.links {
            plugIns.append(MPRISLinkPlugIn(sessionName: link.session, busName: link.mpris, bus: link.bus == .session ? .session : .system))
        }
        let web = settings.profile.web
        if web.isEnabled {
            plugIns.append(WebPlugIn(bind: web.bind, port: web.port, token: web.token, allowedHosts: web.allowedHosts,
                                       maxClients: web.maxClients, group: group))
        }
        plugIns += try BoardSetup.plugIns(for: settings.profile)
        return plugIns
    }

    static func mpd(_ settings: DaemonSettings, group: any EventLoopGroup) -> MPDPlugIn {
        let profile = settings.profile.mpd
        var options = MPDServerOptions(host: profile.port == 0 ? nil : profile.bind, port: profile.port, socketPath: profile.socket)
        options.maxClients = profile.maxClients
        options.maxClientsPerAddress = profile.maxClientsPerAddress
        options.password = profile.password
        options.connectionTimeout = .milliseconds(Int64(profile.connectionTimeout * 1000))
        // Queue paths are canonical; MPD's URIs are relative to the music directory.
        let root = settings.musicDirectory.flatMap { directory -> String? in
            guard let resolved = realpath(directory, nil) else { return directory }
            defer { free(resolved) }
            return String(cString: resolved)
        }
        return MPDPlugIn(options: options, settings: MPDSettings(musicDirectory: root), group: group)
    }
}
