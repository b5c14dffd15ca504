"""Bluetooth in a kernel-suite guest: a system D-Bus, two virtual controllers on one virtual
air, a real bluetoothd and an AVRCP "head unit".

    stack = bluetooth.Stack().start()        # ~2.5 s: bus, hci_vhci + btvirt -l2, bluetoothd, powered
    monitor = bluetooth.Monitor()            # every bus message (busctl monitor), to assert on
    ...                                      # a player registers with hci0's org.bluez.Media1
    head = stack.head_unit()                 # ~1 s: hci1 discovers, pairs, trusts, connects AVRCP
    head.press("Play")                       # hci1's org.bluez.MediaPlayer1.Play: an AVRCP PLAY,
                                             # which bluetoothd hands to the player as Player.Play
    stack.restart_bluetoothd()               # SIGTERM, start again, adapters back with Media1
    stack.stop()

What runs, in order (each piece needs the one before):
1. `dbus-daemon --system` with the stock configuration (/usr/share/dbus-1/system.conf and
   /etc/dbus-1/system.d/bluetooth.conf, which lets root own org.bluez and lets bluetoothd call
   org.mpris.MediaPlayer2.Player). The guest has a tmpfs /run of its own, so the bus is at the
   standard /run/dbus/system_bus_socket and nothing of the host is touched.
2. The kernel's hci_vhci with AF_ALG crypto (see DRIVERS) and BlueZ's emulator `btvirt -l2`
   (package bluez-test-tools): controllers hci0 (00:AA:01:00:00:00) and hci1 (00:AA:01:01:00:01),
   BR/EDR+LE, in one process, so inquiry, paging, pairing and ACL data go from one to the other.
3. `bluetoothd -n [-d]`, which manages both adapters; its stderr is its log. Its info lines
   ("Player registered: sender=:1.5 path=/org/mpris/MediaPlayer2", "Player unregistered: ...")
   are there with or without -d; -d adds the DBG lines.
4. Powered = true on each adapter (Debian's main.conf has AutoEnable=true, so they usually are
   already; setting it makes the helper independent of that).

Conventions: hci0 is the board (where a player registers), hci1 the head unit (the AVRCP
controller that sends PLAY/PAUSE). Logs go to the run's output folder (support.RIG_OUT, kept
with scripts/test-kernel --keep): dbus-daemon.log, btvirt.log, bluetoothd-N.log, monitor.jsonl.

Importing this module does nothing (the host imports the test modules to list them).
"""

import json
import os
import signal
import subprocess
import threading
import time

from support import RIG_OUT, wait_until

BUS_SOCKET = "/run/dbus/system_bus_socket"
BUS_ADDRESS = "unix:path=" + BUS_SOCKET
BLUEZ = "org.bluez"
ADAPTER = "org.bluez.Adapter1"
DEVICE = "org.bluez.Device1"
MEDIA = "org.bluez.Media1"
MEDIA_PLAYER = "org.bluez.MediaPlayer1"     # the head unit's view of the remote player
PLAYER_PATH = "/org/mpris/MediaPlayer2"
PLAYER_IFACE = "org.mpris.MediaPlayer2.Player"
PROPERTIES = "org.freedesktop.DBus.Properties"
OBJECT_MANAGER = "org.freedesktop.DBus.ObjectManager"
AVRCP_TARGET_UUID = "0000110c-0000-1000-8000-00805f9b34fb"   # "the remote is a target (player)"

# btvirt's controllers need AF_ALG sockets for ecb(aes) and cmac(aes) (BlueZ's
# src/shared/crypto.c, the emulated controller's encryption and random numbers). The guest's
# kernel does not load modules on demand (its usermode helper would run /sbin/modprobe in the
# initramfs, which has none), so without these btvirt reads the vhci's answer, fails to create its controller and
# closes /dev/vhci ("Failed to open Virtual HCI device" on its stderr), while the kernel is
# already sending the first HCI command (Reset) to the orphaned controller: the kernel then logs
# "Bluetooth: hci0: Opcode 0x0c03 failed: -110". With them loaded, 8 of 8 starts worked.
# cmac also serves the kernel's own SMP (LE pairing).
# uinput is left out on purpose: with it, bluetoothd gives each AVRCP connection an input device
# ("BlueZ 5.66 (AVRCP)") and sends it the buttons no registered player took (e.g. PLAY while no
# player is registered), which a daemon reading every /dev/input/event* would also see. Without
# it bluetoothd only logs "AVRCP: failed to init uinput".
DRIVERS = ("hci_vhci", "af_alg", "algif_hash", "algif_skcipher", "ecb", "cmac")


