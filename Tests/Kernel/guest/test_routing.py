"""One routing rule on real drivers: while a client's session owns Now Playing, `tonearm pause`,
a GPIO button (gpio-sim) and a steering-wheel key (uinput) all reach that client; without one,
the same three pause the player."""

import json
import select
import socket
import time

from evdev import ecodes

import fixtures
import support
import test_gpio as gpio
import test_input as keys

GUEST_SECONDS = 60


def setUpModule():
    gpio.setUpModule()
    support.modprobe("uinput", "evdev")


def profile(key_path):
    return f"""
[output]
device = "hw:CARD=Dummy,DEV=0"

[gpio]
chip = "tonearm-sim"
debounce_ms = 20

[[button]]
name = "pause"
line = "play"
command = "pause"

[[input]]
path = "{key_path}"
map = {{ KEY_F1 = "pause" }}
"""


class App:
    """A client with a session of its own, on one connection: requests and the events about it."""

    def __init__(self, path):
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.connect(path)
        self.pending = b""
        self.events = []
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
            self.events.append(message)

    def read(self, timeout):
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

    def forwarded(self, count, timeout=10):
        """The remoteCommand events, once `count` have come."""
        deadline = time.monotonic() + timeout
        while len(self.commands()) < count and time.monotonic() < deadline:
            message = self.read(max(0.0, deadline - time.monotonic()))
            if message is not None:
                self.events.append(message)
        return self.commands()

    def commands(self):
        return [m["data"] for m in self.events if m.get("event") == "remoteCommand"]

    def close(self):
        self.socket.close()


class RoutingTests(support.KernelTestCase):
    def test_pause_from_every_source_goes_to_the_now_playing_owner(self):
        wheel = keys.Wheel()
        self.addCleanup(wheel.close)
        for offset in range(len(gpio.LINES)):
            gpio.pull(offset, 0)
        daemon = self.playing(profile(wheel.path), fixtures.tracks())
        support.wait_until(lambda: gpio.value(gpio.PLAY) == 1, 5, what="the button's pull-up")
        time.sleep(0.3)

        def button():
            gpio.pull(gpio.PLAY, 0)
            time.sleep(0.1)
            gpio.pull(gpio.PLAY, 1)

        sources = [
            ("tonearm pause", lambda: daemon.cli("pause")),
            ("a GPIO button", button),
            ("a key", lambda: keys.press(wheel, ecodes.KEY_F1)),
        ]

        app = App(daemon.socket)
        self.addCleanup(app.close)
        app.request("subscribe", topics=["remoteCommand"])
        session = app.request("sessionOpen", category="playback", remoteCommands=True)["session"]
        app.request("sessionActivate", session=session)
        self.assertEqual(daemon.request("sessions")["nowPlayingOwner"], session)
        support.wait_until(lambda: daemon.status()["state"] == "paused", 5, what="the player interrupted")
        before = daemon.status()

        for _, act in sources:
            act()
        forwarded = app.forwarded(len(sources))
        self.assertEqual([c["name"] for c in forwarded], ["pause"] * len(sources), forwarded)
        self.assertEqual({c["session"] for c in forwarded}, {session})
        after = daemon.status()
        self.assertEqual((after["state"], after["queueIndex"]), (before["state"], before["queueIndex"]),
                         "nothing reached the player")
        refused = [line for line in daemon.log().splitlines() if ": pause:" in line or "pause is disabled" in line]
        self.assertEqual(refused, [], "every source got the same status, success")

        app.request("sessionClose", session=session)
        self.assertEqual(daemon.request("sessions")["nowPlayingOwner"], 1)
        for name, act in sources:
            daemon.cli("play")
            support.wait_until(lambda: daemon.status()["state"] == "playing", 5, what=f"playing before {name}")
            act()
            support.wait_until(lambda: daemon.status()["state"] == "paused", 5, what=f"paused by {name}")
        self.assertEqual(app.forwarded(len(sources) + 1, timeout=0.5), forwarded, "nothing goes to a closed session")
