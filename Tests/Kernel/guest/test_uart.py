"""Serial displays on a 16550 UART (/dev/ttyS1 in the guest, the kernel's 8250 driver). Its
other end is a pseudoterminal on the host, relayed to the virtio port `tonearm.uart`: the
test holds the far end of the cable, as the display would."""

import os
import random
import select
import time

import fixtures
import support

GUEST_SECONDS = 60
PORT = "/dev/ttyS1"
END = b"\xff\xff\xff"


class Cable:
    """The display's end: what the daemon wrote, and bytes sent back to it."""

    def __init__(self):
        self.fd = os.open(support.virtio_port("tonearm.uart"), os.O_RDWR | os.O_NONBLOCK)
        self.received = b""
        self.drain(0.3)

    def drain(self, quiet):
        """Reads until nothing has come for `quiet` seconds."""
        while select.select([self.fd], [], [], quiet)[0]:
            self.received += os.read(self.fd, 65536)

    def expect(self, data, timeout=10):
        deadline = time.monotonic() + timeout
        while data not in self.received:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{data!r} never came; the display got {self.received[-300:]!r}")
            if select.select([self.fd], [], [], left)[0]:
                self.received += os.read(self.fd, 65536)

    def send(self, data):
        os.write(self.fd, data)

    def close(self):
        os.close(self.fd)


def speed():
    return support.sh("stty", "-F", PORT, "speed").strip()


def setUpModule():
    support.modprobe("snd-dummy")


class UARTTests(support.KernelTestCase):
    def start(self, display):
        self.cable = Cable()
        self.addCleanup(self.cable.close)
        return self.playing(f"""
[output]
device = "hw:CARD=Dummy,DEV=0"

[display]
port = "{PORT}"
{display}
""", fixtures.tracks())

    def test_nextion_touch_updates_and_garbage(self):
        daemon = self.start("""driver = "nextion"
baud = 115200
components = { title = "t0", artist = "t1" }
touch = { "0.5" = "togglePlayPause", "0.6" = "nextTrack" }""")
        self.cable.expect(b't0.txt="One"' + END)
        self.cable.expect(b't1.txt="Kernel"' + END)
        self.assertEqual(speed(), "115200", "the daemon's baud rate is not on the UART")

        # Garbage (none of it a touch event of the map), then a touch that pauses.
        noise = random.Random(9).randbytes(4096).replace(b"\x65", b"\x66")
        self.cable.send(noise)
        self.cable.send(bytes([0x65, 0, 5, 1]) + END)
        support.wait_until(lambda: daemon.status()["state"] == "paused", 5, what="the touch pausing")
        # A track change redraws the display.
        self.cable.send(bytes([0x65, 0, 6, 1]) + END)
        self.cable.expect(b't0.txt="Two"' + END)
        self.assertEqual(daemon.status()["title"], "Two")
        self.assertIsNone(daemon.process.poll())

    def test_hd44780_on_a_serlcd_backpack(self):
        daemon = self.start("""driver = "hd44780"
baud = 9600
columns = 16
rows = 2""")
        self.cable.expect(b"One")
        self.assertEqual(speed(), "9600", "the daemon's baud rate is not on the UART")
        self.assertIn(b"\xfe", self.cable.received, "no HD44780 command (0xFE prefix) was sent")
        daemon.request("next")
        self.cable.expect(b"Two")
        # Bytes from the LCD side (it sends none; a floating line reads noise) change nothing.
        self.cable.send(random.Random(3).randbytes(1024))
        time.sleep(0.5)
        self.assertEqual(daemon.status()["state"], "playing")
        self.assertIsNone(daemon.process.poll())