def load_drivers():
    subprocess.run(["modprobe", "-a", *DRIVERS], check=True)


def log(text):
    print(f"bluetooth: {text}", flush=True)


def connect_bus():
    """A private connection to the system bus (no main loop: synchronous calls only)."""
    import dbus
    return dbus.bus.BusConnection(BUS_ADDRESS)


def device_path(adapter_index, address):
    return f"/org/bluez/hci{adapter_index}/dev_" + address.replace(":", "_")


class Stack:
    """The system bus, btvirt's controllers and bluetoothd; `timings` says how long each took."""

    def __init__(self, controllers=2, debug=True, out=None):
        self.controllers = controllers
        self.debug = debug
        self.out = out or RIG_OUT
        self.bus_process = self.btvirt = self.bluetoothd = None
        self.bluetoothd_starts = 0
        self.bus = None
        self.timings = {}

    def _timed(self, name, started):
        self.timings[name] = round(time.monotonic() - started, 2)

    def start(self, power=True):
        self.forget()
        self.start_bus()
        self.start_controllers()
        self.start_bluetoothd()
        if power:
            self.power_all()
        return self

    @staticmethod
    def forget():
        """Empties /var/lib/bluetooth (in the guest's overlay; the host's is untouched): pairings
        and trust that an earlier Stack of the same guest stored for the same addresses (btvirt's
        are always the same) would otherwise be loaded again by the next bluetoothd."""
        state = "/var/lib/bluetooth"
        if os.path.isdir(state):
            for name in os.listdir(state):
                subprocess.run(["rm", "-rf", os.path.join(state, name)], check=True)

    def start_bus(self):
        """dbus-daemon --system, until a connection to it works (~0.6 s)."""
        started = time.monotonic()
        os.makedirs("/run/dbus", exist_ok=True)
        self.bus_log = open(os.path.join(self.out, "dbus-daemon.log"), "wb")
        self.bus_process = subprocess.Popen(
            ["dbus-daemon", "--system", "--nofork", "--nopidfile"],
            stdout=self.bus_log, stderr=subprocess.STDOUT)

        def up():
            if self.bus_process.poll() is not None:
                raise AssertionError(f"dbus-daemon exited {self.bus_process.returncode}")
            try:
                self.bus = connect_bus()
                return True
            except Exception:
                return False
        wait_until(up, 15, what="the system bus")
        self._timed("bus", started)

    def start_controllers(self):
        """The drivers and btvirt, until /sys/class/bluetooth/hci0.. exist (~0.5 s)."""
        started = time.monotonic()
        load_drivers()
        self.btvirt_log_path = os.path.join(self.out, "btvirt.log")
        self.btvirt_log = open(self.btvirt_log_path, "wb")
        self.btvirt = subprocess.Popen(["btvirt", f"-l{self.controllers}"],
                                       stdout=self.btvirt_log, stderr=subprocess.STDOUT)

        def present():
            if self.btvirt.poll() is not None:
                raise AssertionError(f"btvirt exited {self.btvirt.returncode}: "
                                     + open(self.btvirt_log_path, errors="replace").read())
            return all(os.path.exists(f"/sys/class/bluetooth/hci{i}") for i in range(self.controllers))
        wait_until(present, 15, what="btvirt's controllers")
        self._timed("controllers", started)

    def start_bluetoothd(self):
        """bluetoothd, until every adapter is on the bus with org.bluez.Media1 (~0.8 s).
        Adapter1 and Media1 come in one InterfacesAdded signal per adapter."""
        started = time.monotonic()
        self.bluetoothd_starts += 1
        path = os.path.join(self.out, f"bluetoothd-{self.bluetoothd_starts}.log")
        self.bluetoothd_log_path = path
        self.bluetoothd_log = open(path, "wb")
        command = ["/usr/sbin/bluetoothd", "-n"] + (["-d"] if self.debug else [])
        self.bluetoothd = subprocess.Popen(command, stdout=self.bluetoothd_log,
                                           stderr=subprocess.STDOUT)

        def adapters():
            if self.bluetoothd.poll() is not None:
                raise AssertionError(f"bluetoothd exited {self.bluetoothd.returncode}:\n"
                                     + self.bluetoothd_output()[-2000:])
            found = self.adapters()
            return len([p for p, ifaces in found.items() if MEDIA in ifaces]) == self.controllers
        wait_until(adapters, 30, interval=0.1, what="the adapters with org.bluez.Media1")
        self._timed(f"bluetoothd-{self.bluetoothd_starts}", started)

    def bluetoothd_output(self):
        """What this bluetoothd wrote so far (its log)."""
        if not self.bluetoothd_log.closed:
            self.bluetoothd_log.flush()
        return open(self.bluetoothd_log_path, errors="replace").read()

    def stop_bluetoothd(self, sig=signal.SIGTERM):
        """On SIGTERM bluetoothd powers the adapters off, removes its objects (InterfacesRemoved)
        and leaves the bus (NameOwnerChanged org.bluez :1.N -> ""), ~0.2 s. It does not call
        Release on registered players, nor log "Player unregistered" (only a DBG line).
        On SIGKILL there is only the NameOwnerChanged (no InterfacesRemoved), the adapters stay
        powered and the ACL link to the head unit stays up; after either, a new bluetoothd is
        ready in ~0.6-1.1 s and the players have to register again."""
        if self.bluetoothd and self.bluetoothd.poll() is None:
            self.bluetoothd.send_signal(sig)
            try:
                self.bluetoothd.wait(10)
            except subprocess.TimeoutExpired:
                self.bluetoothd.kill()
                self.bluetoothd.wait()
        if self.bluetoothd:
            self.bluetoothd_log.close()

    def restart_bluetoothd(self, sig=signal.SIGTERM, power=True):
        self.stop_bluetoothd(sig)
        self.start_bluetoothd()
        if power:
            self.power_all()

    def stop(self):
        """bluetoothd, btvirt (its controllers go with it, ~0.1 s) and the bus; a new Stack can
        start in the same guest afterwards."""
        self.stop_bluetoothd()
        for process in (self.btvirt, self.bus_process):
            if process and process.poll() is None:
                process.terminate()
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        if self.btvirt:
            wait_until(lambda: not any(os.path.exists(f"/sys/class/bluetooth/hci{i}")
                                       for i in range(self.controllers)), 10, what="btvirt's controllers gone")

    # --- org.bluez on the bus ---

    def bluez_up(self):
        # Checked before any call: a call to an unowned org.bluez would make dbus-python ask
        # the bus to activate it (its service file points to systemd, which is not there).
        return bool(self.bus.name_has_owner(BLUEZ))

    def adapters(self):
        """{path: {interface: properties}} of org.bluez's adapters ({} while it is not up)."""
        import dbus
        if not self.bluez_up():
            return {}
        try:
            objects = self.objects()
        except dbus.DBusException:
            return {}
        return {p: ifaces for p, ifaces in objects.items() if ADAPTER in ifaces}

    def objects(self):
        """org.bluez's GetManagedObjects, with plain str paths and interface names."""
        import dbus
        manager = dbus.Interface(self.bus.get_object(BLUEZ, "/", introspect=False), OBJECT_MANAGER)
        return {str(p): {str(i): props for i, props in ifaces.items()}
                for p, ifaces in manager.GetManagedObjects(timeout=10).items()}

    def get(self, path, interface, name):
        import dbus
        props = dbus.Interface(self.bus.get_object(BLUEZ, path, introspect=False), PROPERTIES)
        return props.Get(interface, name, timeout=10)

    def set(self, path, interface, name, value):
        import dbus
        props = dbus.Interface(self.bus.get_object(BLUEZ, path, introspect=False), PROPERTIES)
        props.Set(interface, name, value, signature="ssv", timeout=30)

    def call(self, path, interface, method, *args, timeout=30):
        proxy = self.bus.get_object(BLUEZ, path, introspect=False)
        return proxy.get_dbus_method(method, interface)(*args, timeout=timeout)

    def power(self, index, timeout=15):
        """hciN powered, until Powered says so. Debian's main.conf (AutoEnable=true) has
        bluetoothd power the adapters by itself right after it starts; a Set during that answers
        org.bluez.Error.Busy, which only means "wait". Takes 0.02-1.1 s."""
        import dbus
        path = f"/org/bluez/hci{index}"
        started = time.monotonic()
        deadline = started + timeout
        while not bool(self.get(path, ADAPTER, "Powered")):
            if time.monotonic() > deadline:
                raise AssertionError(f"hci{index} not powered after {timeout} s")
            try:
                self.set(path, ADAPTER, "Powered", dbus.Boolean(True))
            except dbus.DBusException as error:
                if error.get_dbus_name() != "org.bluez.Error.Busy":
                    log(f"power hci{index}: {error}")
                time.sleep(0.2)
        self._timed(f"power-hci{index}", started)

    def power_all(self):
        for index in range(self.controllers):
            self.power(index)

    def address(self, index):
        return str(self.get(f"/org/bluez/hci{index}", ADAPTER, "Address"))

    def head_unit(self, board=0, head=1, timeout=30):
        """hci`head` as a car's head unit for the player on hci`board`: discovers it, pairs,
        trusts both ways and connects AVRCP; a HeadUnit. In the guest (TCG) that took
        0.46-0.86 s in all: discover 0.22-0.39 s, pair 0.12-0.23, trust 0.02-0.05, AVRCP
        connected with the head unit's player object there 0.07-0.29."""
        import dbus
        started = time.monotonic()
        board_address, head_address = self.address(board), self.address(head)
        remote = device_path(head, board_address)   # the board, as the head unit sees it
        back = device_path(board, head_address)     # the head unit, as the board sees it
        board_path, head_path = f"/org/bluez/hci{board}", f"/org/bluez/hci{head}"

        # Pairable (the kernel's Bondable) on both, or the link key is not stored: the pairing
        # then lasts only as long as the link, and after a restart of bluetoothd the head unit
        # cannot connect again (ConnectProfile: "br-connection-create-socket").
        for path in (board_path, head_path):
            self.set(path, ADAPTER, "Pairable", dbus.Boolean(True))
        # Inquiry: the board must be discoverable; BR/EDR only (no LE scan).
        self.set(board_path, ADAPTER, "Discoverable", dbus.Boolean(True))
        self.call(head_path, ADAPTER, "SetDiscoveryFilter",
                  dbus.Dictionary({"Transport": "bredr"}, signature="sv"))
        self.call(head_path, ADAPTER, "StartDiscovery")
        wait_until(lambda: remote in self.objects(), timeout, 0.1, what=f"hci{head} finding hci{board}")
        self.call(head_path, ADAPTER, "StopDiscovery")
        self._timed("discover", started)

        # Pairing with no agent registered: bluetoothd uses NoInputNoOutput on both sides, so
        # the kernel accepts the Secure Simple Pairing "just works" on its own.
        step = time.monotonic()
        if not bool(self.get(remote, DEVICE, "Paired")):
            self.call(remote, DEVICE, "Pair", timeout=timeout)
        wait_until(lambda: back in self.objects(), timeout, 0.1, what=f"hci{board} knowing hci{head}")
        self._timed("pair", step)

        # Trusted: the board's bluetoothd then accepts the incoming AVCTP connection without
        # asking an agent (AuthorizeService); the other way round for symmetry. Untrusted, with
        # no agent, the board logs "Authentication attempt without agent" and "avctp.c:auth_cb()
        # Access denied: org.bluez.Error.Rejected", and ConnectProfile fails with
        # org.bluez.Error.Failed: br-connection-create-socket.
        step = time.monotonic()
        self.set(remote, DEVICE, "Trusted", dbus.Boolean(True))
        self.set(back, DEVICE, "Trusted", dbus.Boolean(True))
        self._timed("trust", step)

        head_unit = HeadUnit(self, remote, back)
        head_unit.connect(timeout)
        self._timed("head-unit", started)
        return head_unit


