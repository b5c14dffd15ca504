import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TestSupport
import TonearmDecoding
import XCTest

/// Bad input for every decoder plug-in: real files in each format, made by Debian's encoders,
/// corrupted in seeded ways (bytes flipped, cut, repeated, sizes that lie, garbage, a huge
/// ID3v2 tag in front). Each mutated file must end in music or in one clear `DecodeError` —
/// never a crash, a hang, a runaway decode or an allocation of a size the file claims.
///
/// The matrix runs once (the first test to ask for it) and both tests read it. A format no
/// plug-in in `Decoders.all` plays yet is listed as skipped in the printed summary.
///
/// A failure names the format, the seed and the mutation, and copies the mutated file to
/// `/tmp/tonearm-fuzz-failures/`. If the process dies of a signal while decoding, the case
/// being decoded is written to standard error first, and its file stays in the test's
/// directory under /tmp.
final class DecoderFuzzTests: XCTestCase {
    private static let matrix = FuzzMatrix.run()

    func testEveryMutatedFileEndsInMusicOrOneClearError() throws {
        let matrix = Self.matrix
        if let missing = matrix.missingSignalTool { throw XCTSkip(missing) }
        if let error = matrix.setupError { return XCTFail(error) }
        guard matrix.runs.contains(where: { $0.skipped == nil }) else {
            throw XCTSkip("no format could be fuzzed:\n" + matrix.summary)
        }
        for run in matrix.runs {
            for defect in run.defects { XCTFail(defect) }
        }
    }

    /// A fuzz whose mutations only ever meet "unrecognised" tests nothing: in every format a
    /// plug-in plays, some mutated files must still play to the end and some must fail.
    func testMutationsReachMusicAndErrorsInEveryPlayedFormat() throws {
        let matrix = Self.matrix
        if let missing = matrix.missingSignalTool { throw XCTSkip(missing) }
        if let error = matrix.setupError { return XCTFail(error) }
        print(matrix.summary)
        let fuzzed = matrix.runs.filter { $0.skipped == nil }
        guard !fuzzed.isEmpty else { throw XCTSkip("no format could be fuzzed:\n" + matrix.summary) }
        for run in fuzzed {
            XCTAssertGreaterThan(run.music, 0, "\(run.format): no mutated file played to its end")
            XCTAssertGreaterThan(run.openErrors + run.decodeErrors, 0, "\(run.format): no mutated file failed")
        }
    }
}

// MARK: The matrix

/// Every format's fixture, each mutated `mutationsPerFormat` times, and what became of them.
private struct FuzzMatrix: Sendable {
    static let fixtureFrames = 88200
    /// 17 of each mutation per format, 34 lying sizes: the whole matrix takes seconds in a
    /// debug build. `TONEARM_FUZZ_ROUNDS=n` runs n times as many, with further seeds, for a
    /// deeper search by hand.
    static let mutationsPerFormat = 17 * Mutation.schedule.count * rounds
    static let rounds = ProcessInfo.processInfo.environment["TONEARM_FUZZ_ROUNDS"].flatMap { Int($0) }.map { min(max($0, 1), 5000) } ?? 1
    /// A decode of one mutated file (metadata, decode, seek) that takes longer has hung.
    static let deadline = 10.0
    /// A decoder that returns more blocks than this from one file loops.
    static let maximumBlocks = 50_000
    static let failureDirectory = "/tmp/tonearm-fuzz-failures"

    var runs: [FormatRun] = []
    var setupError: String?
    /// Why no fixture could be made at all: the tool that writes the signal is missing.
    var missingSignalTool: String?
    var seconds = 0.0

    struct FormatRun: Sendable {
        var format: EncodedFixtures.Format
        var skipped: String?
        var music = 0
        var openErrors = 0
        var decodeErrors = 0
        var defects: [String] = []
        var seconds = 0.0
        var residentGrowthKB = 0
        var virtualGrowthKB = 0
    }

