"""What the kernel tests share in the guest: the daemon, its socket, the rig's requests, drivers
and measurements. Imported on the host too (to list the tests), so importing does nothing."""

import glob
import json
import os
import select
import signal
import socket
import subprocess
import tempfile
import time
import unittest

BIN = os.environ.get("TONEARM_BIN", "")
TONEARMD = os.path.join(BIN, "tonearmd")
TONEARM = os.path.join(BIN, "tonearm")
KERNEL_DIR = os.environ.get("TONEARM_KERNEL_DIR", "")
RIG_OUT = os.environ.get("TONEARM_RIG_OUT", "/rig")
# The checkout (the guest sees the host's files where they are): the ALSA plugin and the test
# programs scripts/test-kernel built.
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ALSA_PLUGIN = os.path.join(TOP, "ALSA", "build", "libasound_module_pcm_tonearm.so")
TOOLS = os.path.join(TOP, ".build-kernel", "tools")


def sh(*command, check=True, timeout=60):
    """Runs a command; its output (stdout and stderr together) as text."""
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {done.returncode}: {done.stdout.strip()}")
    return done.stdout


def modprobe(*modules):
    for module in modules:
        sh("modprobe", module)


def measure(text):
    """A figure the suite prints at the end (and the host keeps in summary.json)."""
    print(f"measured: {text}", flush=True)
    with open(os.path.join(RIG_OUT, "measured.txt"), "a") as f:
        f.write(text + "\n")


def wait_until(predicate, timeout, interval=0.05, what="the condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def card_id(match):
    """The id of the ALSA card whose /proc/asound/cards line contains `match`."""
    for line in open("/proc/asound/cards"):
        if match in line and "[" in line:
            return line.split("[", 1)[1].split("]", 1)[0].strip()
    return None


def pcm_status(card, device=0, stream="p"):
    """The kernel's view of a PCM substream (/proc/asound/CARD/pcmNp/sub0/status) as a dict."""
    path = f"/proc/asound/{card}/pcm{device}{stream}/sub0/status"
    try:
        text = open(path).read()
    except OSError:
        return {}
    fields = {}
    for line in text.splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
    return fields


def dmesg_tail(count=25):
    return "\n".join(sh("dmesg", "-S", check=False).splitlines()[-count:])


class Daemon:
    """tonearmd with a profile, in a folder of its own; its log is kept for failures."""

    def __init__(self, profile, name="tonearmd", music_dir=None, args=(), user=None):
        self.dir = tempfile.mkdtemp(prefix=name + "-")
        self.socket = os.path.join(self.dir, "control.sock")
        # Where ALSA programs' sessions come in: beside the control socket.
        self.pcm_socket = os.path.join(self.dir, "pcm.sock")
        self.log_path = os.path.join(self.dir, "tonearmd.log")
        self.profile = os.path.join(self.dir, "board.toml")
        with open(self.profile, "w") as f:
            f.write(profile)
        # The MPD server (6600) and the web remote (8080), on by default, are off unless a test
        # asks: two daemons of a test never meet on a port.
        mpd = [] if "--mpd-port" in args else ["--mpd-port", "0"]
        web = [] if "--web-port" in args else ["--web-port", "0"]
        command = [TONEARMD, "--config", self.profile, "--socket", self.socket,
                   "--state-dir", os.path.join(self.dir, "state"), "--log-level", "debug", *mpd, *web, *args]
        if music_dir:
            command += ["--music-dir", music_dir]
        environment = None
        if user:
            # As the service runs: another user, with its groups (audio for the card), its
            # folder its own and its runtime directory in it.
            sh("chown", "-R", f"{user}:{user}", self.dir)
            command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"] + command
            environment = dict(os.environ, XDG_RUNTIME_DIR=self.dir)
        self.log_file = open(self.log_path, "wb")
        self.process = subprocess.Popen(command, stdout=self.log_file, stderr=subprocess.STDOUT, env=environment)
        self.events = None

    def wait_ready(self, timeout=20):
        def ready():
            if self.process.poll() is not None:
                raise AssertionError(f"tonearmd exited {self.process.returncode}:\n{self.log()}")
            try:
                return self.request("status")
            except OSError:
                return None
        return wait_until(ready, timeout, what="tonearmd's socket")

    def request(self, command, **arguments):
        """One request on a fresh connection; the result, or an AssertionError with the error."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.socket)
            s.sendall(json.dumps({"id": 1, "command": command, **arguments}).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        reply = json.loads(data)
        if not reply.get("ok"):
            raise AssertionError(f"{command}: {reply.get('error')}")
        return reply["result"]

    def status(self):
        return self.request("status")

    def cli(self, *arguments, check=True, timeout=60):
        return sh(TONEARM, "--socket", self.socket, *arguments, check=check, timeout=timeout)

    def subscribe(self, *topics):
        """A connection that receives events; read them with next_event."""
        self.events = Connection(self.socket)
        self.events.request("subscribe", topics=list(topics))

    def next_event(self, topic, timeout=10, where=lambda data: True):
        """The next event of a topic whose data satisfies `where`, and when it arrived."""
        return self.events.next_event(topic, timeout, where)

    def program_environment(self):
        """The environment for an ALSA program that plays through `tonearm:…` into this daemon:
        an alsa-lib configuration that loads the plugin as built (not installed) and includes
        the snippet the install puts in /etc/alsa/conf.d."""
        assert os.path.exists(ALSA_PLUGIN), f"no ALSA plugin at {ALSA_PLUGIN} (scripts/test-kernel builds it)"
        path = os.path.join(self.dir, "programs.conf")
        with open(path, "w") as f:
            f.write("</usr/share/alsa/alsa.conf>\n"
                    f'pcm_type.tonearm {{ lib "{ALSA_PLUGIN}" }}\n'
                    f"<{os.path.join(TOP, 'ALSA', '50-tonearm.conf')}>\n")
        return dict(os.environ, ALSA_CONFIG_PATH=path, TONEARM_PCM_SOCKET=self.pcm_socket)

    def sessions_named(self, name):
        return [s for s in self.request("sessions")["sessions"] if s["name"] == name]

    def log(self):
        if not self.log_file.closed:
            self.log_file.flush()
        return open(self.log_path, errors="replace").read()

    def stop(self):
        if self.events:
            self.events.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log_file.close()
        return self.process.returncode


class Connection:
    """One connection to the daemon's socket: requests on it, and the events it is sent (kept,
    with when they arrived, while a request waits for its answer)."""

    def __init__(self, path):
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.connect(path)
        self.pending = b""
        self.backlog = []
        self.next_id = 0

    def request(self, command, **arguments):
        self.next_id += 1
        self.socket.sendall(json.dumps({"id": self.next_id, "command": command, **arguments}).encode() + b"\n")
        while True:
            message = self.read(10)
            assert message is not None, f"no answer to {command}"
            if message.get("id") == self.next_id:
                assert message.get("ok"), f"{command}: {message}"
                return message["result"]
            self.backlog.append((message, time.monotonic()))

    def read(self, timeout):
        """The next message, or None after `timeout` seconds or when the daemon hangs up."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.socket], [], [], left)[0]:
                return None
            chunk = self.socket.recv(65536)
            if not chunk:
                return None
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def next_event(self, topic, timeout=10, where=lambda data: True):
        """The next event of a topic whose data satisfies `where`, and when it arrived."""
        deadline = time.monotonic() + timeout
        while True:
            if self.backlog:
                message, arrived = self.backlog.pop(0)
            else:
                message, arrived = self.read(max(0.0, deadline - time.monotonic())), time.monotonic()
                if message is None:
                    raise AssertionError(f"no {topic} event within {timeout} s")
            if message.get("event") == topic and where(message["data"]):
                return message["data"], arrived

    def close(self):
        self.socket.close()


