import Synchronization
import SystemPackage
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// Watches the music directory (inotify, every directory in it) and the mount table, and asks
/// for a scan of what changed: a file written or moved in, something deleted or moved out, a
/// directory made, a medium unmounted — and, when the mount table changes, the directories
/// whose medium was gone. Its thread ("tonearm-watch") sleeps in poll until then.
final class LibraryWatcher: Sendable {
    private let loop: DeviceLoop

    /// `scan` gets a path relative to `root` ("" for all of it).
    init(root: String, scan: @escaping @Sendable (String) -> Void) {
        let poll = DevicePoll()
        // The mount table is opened here, before the caller goes on: from now on a change of it
        // wakes the thread, however late that first runs (at idle priority on a busy machine, a
        // stick could be pulled out before it opened the table, and the change was never seen).
        let mounts = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
        loop = DeviceLoop(name: "tonearm-watch", wake: poll.wake) { isStopping in
            _ = requestIdlePriority()
            var watches = Watches(root: root, mounts: mounts)
            watches.run(poll: poll, scan: scan, isStopping: isStopping)
        }
    }

    func stop() { loop.stop() }
}

/// The watcher thread's state: the inotify descriptor and which directory each watch is.
private struct Watches {
    let root: String
    /// /proc/self/mountinfo, opened when the watcher was made (-1 if it could not be).
    let mounts: Int32
    private var fd: Int32 = -1
    private var paths: [Int32: String] = [:]

    static let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_UNMOUNT | IN_ONLYDIR)

    init(root: String, mounts: Int32) {
        self.root = root
        self.mounts = mounts
    }

    mutating func run(poll: DevicePoll, scan: (String) -> Void, isStopping: () -> Bool) {
        defer { if mounts >= 0 { close(mounts) } }
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return }
        defer { close(fd) }
        addTree("")
        var devices: [(FileDescriptor, PollEvents)] = [(FileDescriptor(rawValue: fd), .readable)]
        if mounts >= 0 { devices.append((FileDescriptor(rawValue: mounts), .priority)) }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !isStopping() {
            guard let ready = try? poll.wait(for: devices, until: nil), !isStopping() else { continue }
            if ready.count > 1, !ready[1].isEmpty {
                // The mount table changed: a medium may be back (or gone). Reading it to its
                // end re-arms the notification.
                var scratch = [UInt8](repeating: 0, count: 4096)
                lseek(mounts, 0, SEEK_SET)
                while read(mounts, &scratch, scratch.count) > 0 {}
                addTree("")
                scan("")
            }
            if ready[0].contains(.readable) { drain(&buffer, scan: scan) }
        }
    }

    /// Reads the events waiting and asks for the scans they call for.
    private mutating func drain(_ buffer: inout [UInt8], scan: (String) -> Void) {
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            var offset = 0
            while offset + 16 <= count {
                let (wd, mask, length) = buffer.withUnsafeBytes { bytes in
                    (bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                     bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                     Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
                offset += 16 + length
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    scan("")
                    continue
                }
                guard let directory = paths[wd] else { continue }
                if mask & UInt32(IN_IGNORED) != 0 {
                    paths[wd] = nil
                    continue
                }
                if mask & UInt32(IN_UNMOUNT | IN_DELETE_SELF) != 0 {
                    scan(directory)
                    continue
                }
                let name = FileName.string(nameBytes)
                guard !name.isEmpty, !name.hasPrefix(".") else { continue }
                let path = directory.isEmpty ? name : directory + "/" + name
                if mask & UInt32(IN_ISDIR) != 0 && mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 { addTree(path) }
                // A file written, a directory made or moved in, anything deleted or moved out:
                // a scan of that path adds, replaces or prunes it.
                if mask & UInt32(IN_CREATE) != 0 && mask & UInt32(IN_ISDIR) == 0 { continue }
                scan(path)
            }
        }
    }

    /// Watches `path` and every directory under it (not following links out of the tree).
    private mutating func addTree(_ path: String) {
        let absolute = path.isEmpty ? root : root + "/" + path
        let wd = inotify_add_watch(fd, absolute, Self.mask)
        guard wd >= 0 else { return }
        paths[wd] = path
        guard let entries = try? FileSystem.entries(absolute) else { return }
        for entry in entries where entry.kind == .directory && !entry.name.hasPrefix(".") {
            addTree(path.isEmpty ? entry.name : path + "/" + entry.name)
        }
    }
}
