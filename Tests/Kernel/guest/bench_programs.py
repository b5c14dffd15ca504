"""A benchmark, not a test: run by scripts/bench-programs (`scripts/test-kernel --bench
bench_programs`), which makes the files it plays and builds the plugin first.

An ALSA program playing through the `tonearm` plugin, beside the same program playing straight
to the card and through ALSA's dmix, all on snd-aloop:

  CPU        aplay plays the same 44.1 kHz 16-bit stereo stream (TONEARM_BENCH_STREAM, copied
             to tmpfs first) four ways at once, each on a playback substream of its own:
             `-D tonearm:media` into tonearmd with its default 256/1024-frame device buffer,
             the same into a tonearmd with `buffer_ms = 500`, `-D hw:` straight to the card,
             and `-D dmix:` at 44.1 kHz (dmix mixes in the program itself: there is no
             server). A program's CPU is its user + sys from wait4's rusage, start-up
             included. A daemon's added CPU is its utime + stime (/proc/PID/stat) over the
             run, from just before the programs start to a second after the last one ends,
             less what an idle tonearmd started beside it (no session, no device opened) used
             over the same seconds. Each path plays a 2 s clip first, unmeasured: under TCG a
             code path is slow the first time it runs.
  heard      `aplay -D tonearm:nav` of a 0.5 s 1 kHz tone (TONEARM_BENCH_PROMPT, 44.1 kHz
             stereo) while arecord captures the substream's loopback: from the moment aplay
             is started to the first sample of the tone in the capture, whose frame n was
             played at the capture's trigger time + n / rate (the loopback moves both sides
             on one clock). Five prompts a second apart into a daemon just started, so the
             first opens the device. The same for `aplay -D hw:` and `aplay -D dmix:` of the
             same file.

The guest has two emulated CPUs and nothing else runs in it, but the emulation (TCG) is many
times slower than a board's CPU, and slower for some code than for other: the CPU seconds are
emulated seconds, to be read as ratios between the paths of the same run, not as a board's
figures. Audio runs on the real clock."""

import os
import shutil
import statistics
import subprocess
import tempfile
import time

import numpy

import support

STREAM = os.environ.get("TONEARM_BENCH_STREAM", "")
PROMPT = os.environ.get("TONEARM_BENCH_PROMPT", "")
WARM = os.environ.get("TONEARM_BENCH_WARM", "")
PLUGIN = os.environ.get("TONEARM_BENCH_PLUGIN", "")
CONF = os.environ.get("TONEARM_BENCH_CONF", "")
SECONDS = int(os.environ.get("TONEARM_BENCH_SECONDS", "600"))

GUEST_SECONDS = SECONDS + 180
GUEST_CPUS = 2
GUEST_ALONE = True
RATE = 44100
PROMPTS = 5
CLK_TCK = os.sysconf("SC_CLK_TCK")


def hw(substream, device=0):
    return f"hw:CARD=Loopback,DEV={device},SUBDEV={substream}"


def dmix(substream):
    # Debian's own dmix definition, at the stream's rate and format, so nothing converts.
    return f"dmix:CARD=Loopback,DEV=0,SUBDEV={substream},RATE={RATE},FORMAT=S16_LE"


