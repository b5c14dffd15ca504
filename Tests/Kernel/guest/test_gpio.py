"""GPIO through libgpiod on a real chip: gpio-sim (built by scripts/test-kernel), set up through
configfs with named lines and driven by writing pulls in sysfs, as a finger on a button would.
The daemon's board profile names the chip by label and by name, lines by name and by offset."""

import os
import signal
import time

import fixtures
import support

GUEST_SECONDS = 90
CONFIG = "/sys/kernel/config/gpio-sim/tonearm"
LINES = ["play", "next-key", "vol-up", "knob-a", "knob-b", "mute", "spare"]
PLAY, NEXT, LOUDER, KNOB_A, KNOB_B, MUTE = range(6)
chip_name = None
device = None


def setUpModule():
    global chip_name, device
    support.modprobe("snd-dummy", "configfs")
    if not os.path.isdir("/sys/module/gpio_sim"):
        support.sh("insmod", os.path.join(support.KERNEL_DIR, "gpio-sim.ko"))
    if not os.path.ismount("/sys/kernel/config"):
        support.sh("mount", "-t", "configfs", "none", "/sys/kernel/config")
    if not os.path.isdir(CONFIG):
        os.makedirs(f"{CONFIG}/bank0")
        write(f"{CONFIG}/bank0/num_lines", len(LINES))
        write(f"{CONFIG}/bank0/label", "tonearm-sim")
        for offset, name in enumerate(LINES):
            os.mkdir(f"{CONFIG}/bank0/line{offset}")
            write(f"{CONFIG}/bank0/line{offset}/name", name)
        write(f"{CONFIG}/live", 1)
    device = open(f"{CONFIG}/dev_name").read().strip()
    chip_name = open(f"{CONFIG}/bank0/chip_name").read().strip()


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def line_path(offset, attribute):
    return f"/sys/devices/platform/{device}/{chip_name}/sim_gpio{offset}/{attribute}"


def pull(offset, level):
    """Pulls a line high or low, as the button or switch would; the kernel stamps the edge."""
    at = time.monotonic()
    write(line_path(offset, "pull"), "pull-up" if level else "pull-down")
    return at


def value(offset):
    return int(open(line_path(offset, "value")).read())


def profile(extra=""):
    return f"""
[output]
device = "hw:CARD=Dummy,DEV=0"

[gpio]
chip = "tonearm-sim"                  # by label
debounce_ms = 20
long_press_ms = 1500                  # a short press stays short in a guest the host stalls

[[button]]
name = "play"
line = "play"                         # by name
command = "togglePlayPause"
long_press_command = "stop"

[[button]]
name = "next"
chip = "{chip_name}"                  # by name
line = {NEXT}                         # by offset
command = "nextTrack"

[[button]]
name = "louder"
line = "vol-up"
command = "volumeUp"
repeat_ms = 100
repeat_delay_ms = 300

[[encoder]]
name = "volume"
line_a = "knob-a"
line_b = "knob-b"
steps_per_detent = 4
step_percent = 2

[mute_switch]
line = "mute"
{extra}"""


# A 4-step encoder resting with both lines high (pulled up): A leads B clockwise.
CLOCKWISE = [(KNOB_A, 0), (KNOB_B, 0), (KNOB_A, 1), (KNOB_B, 1)]
COUNTERCLOCKWISE = [(KNOB_B, 0), (KNOB_A, 0), (KNOB_B, 1), (KNOB_A, 1)]