class HeadUnit:
    """The AVRCP controller side (hci1) of a paired board: its org.bluez.MediaPlayer1 object for
    the board's player (`player_path`, e.g. /org/bluez/hci1/dev_00_AA_01_00_00_00/player0)."""

    def __init__(self, stack, remote, back):
        self.stack = stack
        self.remote = remote        # the board as a device of the head unit's adapter
        self.back = back            # the head unit as a device of the board's adapter
        self.player_path = remote + "/player0"

    def connect(self, timeout=30):
        """Device1.ConnectProfile(AVRCP target UUID): AVCTP control channel, no A2DP needed;
        then the head unit's MediaPlayer1 for the remote player appears (AVRCP category 1)."""
        started = time.monotonic()
        self.stack.call(self.remote, DEVICE, "ConnectProfile", AVRCP_TARGET_UUID, timeout=timeout)
        wait_until(lambda: MEDIA_PLAYER in self.stack.objects().get(self.player_path, {}),
                   timeout, 0.1, what="the head unit's MediaPlayer1 for the board's player")
        self.stack._timed("avrcp", started)

    def press(self, button):
        """An AVRCP pass-through button: "Play", "Pause", "Stop", "Next" or "Previous" on the
        head unit's MediaPlayer1. On the board, bluetoothd turns PLAY/PAUSE/STOP/FORWARD/
        BACKWARD into Play/Pause/Stop/Next/Previous calls on the registered player (when it
        registered CanPlay/CanPause/CanGoNext/CanGoPrevious and CanControl true)."""
        self.stack.call(self.player_path, MEDIA_PLAYER, button)

    def status(self):
        """What the head unit knows of the board's player: {"Status": "playing", "Track":
        {"Title": ...}, ...} (MediaPlayer1's properties)."""
        import dbus
        props = dbus.Interface(self.stack.bus.get_object(BLUEZ, self.player_path, introspect=False),
                               PROPERTIES)
        return json.loads(json.dumps(props.GetAll(MEDIA_PLAYER, timeout=10), default=str))


