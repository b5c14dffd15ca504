"""A benchmark, not a test: run by `scripts/test-kernel --bench` (and at the end of scripts/bench).

tonearmd and Debian's mpd play the same 48 kHz file to snd-aloop with the same 500 ms buffer,
one after the other, and each is measured the same way:
  wake-ups   context switches per second of the player's output thread (tonearm-output*,
             output:*) and of the whole process, over 8 s of steady playback with no client
             talking;
  heard      a volume change to 50 % asked at time T (tonearmd's setVolume on its socket, mpd's
             setvol over its protocol, software volume), three times: T is mapped to a frame by
             the playback substream's trigger time (the driver moves its pointer by the
             monotonic clock), and the change is the first frame of the loopback capture that
             differs from the file by more than 4 steps of 16 bits (tonearmd plays it bit-exact
             at 100 %, mpd's software volume dithers it within a step or two).
tonearmd is measured twice: with `buffer_ms = 500` (the output thread takes back what the
device has not played) and with the frame sizes tonearmd used before (256/1024), whose wake-ups
are what the large buffer saves. Before each tonearmd measured, another plays and changes the
volume unmeasured (its underruns are reported too): under TCG a code path is slow the first time
it runs, while QEMU translates it. The figures are under TCG: wake-up counts and latencies in
audio frames hold, CPU time does not, and is not reported."""

import os
import socket
import statistics
import subprocess
import tempfile
import time

import numpy

import fixtures
import support
from test_loopback import Capture

GUEST_SECONDS = 150
GUEST_ALONE = True  # on one CPU: a wake-up across emulated CPUs is slow (see test_large_buffers)
DEVICE = "hw:CARD=Loopback,DEV=0"
RATE = 48000
STEADY_SECONDS = 8
TOLERANCE = 4 << 16  # 4 steps of 16 bits, in left-justified 32-bit samples


def setUpModule():
    support.modprobe("snd-aloop")


def played_since_trigger():
    status = support.pcm_status("Loopback", 0, "p")
    return (time.monotonic() - float(status["trigger_time"])) * RATE


def switches(pid):
    """{tid: (name, voluntary + involuntary context switches)} of a process's threads."""
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            count = sum(int(line.split(":")[1]) for line in open(f"/proc/{pid}/task/{tid}/status")
                        if "ctxt_switches" in line)
        except OSError:
            continue
        threads[tid] = (name, count)
    return threads


def wakeups(pid, output_prefix):
    """(output thread, whole process) context switches per second over STEADY_SECONDS."""
    before = switches(pid)
    time.sleep(STEADY_SECONDS)
    after = switches(pid)
    def delta(tids):
        return sum(after[t][1] - before.get(t, (None, 0))[1] for t in tids)
    output = [t for t, (name, _) in after.items() if name.startswith(output_prefix)]
    assert output, f"no thread named {output_prefix}* in {sorted(n for n, _ in after.values())}"
    return delta(output) / STEADY_SECONDS, delta(after) / STEADY_SECONDS


