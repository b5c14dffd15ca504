// A configuration file may start from a board profile: `profile = "generic"` at its top reads
// /usr/share/tonearm/boards/generic.toml first, and the file's own keys win over it, key by key
// and table by table. That lets a package ship the profiles and keep the administrator's
// changes, a few lines, in /etc.

/// The profile a configuration file names, and how the two documents become one.
struct ProfileOverlay {
    /// The top-level key that names the profile.
    static let key = "profile"

    /// The profile's path: a bare name ("generic") is a file in `directory`; an absolute path is
    /// taken as is; any other path is relative to the folder of the file that names it.
    static func path(of reference: String, namedBy fileName: String?, directory: String) -> String {
        if reference.hasPrefix("/") { return reference }
        if !reference.contains("/") && !reference.hasSuffix(".toml") {
            return "\(directory)/\(reference).toml"
        }
        guard let fileName, let slash = fileName.lastIndex(of: "/") else { return reference }
        return "\(fileName[...slash])\(reference)"
    }

    let profileFile: String
    let profile: TOMLTable
    let overlay: TOMLTable
    let overlayFile: String?

    /// Reads the profile `document` names, if it names one; nil when it names none.
    init?(document: TOMLTable, fileName: String?, directory: String) throws(ConfigError) {
        guard let value = document[Self.key] else { return nil }
        let line = document.line(of: Self.key)
        guard let reference = value.string, !reference.isEmpty, !reference.utf8.contains(0) else {
            throw ConfigError(
                kind: value.string == nil ? .wrongType : .invalidValue,
                message: "profile must be a profile's name or a path to one", key: Self.key, fileName: fileName, line: line)
        }
        let path = Self.path(of: reference, namedBy: fileName, directory: directory)
        let named = fileName.map { "named by \($0)" } ?? "named"
        let profile: TOMLTable
        do {
            profile = try TOMLTable.load(path: path)
        } catch {
            if error.kind == .unreadableFile {
                // "cannot read profile /usr/share/tonearm/boards/x.toml (named by
                // /etc/tonearm/tonearm.toml): No such file or directory"
                let prefix = "cannot read \(path): "
                let reason = error.message.hasPrefix(prefix) ? String(error.message.dropFirst(prefix.count)) : error.message
                throw ConfigError(
                    kind: .unreadable, message: "cannot read profile \(path) (\(named)): \(reason)",
                    key: Self.key, fileName: fileName, line: line)
            }
            throw ConfigError(error)
        }
        if let chained = profile[Self.key] {
            // One level: a profile is a complete board description, not another overlay.
            let target = chained.string.map { " ('\($0)')" } ?? ""
            throw ConfigError(
                kind: .invalidValue,
                message: "the profile \(path) (\(named)) names a profile itself\(target); a profile cannot name another",
                key: Self.key, fileName: path, line: profile.line(of: Self.key))
        }
        self.profileFile = path
        self.profile = profile
        self.overlay = document
        self.overlayFile = fileName
    }

    /// The profile with the overlay's keys written over it, without the `profile` key.
    var document: TOMLTable {
        var overlay = TOMLTable(line: self.overlay.line)
        for key in self.overlay.keys where key != Self.key {
            overlay.append(key, self.overlay[key]!, line: self.overlay.line(of: key)!)
        }
        return Self.merge(overlay, over: profile)
    }

    /// Tables meet key by key; anything else, arrays of tables included, is replaced whole.
    private static func merge(_ overlay: TOMLTable, over base: TOMLTable) -> TOMLTable {
        var merged = TOMLTable(line: overlay.line > 0 ? overlay.line : base.line)
        for key in base.keys {
            guard let value = overlay[key] else {
                merged.append(key, base[key]!, line: base.line(of: key)!)
                continue
            }
            if let table = value.table, let baseTable = base[key]?.table {
                merged.append(key, .table(merge(table, over: baseTable)), line: overlay.line(of: key)!)
            } else {
                merged.append(key, value, line: overlay.line(of: key)!)
            }
        }
        for key in overlay.keys where base[key] == nil {
            merged.append(key, overlay[key]!, line: overlay.line(of: key)!)
        }
        return merged
    }

    /// The file a key of the merged document came from ("output.period_frames",
    /// "button[2].line"), so that an error's line is read in the right file. A key neither
    /// file wrote belongs to the file whose table the error points at.
    func file(of key: String) -> String? {
        var overlay: TOMLTable? = self.overlay
        var base: TOMLTable? = profile
        for component in key.split(separator: ".") {
            let name = String(component.prefix { $0 != "[" })
            let fromOverlay = overlay?[name]
            let fromBase = base?[name]
            guard let fromOverlay else {
                return fromBase != nil ? profileFile : overlayFile
            }
            guard let table = fromOverlay.table else { return overlayFile }
            overlay = table
            base = fromBase?.table
        }
        return overlayFile
    }
}
