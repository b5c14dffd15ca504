"""Steering-wheel keys as a real evdev device: a uinput keyboard made by the test (with the
kernel's own autorepeat), read by the daemon on /dev/input/eventN, destroyed and made again."""

import fcntl
import glob
import os
import select
import struct
import time

from evdev import InputDevice, ecodes

import fixtures
import support

GUEST_SECONDS = 60
KEYS = [ecodes.KEY_PLAYPAUSE, ecodes.KEY_NEXTSONG, ecodes.KEY_PREVIOUSSONG, ecodes.KEY_VOLUMEUP,
        ecodes.KEY_VOLUMEDOWN, ecodes.KEY_F1]


def setUpModule():
    support.modprobe("snd-dummy", "uinput", "evdev")


class Wheel:
    """A uinput keyboard with the media keys and F1. EV_REP makes the kernel repeat held keys
    (python-evdev's UInput cannot set it, hence the ioctls of <linux/uinput.h> here)."""

    UI_SET_EVBIT, UI_SET_KEYBIT = 0x40045564, 0x40045565
    UI_DEV_SETUP, UI_DEV_CREATE, UI_DEV_DESTROY = 0x405C5503, 0x5501, 0x5502
    NAME = "Tonearm steering wheel"

    def __init__(self):
        self.fd = os.open("/dev/uinput", os.O_WRONLY | os.O_NONBLOCK)
        for kind in (ecodes.EV_KEY, ecodes.EV_REP):
            fcntl.ioctl(self.fd, self.UI_SET_EVBIT, kind)
        for key in KEYS:
            fcntl.ioctl(self.fd, self.UI_SET_KEYBIT, key)
        # struct uinput_setup: input_id (bus, vendor, product, version), name[80], ff_effects_max
        setup = struct.pack("<4H80sI", ecodes.BUS_USB, 0x1209, 0x7470, 1, self.NAME.encode(), 0)
        fcntl.ioctl(self.fd, self.UI_DEV_SETUP, setup)
        fcntl.ioctl(self.fd, self.UI_DEV_CREATE)
        self.path = support.wait_until(self.find, 5, what="the event device")

    def find(self):
        for name in glob.glob("/sys/class/input/event*/device/name"):
            if open(name).read().strip() == self.NAME:
                node = "/dev/input/" + name.split("/")[4]
                return node if os.path.exists(node) else None
        return None

    def write(self, kind, code, value):
        now = time.time()
        os.write(self.fd, struct.pack("<qqHHi", int(now), int(now % 1 * 1e6), kind, code, value))

    def syn(self):
        self.write(ecodes.EV_SYN, ecodes.SYN_REPORT, 0)

    def close(self):
        if self.fd >= 0:
            fcntl.ioctl(self.fd, self.UI_DEV_DESTROY)
            os.close(self.fd)
            self.fd = -1


def press(device, key, hold=0.05):
    device.write(ecodes.EV_KEY, key, 1)
    device.syn()
    time.sleep(hold)
    device.write(ecodes.EV_KEY, key, 0)
    device.syn()


def profile(path, grab=False):
    return f"""
[output]
device = "hw:CARD=Dummy,DEV=0"

[[input]]
path = "{path}"
map = {{ KEY_F1 = "skipForward" }}
grab = {"true" if grab else "false"}
"""


class InputTests(support.KernelTestCase):
    def setUp(self):
        super().setUp()
        self.keys = Wheel()
        self.addCleanup(lambda: self.keys.close())
        self.path = self.keys.path

    def start(self, grab=False):
        daemon = self.playing(profile(self.path, grab), fixtures.tracks())
        support.wait_until(lambda: f"input {self.path}: opened" in daemon.log(), 5, what="the device opened")
        return daemon

    def test_media_keys_autorepeat_mapped_key_and_reopen(self):
        daemon = self.start()
        for expected in ("paused", "playing"):
            press(self.keys, ecodes.KEY_PLAYPAUSE)
            support.wait_until(lambda: daemon.status()["state"] == expected, 5, what=expected)
        press(self.keys, ecodes.KEY_NEXTSONG)
        support.wait_until(lambda: daemon.status()["title"] == "Two", 5, what="the next track")
        press(self.keys, ecodes.KEY_PREVIOUSSONG)  # within 3 s of its start: the track before
        support.wait_until(lambda: daemon.status()["title"] == "One", 5, what="the previous track")

        # Held: the kernel repeats the key (value 2) every 33 ms after 250 ms; a reader of our
        # own counts what it sent, and every repeat is a 5 % step.
        daemon.request("volume", percent=100)
        reader = InputDevice(self.path)
        press(self.keys, ecodes.KEY_VOLUMEDOWN, hold=0.5)
        time.sleep(0.3)
        repeats = 0
        while select.select([reader.fd], [], [], 0)[0]:
            repeats += sum(1 for e in reader.read() if e.type == ecodes.EV_KEY and e.value == 2)
        reader.close()
        self.assertGreater(repeats, 0, "the kernel sent no autorepeat")
        expected = max(0, 100 - 5 * (1 + repeats))
        support.wait_until(lambda: daemon.status()["volume"] == expected, 5,
                           what=f"volume {expected} after {repeats} repeats")
        support.measure(f"uinput: VOLUMEDOWN held 0.5 s, {repeats} kernel autorepeats, volume 100 -> {expected}")

        # A key the profile maps.
        before = daemon.status()["elapsed"]
        press(self.keys, ecodes.KEY_F1)
        support.wait_until(lambda: daemon.status()["elapsed"] >= before + 14, 5, what="KEY_F1 skipping forward")

        # The device goes away and comes back.
        self.keys.close()
        support.wait_until(lambda: f"input {self.path}: gone" in daemon.log(), 5, what="the device's loss logged")
        self.keys = Wheel()
        self.assertEqual(self.keys.path, self.path)
        support.wait_until(lambda: daemon.log().count(f"input {self.path}: opened") == 2, 5, what="the reopen")
        press(self.keys, ecodes.KEY_PLAYPAUSE)
        support.wait_until(lambda: daemon.status()["state"] == "paused", 5, what="a key after the reopen")

    def test_grab_keeps_the_keys_from_other_readers(self):
        reader = InputDevice(self.path)
        self.addCleanup(reader.close)
        daemon = self.start(grab=True)
        self.assertIn(f"input {self.path}: opened and grabbed", daemon.log())
        press(self.keys, ecodes.KEY_PLAYPAUSE)
        support.wait_until(lambda: daemon.status()["state"] == "paused", 5, what="the grabbed key")
        time.sleep(0.2)
        self.assertEqual(select.select([reader.fd], [], [], 0)[0], [], "another reader saw a grabbed key")

        # A second daemon cannot grab what the first holds: it says so and reads shared.
        other = self.daemon(profile(self.path, grab=True), name="second")
        other.wait_ready()
        support.wait_until(lambda: "cannot grab it" in other.log(), 5, what="the refused grab logged")
        self.assertIn("another program holds it", other.log())
