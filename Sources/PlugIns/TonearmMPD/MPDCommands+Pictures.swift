import TonearmControlPlane

extension MPDCommands {
    /// Cover art a chunk at a time: `albumart` and `readpicture`.
    enum PictureCommands {
        /// `albumart URI OFFSET` (the cover file beside the song) and `readpicture URI OFFSET`
        /// (the song's own picture): a chunk from OFFSET, at most the client's `binarylimit`.
        static func picture(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> String {
            // The answer is bytes, not text: it goes to `out` as it is.
            call.out.append(try await chunk(mpd, call))
            return ""
        }

        private static func chunk(_ mpd: isolated MPDCommands, _ call: Call) async throws(MPDError) -> [UInt8] {
            let args = call.arguments
            guard let offset = Int(args[1]), offset >= 0 else { throw .argument("Number expected: \(args[1])") }
            let path = try mpd.absolute(args[0])
            let embedded = call.name == "readpicture"
            guard let picture = try await mpd.picture(PictureCache.Key(path: path, embedded: embedded), reread: offset == 0) else {
                // None: albumart says so, readpicture answers nothing (as MPD).
                if embedded { return [] }
                throw MPDError(.noExist, "No file exists")
            }
            guard offset <= picture.bytes.count else { throw .argument("Offset too large") }
            let chunk = picture.bytes[offset..<min(picture.bytes.count, offset + call.client.binaryLimit)]
            var out = Array("size: \(picture.bytes.count)\n".utf8)
            if embedded, !picture.mimeType.isEmpty { out += Array("type: \(picture.mimeType)\n".utf8) }
            out += Array("binary: \(chunk.count)\n".utf8) + chunk + [0x0A]
            return out
        }
    }

    /// A picture from the cache, else read (once, however many clients ask meanwhile). A
    /// client's first chunk reads it again (`reread`): a cover changed on disk shows.
    func picture(_ key: PictureCache.Key, reread: Bool) async throws(MPDError) -> PictureCache.Picture? {
        if !reread, let cached = pictures[key] { return cached }
        // Given up before it is read again: the old bytes and the new are never both held.
        if reread, picturesLoading[key] == nil { pictures.forget(key) }
        let loading: Task<Result<PictureCache.Picture?, MPDError>, Never>
        if let running = picturesLoading[key] {
            loading = running
        } else {
            // One picture read at a time: a read holds a large picture twice while it is
            // decoded, and two at once, with the cache full, would pass the memory budget.
            let plane = plane, source = source, previous = lastPictureRead
            loading = Task {
                _ = await previous?.value
                let result = await plane.send(.picture(path: key.path, embedded: key.embedded), from: source)
                if let failure = result.failure { return .failure(MPDError(Self.code(failure), failure.message)) }
                guard case .artwork(_, let mimeType, let bytes) = result.payload else { return .success(nil) }
                return .success(PictureCache.Picture(mimeType: mimeType, bytes: bytes))
            }
            picturesLoading[key] = loading
            lastPictureRead = loading
        }
        let result = await loading.value
        if picturesLoading[key] == loading {
            picturesLoading[key] = nil
            if case .success(let picture?) = result { pictures.keep(picture, for: key) }
        }
        return try result.get()
    }
}
