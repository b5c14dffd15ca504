"""snd-aloop: tonearmd plays to hw:Loopback,0,0 while arecord records hw:Loopback,1,0.

The capture side opens first, so the driver holds the daemon to its format and rate: the
daemon negotiates with a real driver's hw_params. What comes back must be libFLAC's decode,
bit for bit and without a gap across files; a prompt ducks the music by 15 dB and a call
interrupts it, heard at those levels in the capture."""

import signal
import subprocess
import time

import numpy

import fixtures
import support

GUEST_SECONDS = 120
PROFILE = """
[output]
device = "hw:CARD=Loopback,DEV=0"
"""


def setUpModule():
    support.modprobe("snd-aloop")


def as_left_justified(raw, fmt):
    """Captured bytes of an ALSA format as left-justified 32-bit samples."""
    if fmt == "S16_LE":
        return numpy.frombuffer(raw[: len(raw) // 2 * 2], dtype="<i2").astype(numpy.int32) << 16
    samples = numpy.frombuffer(raw[: len(raw) // 4 * 4], dtype="<i4")
    return samples << 8 if fmt == "S24_LE" else samples


class Capture:
    def __init__(self, path, fmt, rate):
        self.path, self.fmt = path, fmt
        # A 2 s buffer, not arecord's 0.5 s: under emulation beside other work the guest can
        # stall for longer than half a second, and a capture that overruns has lost what the
        # test is there to hear. Its periods stay arecord's 125 ms: what is read when the
        # capture stops is what it had by then.
        self.process = subprocess.Popen(
            ["arecord", "-q", "-D", "hw:CARD=Loopback,DEV=1", "-f", fmt, "-r", str(rate), "-c", "2",
             "--buffer-time=2000000", "--period-time=125000", "-t", "raw", path], stderr=subprocess.PIPE)
        # The daemon must find the capture side open, holding the format.
        support.wait_until(lambda: support.pcm_status("Loopback", 1, "c").get("state") == "RUNNING",
                           10, what="arecord to start")
        self.rate = rate

    def heard_at(self, frame):
        """When capture frame `frame` arrived, on the monotonic clock. snd-aloop moves both
        sides' pointers by one clock and copies what the playback side plays as it plays it, so
        the capture's frame k is what was played (k / rate) s after the capture's trigger: the
        capture's own delay (what arecord had not read yet) does not enter."""
        if not hasattr(self, "trigger"):
            status = support.pcm_status("Loopback", 1, "c")
            now = time.monotonic()
            self.trigger = float(status["trigger_time"])
            assert abs(now - self.trigger) < 3600, f"trigger_time {self.trigger} is not on the monotonic clock ({now})"
        return self.trigger + frame / self.rate

    def stop(self):
        self.heard_at(0)  # the trigger, read while the capture runs
        self.process.send_signal(signal.SIGINT)
        self.process.wait(10)
        self.errors = self.process.stderr.read().decode(errors="replace")
        return as_left_justified(open(self.path, "rb").read(), self.fmt)


def segments(samples, length):
    """The runs of audio between runs of 16 or more silent frames (white noise has none), up to
    the run that holds sample `length` of audio, and the rest after it in the last."""
    frames = samples[: len(samples) // 2 * 2].reshape(-1, 2)
    silent = numpy.concatenate(([0], (~frames.any(axis=1)).astype(numpy.int8), [0]))
    edges = numpy.flatnonzero(numpy.diff(silent))
    runs, at, audio = [], 0, 0
    for begin, end in zip(edges[0::2], edges[1::2]):
        if end - begin < 16:
            continue
        if audio + (begin - at) * 2 >= length:
            break
        runs.append(frames[at:begin].reshape(-1))
        audio += (begin - at) * 2
        at = end
    runs.append(frames[at:].reshape(-1))
    return runs


def find(reference, needle, after):
    """Where (in samples, frame-aligned) `needle` is in the reference from sample `after`; -1."""
    haystack, key = reference.tobytes(), needle.tobytes()
    found = haystack.find(key, after * 4)
    while found >= 0 and found % 8:
        found = haystack.find(key, found + 4)
    return found // 4 if found >= 0 else -1


def joined_across_gaps(captured, reference, buffer_frames):
    """The capture with the device's underruns taken out, how many there were, and the frames
    lost at them. What snd-aloop makes of an underrun, seen with aplay as with the daemon: the
    frames still in its ring when the playback side ran dry are not captured; up to a buffer of
    the ring's earlier contents (the files' earlier audio) stands in their place, then silence.
    So before each gap, up to a buffer of the files' earlier audio is taken out, and the audio
    after the gap must resume at most a buffer after the last frame captured, never before it:
    nothing played twice, nothing lost beyond what the ring held."""
    runs = segments(captured, len(reference))
    joined, at, lost = [], 0, 0
    buffer = buffer_frames * 2
    for run, following in zip(runs, runs[1:]):
        gap = len(joined) // 2 + 1
        resumes = find(reference, following[:64], at)
        if resumes < 0:
            return None, f"the audio after gap {gap} is not the files' audio from frame {at // 2} on", 0
        ahead = reference[at:at + len(run)]
        differ = numpy.flatnonzero(run[:len(ahead)] != ahead)
        played = (int(differ[0]) if len(differ) else len(ahead)) // 2 * 2
        stale = run[played:]
        if len(stale) > buffer or (len(stale) and find(reference[:at + played], stale, 0) < 0):
            return None, (f"{len(stale) // 2} frames before gap {gap} (after frame {(at + played) // 2}) "
                          f"that are not a replay of the ring"), 0
        if not at + played <= resumes <= at + played + buffer:
            return None, (f"after gap {gap} the audio resumes at frame {resumes // 2}, the last one captured "
                          f"before it was frame {(at + played) // 2}: more than a buffer ({buffer_frames}) lost, or "
                          f"audio played twice"), 0
        joined += [run[:played], reference[at + played:resumes]]
        lost += (resumes - at - played) // 2
        at = resumes
    joined.append(runs[-1])
    return numpy.concatenate(joined), len(runs) - 1, lost


def where_from(window, reference, mismatches):
    """Where in the files the audio at the first mismatch comes from, told as a skip or a repeat."""
    if not len(mismatches):
        return ""
    at = int(mismatches[0]) - int(mismatches[0]) % 2
    found = find(reference, window[at:at + 64], 0)
    if found < 0:
        return "; the audio there is not in the files"
    moved = (found - at) // 2
    return f"; the audio there is the files' {abs(moved)} frames {'later' if moved > 0 else 'earlier'}"


class LoopbackTests(support.KernelTestCase):
    def play_and_capture(self, name, fmt, rate, stall=None):
        daemon = self.daemon(PROFILE)
        daemon.wait_ready()
        capture = Capture(f"{daemon.dir}/capture.raw", fmt, rate)
        daemon.request("add", paths=fixtures.parts(name))
        daemon.request("play")
        support.wait_until(lambda: daemon.status()["device"].get("format"), 20, what="the device to open")
        device = daemon.status()["device"]
        if stall:
            support.wait_until(lambda: daemon.status()["elapsed"] >= 1.0, 20, what="a second played")
            daemon.process.send_signal(signal.SIGSTOP)
            time.sleep(stall)
            daemon.process.send_signal(signal.SIGCONT)
        support.wait_until(lambda: daemon.status()["state"] == "stopped", 60, interval=0.2,
                           what="the queue to play out")
        underruns = daemon.status()["device"]["underruns"]
        time.sleep(0.3)
        captured = capture.stop()
        reference = numpy.fromfile(fixtures.reference(name), dtype="<i4")
        return captured, reference, device, underruns

    def assert_bit_exact(self, name, fmt, rate, stall=None):
        captured, reference, device, underruns = self.play_and_capture(name, fmt, rate, stall)
        self.assertEqual(device["format"], fmt, "the daemon did not take the format the driver holds")
        self.assertEqual(device["rate"], rate)
        first = int(numpy.flatnonzero(reference)[0])
        nonzero = numpy.flatnonzero(captured)
        self.assertTrue(len(nonzero), "the capture is silent")
        start = int(nonzero[0]) - first
        self.assertEqual(start % 2, 0, "the capture starts mid-frame")
        captured = captured[start:]
        gaps = lost = 0
        if underruns:
            # A host that stops the emulated CPU for longer than the buffer makes the device
            # underrun: the capture then holds silence where the device waited. What is meaningful
            # is that every sample comes once and in order around the gaps, and that there are no
            # more gaps than underruns counted.
            captured, gaps, lost = joined_across_gaps(captured, reference, device["bufferFrames"])
            self.assertIsNotNone(captured, f"{gaps} ({underruns} underruns)")
            self.assertLessEqual(gaps, underruns, f"{gaps} gaps of silence for {underruns} underruns")
        window = captured[:len(reference)]
        self.assertEqual(len(window), len(reference), "the capture is shorter than the files")
        mismatches = numpy.flatnonzero(window != reference)
        self.assertEqual(len(mismatches), 0,
                         f"{len(mismatches)} samples differ, the first at frame {mismatches[:1] // 2} "
                         f"({underruns} underruns, {gaps} gaps taken out{where_from(window, reference, mismatches)})")
        # After the last file only silence — or what snd-aloop replays when the playback side
        # stops mid-period: stale samples of its ring, which are the files' own audio.
        tail = captured[len(reference):]
        after = numpy.flatnonzero(tail)
        if len(after):
            stale = tail[: after[-1] + 1 + (after[-1] + 1) % 2]
            self.assertLessEqual(len(stale) // 2, device["bufferFrames"],
                                 f"{len(after)} nonzero samples up to {len(stale) // 2} frames after the last file")
            self.assertIn(stale.tobytes(), reference.tobytes(),
                          f"{len(stale) // 2} frames after the last file that are not the files' audio: "
                          f"{stale[after[:8]] >> 16}")
        support.measure(f"loopback {name}: {len(reference) // 2} frames in {len(fixtures.parts(name))} files "
                        f"bit-exact as {fmt} at {rate} Hz (period {device['periodFrames']}, "
                        f"buffer {device['bufferFrames']} frames)"
                        + (f"; {underruns} underruns, {gaps} gaps of silence at them, {lost} frames that were in the "
                           f"ring at a gap not captured" if underruns else ""))
        return underruns, gaps

    def test_16_bit_gapless_bit_exact(self):
        self.assert_bit_exact("noise16", "S16_LE", 44100)

    def test_24_bit_in_32_bit_container(self):
        self.assert_bit_exact("noise24", "S32_LE", 48000)

    def test_24_bit_in_s24_le(self):
        self.assert_bit_exact("noise24", "S24_LE", 48000)

    def test_an_underrun_leaves_a_gap_and_the_audio_goes_on_in_order(self):
        # The daemon stopped for longer than its buffer: the device underruns, and once the
        # daemon runs again it goes on from the sample after the last one it wrote (what
        # snd-aloop's ring held at the underrun it does not capture, for aplay as for us).
        underruns, gaps = self.assert_bit_exact("noise16", "S16_LE", 44100, stall=0.3)
        self.assertGreaterEqual(underruns, 1, "a 0.3 s stop of a 23 ms buffer did not underrun")
        self.assertGreaterEqual(gaps, 1)

    def test_duck_and_interruption_levels(self):
        daemon = self.daemon(PROFILE)
        daemon.wait_ready()
        capture = Capture(f"{daemon.dir}/capture.raw", "S16_LE", 48000)
        daemon.request("add", paths=[fixtures.path("tone48k")])
        daemon.request("play")
        support.wait_until(lambda: daemon.status()["elapsed"] >= 2.0, 20, what="2 s of music")
        daemon.cli("announce", fixtures.path("silence3"))
        time.sleep(1.5)
        daemon.cli("announce", "--category", "playAndRecord", "--notify-others", fixtures.path("silence2"))
        time.sleep(2.0)
        daemon.request("stop")
        time.sleep(0.3)
        left = capture.stop()[0::2].astype(numpy.float64) / 2**31

        window = 2400  # 50 ms
        count = len(left) // window
        rms = numpy.sqrt(numpy.mean(left[: count * window].reshape(count, window) ** 2, axis=1))
        level = 20 * numpy.log10(numpy.maximum(rms, 1e-9))
        full = float(numpy.median(level[level > level.max() - 3]))
        kinds = numpy.full(count, "T")
        kinds[numpy.abs(level - full) < 0.5] = "F"
        kinds[numpy.abs(level - full + 15) < 1.0] = "D"
        kinds[level < full - 60] = "S"
        runs = []  # (kind, windows) of runs of at least 0.4 s
        start = 0
        for i in range(1, count + 1):
            if i == count or kinds[i] != kinds[start]:
                if kinds[start] != "T" and i - start >= 8:
                    if runs and runs[-1][0] == kinds[start]:
                        runs[-1] = (kinds[start], runs[-1][1] + i - start)
                    else:
                        runs.append((kinds[start], i - start))
                start = i
        while runs and runs[0][0] == "S":
            runs.pop(0)
        while runs and runs[-1][0] == "S":
            runs.pop()
        self.assertEqual([k for k, _ in runs], ["F", "D", "F", "S", "F"],
                         f"level runs (kind, 50 ms windows): {runs}")
        ducked = level[kinds == "D"] - full
        self.assertGreaterEqual(runs[1][1] * 0.05, 2.0, "the duck lasted less than the prompt")
        self.assertGreaterEqual(runs[3][1] * 0.05, 1.2, "the interruption lasted less than the call")
        support.measure(f"loopback levels: music {full:.2f} dBFS; ducked {numpy.median(ducked):.2f} dB "
                        f"for {runs[1][1] * 0.05:.2f} s; interrupted below {full - 60:.0f} dBFS for "
                        f"{runs[3][1] * 0.05:.2f} s, then back to full level")