    var summary: String {
        var lines = ["decoder fuzz: \(Self.mutationsPerFormat) mutations per format, \(String(format: "%.1f", seconds)) s in all"]
        for run in runs {
            let name = run.format.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0)
            if let skipped = run.skipped {
                lines.append("  \(name) skipped: \(skipped)")
            } else {
                lines.append("  \(name) music \(run.music), errors \(run.openErrors + run.decodeErrors) "
                    + "(\(run.openErrors) at open, \(run.decodeErrors) while decoding), defects \(run.defects.count), "
                    + String(format: "%.1f s", run.seconds)
                    + ", peak RSS +\(run.residentGrowthKB / 1024) MB, peak VM +\(run.virtualGrowthKB / 1024) MB")
            }
        }
        return lines.joined(separator: "\n")
    }

    static func run() -> FuzzMatrix {
        var matrix = FuzzMatrix()
        let started = monotonicSeconds()
        let directory: TemporaryDirectory
        let wav: String
        do {
            directory = try TemporaryDirectory(prefix: "tonearm-fuzz")
            wav = try EncodedFixtures.signalWAV(frames: fixtureFrames, to: directory.file("signal.wav"))
        } catch let missing as EncodedFixtures.MissingEncoder {
            matrix.missingSignalTool = missing.description
            return matrix
        } catch {
            matrix.setupError = "cannot make the fuzz's signal: \(error)"
            return matrix
        }
        let thread = DecodeThread()
        CrashNote.install()
        defer { CrashNote.uninstall() }
        for (index, format) in EncodedFixtures.Format.allCases.enumerated() {
            var run = FormatRun(format: format)
            do {
                let file = try EncodedFixtures.encode(wav, as: format, in: directory.path)
                run = fuzz(file, format: format, seedBase: UInt64(index + 1) * 1_000_000, in: directory, on: thread)
            } catch let missing as EncodedFixtures.MissingEncoder {
                run.skipped = missing.description
            } catch {
                matrix.setupError = "cannot make the \(format) fixture: \(error)"
                return matrix
            }
            matrix.runs.append(run)
        }
        matrix.seconds = monotonicSeconds() - started
        return matrix
    }

    /// Mutates `file` and decodes each mutation on `thread`.
    private static func fuzz(_ file: String, format: EncodedFixtures.Format, seedBase: UInt64, in directory: TemporaryDirectory,
                             on thread: DecodeThread) -> FormatRun {
        var run = FormatRun(format: format)
        let started = monotonicSeconds()
        // The unmutated file: whether a plug-in plays it, and how long it is. This first decode
        // also lets the thread's allocator settle before memory is measured.
        CrashNote.set("tonearm fuzz: the process died decoding the unmutated \(format) file \(file)\n")
        guard let original = thread.run(deadline: deadline, { probe(file) }) else {
            hung(format: format, seed: nil, mutation: "unmutated file", file: file, stage: "")
        }
        let originalFrames: (frames: Int, sampleRate: Int)
        switch original {
        case .failure(let error) where error.reason == .unrecognised:
            run.skipped = "no plug-in in Decoders.all plays .\(format.suffix) files (\(error))"
            return run
        case .failure(let error):
            run.defects.append("\(format): the unmutated file does not play: \(error)")
            return run
        case .success(let decoded):
            originalFrames = decoded
        }
        let bytes = [UInt8](FileManager.default.contents(atPath: file)!)
        let limits = Limits(frames: 4 * originalFrames.frames + originalFrames.sampleRate, blocks: maximumBlocks,
                            originalFrames: originalFrames.frames)
        let memoryBefore = ProcessMemory.read()
        let casePath = directory.file("\(format.rawValue)-case.\(format.suffix)")
        for i in 0..<mutationsPerFormat {
            let seed = seedBase + UInt64(i)
            let mutation = Mutation.schedule[i % Mutation.schedule.count]
            var random = SeededRandom(seed: seed)
            let (mutated, detail) = mutation.apply(to: bytes, random: &random)
            _ = FileManager.default.createFile(atPath: casePath, contents: Data(mutated))
            let label = "\(format) seed \(seed), \(mutation.rawValue) (\(detail))"
            CrashNote.set("tonearm fuzz: the process died decoding \(label); the file is \(casePath)\n")
            let seekSeed = random.next()
            let progress = DecodeStage()
            let memoryBeforeCase = ProcessMemory.read()
            guard let outcome = thread.run(deadline: deadline, { exercise(casePath, limits: limits, seekSeed: seekSeed, progress: progress) }) else {
                hung(format: format, seed: seed, mutation: "\(mutation.rawValue) (\(detail))", file: casePath, stage: progress.stage)
            }
            switch outcome.ending {
            case .music: run.music += 1
            case .openError: run.openErrors += 1
            case .decodeError: run.decodeErrors += 1
            }
            var defects = outcome.defects
            defects += ProcessMemory.read().growth(since: memoryBeforeCase)
            if !defects.isEmpty {
                let kept = keep(casePath, as: "\(format.rawValue)-seed\(seed)-\(mutation).\(format.suffix)")
                run.defects.append("\(label): " + defects.joined(separator: "; ") + "; \(kept)")
            }
        }
        let memoryAfter = ProcessMemory.read()
        run.residentGrowthKB = memoryAfter.peakResidentKB - memoryBefore.peakResidentKB
        run.virtualGrowthKB = memoryAfter.peakVirtualKB - memoryBefore.peakVirtualKB
        run.seconds = monotonicSeconds() - started
        return run
    }

    /// Copies a failing case where it outlives the test; says where.
    private static func keep(_ path: String, as name: String) -> String {
        let target = failureDirectory + "/" + name
        try? FileManager.default.createDirectory(atPath: failureDirectory, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: target)
        do {
            try FileManager.default.copyItem(atPath: path, toPath: target)
            return "the file is kept as \(target)"
        } catch {
            return "the file could not be kept: \(error)"
        }
    }

    /// A decode that does not return cannot be stopped: Swift has no way to end a thread stuck
    /// in a C library, and waiting for it would leave CI waiting, without a word, until its
    /// own timeout. So the failure is recorded and printed, and the test process ends here.
    private static func hung(format: EncodedFixtures.Format, seed: UInt64?, mutation: String, file: String, stage: String) -> Never {
        let kept = keep(file, as: "\(format.rawValue)-seed\(seed.map(String.init) ?? "none")-hang.\(format.suffix)")
        let message = "tonearm fuzz: \(format) seed \(seed.map(String.init) ?? "-"), \(mutation): the decode did not end within "
            + "\(Int(deadline)) s (\(stage)); \(kept). Ending the test process: the stuck thread cannot be stopped."
        XCTFail(message)
        fflush(nil)
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(EXIT_FAILURE)
    }
}

