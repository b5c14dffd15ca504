/// MPD's request lines: a command name and its arguments, separated by blanks; an argument in
/// double quotes may hold blanks, and in it a backslash takes the next character as it is.
enum MPDTokens {
    /// The words of `line` (UTF-8; a byte that is not becomes U+FFFD). A quoted argument must be
    /// closed, and followed by a blank or the end. A NUL byte is refused: MPD reads a line as a
    /// C string, so a NUL would silently cut an argument short.
    static func split(_ line: [UInt8]) throws(MPDError) -> [String] {
        guard !line.contains(0) else { throw .argument("a request may not hold a NUL byte") }
        var words: [String] = []
        var index = 0
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        while index < line.count {
            while index < line.count, isBlank(line[index]) { index += 1 }
            guard index < line.count else { break }
            var word: [UInt8] = []
            if line[index] == UInt8(ascii: "\"") {
                index += 1
                var closed = false
                while index < line.count {
                    let byte = line[index]
                    if byte == UInt8(ascii: "\\"), index + 1 < line.count {
                        word.append(line[index + 1])
                        index += 2
                    } else if byte == UInt8(ascii: "\"") {
                        index += 1
                        closed = true
                        break
                    } else {
                        word.append(byte)
                        index += 1
                    }
                }
                guard closed else { throw .argument("missing closing '\"'") }
                guard index >= line.count || isBlank(line[index]) else { throw .argument("space expected after closing '\"'") }
            } else {
                while index < line.count, !isBlank(line[index]) {
                    word.append(line[index])
                    index += 1
                }
            }
            words.append(String(decoding: word, as: UTF8.self))
        }
        return words
    }

    /// `text` as one argument: in double quotes, with `"` and `\` escaped.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for character in text {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        out.append("\"")
        return out
    }
}
