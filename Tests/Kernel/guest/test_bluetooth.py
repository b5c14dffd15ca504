"""AVRCP through BlueZ: tonearmd, as the service user on a system bus that has Board/'s policy,
registers its MPRIS object with the org.bluez.Media1 of every adapter (two virtual controllers
from btvirt on hci_vhci, a real bluetoothd), again when bluetoothd restarts, and takes it back
on exit. With the player offered on hci0 only, hci1 plays a car's head unit: paired and AVRCP
connected, its PLAY, PAUSE, FORWARD, BACKWARD and STOP reach the player, and it sees what plays.

Both controllers belong to the one bluetoothd of the guest. A player registered on the head
unit's own adapter too would be offered back to it over the same link, and bluetoothd 5.66 as
the controller then stops following the player's changes after the first: the head-unit test
offers the player on the board's adapter only, as a board with one adapter does."""

import os
import pwd
import shutil
import time

import bluetooth
import fixtures
import support

GUEST_SECONDS = 90
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

PROFILE = """
[output]
device = "hw:CARD=Dummy,DEV=0"

[mpris]
bus = "system"
"""

BOARD, HEAD_UNIT = "/org/bluez/hci0", "/org/bluez/hci1"


def setUpModule():
    support.modprobe("snd-dummy")
    bluetooth.load_drivers()
    # As a board is set up (Board/tonearmd.service's install steps), in the guest's overlay.
    shutil.copy(os.path.join(TOP, "Board", "tonearm-dbus.conf"), "/etc/dbus-1/system.d/tonearm.conf")
    try:
        pwd.getpwnam("tonearm")
    except KeyError:
        support.sh("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--groups", "audio", "tonearm")
    # What udev does on a board: the sound devices belong to group audio (the guest has no udev).
    support.sh("chgrp", "-R", "audio", "/dev/snd")
    support.sh("chmod", "-R", "g+rw", "/dev/snd")


