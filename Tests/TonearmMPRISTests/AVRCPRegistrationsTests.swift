import TonearmDBus
@testable import TonearmMPRIS
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Which adapters get the player, as bluetoothd comes, goes and comes back, without a bus.
final class AVRCPRegistrationsTests: XCTestCase {
    private let hci0 = "/org/bluez/hci0"
    private let hci1 = "/org/bluez/hci1"

    func testRegistersWithEveryAdapterOfTheRunningBluetoothd() {
        var r = AVRCPRegistrations()
        XCTAssertEqual(r.ownerChanged(to: ":1.5"), [.listAdapters(generation: 1)])
        XCTAssertEqual(r.ownerChanged(to: ":1.5"), [], "the same owner told twice (GetNameOwner and the signal)")
        XCTAssertEqual(r.listed([hci0, hci1], generation: 1), [.register(adapter: hci0, generation: 1), .register(adapter: hci1, generation: 1)])
        XCTAssertEqual(r.added(hci0, by: ":1.5"), [], "already being registered")
        XCTAssertEqual(r.answered(hci0, generation: 1, error: nil), "AVRCP: the player is registered with Bluetooth adapter /org/bluez/hci0")
        XCTAssertEqual(r.answered(hci0, generation: 1, error: nil), nil, "answered once")
        let exists = DBusError(bus: "system", operation: "call", code: -EEXIST, name: "org.bluez.Error.AlreadyExists", message: "Already Exists")
        XCTAssertNotNil(r.answered(hci1, generation: 1, error: exists))
        XCTAssertEqual(r.adapters, [hci0: .registered, hci1: .registered], "AlreadyExists is registered")
        XCTAssertEqual(r.leaving(), [.unregister(adapter: hci0), .unregister(adapter: hci1)])
        XCTAssertEqual(r.leaving(), [], "taken back once")
    }

    func testAnAdapterThatAppearsLaterAndOneThatGoes() {
        var r = AVRCPRegistrations()
        _ = r.ownerChanged(to: ":1.5")
        XCTAssertEqual(r.listed([], generation: 1), [])
        XCTAssertEqual(r.added(hci0, by: ":1.9"), [], "not bluetoothd's")
        XCTAssertEqual(r.added(hci0, by: ":1.5"), [.register(adapter: hci0, generation: 1)], "a dongle plugged in")
        _ = r.answered(hci0, generation: 1, error: nil)
        r.removed(hci0, by: ":1.9")
        XCTAssertEqual(r.adapters[hci0], .registered, "only bluetoothd removes its adapters")
        r.removed(hci0, by: ":1.5")
        XCTAssertEqual(r.leaving(), [], "nothing to take back from an adapter that went")
    }

    func testARestartedBluetoothdIsRegisteredWithAgainAndStaleAnswersAreIgnored() {
        var r = AVRCPRegistrations()
        _ = r.ownerChanged(to: ":1.5")
        _ = r.listed([hci0], generation: 1)
        XCTAssertEqual(r.ownerChanged(to: nil), [], "bluetoothd stopped")
        XCTAssertEqual(r.adapters, [:])
        XCTAssertNil(r.answered(hci0, generation: 1, error: nil), "an answer from the bluetoothd that went")
        XCTAssertEqual(r.listed([hci0], generation: 1), [], "its list too")
        XCTAssertEqual(r.leaving(), [])
        XCTAssertEqual(r.ownerChanged(to: ":1.7"), [.listAdapters(generation: 3)], "every owner change is a generation")
        XCTAssertEqual(r.listed([], generation: 3), [], "Media1 is not there yet")
        XCTAssertEqual(r.added(hci0, by: ":1.7"), [.register(adapter: hci0, generation: 3)])
        XCTAssertNotNil(r.answered(hci0, generation: 3, error: nil))
        XCTAssertEqual(r.leaving(), [.unregister(adapter: hci0)])
    }

    func testARefusalIsSaidOnceAndNotRetriedUntilBluetoothdRestarts() {
        var r = AVRCPRegistrations()
        _ = r.ownerChanged(to: ":1.5")
        _ = r.listed([hci0], generation: 1)
        let refused = DBusError(bus: "system", operation: "call", code: -EOPNOTSUPP, name: "org.bluez.Error.NotSupported", message: "Operation is not supported")
        XCTAssertEqual(r.answered(hci0, generation: 1, error: refused), "AVRCP: Bluetooth adapter /org/bluez/hci0 refused the player: Operation is not supported")
        XCTAssertEqual(r.added(hci0, by: ":1.5"), [])
        XCTAssertEqual(r.leaving(), [], "nothing was registered")
        XCTAssertEqual(r.ownerChanged(to: ":1.8"), [.listAdapters(generation: 2)])
        XCTAssertEqual(r.listed([hci0], generation: 2), [.register(adapter: hci0, generation: 2)])
    }

    func testOnlyTheAdaptersTheProfileOffersItOn() {
        var r = AVRCPRegistrations(offeredOn: ["hci0"])
        _ = r.ownerChanged(to: ":1.5")
        XCTAssertEqual(r.listed([hci0, hci1], generation: 1), [.register(adapter: hci0, generation: 1)])
        XCTAssertEqual(r.added(hci1, by: ":1.5"), [])
        XCTAssertFalse(r.isOffered(hci1))
        XCTAssertTrue(AVRCPRegistrations().isOffered(hci1), "every adapter when the profile names none")
        var none = AVRCPRegistrations(offeredOn: [])
        _ = none.ownerChanged(to: ":1.5")
        XCTAssertEqual(none.listed([hci0, hci1], generation: 1), [], "AVRCP off")
    }

    func testAdaptersInManagedObjects() {
        let adapterInterfaces = DBusValue.array(element: "{sa{sv}}", [
            .entry(.string("org.bluez.Adapter1"), .dictionary([("Powered", .variant(.boolean(true)))])),
            .entry(.string("org.bluez.Media1"), .dictionary([])),
        ])
        let device = DBusValue.array(element: "{sa{sv}}", [.entry(.string("org.bluez.Device1"), .dictionary([]))])
        let objects = DBusValue.array(element: "{oa{sa{sv}}}", [
            .entry(.objectPath("/org/bluez"), .array(element: "{sa{sv}}", [])),
            .entry(.objectPath(hci0), adapterInterfaces),
            .entry(.objectPath(hci0 + "/dev_00_AA"), device),
        ])
        XCTAssertEqual(AVRCPRegistrations.adapters(in: objects), [hci0])
        XCTAssertEqual(AVRCPRegistrations.adapters(in: .array(element: "{oa{sa{sv}}}", [])), [])
    }
}