def cpu_seconds(pid):
    """utime + stime of a process, all its threads, from /proc/PID/stat."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def memory(pid):
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status") if ":" in line)
    return {key: int(fields[key].split()[0]) for key in ("VmRSS", "VmHWM")}


def substream_status(device, stream, substream):
    path = f"/proc/asound/Loopback/pcm{device}{stream}/sub{substream}/status"
    fields = {}
    for line in open(path):
        if ":" in line:
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
    return fields


class ProgramsBench(support.KernelTestCase):
    def setUp(self):
        super().setUp()
        for name, value in [("TONEARM_BENCH_STREAM", STREAM), ("TONEARM_BENCH_PROMPT", PROMPT),
                            ("TONEARM_BENCH_WARM", WARM), ("TONEARM_BENCH_PLUGIN", PLUGIN),
                            ("TONEARM_BENCH_CONF", CONF)]:
            if not (value and os.path.exists(value)):
                self.skipTest(f"{name} is not set to a file: scripts/bench-programs runs this")
        support.modprobe("snd-aloop")
        self.work = tempfile.mkdtemp(prefix="programs-", dir="/dev/shm")
        self.alsa = os.path.join(self.work, "asound.conf")
        with open(self.alsa, "w") as f:
            f.write(f'</usr/share/alsa/alsa.conf>\npcm_type.tonearm {{ lib "{PLUGIN}" }}\n<{CONF}>\n')

    def tearDown(self):
        super().tearDown()
        shutil.rmtree(self.work, ignore_errors=True)

    def environment(self, daemon=None):
        """Every program gets the same ALSA configuration (the plugin's included), so each pays
        the same to read it."""
        env = dict(os.environ, ALSA_CONFIG_PATH=self.alsa)
        if daemon:
            env["TONEARM_PCM_SOCKET"] = os.path.join(daemon.dir, "pcm.sock")
        return env

    def started(self, device_line):
        daemon = self.daemon(f"[output]\n{device_line}\n")
        daemon.wait_ready()
        return daemon

    def aplay(self, device, path, daemon=None):
        return subprocess.Popen(["aplay", "-q", "-D", device, path], env=self.environment(daemon),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def play(self, device, path, daemon=None, timeout=60):
        process = self.aplay(device, path, daemon)
        _, error = process.communicate(timeout=timeout)
        self.assertEqual(process.returncode, 0, f"aplay -D {device}: {error.decode(errors='replace')}")

    # --- CPU ---------------------------------------------------------------------------------

    def test_1_cpu(self):
        stream = os.path.join(self.work, "stream.wav")
        shutil.copyfile(STREAM, stream)
        small = self.started(f'device = "{hw(0)}"')
        large = self.started(f'device = "{hw(1)}"\nbuffer_ms = 500')
        idle = self.started(f'device = "{hw(7)}"')
        paths = [("tonearm:media, tonearmd 256/1024 frames", "tonearm:media", small),
                 ("tonearm:media, tonearmd buffer_ms = 500", "tonearm:media", large),
                 ("hw: (straight to the card)", hw(2), None),
                 ("dmix: (44.1 kHz)", dmix(3), None)]
        for _, device, daemon in paths:
            self.play(device, WARM, daemon)
        time.sleep(1)

        daemons = [small, large, idle]
        before = {d: cpu_seconds(d.process.pid) for d in daemons}
        processes = {}
        for name, device, daemon in paths:
            processes[self.aplay(device, stream, daemon).pid] = (name, daemon)
        started = time.monotonic()
        programs = {}
        while len(programs) < len(processes):
            for pid, (name, _) in processes.items():
                if pid in programs:
                    continue
                done, status, usage = os.wait4(pid, os.WNOHANG)
                if done:
                    self.assertEqual(status, 0, f"{name}: aplay exited with status {status:#x}")
                    programs[pid] = (usage.ru_utime + usage.ru_stime, time.monotonic() - started)
            time.sleep(0.2)
        time.sleep(1)
        after = {d: cpu_seconds(d.process.pid) for d in daemons}
        window = time.monotonic() - started
        idle_cpu = after[idle] - before[idle]

        totals = {}
        for pid, (name, daemon) in processes.items():
            program, wall = programs[pid]
            if daemon:
                status = daemon.status()["device"]
                added = after[daemon] - before[daemon] - idle_cpu
                totals[name] = program + added
                support.measure(
                    f"{name}: aplay {program:.2f} s + tonearmd added {added:.2f} s "
                    f"({after[daemon] - before[daemon]:.2f} s less idle {idle_cpu:.2f} s) = {totals[name]:.2f} s CPU; "
                    f"device {status.get('format')} {status.get('rate')} Hz, period {status.get('periodFrames')}, "
                    f"buffer {status.get('bufferFrames')} frames, {status.get('underruns')} underruns; aplay ran {wall:.1f} s")
            else:
                totals[name] = program
                support.measure(f"{name}: aplay {program:.2f} s CPU; ran {wall:.1f} s")
        dmix_total, direct_total = totals["dmix: (44.1 kHz)"], totals["hw: (straight to the card)"]
        for name in (paths[0][0], paths[1][0]):
            support.measure(f"ratio {name}: /dmix {totals[name] / dmix_total:.2f} (target <= 1.5), "
                            f"/direct {totals[name] / direct_total:.2f}")
        support.measure(f"CPU window {window:.1f} s for a {SECONDS} s stream; the four played at once on "
                        f"{os.cpu_count()} emulated CPUs")

    # --- request -> heard ---------------------------------------------------------------------

    def heard(self, name, device, substream, daemon=None):
        """Milliseconds from aplay's start to the prompt's first sample in the capture, PROMPTS
        times."""
        capture = os.path.join(self.work, f"capture-{substream}.raw")
        recorder = subprocess.Popen(["arecord", "-q", "-D", hw(substream, 1), "-f", "S16_LE", "-r", str(RATE),
                                     "-c", "2", "-t", "raw", capture], stderr=subprocess.PIPE)
        support.wait_until(lambda: substream_status(1, "c", substream).get("state") == "RUNNING", 10,
                           what="arecord to start")
        trigger = float(substream_status(1, "c", substream)["trigger_time"])
        self.assertLess(abs(time.monotonic() - trigger), 5, "the trigger time is not on the monotonic clock")
        asked = []
        for _ in range(PROMPTS):
            time.sleep(1.0)
            asked.append(time.monotonic())
            self.play(device, PROMPT, daemon)
        time.sleep(1.0)
        recorder.terminate()
        recorder.wait(10)
        data = open(capture, "rb").read()
        frames = numpy.frombuffer(data[: len(data) // 4 * 4], dtype="<i2").reshape(-1, 2)
        loud = numpy.flatnonzero(numpy.abs(frames.astype(numpy.int32)).max(axis=1) > 100)
        latencies = []
        for at in asked:
            expected = int((at - trigger) * RATE)
            after = loud[loud >= expected - RATE // 20]
            self.assertTrue(len(after), f"{name}: no prompt in the capture after {at - trigger:.2f} s")
            latencies.append((trigger + after[0] / RATE - at) * 1000)
        return latencies

    def test_2_heard(self):
        daemon = self.started(f'device = "{hw(4)}"')
        runs = [("tonearm:nav into tonearmd (256/1024 frames, started idle)", "tonearm:nav", 4, daemon),
                ("hw: (straight to the card)", hw(5), 5, None),
                ("dmix: (44.1 kHz)", dmix(6), 6, None)]
        for name, device, substream, d in runs:
            latencies = self.heard(name, device, substream, d)
            support.measure(f"heard {name}: " + ", ".join(f"{v:.1f}" for v in latencies)
                            + f" ms (median {statistics.median(latencies):.1f}; of the 2nd-5th "
                            f"{statistics.median(latencies[1:]):.1f})")
