#!/usr/bin/env python3
"""Streams an audio file to an AirPlay 1 (RAOP) receiver at a known address, with metadata.

    python send.py ADDRESS PORT FILE TITLE ARTIST

No mDNS: the receiver is described by hand with the TXT record shairport-sync 3.3 would
advertise (without `ft`/`features`, pyatv speaks AirPlay 1). Needs pyatv 0.18.0.
Exits 0 once the whole file was sent.
"""

import asyncio
import sys

import pyatv
from pyatv import conf
from pyatv.const import Protocol
from pyatv.interface import MediaMetadata
from pyatv.support import rtsp

# pyatv sends L16 but announces an ALAC `a=fmtp:` line too; shairport-sync 3.3.8 takes any
# a=fmtp for ALAC, decodes the PCM as ALAC and crashes. Without the line it plays L16.
rtsp.ANNOUNCE_PAYLOAD = "".join(
    line for line in rtsp.ANNOUNCE_PAYLOAD.splitlines(keepends=True) if not line.startswith("a=fmtp:"))

RECEIVER_TXT = {
    "txtvers": "1", "ch": "2", "cn": "0,1", "et": "0,1", "ek": "1", "md": "0,2", "sr": "44100",
    "ss": "16", "tp": "TCP,UDP", "vn": "65537", "da": "true", "sv": "false", "pw": "false",
    "sf": "0x4", "am": "ShairportSync", "vs": "105.1", "fv": "76400.10",
}


async def send(address, port, path, title, artist):
    receiver = conf.AppleTV(address, "receiver")
    receiver.add_service(conf.ManualService("receiver", Protocol.RAOP, port, RECEIVER_TXT))
    device = await pyatv.connect(receiver, asyncio.get_running_loop())
    try:
        await device.stream.stream_file(path, metadata=MediaMetadata(title=title, artist=artist))
    finally:
        device.close()


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    address, port, path, title, artist = sys.argv[1:]
    asyncio.run(send(address, int(port), path, title, artist))
