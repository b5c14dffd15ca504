"""Large device buffers on snd-aloop: a 6000/24000-frame buffer plays a file through without a
stall, bit-exact."""

import os
import subprocess
import time

import numpy

import fixtures
import support
from test_loopback import Capture

GUEST_SECONDS = 120
DEVICE = "hw:CARD=Loopback,DEV=0"


def setUpModule():
    support.modprobe("snd-aloop")


class LargeBufferTests(support.KernelTestCase):
    def test_a_quarter_second_period_plays_through_without_a_stall(self):
        # Found on this driver: with 6000/24000 frames the player was declared stalled ~2 s in,
        # reopened the device and took 4.8 s for a 3 s file.
        out = os.path.join(support.RIG_OUT, "large-buffer")
        os.makedirs(out, exist_ok=True)
        capture = Capture(f"{out}/capture.raw", "S32_LE", 48000)
        started = time.monotonic()
        done = subprocess.run([support.TONEARM, "play", "--device", DEVICE, "--period-frames", "6000",
                               "--buffer-frames", "24000", *fixtures.parts("noise24")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        took = time.monotonic() - started
        time.sleep(0.3)
        captured = capture.stop()
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertNotIn("stopped responding", done.stdout)
        reference = numpy.fromfile(fixtures.reference("noise24"), dtype="<i4")
        seconds = len(reference) / 2 / 48000
        first = int(numpy.flatnonzero(reference)[0])
        start = int(numpy.flatnonzero(captured)[0]) - first
        window = captured[start:start + len(reference)]
        self.assertEqual(len(window), len(reference), "the capture is shorter than the files")
        mismatches = numpy.flatnonzero(window != reference)
        self.assertEqual(len(mismatches), 0,
                         f"{len(mismatches)} samples differ, the first at frame {mismatches[:1] // 2}")
        self.assertLess(took, seconds + 1.5, f"{seconds:.1f} s of audio took {took:.1f} s:\n{done.stdout}")
        support.measure(f"snd-aloop 6000/24000 frames: {seconds:.1f} s of audio bit-exact, played in {took:.2f} s")
