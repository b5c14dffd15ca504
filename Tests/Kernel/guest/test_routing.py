"""One routing rule on real drivers: while a client's session owns Now Playing, `tonearm pause`,
a GPIO button (gpio-sim) and a steering-wheel key (uinput) all reach that client; without one,
the same three pause the player."""

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

        app = support.Connection(daemon.socket)
        self.addCleanup(app.close)

        def forwarded(count, timeout=10):
            """The remoteCommand events the app has had, once `count` came (or the time ran out)."""
            seen = []
            try:
                while len(seen) < count:
                    seen.append(app.next_event("remoteCommand", timeout)[0])
            except AssertionError:
                pass
            return seen

        app.request("subscribe", topics=["remoteCommand"])
        session = app.request("sessionOpen", category="playback", remoteCommands=True)["session"]
        app.request("sessionActivate", session=session)
        self.assertEqual(daemon.request("sessions")["nowPlayingOwner"], session)
        support.wait_until(lambda: daemon.status()["state"] == "paused", 5, what="the player interrupted")
        before = daemon.status()

        for _, act in sources:
            act()
        commands = forwarded(len(sources))
        self.assertEqual([c["name"] for c in commands], ["pause"] * len(sources), commands)
        self.assertEqual({c["session"] for c in commands}, {session})
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
        self.assertEqual(forwarded(1, timeout=0.5), [], "nothing goes to a closed session")