class Monitor:
    """Every message on the system bus, from `busctl monitor --json=short`, each with the
    monotonic time it was read (`_t`); `find` and `wait` select them by fields, e.g.
    monitor.wait(10, member="Play", interface=PLAYER_IFACE) for bluetoothd's call to a player.
    Field values may be callables taking the message."""

    def __init__(self, out=None, name="monitor"):
        out = out or RIG_OUT
        self.messages = []
        self.lock = threading.Condition()
        self.raw = open(os.path.join(out, f"{name}.jsonl"), "w")
        self.process = subprocess.Popen(["busctl", "monitor", "--system", "--json=short"],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        time.sleep(0.3)  # until busctl is a monitor

    def _read(self):
        for line in self.process.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                message = json.loads(line)
            except ValueError:
                continue
            message["_t"] = time.monotonic()
            self.raw.write(json.dumps(message) + "\n")
            self.raw.flush()
            with self.lock:
                self.messages.append(message)
                self.lock.notify_all()

    @staticmethod
    def matches(message, fields):
        for key, want in fields.items():
            if callable(want):
                if not want(message):
                    return False
            elif message.get(key) != want:
                return False
        return True

    def find(self, since=0.0, **fields):
        with self.lock:
            return [m for m in self.messages if m["_t"] >= since and self.matches(m, fields)]

    def wait(self, timeout, since=0.0, **fields):
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for m in self.messages:
                    if m["_t"] >= since and self.matches(m, fields):
                        return m
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no bus message {fields} within {timeout} s")
                self.lock.wait(left)

    def reply_to(self, call, timeout=10):
        """The method_return or error that answers a method_call message."""
        return self.wait(timeout, since=call["_t"],
                         type=lambda m: m.get("type") in ("method_return", "error"),
                         reply_cookie=call["cookie"])

    def stop(self):
        self.process.terminate()
        self.process.wait()
        self.reader.join(5)  # it writes to `raw` until busctl's output ends
        self.raw.close()


def args(message):
    """A monitored message's arguments (busctl's payload data), e.g. ['org.bluez', ':1.2', '']."""
    return message.get("payload", {}).get("data", [])
