"""A USB DAC pulled out and plugged back: QEMU's usb-audio device on an xHCI bus, removed and
re-added through QMP by the host (Tests/Kernel/rig.py). What the guest plays to it lands in a
WAV file on the host, one per plug, read here through the shared folder: the audio that was
really heard, to hold the published elapsed time against."""

import os
import struct
import time

import fixtures
import support

GUEST_SECONDS = 90
rig = None


def setUpModule():
    global rig
    support.modprobe("xhci_pci", "snd-usb-audio")
    support.wait_until(lambda: support.card_id("USB-Audio"), 10, what="the USB audio card")
    rig = support.RigClient()


def card():
    return support.card_id("USB-Audio")


def heard_seconds(name):
    """Seconds of audio in one of the host's WAV files (its header's sizes are written only when
    QEMU closes it: the file's length counts)."""
    path = os.path.join(support.RIG_OUT, name)
    try:
        with open(path, "rb") as f:
            header = f.read(44)
            size = os.fstat(f.fileno()).st_size
    except OSError:
        return 0.0
    if len(header) < 44:
        return 0.0
    channels, rate = struct.unpack_from("<HI", header, 22)
    bits = struct.unpack_from("<H", header, 34)[0]
    return (size - 44) / (rate * channels * bits // 8)


class Plugs:
    """The audio heard across plugs: the files the host kept at each unplug, and the live one."""

    def __init__(self):
        self.before = heard_seconds("usb-dac.wav")  # from an earlier test, not ours
        self.kept = 0.0

    def unplug(self):
        name = rig.call("unplug")["wav"]
        self.kept += heard_seconds(name) - self.before
        self.before = 0.0

    def plug(self):
        rig.call("plug")

    def heard(self):
        return self.kept + heard_seconds("usb-dac.wav") - self.before


def profile():
    return f"""
[output]
device = "hw:CARD={card() or 'Audio'},DEV=0"
reopen_interval_ms = 250
"""


class USBDACTests(support.KernelTestCase):
    def tearDown(self):
        super().tearDown()
        if not card():
            rig.call("plug")
            support.wait_until(card, 10, what="the card back for the next test")

    def assert_elapsed_is_heard(self, daemon, plugs, when):
        # Both sides sampled together: what the host heard read just before and just after the
        # status (a guest starved between two readings sees the host hear on in between), and the
        # DAC's own buffering far under the tolerance. Until an underrun: the silence the DAC then
        # plays is heard but is no part of the music (the emulated CPU, on a busy host, can be
        # starved past the short buffer of these tests).
        before = plugs.heard()
        status = daemon.status()
        after = plugs.heard()
        elapsed = status["elapsed"]
        error = elapsed - after if elapsed > after else elapsed - before if elapsed < before else 0.0
        if status["device"]["underruns"] == 0:
            self.assertLess(abs(error), 0.2, f"{when}: elapsed {elapsed:.3f} s, heard {before:.3f}-{after:.3f} s")
        return error

    def test_pulled_out_twice_and_resumed_where_it_stopped(self):
        plugs = Plugs()
        daemon = self.daemon(profile())
        daemon.wait_ready()
        daemon.request("add", paths=[fixtures.path("tone44k")])
        daemon.request("play")
        support.wait_until(lambda: daemon.status()["elapsed"] >= 3.0, 20, what="3 s played")
        # What a display hears: Now Playing published with rate 0 when the DAC goes, rate 1
        # when it is back.
        daemon.subscribe("nowPlaying")
        rate = lambda r: lambda d: (d.get("info") or {}).get("rate") == r
        figures = []
        for round in (1, 2):
            pulled = time.monotonic()
            plugs.unplug()
            status = support.wait_until(lambda: (s := daemon.status())["output"] != "ok" and s, 5,
                                        what="the daemon to see the DAC go")
            noticed = time.monotonic() - pulled
            self.assertEqual(status["state"], "playing")
            self.assertEqual(status["rate"], 0)
            self.assertIn("lost", status["output"])
            stopped, _ = daemon.next_event("nowPlaying", where=rate(0))
            self.assertEqual(stopped["reason"], "rateChanged")
            log = daemon.log()
            self.assertIn("lost:", log, "an unplug is not logged as a loss")
            self.assertNotIn("stopped responding", log, "an unplug was taken for a stall")
            flags = [f["flag"] for f in daemon.request("doctor")["redFlags"]]
            self.assertIn("outputInterrupted", flags)
            frozen = daemon.status()["elapsed"]
            time.sleep(2.0)
            self.assertAlmostEqual(daemon.status()["elapsed"], frozen, delta=0.001,
                                   msg="elapsed ran on while nothing was heard")
            outage_error = self.assert_elapsed_is_heard(daemon, plugs, f"unplugged ({round})")

            plugged = time.monotonic()
            plugs.plug()
            support.wait_until(lambda: heard_seconds("usb-dac.wav") > 0.05, 15, interval=0.02,
                               what="audio at the DAC again")
            back = time.monotonic() - plugged
            support.wait_until(lambda: (s := daemon.status())["output"] == "ok" and s["rate"] == 1, 5,
                               what="rate 1 again")
            daemon.next_event("nowPlaying", where=rate(1))
            time.sleep(1.0)
            resumed_error = self.assert_elapsed_is_heard(daemon, plugs, f"after the replug ({round})")
            figures.append(f"unplug {round}: seen in {noticed * 1000:.0f} ms, elapsed beyond "
                           f"what was heard {outage_error * 1000:+.0f} ms while out, audio back {back:.2f} s after the "
                           f"replug, elapsed beyond what was heard {resumed_error * 1000:+.0f} ms after")
        self.assertIn("is back", daemon.log())
        self.assertEqual(daemon.status()["device"]["losses"], 2)
        for line in figures:
            support.measure("USB DAC " + line)

    def test_started_without_a_card_plays_when_it_appears(self):
        plugs = Plugs()
        plugs.unplug()
        support.wait_until(lambda: not card(), 5, what="the card to go")
        daemon = self.daemon(profile())
        daemon.wait_ready()
        daemon.request("add", paths=[fixtures.path("tone44k")])
        daemon.request("play")
        time.sleep(1.5)
        status = daemon.status()
        self.assertEqual(status["state"], "playing")
        self.assertEqual(status["rate"], 0)
        self.assertEqual(status["elapsed"], 0)
        self.assertIn("waiting", status["output"])
        plugged = time.monotonic()
        plugs.plug()
        support.wait_until(lambda: heard_seconds("usb-dac.wav") > 0.05, 15, interval=0.02,
                           what="audio at the DAC")
        back = time.monotonic() - plugged
        support.wait_until(lambda: "is back" in daemon.log(), 5, what="'is back' in the log")
        support.wait_until(lambda: daemon.status()["rate"] == 1, 5, what="rate 1")
        time.sleep(1.0)
        error = self.assert_elapsed_is_heard(daemon, plugs, "after the card appeared")
        support.measure(f"USB DAC absent at start: audio {back:.2f} s after it was plugged in, "
                        f"elapsed beyond what was heard {error * 1000:+.0f} ms")


class USBDACRewindTests(support.KernelTestCase):
    """snd-usb-audio flags itself a batch device (its position moves a USB packet at a time):
    rewinds into a large buffer must still leave the music whole — every frame at unity
    bit-exact and in its place — with no underrun."""

    def volume_changes_through_a_large_buffer(self):
        """A daemon 1.5 s into music48 on a 300 ms buffer, three volume steps to 50 % and back,
        then a pause: the device's status before the pause, where in QEMU's recording of the
        DAC this run starts, and for each step when (monotonic) its two requests were sent and
        answered."""
        before = os.path.getsize(os.path.join(support.RIG_OUT, "usb-dac.wav")) \
            if os.path.exists(os.path.join(support.RIG_OUT, "usb-dac.wav")) else 0
        # QEMU's device starts below 0 dB (240 of 255): at full volume it passes the samples as they are.
        for line in support.sh("amixer", "-c", card(), "scontrols").splitlines():
            control = line.split("'")[1]
            support.sh("amixer", "-q", "-c", card(), "sset", control, "100%", "unmute", check=False)
        daemon = self.daemon(profile() + "buffer_ms = 300\nrewind_guard_ms = 5\n")
        daemon.wait_ready()
        daemon.request("add", paths=[fixtures.path("music48")])
        daemon.request("play")
        support.wait_until(lambda: daemon.status()["elapsed"] >= 1.5, 20, what="1.5 s played")
        steps = []
        for _ in range(3):
            down = time.monotonic()
            daemon.request("setVolume", percent=50)
            lowered = time.monotonic()
            time.sleep(0.6)
            up = time.monotonic()
            daemon.request("setVolume", percent=100)
            steps.append((down, lowered, up, time.monotonic()))
            time.sleep(0.8)
        status = daemon.status()
        daemon.request("pause")
        time.sleep(1.0)
        daemon.stop()
        return status["device"], before, steps

    def test_volume_changes_through_a_large_buffer_leave_the_music_whole(self):
        # After a rewind the DAC holds only the guard (5 ms): a run that underran is made again.
        device, before, steps = self.without_an_underrun(self.volume_changes_through_a_large_buffer, "USB DAC, buffer_ms = 300")
        self.assertTrue(device["rewinds"], device)
        self.assertEqual(device["underruns"], 0, device)
        # Six changes ask for six rewinds; one the emulated CPU was too late for is heard a
        # buffer later instead (the stretches below still hold).
        self.assertGreaterEqual(device["rewindCount"], 1, device)

        import numpy
        with open(os.path.join(support.RIG_OUT, "usb-dac.wav"), "rb") as f:
            f.seek(max(44, before))
            heard = numpy.frombuffer(f.read(), dtype="<i2").astype("<i4") << 16
        reference = numpy.fromfile(fixtures.reference("music48"), dtype="<i4")
        first = int(numpy.flatnonzero(reference)[0])
        # The heard sample of the file's sample 0: where the file's first sounding samples are
        # heard exactly, in a frame's first place. Not the first sound after `before`: once,
        # beside other work, every frame differed from there, as if that sound were not this
        # run's (QEMU writes its recording through a buffer: the end of the run before may
        # reach the file after this run measured its size).
        want = reference[first:first + 64]
        start = next((int(i) - first for i in numpy.flatnonzero(heard == want[0])
                      if (i - first) % 2 == 0 and (heard[i:i + len(want)] == want).all()), None)
        self.assertIsNotNone(start, "the music's first samples are not in QEMU's recording")
        played = heard[start:]
        frames = min(len(played), len(reference)) // 2
        differs = (played[:2 * frames].reshape(-1, 2) != reference[:2 * frames].reshape(-1, 2)).any(axis=1)
        changed = numpy.flatnonzero(differs)
        # Stretches of changed frames: three at 50 %, then the pause's fade (when QEMU has
        # written it yet); between them, the file itself, frame for frame — a rewind that lost
        # or repeated a frame would leave everything after it changed.
        self.assertGreater(len(changed), 0, "no volume change was heard")
        breaks = numpy.flatnonzero(numpy.diff(changed) > 48000 // 10)
        starts = [int(changed[0])] + [int(changed[b + 1]) for b in breaks]
        ends = [int(changed[b]) for b in breaks] + [int(changed[-1])]
        self.assertIn(len(starts), (3, 4), f"stretches changed: {list(zip(starts, ends))}")
        lengths = [(e - s + 1) / 48000 for s, e in zip(starts[:3], ends[:3])]
        # Each stretch lasts from one request to the other, as the test sent them: each took
        # effect between its sending and its answer (beside other work the emulated guest
        # stalls, and the 0.6 s between them became 1.0 s once), and a change the emulated CPU
        # was too late to rewind for is heard up to a buffer (0.3 s) later, lengthening or
        # shortening its stretch by as much; and a 5 ms window either way.
        for length, (down, lowered, up, raised) in zip(lengths, steps):
            self.assertTrue(up - lowered - 0.305 <= length <= raised - down + 0.305,
                            f"a stretch at 50 % of {length:.3f} s, for requests {up - lowered:.3f}-{raised - down:.3f} s "
                            f"apart: {lengths}")
        unchanged = ((starts[3] if len(starts) == 4 else frames) - ends[2] - 1) / 48000
        self.assertGreater(unchanged, 0.5, "the music between the last change and the pause is not the file, in place")
        support.measure(f"USB DAC (a batch device), buffer_ms = 300: {device['rewindCount']} rewinds of 6 asked, 0 underruns; "
                        f"three stretches at 50 % of {', '.join(f'{v:.3f}' for v in lengths)} s (their requests "
                        f"{', '.join(f'{u - l:.3f}-{r - d:.3f}' for d, l, u, r in steps)} s apart), every other frame "
                        f"up to the pause bit-exact and in place")