// MARK: One file

private struct Limits: Sendable {
    var frames: Int
    var blocks: Int
    var originalFrames: Int
}

private struct Outcome: Sendable {
    enum Ending: Sendable { case music, openError, decodeError }
    var ending: Ending
    var defects: [String] = []
}

/// What the decode thread is doing, for the message when it hangs.
private final class DecodeStage: @unchecked Sendable {
    private let lock = NSLock()
    private var text = "not started"
    var stage: String {
        get { lock.withLock { text } }
        set { lock.withLock { text = newValue } }
    }
}

/// Opens and decodes an unmutated file to its end: its length in frames and its rate.
private func probe(_ path: String) -> Result<(frames: Int, sampleRate: Int), DecodeError> {
    do {
        let decoder = try Decoders.open(path: path)
        var frames = 0
        while let block = try decoder.nextBlock() { frames += block.count / max(1, decoder.info.format.channels) }
        return .success((frames, decoder.info.format.sampleRate))
    } catch {
        return .failure(error)
    }
}

/// The metadata read, a decode to the end, and a seek then a few blocks, as the library scan
/// and the player would do them.
private func exercise(_ path: String, limits: Limits, seekSeed: UInt64, progress: DecodeStage) -> Outcome {
    var defects: [String] = []
    func check(_ error: DecodeError, _ stage: String) {
        let text = error.description
        if !text.hasPrefix(path + ": ") || text.contains(where: { $0.isNewline }) {
            defects.append("\(stage) threw an error that is not one line starting with the path: \(text.debugDescription)")
        }
    }

    progress.stage = "reading the metadata"
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd < 0 {
        defects.append("cannot open the mutated file: \(String(cString: strerror(errno)))")
    } else {
        do { _ = try Decoders.metadata(fd: fd, path: path) } catch { check(error, "metadata") }
    }

    progress.stage = "opening"
    let decoder: any AudioDecoder
    do {
        decoder = try Decoders.open(path: path)
    } catch {
        check(error, "open")
        return Outcome(ending: .openError, defects: defects)
    }
    var frames = 0
    var blocks = 0
    var ending = Outcome.Ending.decodeError
    do {
        while true {
            progress.stage = "decoding, after \(frames) frames in \(blocks) blocks"
            guard let block = try decoder.nextBlock() else {
                ending = .music
                break
            }
            let channels = decoder.info.format.channels
            blocks += 1
            if channels <= 0 || block.count % channels != 0 {
                defects.append("a block of \(block.count) samples is not whole frames of \(channels) channels")
                break
            }
            frames += block.count / channels
            if frames > limits.frames {
                defects.append("runaway: more than \(limits.frames) frames decoded (the file had \(limits.originalFrames))")
                break
            }
            if blocks > limits.blocks {
                defects.append("runaway: more than \(limits.blocks) blocks returned (\(frames) frames)")
                break
            }
        }
    } catch {
        check(error, "nextBlock")
    }

    // A fresh decoder, as a player's seek would find it: to a frame within the music, or to
    // one the header claims.
    progress.stage = "opening to seek"
    guard let seeking = try? Decoders.open(path: path) else {
        defects.append("the file opened once, then not again")
        return Outcome(ending: ending, defects: defects)
    }
    var random = SeededRandom(seed: seekSeed)
    let claimed = seeking.info.totalFrames ?? limits.originalFrames
    let target = random.next() % 5 == 0 ? max(0, claimed - Int(random.next() % 2)) : Int(random.next() % UInt64(limits.originalFrames + 1))
    do {
        progress.stage = "seeking to frame \(target)"
        try seeking.seek(toFrame: target)
        var sought = 0
        for n in 0..<8 {
            progress.stage = "decoding block \(n) after a seek to frame \(target)"
            guard let block = try seeking.nextBlock() else { break }
            sought += block.count / max(1, seeking.info.format.channels)
            if sought > limits.frames {
                defects.append("runaway: a block after a seek to frame \(target) holds more than \(limits.frames) frames")
                break
            }
        }
    } catch {
        check(error, "seek to frame \(target)")
    }
    return Outcome(ending: ending, defects: defects)
}

