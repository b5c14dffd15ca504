/// Why a request was refused. Nothing changed when one is thrown. The description is one line
/// that names the session, category, mode or option at fault.
public enum SessionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `options` (only those at fault) are not accepted by `category`.
    case optionsNotAccepted(SessionCategory, SessionOptions)
    /// `mode` cannot be used with `category`.
    case modeNotAccepted(SessionMode, SessionCategory)
    /// No open session has this id.
    case unknownSession(SessionID)
    /// `open` named an id that is already open.
    case sessionExists(SessionID)

    public var description: String {
        switch self {
        case .optionsNotAccepted(let category, let options):
            let names = options.names
            let noun = names.count == 1 ? "option" : "options"
            let acceptedBy = SessionCategory.allCases.filter {
                SessionPolicy.rules(for: $0).acceptedOptions.isSuperset(of: options)
            }
            return "category \(category) does not accept \(noun) \(names.joined(separator: ", "))"
                + " (accepted only by \(Self.list(acceptedBy.map(\.rawValue))))"
        case .modeNotAccepted(let mode, let category):
            let categories = SessionCategory.allCases.filter {
                SessionPolicy.categories(for: mode).contains($0)
            }
            return "mode \(mode) cannot be used with category \(category)"
                + " (only with \(Self.list(categories.map(\.rawValue))))"
        case .unknownSession(let id):
            return "no open session \(id)"
        case .sessionExists(let id):
            return "session \(id) is already open"
        }
    }

    /// "a", "a and b", "a, b and c".
    private static func list(_ words: [String]) -> String {
        guard words.count > 1 else { return words.first ?? "none" }
        return words.dropLast().joined(separator: ", ") + " and " + words[words.count - 1]
    }
}