class AVRCPTests(support.KernelTestCase):
    def start(self, profile, monitor):
        """The Bluetooth stack, a bus monitor, and the daemon playing as the service user."""
        stack = bluetooth.Stack().start()
        self.addCleanup(stack.stop)
        support.measure(f"Bluetooth: bus, controllers, bluetoothd and power took {sum(stack.timings.values()):.1f} s")
        monitor = bluetooth.Monitor(name=monitor)
        self.addCleanup(monitor.stop)
        started = time.monotonic()
        daemon = self.playing(profile, fixtures.tracks(), user="tonearm")
        return stack, monitor, daemon, started

    def registrations(self, monitor, adapters, since=0.0):
        """The daemon's RegisterPlayer calls after `since`, one per adapter, each answered with a
        method return; the daemon's unique name."""
        calls = support.wait_until(lambda: len(monitor.find(since, member="RegisterPlayer")) >= len(adapters) and
                                   monitor.find(since, member="RegisterPlayer"), 20, what=f"RegisterPlayer on {adapters}")
        self.assertEqual(sorted(c["path"] for c in calls), sorted(adapters), calls)
        for call in calls:
            self.assertEqual(call["sender"], calls[0]["sender"])
            self.assertEqual(bluetooth.args(call)[0], "/org/mpris/MediaPlayer2")
            self.assertEqual(monitor.reply_to(call)["type"], "method_return", call)
        return calls[0]["sender"]

    def test_registered_with_every_adapter_again_after_a_restart_and_taken_back_on_exit(self):
        stack, monitor, daemon, started = self.start(PROFILE, "monitor-every")
        sender = self.registrations(monitor, [BOARD, HEAD_UNIT])
        support.measure(f"AVRCP: registered with 2 adapters {time.monotonic() - started:.2f} s after the daemon started")
        for adapter in (BOARD, HEAD_UNIT):
            support.wait_until(lambda: f"the player is registered with Bluetooth adapter {adapter}" in daemon.log(), 5,
                               what=f"the daemon's log line for {adapter}")
        self.assertEqual(stack.bluetoothd_output().count(f"Player registered: sender={sender} path=/org/mpris/MediaPlayer2"), 2)

        # bluetoothd stopped and started again: registered again; playback never noticed.
        before = daemon.status()
        restart = time.monotonic()
        stack.restart_bluetoothd()
        self.registrations(monitor, [BOARD, HEAD_UNIT], since=restart)
        support.measure(f"AVRCP: registered again {time.monotonic() - restart:.2f} s after bluetoothd was restarted")
        self.assertEqual(stack.bluetoothd_output().count(f"Player registered: sender={sender}"), 2)
        after = daemon.status()
        self.assertEqual((after["state"], after["output"]), ("playing", "ok"))
        self.assertGreater(after["elapsed"], before["elapsed"])
        support.measure(f"AVRCP: {after['device']['underruns'] - before['device']['underruns']} underruns while "
                        "bluetoothd restarted (emulated CPU)")

        # On exit each registration is taken back and answered.
        leaving = time.monotonic()
        self.assertEqual(daemon.stop(), 0)
        # The bus monitor is a process of its own: what it saw may be read after the daemon is gone.
        calls = support.wait_until(lambda: len(monitor.find(leaving, member="UnregisterPlayer", sender=sender)) >= 2 and
                                   monitor.find(leaving, member="UnregisterPlayer", sender=sender), 10,
                                   what="UnregisterPlayer on both adapters")
        self.assertEqual(sorted(c["path"] for c in calls), [BOARD, HEAD_UNIT], calls)
        for call in calls:
            self.assertEqual(monitor.reply_to(call)["type"], "method_return", call)
        self.assertIn("the player is unregistered from Bluetooth adapter /org/bluez/hci0", daemon.log())
        self.assertEqual(stack.bluetoothd_output().count(f"Player unregistered: sender={sender}"), 2)

    def test_a_head_unit_drives_the_player_and_sees_what_plays(self):
        stack, monitor, daemon, _ = self.start(PROFILE + 'avrcp_adapters = ["hci0"]\n', "monitor-head-unit")
        sender = self.registrations(monitor, [BOARD])
        support.wait_until(lambda: f"Bluetooth adapter {HEAD_UNIT} is left out ([mpris] avrcp_adapters)" in daemon.log(), 5,
                           what="hci1 said to be left out")

        # What plays goes out: the head unit reads the track when it connects, and follows the
        # status, the position and the repeat and shuffle settings as they change.
        head = stack.head_unit()
        support.wait_until(lambda: head.status().get("Track", {}).get("Title") == "One", 10, 0.1, what="the head unit: One")
        seen = head.status()
        self.assertEqual({k: str(seen["Track"].get(k)) for k in ("Title", "Artist", "Album", "TrackNumber", "Duration")},
                         {"Title": "One", "Artist": "Kernel", "Album": "Rig", "TrackNumber": "1", "Duration": "60000"}, seen)
        self.assertAlmostEqual(float(seen["Position"]) / 1000, daemon.status()["elapsed"], delta=2, msg=f"position {seen}")
        daemon.cli("repeat", "all")
        daemon.cli("shuffle", "on")
        support.wait_until(lambda: (head.status().get("Repeat"), head.status().get("Shuffle")) == ("alltracks", "alltracks"),
                           10, 0.1, what="the head unit: repeat and shuffle")
        daemon.cli("repeat", "off")
        daemon.cli("shuffle", "off")
        support.wait_until(lambda: (head.status().get("Repeat"), head.status().get("Shuffle")) == ("off", "off"),
                           10, 0.1, what="the head unit: repeat and shuffle off")

        # The head unit's buttons become the remote commands; it sees what they did.
        for button, state, title in [("Pause", "paused", "One"), ("Play", "playing", "One"), ("Next", "playing", "Two"),
                                     ("Previous", "playing", "One"), ("Stop", "stopped", None), ("Play", "playing", "One"),
                                     ("Next", "playing", "Two")]:
            since = time.monotonic()
            head.press(button)
            support.wait_until(lambda: daemon.status()["state"] == state and title in (None, daemon.status()["title"]), 10,
                               what=f"{button} from the head unit: {state}, {title}")
            support.measure(f"AVRCP: {button.upper()} pressed -> daemon {state} in {time.monotonic() - since:.2f} s")
            # The bus monitor reads the call in a process of its own, possibly after the daemon acted on it.
            call = dict(member=button, interface=bluetooth.PLAYER_IFACE, destination=sender)
            monitor.wait(10, since, **call)
            support.wait_until(lambda: head.status().get("Status") == state and title in (None, head.status()["Track"].get("Title")),
                               10, 0.1, what=f"the head unit: {state}, {title}")
            self.assertEqual(len(monitor.find(since, **call)), 1, f"one {button} call from bluetoothd to the player")

        # bluetoothd restarted: the daemon registers again, the head unit (still paired)
        # connects again and its buttons work.
        restart = time.monotonic()
        stack.restart_bluetoothd()
        self.registrations(monitor, [BOARD], since=restart)
        head.connect()
        head.press("Pause")
        support.wait_until(lambda: daemon.status()["state"] == "paused", 10, what="paused from the head unit again")