// MARK: Mutations

private enum Mutation: String, CaseIterable, Sendable {
    case flipBytes = "flip bytes"
    case flipHeaderBytes = "flip bytes in the first 4 KB"
    case truncate = "truncate"
    case cutRange = "cut a range out"
    case repeatRange = "repeat a range"
    case lyingSize = "a 4-byte field that lies"
    case appendGarbage = "append garbage"
    case hugeID3v2 = "prepend a huge ID3v2 tag"

    /// The order mutations take turns in: a lying size twice, as the one that must find the
    /// right 4 bytes among many.
    static let schedule = allCases + [.lyingSize]

    /// The mutated bytes, and what exactly was done.
    func apply(to original: [UInt8], random: inout SeededRandom) -> (bytes: [UInt8], detail: String) {
        var bytes = original
        let n = bytes.count
        switch self {
        case .flipBytes, .flipHeaderBytes:
            let span = self == .flipBytes ? n : min(n, 4096)
            var offsets: [Int] = []
            for _ in 0..<(1 + random.below(16)) {
                let at = random.below(span)
                bytes[at] ^= UInt8(1 + random.below(255))
                offsets.append(at)
            }
            return (bytes, "at bytes \(offsets.sorted().map(String.init).joined(separator: ","))")
        case .truncate:
            let at = random.below(n)
            return (Array(bytes[..<at]), "at byte \(at) of \(n)")
        case .cutRange:
            let start = n / 8 + random.below(max(1, n * 3 / 4))
            let end = min(n, start + 1 + random.below(max(1, n / 4)))
            bytes.removeSubrange(start..<end)
            return (bytes, "bytes \(start)..<\(end) of \(n)")
        case .repeatRange:
            let start = random.below(n)
            let end = min(n, start + 1 + random.below(max(1, n / 4)))
            bytes.insert(contentsOf: original[start..<end], at: end)
            return (bytes, "bytes \(start)..<\(end) of \(n) twice")
        case .lyingSize:
            let value: UInt32 = [0xFFFF_FFFF, 0x7FFF_FFFF, 0][random.below(3)]
            let bigEndian = random.below(2) == 0
            // Most often a field next to a four-character code, where chunk and box sizes and
            // the counts of a header are (an MP4 box's size before its type, a RIFF or IFF
            // chunk's after its id, a header's fields after that); else the first or last
            // 4 KB (an MP4's `moov` after its `mdat`, an ID3v1 or APE tag), or anywhere.
            let codes = Self.fourCharacterCodes(in: original)
            let at = switch random.below(6) {
            case let pick where pick < 3 && !codes.isEmpty:
                min(max(0, n - 4), max(0, codes[random.below(codes.count)] + [-4, 4, 8, 10, 12, 14, 16, 20][random.below(8)]))
            case 3: random.below(max(1, min(n, 4096) - 3))
            case 4: max(0, n - 4096) + random.below(max(1, min(n, 4096) - 3))
            default: random.below(max(1, n - 3))
            }
            for k in 0..<min(4, n - at) {
                bytes[at + k] = UInt8(truncatingIfNeeded: value >> (bigEndian ? 24 - 8 * k : 8 * k))
            }
            return (bytes, "0x\(String(value, radix: 16)) \(bigEndian ? "big" : "little")-endian at byte \(at)")
        case .appendGarbage:
            let count = 1 + random.below(65536)
            for _ in 0..<count { bytes.append(UInt8(truncatingIfNeeded: random.next())) }
            return (bytes, "\(count) bytes")
        case .hugeID3v2:
            // The largest syncsafe size (256 MB); all bits set, 4 GB to a reader that ignores
            // syncsafe coding; 2 GB to such a reader, 0 to a careful one.
            let sizes: [(bytes: [UInt8], name: String)] = [
                ([0x7F, 0x7F, 0x7F, 0x7F], "256 MB syncsafe"), ([0xFF, 0xFF, 0xFF, 0xFF], "4 GB unsyncsafe"),
                ([0x80, 0x00, 0x00, 0x00], "2 GB unsyncsafe"),
            ]
            let size = sizes[random.below(sizes.count)]
            let version = UInt8(3 + random.below(2))
            return ([0x49, 0x44, 0x33, version, 0, 0] + size.bytes + bytes, "ID3v2.\(version), \(size.name)")
        }
    }
}