class GPIOTests(support.KernelTestCase):
    def setUp(self):
        super().setUp()
        # Nothing connected: gpio-sim's lines rest pulled down until a consumer asks for a bias.
        for offset in range(len(LINES)):
            pull(offset, 0)

    def start(self, extra=""):
        daemon = self.playing(profile(extra), fixtures.tracks())
        daemon.request("volume", percent=50)
        return daemon

    def click(self, offset):
        pull(offset, 0)
        time.sleep(0.1)
        pull(offset, 1)

    def turn(self, steps):
        for offset, level in steps:
            pull(offset, level)
            time.sleep(0.03)

    def test_buttons_encoder_and_mute_switch(self):
        daemon = self.start()
        # Bias honoured: the daemon's pull-ups hold every idle line high; active-low makes a
        # high button "released", so nothing was pressed at start (a press held since then
        # would have been a long press: stop).
        self.assertEqual([value(offset) for offset in range(6)], [1] * 6)
        time.sleep(0.8)
        self.assertEqual(daemon.status()["state"], "playing")

        # A button without a long press acts on the press itself (once debounced): the time from
        # the edge to the command applied, seen as the Now Playing event of the next track.
        daemon.subscribe("nowPlaying")
        latencies = []
        for title in ("Two", "Three"):
            pressed = pull(NEXT, 0)
            _, arrived = daemon.next_event("nowPlaying", where=lambda d, t=title: (d.get("info") or {}).get("title") == t)
            latencies.append((arrived - pressed) * 1000)
            time.sleep(0.1)
            pull(NEXT, 1)
            time.sleep(0.15)
        support.measure("GPIO edge (pull written; the kernel stamps it) to command applied (its Now Playing "
                        "event): " + ", ".join(f"{ms:.1f}" for ms in latencies) + " ms, debounce 20 ms included")

        # A button with a long press acts on the release of a short press.
        for expected in ("paused", "playing"):
            self.click(PLAY)
            support.wait_until(lambda: daemon.status()["state"] == expected, 5, what=expected)

        # Held past long_press_ms: the long-press command, and nothing on release.
        pull(PLAY, 0)
        support.wait_until(lambda: daemon.status()["state"] == "stopped", 5, what="the long press (stop)")
        time.sleep(0.2)
        pull(PLAY, 1)
        time.sleep(0.4)
        self.assertEqual(daemon.status()["state"], "stopped", "the release after a long press toggled")

        # Held: the command again every repeat_ms after repeat_delay_ms.
        start = daemon.status()["volume"]
        down = pull(LOUDER, 0)
        time.sleep(1.0)
        hold = pull(LOUDER, 1) - down
        time.sleep(0.3)
        held = daemon.status()["volume"]
        time.sleep(0.5)
        self.assertEqual(daemon.status()["volume"], held, "the repeat went on after the release")
        # 5 % a step: the press, then one at 300 ms and every 100 ms after.
        steps, rest = divmod(held - start, 5)
        expected = 2 + int((hold - 0.3) / 0.1)
        self.assertEqual(rest, 0)
        self.assertLessEqual(abs(steps - expected), 1, f"{steps} steps in a {hold:.3f} s hold")
        support.measure(f"GPIO button held {hold:.3f} s (repeat after 300 ms, every 100 ms): {steps} volume steps")

        # The encoder: two detents clockwise, one back.
        before = daemon.status()["volume"]
        self.turn(CLOCKWISE + CLOCKWISE)
        support.wait_until(lambda: daemon.status()["volume"] == before + 4, 5, what="volume +4 from the encoder")
        self.turn(COUNTERCLOCKWISE)
        support.wait_until(lambda: daemon.status()["volume"] == before + 2, 5, what="volume -2 from the encoder")
        # A nudge that comes back counts nothing.
        self.turn([(KNOB_A, 0), (KNOB_A, 1)])
        time.sleep(0.3)
        self.assertEqual(daemon.status()["volume"], before + 2)

        # The mute switch: closed pulls the line low.
        pull(MUTE, 0)
        support.wait_until(lambda: daemon.request("sessions")["muted"], 5, what="mute on")
        pull(MUTE, 1)
        support.wait_until(lambda: not daemon.request("sessions")["muted"], 5, what="mute off")

    def test_edges_are_timed_by_the_kernel_not_by_when_they_are_read(self):
        # A 0.1 s press made while the daemon is frozen and read 0.7 s after its release: by
        # the kernel's timestamps a short press (toggle), by the time of reading a bounce
        # (nothing). (0.1 s, far under long_press_ms: in a guest on a loaded host a press of
        # 0.108 s by the guest's clock once lasted past 600 ms by the kernel's stamps.)
        daemon = self.start()
        time.sleep(0.3)
        daemon.process.send_signal(signal.SIGSTOP)
        try:
            down = pull(PLAY, 0)
            time.sleep(0.1)
            up = pull(PLAY, 1)
            time.sleep(0.7)
        finally:
            daemon.process.send_signal(signal.SIGCONT)
        support.wait_until(lambda: daemon.status()["state"] != "playing", 5, what="the press to act")
        self.assertEqual(daemon.status()["state"], "paused", f"a press of {up - down:.3f} s by the guest's clock")

    def test_a_missing_line_is_left_out_and_named(self):
        daemon = self.start(extra="""
[[button]]
name = "ghost"
line = "no-such-line"
command = "nextTrack"
""")
        support.wait_until(lambda: "no-such-line" in daemon.log(), 5, what="the missing line in the log")
        line = next(l for l in daemon.log().splitlines() if "no-such-line" in l)
        self.assertIn("no line of that name", line)
        self.assertIn("button ghost left out", line)
        # The rest of the board works.
        self.click(PLAY)
        support.wait_until(lambda: daemon.status()["state"] == "paused", 5, what="the play button")

    def test_a_required_line_or_chip_that_is_missing_stops_the_daemon(self):
        cases = [('line = "no-such-line"', "GPIO line no-such-line on chip 'tonearm-sim': no line of that name"),
                 ('chip = "gpiochip99"\nline = 0', "GPIO line 0 on chip 'gpiochip99': no such chip")]
        for where, message in cases:
            daemon = self.daemon(profile(f"""
[[button]]
name = "vital"
{where}
command = "nextTrack"
required = true
"""))
            self.assertNotEqual(daemon.process.wait(20), 0)
            self.assertIn(message, daemon.log())
            self.assertIn("required", daemon.log())
