/// Key names as Linux spells them (`KEY_PLAYPAUSE`, `KEY_F1`, `BTN_LEFT`) and their codes, for
/// profiles and the config validator.
public enum InputKeyCodes {
    /// KEY_MAX: the highest code an input device can report.
    public static let maximumCode: UInt16 = 0x2FF

    /// Every name from `input-event-codes.h` (see `linuxKeyCodeTable`), with its code.
    public static let codesByName: [String: UInt16] = Dictionary(
        linuxKeyCodeTable.map { ($0.name, $0.code) }, uniquingKeysWith: { first, _ in first })

    /// The header's first name for each code (KEY_HANGEUL rather than its alias KEY_HANGUEL),
    /// passing over the names that mark where a range of buttons starts (BTN_GAMEPAD is
    /// BTN_SOUTH, BTN_MOUSE is BTN_LEFT).
    private static let namesByCode: [UInt16: String] = {
        let rangeMarkers: Set = ["BTN_MISC", "BTN_MOUSE", "BTN_JOYSTICK", "BTN_GAMEPAD", "BTN_DIGI", "BTN_WHEEL", "BTN_TRIGGER_HAPPY"]
        return Dictionary(
            linuxKeyCodeTable.filter { !rangeMarkers.contains($0.name) }.map { ($0.code, $0.name) },
            uniquingKeysWith: { first, _ in first })
    }()

    /// The code of `key`: a name from the header (exactly as it is spelled there) or a
    /// decimal code from 1 to 767 (for keys the header has no name for, or a vendor's oddity).
    public static func code(named key: String) throws(InputError) -> UInt16 {
        if let code = codesByName[key] { return code }
        if !key.isEmpty, key.allSatisfy(\.isASCII), key.allSatisfy(\.isNumber) {
            guard let code = UInt16(key), code >= 1, code <= maximumCode else {
                throw InputError(key: key, description: "key code \(key) in the input map is out of range (1–\(maximumCode))")
            }
            return code
        }
        var message = "unknown key '\(key)' in the input map"
        if let spelled = codesByName.keys.first(where: { $0 == key.uppercased() }) {
            message += "; did you mean '\(spelled)'?"
        } else {
            message += ": use a KEY_ or BTN_ name from linux/input-event-codes.h (KEY_PLAYPAUSE, KEY_NEXTSONG, "
                + "KEY_F1, KEY_A, BTN_LEFT…) or a decimal key code (evtest shows both)"
        }
        throw InputError(key: key, description: message)
    }

    /// The name of a code, for logs ("KEY_NEXTSONG"), or its number when the header has none.
    public static func name(of code: UInt16) -> String {
        namesByCode[code] ?? String(code)
    }
}