extension Mutation {
    /// Where four letters, digits or spaces (three of them letters) stand next to a size that
    /// fits the file (big-endian before them, or either order after them): the ids of MP4
    /// boxes, RIFF and IFF chunks and ID3v2 frames, and hardly ever bytes of audio.
    static func fourCharacterCodes(in bytes: [UInt8]) -> [Int] {
        func isLetter(_ b: UInt8) -> Bool { (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }
        let n = bytes.count
        var found: [Int] = []
        bytes.withUnsafeBufferPointer { b in
            func fits(_ at: Int, bigEndian: Bool) -> Bool {
                guard at >= 0, at + 4 <= n else { return false }
                var v = 0
                for k in 0..<4 { v |= Int(b[at + k]) << (bigEndian ? 24 - 8 * k : 8 * k) }
                return v <= n
            }
            var i = 0
            while i + 4 <= n {
                var letters = 0
                var ok = true
                for k in 0..<4 {
                    let c = b[i + k]
                    if isLetter(c) { letters += 1 } else if !(0x30...0x39).contains(c) && c != 0x20 { ok = false; break }
                }
                if ok && letters >= 3 && (fits(i - 4, bigEndian: true) || fits(i + 4, bigEndian: true) || fits(i + 4, bigEndian: false)) {
                    found.append(i)
                }
                i += 1
            }
        }
        return found
    }
}

extension SeededRandom {
    /// Uniform in 0..<bound (bound > 0).
    fileprivate mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

// MARK: The decode thread, memory and crashes

/// One thread that runs the decodes, so the test's thread can stop waiting for one that hangs.
/// One thread, not one per decode: glibc gives each new thread's allocations an arena of their
/// own, which would grow the address space that `ProcessMemory` watches.
private final class DecodeThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var job: (@Sendable () -> Void)?

