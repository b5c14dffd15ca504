import CALSA

/// A hardware volume control (an ALSA simple mixer element such as "PCM" or "Digital").
public final class MixerControl {
    public let card: String
    public let name: String
    private let mixer: OpaquePointer
    private let element: OpaquePointer
    private let range: (min: Int, max: Int)

    public init(card: String, name: String) throws(ALSAError) {
        self.card = card
        self.name = name
        silenceALSADiagnostics()
        var handle: OpaquePointer?
        func fail(_ op: String, _ rc: Int32) -> ALSAError { ALSAError(device: card, operation: op, code: rc, subject: "ALSA mixer") }
        var rc = snd_mixer_open(&handle, 0)
        guard rc == 0, let handle else { throw fail("open", rc) }
        rc = snd_mixer_attach(handle, card)
        if rc == 0 { rc = snd_mixer_selem_register(handle, nil, nil) }
        if rc == 0 { rc = snd_mixer_load(handle) }
        guard rc == 0 else {
            snd_mixer_close(handle)
            throw fail("load", rc)
        }
        var id: OpaquePointer?
        snd_mixer_selem_id_malloc(&id)
        defer { snd_mixer_selem_id_free(id) }
        snd_mixer_selem_id_set_index(id, 0)
        snd_mixer_selem_id_set_name(id, name)
        guard let elem = snd_mixer_find_selem(handle, id), snd_mixer_selem_has_playback_volume(elem) != 0 else {
            snd_mixer_close(handle)
            throw ALSAError(device: card, operation: "find playback volume control '\(name)' on", code: -ENOENT, subject: "ALSA mixer")
        }
        var low = 0, high = 0
        snd_mixer_selem_get_playback_volume_range(elem, &low, &high)
        mixer = handle
        element = elem
        range = (low, high)
    }

    deinit { snd_mixer_close(mixer) }

    /// Sets every channel to `percent` (0...100) of the control's range.
    public func setVolume(percent: Double) throws(ALSAError) {
        let p = max(0, min(100, percent))
        let value = range.min + Int((Double(range.max - range.min) * p / 100).rounded())
        let rc = snd_mixer_selem_set_playback_volume_all(element, value)
        if rc < 0 { throw ALSAError(device: card, operation: "set '\(name)' volume on", code: rc, subject: "ALSA mixer") }
    }
}
