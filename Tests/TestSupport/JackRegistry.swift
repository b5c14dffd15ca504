import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Frees the slot a dead JACK server left in libjack's shared registry.
///
/// jackd registers itself by name in `/dev/shm/jack-shm-registry`, which has room for 8
/// servers, and removes its entry when it exits cleanly. A server that is SIGKILLed — which
/// `JackServer.stop` falls back to when jackd does not exit on SIGTERM, as happens after one
/// of its clients crashed — keeps its slot, and jackd reclaims a dead server's slot only for a
/// server of the same name. Test servers have unique names, so eight such deaths leave every
/// later `jackd` failing with "Too many servers already active", for every test on the machine.
///
/// This clears the entry named `serverName` if, and only if, its process is gone. Layout of
/// jack2's `jack_shm_header_t`: magic "JACK" (0x4A41434B), protocol, type, size, hdr_len,
/// entry_len, then 8 × `jack_shm_server_t` { pid_t pid; char name[257] } (264 bytes each,
/// from offset 24).
public func releaseJackRegistrySlot(serverName: String) {
    let path = "/dev/shm/jack-shm-registry"
    let fd = open(path, O_RDWR | O_CLOEXEC)
    guard fd >= 0 else { return }
    defer { close(fd) }
    let headerBytes = 24, slotBytes = 264, slots = 8, nameBytes = 257
    let length = headerBytes + slots * slotBytes
    var info = stat()
    guard fstat(fd, &info) == 0, Int(info.st_size) >= length else { return }
    guard let base = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), base != MAP_FAILED else { return }
    defer { munmap(base, length) }
    let bytes = base.assumingMemoryBound(to: UInt8.self)
    guard base.load(as: UInt32.self) == 0x4A41_434B else { return }
    let wanted = Array(":\(serverName)".utf8)
    for slot in 0..<slots {
        let entry = bytes + headerBytes + slot * slotBytes
        let pid = UnsafeRawPointer(entry).load(as: Int32.self)
        guard pid > 0 else { continue }
        let nameStart = entry + 4
        let nameLength: Int = (0..<nameBytes).first(where: { nameStart[$0] == 0 }) ?? nameBytes
        let name = Array(UnsafeBufferPointer(start: nameStart, count: nameLength))
        // Registered as "jack-<uid>:<name>:"; test server names are unique.
        guard name.count >= wanted.count,
              (0...(name.count - wanted.count)).contains(where: { name[$0..<$0 + wanted.count].elementsEqual(wanted) }) else { continue }
        guard kill(pid, 0) != 0 && errno == ESRCH else { continue }  // still alive: not ours to touch
        // The name first, the pid last: the slot looks free only once it is blank.
        memset(nameStart, 0, nameBytes)
        UnsafeMutableRawPointer(entry).storeBytes(of: 0, as: Int32.self)
    }
}
