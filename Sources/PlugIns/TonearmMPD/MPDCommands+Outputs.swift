import TonearmControlPlane

extension MPDCommands {
    /// Audio outputs: output 0 is the player's device; there is no other. Off, it is closed
    /// for other programs to use.
    enum OutputCommands {
        static func outputs(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let output = await mpd.plane.snapshot().output
            return "outputid: 0\noutputname: \(output.device)\nplugin: alsa\noutputenabled: \(output.enabled ? 1 : 0)\n"
        }

        /// `enableoutput 0`, `disableoutput 0` and `toggleoutput 0`.
        static func switchOutput(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            let text = call.arguments[0]
            guard let id = Int(text) else { throw .argument("Integer expected: \(text)") }
            guard id == 0 else { throw MPDError(.noExist, "No such audio output") }
            let on = call.name == "toggleoutput" ? !(await mpd.plane.snapshot().output.enabled) : call.name == "enableoutput"
            return try await mpd.send(.output(enabled: on))
        }
    }
}
