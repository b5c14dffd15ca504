#if canImport(Glibc)
import Glibc
#endif

/// A POSIX thread running one closure, named by role so `top -H` shows it.
final class ServerThread: @unchecked Sendable {
    private var thread = pthread_t()

    private final class Box {
        let name: String
        let body: () -> Void
        init(name: String, body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }

    init(name: String, body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(name: name, body: body)).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            nameCurrentThread(box.name)
            box.body()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed: \(errnoText(rc))")
    }

    var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    func join() { pthread_join(thread, nil) }
}

/// Names the calling thread (15 bytes at most) as `top -H` and `ps -L` show it; Glibc's Swift
/// module has no `pthread_setname_np`.
private func nameCurrentThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}