    init() {
        let thread = Thread { [self] in loop() }
        thread.name = "fuzz decoder"
        thread.stackSize = 8 << 20
        thread.start()
    }

    private func loop() {
        while true {
            condition.lock()
            while job == nil { condition.wait() }
            let next = job!
            job = nil
            condition.unlock()
            next()
        }
    }

    /// `body`'s result, or nil when it has not returned after `deadline` seconds.
    func run<T: Sendable>(deadline: Double, _ body: @escaping @Sendable () -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox<T>()
        condition.lock()
        job = {
            result.value = body()
            done.signal()
        }
        condition.signal()
        condition.unlock()
        guard done.wait(timeout: .now() + deadline) == .success else { return nil }
        return result.value
    }
}

private final class ResultBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T?
    var value: T? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// The process's peaks of resident memory and of address space, from /proc/self/status. Peaks
/// only rise: of several files that allocate the same claimed size, the first is named.
private struct ProcessMemory {
    var peakResidentKB = 0
    var peakVirtualKB = 0

    /// How much the peak resident memory may grow while one file is decoded: far less than
    /// any size a file could claim.
    static let maximumResidentGrowthKB = 64 * 1024
    /// How much the peak of the address space may: a 2 GB buffer a decoder allocates for a
    /// claimed size shows here even if it is never touched.
    static let maximumVirtualGrowthKB = 512 * 1024

    /// What grew too much since `before`: a decoder allocated what a file claimed.
    func growth(since before: ProcessMemory) -> [String] {
        var defects: [String] = []
        let resident = peakResidentKB - before.peakResidentKB
        let virtual = peakVirtualKB - before.peakVirtualKB
        if resident > Self.maximumResidentGrowthKB {
            defects.append("the peak resident memory grew by \(resident / 1024) MB (at most \(Self.maximumResidentGrowthKB / 1024) MB)")
        }
        if virtual > Self.maximumVirtualGrowthKB {
            defects.append("the peak address space grew by \(virtual / 1024) MB (at most \(Self.maximumVirtualGrowthKB / 1024) MB)")
        }
        return defects
    }

    static func read() -> ProcessMemory {
        var memory = ProcessMemory()
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        for line in status.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, let kB = Int(fields[1]) else { continue }
            if fields[0] == "VmHWM:" { memory.peakResidentKB = kB }
            if fields[0] == "VmPeak:" { memory.peakVirtualKB = kB }
        }
        return memory
    }
}

/// The case being decoded, written to standard error when the process dies of a signal, so a
/// crash in a decoder names its format, seed and mutation. The handler then restores the
/// handler it replaced (the Swift runtime's backtracer) and returns, so the fault recurs and
/// the process dies as it would have.
private enum CrashNote {
    static let signals: [Int32] = [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT]
    static let capacity = 1024
    nonisolated(unsafe) static let text: UnsafeMutablePointer<CChar> = {
        let p = UnsafeMutablePointer<CChar>.allocate(capacity: capacity)
        p.initialize(repeating: 0, count: capacity)
        return p
    }()
    nonisolated(unsafe) static let length: UnsafeMutablePointer<Int> = {
        let p = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        p.initialize(to: 0)
        return p
    }()
    nonisolated(unsafe) static let previous: UnsafeMutablePointer<sigaction> = {
        let p = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)
        p.initialize(repeating: sigaction(), count: 65)
        return p
    }()

    static func install() {
        _ = (text, length, previous)
        for signal in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { signal in
                _ = write(2, CrashNote.text, CrashNote.length.pointee)
                sigaction(signal, CrashNote.previous + Int(signal), nil)
            }
            sigaction(signal, &action, previous + Int(signal))
        }
    }

    static func uninstall() {
        for signal in signals { sigaction(signal, previous + Int(signal), nil) }
    }

    static func set(_ note: String) {
        let bytes = Array(note.utf8.prefix(capacity))
        length.pointee = 0
        bytes.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { text.update(from: $0.baseAddress!, count: b.count) }
        }
        length.pointee = bytes.count
    }
}
