#!/usr/bin/env python3
"""A stand-in for tonearmd's PCM socket, to exercise the ALSA plugin.

It speaks the daemon side of the wire protocol minimally: answers 'O' with
'o' and 'F' with 'f', holds data until 'S', then takes frames into a pretend
output at the stream's rate (a 5 ms timer) and reports 'p' positions; it
answers 'N' with 'n' once everything was heard. The frames it takes are
appended to --out, and what it receives and reports is logged as JSON lines
to --events.

Interruptions: --suspend-after S sends 's' S seconds after the first start,
--resume-after M sends 'r' M seconds later; SIGUSR1 / SIGUSR2 do the same at
any time. --die-after S exits abruptly S seconds after the first start.
"""

import argparse
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time

HEADER = struct.Struct("=BBHI")
FORMAT = struct.Struct("=IIIII")
POSITION = struct.Struct("=QqQ")
BYTES_PER_SAMPLE = {1: 2, 2: 4, 3: 3, 4: 4, 5: 4}
TICK = 0.005


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class Stream:
    """One epoch: what the plugin sent and how far the pretend output got."""

    def __init__(self, epoch, rate, channels, encoding, buffer_frames, period_frames):
        self.epoch = epoch
        self.rate = rate
        self.frame_bytes = BYTES_PER_SAMPLE[encoding] * channels
        self.pending = bytearray()  # sent, not yet accepted
        self.accepted = 0
        self.heard = 0.0
        self.started = False
        self.paused = False
        self.draining = False
        self.drained = False
        self.last_tick = None


