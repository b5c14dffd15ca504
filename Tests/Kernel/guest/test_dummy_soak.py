"""snd-dummy paces like a sound card (an hrtimer moves its pointer): ten minutes of playback at
the default settings, no underrun, and the published elapsed time within 50 ms of the frames
the driver has consumed, all along."""

import os
import time

import fixtures
import support

SECONDS = int(os.environ.get("TONEARM_SOAK_SECONDS", "600"))
GUEST_SECONDS = SECONDS + 60


def setUpModule():
    support.modprobe("snd-dummy")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class DummySoakTests(support.KernelTestCase):
    def test_ten_minutes_paced_without_underrun(self):
        daemon = self.daemon("""
[output]
device = "hw:CARD=Dummy,DEV=0"
""")
        daemon.wait_ready()
        daemon.request("add", paths=[fixtures.path("soak")])
        daemon.request("play")
        support.wait_until(lambda: support.pcm_status("Dummy").get("state") == "RUNNING", 10,
                           what="the dummy card running")
        started = time.monotonic()
        checks = max(1, SECONDS // 30)
        worst = 0.0
        for check in range(1, checks + 1):
            time.sleep(max(0.0, started + check * SECONDS / checks - time.monotonic()))
            status = daemon.status()
            kernel = support.pcm_status("Dummy")
            device = status["device"]
            played = int(kernel["hw_ptr"]) / device["rate"]
            error = status["elapsed"] - played
            worst = max(worst, abs(error))
            self.assertEqual(status["state"], "playing")
            self.assertEqual(device["underruns"], 0, f"underruns after {played:.0f} s")
            self.assertEqual(device["losses"], 0, f"device losses after {played:.0f} s")
            self.assertLess(abs(error), 0.05, f"elapsed {status['elapsed']:.3f} s, the driver consumed "
                                              f"{played:.3f} s")
        self.assertNotIn("underrun", daemon.log().lower())
        cpu = cpu_seconds(daemon.process.pid)
        support.measure(f"snd-dummy {SECONDS} s at the defaults (period {device['periodFrames']}, buffer "
                        f"{device['bufferFrames']} frames, {device['rate']} Hz): 0 underruns; elapsed vs the "
                        f"driver's hw_ptr within {worst * 1000:.1f} ms at {checks} checks; tonearmd "
                        f"{cpu:.1f} s CPU in the guest (software-emulated CPU)")