def heard_after(captured, reference, marks):
    """Milliseconds from each asked frame to the first capture frame that differs from the file
    by more than TOLERANCE (mpd's software volume converts to 24 bits and dithers back, so at
    100 % it is within a step or two of the file; tonearmd is bit-exact)."""
    first = int(numpy.flatnonzero(reference)[0]) // 2
    played0 = int(numpy.flatnonzero(captured)[0]) // 2 - first
    latencies = []
    for frame in marks:
        asked_at = played0 + int(round(frame))
        start = max(played0, asked_at - RATE // 20)
        frames = min(len(captured) // 2, len(reference) // 2 + played0) - start
        got = captured[2 * start:2 * (start + frames)].reshape(-1, 2)
        want = reference[2 * (start - played0):2 * (start - played0 + frames)].reshape(-1, 2)
        differs = numpy.flatnonzero((numpy.abs(got.astype(numpy.int64) - want) > TOLERANCE).any(axis=1))
        assert len(differs), f"nothing changed after frame {start}"
        latencies.append((start + int(differs[0]) - asked_at) * 1000 / RATE)
    return latencies


def buffer_of_device():
    """(period, buffer) frames of the loopback's playback substream as opened."""
    text = open("/proc/asound/Loopback/pcm0p/sub0/hw_params").read()
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return int(fields["period_size"].split()[0]), int(fields["buffer_size"].split()[0])


class MPD:
    """Debian's mpd on the loopback, software volume, its own ALSA buffer (500 ms by default)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="mpd-")
        music = os.path.dirname(fixtures.path("music48"))
        self.socket = f"{self.dir}/mpd.sock"  # the guest has no network, loopback included
        with open(f"{self.dir}/mpd.conf", "w") as f:
            f.write(f'music_directory "{music}"\nplaylist_directory "{self.dir}"\n'
                    f'db_file "{self.dir}/db"\nstate_file "{self.dir}/state"\n'
                    f'bind_to_address "{self.socket}"\nlog_file "{self.dir}/log"\n'
                    'audio_output {\n type "alsa"\n name "loopback"\n'
                    f' device "{DEVICE}"\n mixer_type "software"\n auto_resample "no"\n'
                    ' auto_format "no"\n auto_channels "no"\n}\n')
        self.process = subprocess.Popen(["mpd", "--no-daemon", f"{self.dir}/mpd.conf"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            self.connection = support.wait_until(self.connect, 20, what="mpd's socket")
        except AssertionError as error:
            raise AssertionError(f"{error}; mpd's log: {self.log()}")
        self.file = self.connection.makefile("rb")
        self.file.readline()  # OK MPD …

    def connect(self):
        if self.process.poll() is not None:
            raise AssertionError(f"mpd exited {self.process.returncode}: {self.log()}")
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(10)
        try:
            connection.connect(self.socket)
            return connection
        except OSError:
            connection.close()
            return None

    def log(self):
        try:
            return open(f"{self.dir}/log").read()[-2000:]
        except OSError:
            return "no log"

    def command(self, text):
        self.connection.sendall(text.encode() + b"\n")
        lines = []
        while True:
            line = self.file.readline().decode().rstrip("\n")
            if line == "OK":
                return lines
            if line.startswith("ACK"):
                raise AssertionError(f"mpd: {text}: {line}")
            lines.append(line)

    def status(self):
        return dict(line.split(": ", 1) for line in self.command("status"))

    def stop(self):
        self.process.terminate()
        self.process.wait(10)


class CommandBench(support.KernelTestCase):
    def measure(self, name, pid, output_prefix, set_volume):
        """Wake-ups over the steady window, then three volume changes."""
        period, buffer = buffer_of_device()
        output, process = wakeups(pid, output_prefix)
        marks = []
        for _ in range(3):
            marks.append(played_since_trigger())
            set_volume(50)
            time.sleep(1.2)
            set_volume(100)
            time.sleep(1.2)
        return {"name": name, "period": period, "buffer": buffer, "output": output, "process": process,
                "marks": marks}

    def warm_up(self, output):
        """A first daemon plays and changes the volume, unmeasured: under TCG a code path runs
        slowly the first time (QEMU translates it), and the binary's pages stay translated
        for the daemon measured next. Its underruns."""
        daemon = self.daemon(f'[output]\ndevice = "{DEVICE}"\n{output}\n')
        daemon.wait_ready()
        daemon.request("add", paths=[fixtures.path("music48")])
        daemon.request("play")
        support.wait_until(lambda: daemon.status()["elapsed"] >= 1.0, 20, what="1 s of music")
        for percent in (50, 100):
            daemon.request("setVolume", percent=percent)
            time.sleep(0.6)
        underruns = daemon.status()["device"]["underruns"]
        daemon.stop()
        return underruns

    def play_tonearmd(self, name, output):
        warm = self.warm_up(output)
        capture = Capture(f"{tempfile.mkdtemp(prefix='capture-')}/capture.raw", "S16_LE", RATE)
        daemon = self.daemon(f'[output]\ndevice = "{DEVICE}"\n{output}\n')
        daemon.wait_ready()
        control = support.Connection(daemon.socket)
        daemon.request("add", paths=[fixtures.path("music48")])
        daemon.request("play")
        support.wait_until(lambda: daemon.status()["elapsed"] >= 1.5, 20, what="1.5 s of music")
        figures = self.measure(name, daemon.process.pid, "tonearm-output",
                               lambda percent: control.request("setVolume", percent=percent))
        figures["underruns"] = daemon.status()["device"]["underruns"]
        figures["warm"] = warm
        control.close()
        figures["heard"] = heard_after(capture.stop(), numpy.fromfile(fixtures.reference("music48"), dtype="<i4"),
                                       figures["marks"])
        daemon.stop()
        return figures

    def play_mpd(self):
        capture = Capture(f"{tempfile.mkdtemp(prefix='capture-')}/capture.raw", "S16_LE", RATE)
        mpd = MPD()
        try:
            mpd.command("update")
            support.wait_until(lambda: "updating_db" not in mpd.status(), 20, what="mpd's database")
            mpd.command(f'add "{os.path.basename(fixtures.path("music48"))}"')
            mpd.command("setvol 100")
            mpd.command("play")
            support.wait_until(lambda: float(mpd.status().get("elapsed", 0)) >= 1.5, 20, what="1.5 s of music")
            figures = self.measure("mpd", mpd.process.pid, "output:", lambda percent: mpd.command(f"setvol {percent}"))
            figures["underruns"] = None
            figures["heard"] = heard_after(capture.stop(), numpy.fromfile(fixtures.reference("music48"), dtype="<i4"),
                                           figures["marks"])
        finally:
            mpd.stop()
        return figures

    def test_tonearmd_beside_mpd(self):
        runs = [self.play_tonearmd("tonearmd, buffer_ms = 500", "buffer_ms = 500\nrewind_guard_ms = 5"),
                self.play_tonearmd("tonearmd, 256/1024 frames", "period_frames = 256\nbuffer_frames = 1024"),
                self.play_mpd()]
        for run in runs:
            heard = run["heard"]
            # An underrun restarts the device's clock, which the asked frames are counted on.
            told = (f"{', '.join(f'{v:.1f}' for v in heard)} ms (median {statistics.median(heard):.1f})"
                    if not run["underruns"] else "not measured (an underrun restarted the device's clock)")
            support.measure(
                f"{run['name']}: period {run['period']}, buffer {run['buffer']} frames; output thread "
                f"{run['output']:.1f} wake-ups/s, process {run['process']:.1f}/s; volume asked → heard {told}"
                + (f"; {run['underruns']} underruns ({run['warm']} in the warm-up run before)"
                   if run["underruns"] is not None else ""))
        large, small, mpd = runs
        support.measure(
            f"ratios: output-thread wake-ups tonearmd(500 ms)/mpd {large['output'] / mpd['output']:.2f}, "
            f"tonearmd(500 ms)/tonearmd(256/1024) {large['output'] / small['output']:.3f}"
            + ("" if large["underruns"] else
               f"; heard (median) tonearmd(500 ms)/mpd {statistics.median(large['heard']) / statistics.median(mpd['heard']):.3f}"))