class Session:
    def __init__(self, daemon, conn, number):
        self.daemon = daemon
        self.conn = conn
        self.number = number
        self.opened = False
        self.stream = None
        self.suspended = False

    def send(self, kind, epoch=0, payload=b"", flags=0):
        try:
            self.conn.send(HEADER.pack(ord(kind), flags, 0, epoch) + payload)
        except OSError:
            pass

    def receive(self):
        try:
            message = self.conn.recv(65536)
        except OSError:
            message = b""
        if not message:
            self.daemon.log(event="closed", session=self.number)
            return False
        kind, flags, _, epoch = HEADER.unpack_from(message)
        payload = message[HEADER.size:]
        kind = chr(kind)
        if kind == "O":
            request = json.loads(payload.decode("utf-8"))
            self.daemon.log(event="open", session=self.number, request=request)
            if self.daemon.args.refuse_open:
                self.send("e", 0, self.daemon.args.refuse_open.encode())
                return False
            self.opened = True
            self.send("o", 0, struct.pack("=Q", self.number))
        elif kind == "F":
            rate, channels, encoding, buffer_frames, period_frames = FORMAT.unpack_from(payload)
            self.daemon.log(event="format", epoch=epoch, rate=rate, channels=channels,
                            encoding=encoding, buffer=buffer_frames, period=period_frames)
            if self.daemon.args.refuse_format:
                self.send("e", epoch, self.daemon.args.refuse_format.encode())
                return True
            self.stream = Stream(epoch, rate, channels, encoding, buffer_frames, period_frames)
            self.send("f", epoch)
        elif self.stream is None or epoch != self.stream.epoch:
            self.daemon.log(event="stale", kind=kind, epoch=epoch)
        elif kind == "D":
            if len(payload) % self.stream.frame_bytes or len(payload) + HEADER.size > 32768:
                self.daemon.log(event="bad-data", length=len(payload))
            self.stream.pending += payload
            self.daemon.data_messages += 1
        elif kind == "S":
            self.daemon.log(event="start", epoch=epoch, held=len(self.stream.pending))
            self.stream.started = True
            self.stream.last_tick = time.monotonic()
            self.daemon.first_start()
        elif kind == "N":
            self.daemon.log(event="drain", epoch=epoch)
            self.stream.draining = True
        elif kind == "X":
            self.daemon.log(event="drop", epoch=epoch, pending=len(self.stream.pending))
            self.stream.pending.clear()
            self.stream.heard = float(self.stream.accepted)
            self.stream.started = False
        elif kind == "P":
            self.daemon.log(event="pause", epoch=epoch, on=bool(flags))
            self.stream.paused = bool(flags)
            self.stream.last_tick = time.monotonic()
            self.report()
        return True

    def tick(self):
        s = self.stream
        if s is None or not s.started or s.paused or self.suspended:
            if s is not None:
                s.last_tick = time.monotonic()
            return
        t = time.monotonic()
        elapsed = t - s.last_tick
        s.last_tick = t
        s.heard = min(s.heard + elapsed * s.rate, float(s.accepted))
        # Keep a pretend device queue of self.daemon.queue_seconds filled.
        room = int(s.heard + self.daemon.args.queue * s.rate) - s.accepted
        take = min(room, len(s.pending) // s.frame_bytes)
        if take > 0:
            chunk = bytes(s.pending[: take * s.frame_bytes])
            del s.pending[: take * s.frame_bytes]
            s.accepted += take
            self.daemon.out.write(chunk)
            self.daemon.out.flush()
        self.report()
        if s.draining and not s.drained and not s.pending and s.heard >= s.accepted:
            s.drained = True
            self.daemon.log(event="drained", epoch=s.epoch, frames=s.accepted)
            self.send("n", s.epoch)

    def report(self):
        s = self.stream
        queued = s.accepted - int(s.heard)
        self.send("p", s.epoch, POSITION.pack(s.accepted, queued, now_ns()))
        self.daemon.last_position = dict(epoch=s.epoch, accepted=s.accepted, queued=queued)

    def suspend(self, on):
        self.suspended = on
        self.daemon.log(event="suspend" if on else "resume", session=self.number)
        self.send("s" if on else "r", 0)


class Daemon:
    def __init__(self, args):
        self.args = args
        self.sessions = {}
        self.next_number = 1
        self.started_at = None
        self.timers = []
        self.data_messages = 0
        self.last_position = None
        self.out = open(args.out, "ab") if args.out else open(os.devnull, "wb")
        self.events = open(args.events, "a") if args.events else None
        self.selector = selectors.DefaultSelector()

    def log(self, **fields):
        if self.events:
            self.events.write(json.dumps(fields) + "\n")
            self.events.flush()

    def first_start(self):
        if self.started_at is not None:
            return
        self.started_at = time.monotonic()
        a = self.args
        if a.suspend_after is not None:
            self.timers.append((self.started_at + a.suspend_after, lambda: self.suspend_all(True)))
            if a.resume_after is not None:
                self.timers.append((self.started_at + a.suspend_after + a.resume_after,
                                    lambda: self.suspend_all(False)))
        if a.die_after is not None:
            self.timers.append((self.started_at + a.die_after, self.die))

    def die(self):
        self.log(event="die")
        os._exit(3)

    def suspend_all(self, on):
        for session in self.sessions.values():
            session.suspend(on)

    def run(self):
        try:
            os.unlink(self.args.socket)
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(self.args.socket)
        listener.listen(8)
        self.selector.register(listener, selectors.EVENT_READ)
        signal.signal(signal.SIGUSR1, lambda *_: self.timers.append((0, lambda: self.suspend_all(True))))
        signal.signal(signal.SIGUSR2, lambda *_: self.timers.append((0, lambda: self.suspend_all(False))))
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        self.log(event="listening", socket=self.args.socket)
        while True:
            for key, _ in self.selector.select(TICK):
                if key.fileobj is listener:
                    conn, _ = listener.accept()
                    session = Session(self, conn, self.next_number)
                    self.next_number += 1
                    self.sessions[conn.fileno()] = session
                    self.selector.register(conn, selectors.EVENT_READ, session)
                else:
                    session = key.data
                    if not session.receive():
                        self.selector.unregister(session.conn)
                        del self.sessions[session.conn.fileno()]
                        session.conn.close()
            t = time.monotonic()
            for timer in [x for x in self.timers if x[0] <= t]:
                self.timers.remove(timer)
                timer[1]()
            for session in list(self.sessions.values()):
                session.tick()
            if self.args.events and self.last_position:
                # The latest position, for checks that compare with the plugin.
                with open(self.args.events + ".position", "w") as f:
                    json.dump(self.last_position, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, help="path to listen on")
    parser.add_argument("--out", help="file to append the frames taken to")
    parser.add_argument("--events", help="file to append JSON-lines events to")
    parser.add_argument("--queue", type=float, default=0.05,
                        help="seconds of frames the pretend output holds (default 0.05)")
    parser.add_argument("--suspend-after", type=float, help="send 's' S seconds after the first start")
    parser.add_argument("--resume-after", type=float, help="send 'r' M seconds after the suspension")
    parser.add_argument("--die-after", type=float, help="exit S seconds after the first start")
    parser.add_argument("--refuse-open", metavar="TEXT", help="answer 'O' with 'e' TEXT")
    parser.add_argument("--refuse-format", metavar="TEXT", help="answer 'F' with 'e' TEXT")
    Daemon(parser.parse_args()).run()


if __name__ == "__main__":
    main()