class RigClient:
    """The host's side of this guest (Tests/Kernel/rig.py): the USB DAC's plug."""

    def __init__(self):
        self.file = open(virtio_port("tonearm.rig"), "r+b", buffering=0)

    def call(self, op, **arguments):
        self.file.write(json.dumps({"op": op, **arguments}).encode() + b"\n")
        line = b""
        while not line.endswith(b"\n"):
            line += self.file.read(1)
        reply = json.loads(line)
        if not reply.get("ok"):
            raise AssertionError(f"rig {op}: {reply.get('error')}")
        return reply


def virtio_port(name):
    for entry in glob.glob("/sys/class/virtio-ports/*"):
        label = os.path.join(entry, "name")  # the console has none
        if os.path.exists(label) and open(label).read().strip() == name:
            return "/dev/" + os.path.basename(entry)
    raise AssertionError(f"no virtio port {name}")


class KernelTestCase(unittest.TestCase):
    """Stops the daemons a test started; on a failure prints their logs and the kernel's."""

    def setUp(self):
        self.daemons = []

    def daemon(self, profile, **options):
        d = Daemon(profile, **options)
        self.daemons.append(d)
        return d

    def playing(self, profile, paths, **options):
        """A daemon with `paths` queued, playing."""
        d = self.daemon(profile, **options)
        d.wait_ready()
        d.request("add", paths=paths)
        d.request("play")
        wait_until(lambda: d.status()["state"] == "playing", 10, what="playing")
        return d

    def play_on_a_rewinding_buffer(self, daemon, path):
        """`path` played 1.5 s into the 6000/24000-frame device buffer of `daemon`'s profile,
        which must rewind; the device's status."""
        daemon.request("add", paths=[path])
        daemon.request("play")
        wait_until(lambda: daemon.status()["elapsed"] >= 1.5, 20, what="1.5 s of music")
        device = daemon.status()["device"]
        self.assertEqual((device["periodFrames"], device["bufferFrames"], device["rewinds"]), (6000, 24000, True))
        return device

    def without_an_underrun(self, attempt, what, tries=3):
        """`attempt()`, which returns the device's status first, made again while that device
        underran, up to `tries` times; each such run printed. For tests that match a capture to
        the file frame by frame after rewinds that leave the device only a few milliseconds: an
        emulated CPU on a busy host can miss those, and an underrun moves the music in the
        capture. What `attempt()` returned the last time."""
        for run in range(1, tries + 1):
            result = attempt()
            underruns = result[0]["underruns"]
            if underruns == 0:
                return result
            measure(f"{what}: run {run} underran {underruns} time(s) (emulated CPU); made again")
        self.assertEqual(underruns, 0, f"{what}: {tries} runs each underran")
        return result

    def tearDown(self):
        for d in self.daemons:
            d.stop()

    def failure_report(self):
        parts = []
        for d in self.daemons:
            try:
                parts.append(f"--- tonearm status: {d.status()}")
            except Exception as error:
                parts.append(f"--- tonearm status: {error}")
            parts.append(f"--- tonearmd log ({d.log_path}), last lines:\n" + "\n".join(d.log().splitlines()[-40:]))
        parts.append("--- kernel log, last lines:\n" + dmesg_tail())
        return "\n".join(parts)
