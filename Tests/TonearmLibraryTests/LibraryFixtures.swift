import Foundation
import TestSupport
import TonearmLibrary

/// A tiny, valid baseline JPEG: one grey component, every 8×8 block mid-grey, so each block
/// codes as "DC difference 0, end of block" with one-symbol Huffman tables. `extraSegments`
/// go before the frame header (APPn, COM), as cameras put Exif there.
enum TinyJPEG {
    static func make(width: Int, height: Int, extraSegments: [[UInt8]] = [], progressive: Bool = false) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        out += segment(0xE0, Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0])
        for extra in extraSegments { out += extra }
        out += segment(0xDB, [0x00] + [UInt8](repeating: 1, count: 64))
        let sof: UInt8 = progressive ? 0xC2 : 0xC0
        out += segment(sof, [8, UInt8(height >> 8), UInt8(height & 0xFF), UInt8(width >> 8), UInt8(width & 0xFF),
                             1, 1, 0x11, 0])
        let oneCodeOfLengthOne = [1] + [UInt8](repeating: 0, count: 15)
        out += segment(0xC4, [0x00] + oneCodeOfLengthOne + [0x00])  // DC table 0: symbol 0 ("0")
        out += segment(0xC4, [0x10] + oneCodeOfLengthOne + [0x00])  // AC table 0: EOB ("0")
        out += segment(0xDA, [1, 1, 0x00, 0, 63, 0])
        let blocks = ((width + 7) / 8) * ((height + 7) / 8)
        let bits = blocks * 2
        var data = [UInt8](repeating: 0, count: (bits + 7) / 8)
        if bits % 8 != 0 { data[data.count - 1] = 0xFF >> (bits % 8) }  // pad with 1 bits
        out += data
        out += [0xFF, 0xD9]
        return out
    }

    static func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let length = payload.count + 2
        return [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }
}

/// Writes short mono FLAC files with libFLAC, fast enough for trees of dozens.
enum Tracks {
    static let samples: [Int32] = FLACFixture(frames: 4410, sampleRate: 44100, channels: 1).samples()

    static func write(_ path: String, tags: [(String, String)] = [], pictures: [LibFLACEncoder.Picture] = []) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try LibFLACEncoder.write(samples, to: path, sampleRate: 44100, channels: 1, bits: 16, tags: tags, pictures: pictures)
    }

    static func png(_ width: Int, _ height: Int, type: Int = 3, blockSize: Bool = true) -> LibFLACEncoder.Picture {
        LibFLACEncoder.Picture(type: type, mimeType: "image/png", width: blockSize ? width : 0,
                               height: blockSize ? height : 0, data: TinyPNG.make(width: width, height: height))
    }
}

func writeBytes(_ bytes: [UInt8], to path: String) throws {
    try FileManager.default.createDirectory(
        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

func readBytes(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { [UInt8]($0) }
}

func symlink(_ path: String, to target: String) throws {
    try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
}

/// The canonical path (the temporary directory may itself sit behind a link).
func canonical(_ path: String) -> String {
    URL(fileURLWithPath: path).resolvingSymlinksInPath().path
}

/// The file names (last components) of scanned tracks, for readable assertions.
func names(_ tracks: [LibraryTrack]) -> [String] {
    tracks.map { ($0.path as NSString).lastPathComponent }
}

/// Runs `body`, which must throw a `LibraryError`, and returns it.
func libraryError<T>(_ body: () throws(LibraryError) -> T) -> LibraryError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}
