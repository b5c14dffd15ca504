#!/usr/bin/env python3
"""A small radio station for Tonearm's tests: serves one file over HTTP (or HTTPS) as a stream.

Paths:
  /stream    the file, then the connection closes (a drop, for a radio client); ICY metadata
             blocks every --metaint bytes when the request says `Icy-MetaData: 1`
  /chunked   the same, with chunked transfer encoding
  /length    the same with a Content-Length: a stream that ends
  /redirect  302 to /stream
  /missing   404
  /forbidden 403
  /silent    accepts, reads the request and sends nothing until the client goes
  /drop      the first --drop-after bytes, then closes

Each request is printed on standard output as one line: `REQUEST <path> icy=<0|1> ua=<agent>`,
after the first line `PORT <n>`.
"""
import argparse
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--file", required=True)
    p.add_argument("--content-type", default="audio/flac")
    p.add_argument("--metaint", type=int, default=0)
    p.add_argument("--titles", nargs="*", default=[])
    p.add_argument("--title-every", type=int, default=1, help="metadata blocks per title")
    p.add_argument("--latin1", action="store_true", help="titles in Latin-1 instead of UTF-8")
    p.add_argument("--rate", type=int, default=0, help="bytes per second of audio; 0: at once")
    p.add_argument("--drop-after", type=int, default=4096)
    p.add_argument("--name", default="Tonearm Test Radio")
    p.add_argument("--genre", default="Test")
    p.add_argument("--bitrate", type=int, default=0)
    p.add_argument("--cert")
    p.add_argument("--key")
    return p.parse_args()


ARGS = parse()
with open(ARGS.file, "rb") as f:
    BODY = f.read()


def metadata_block(index):
    if not ARGS.titles:
        return b"\x00"
    title = ARGS.titles[min(index // max(1, ARGS.title_every), len(ARGS.titles) - 1)]
    text = ("StreamTitle='%s';StreamUrl='';" % title).encode("latin-1" if ARGS.latin1 else "utf-8")
    blocks = (len(text) + 15) // 16
    return bytes([blocks]) + text + b"\x00" * (blocks * 16 - len(text))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path.split("?")[0]
        icy = self.headers.get("Icy-MetaData") == "1"
        print("REQUEST %s icy=%d ua=%s" % (path, 1 if icy else 0, self.headers.get("User-Agent", "")), flush=True)
        if path == "/missing":
            self.send_error(404, "Not Found")
        elif path == "/forbidden":
            self.send_error(403, "Forbidden")
        elif path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/stream")
            self.end_headers()
        elif path == "/silent":
            try:
                while self.connection.recv(4096):
                    pass
            except OSError:
                pass
        elif path in ("/stream", "/chunked", "/length", "/drop"):
            self.stream(path, icy)
        else:
            self.send_error(404, "Not Found")

    def stream(self, path, icy):
        chunked = path == "/chunked"
        if chunked:
            self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("Content-Type", ARGS.content_type)
        self.send_header("icy-name", ARGS.name)
        self.send_header("icy-genre", ARGS.genre)
        if ARGS.bitrate:
            self.send_header("icy-br", str(ARGS.bitrate))
        metaint = ARGS.metaint if icy else 0
        if metaint:
            self.send_header("icy-metaint", str(metaint))
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
        body = BODY[: ARGS.drop_after] if path == "/drop" else BODY
        out = self.interleave(body, metaint)
        if path == "/length":
            self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        started = time.monotonic()
        sent_audio = 0
        step = 4096
        try:
            for at in range(0, len(out), step):
                piece = out[at : at + step]
                if chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                else:
                    self.wfile.write(piece)
                self.wfile.flush()
                sent_audio += len(piece)
                if ARGS.rate:
                    ahead = sent_audio / ARGS.rate - (time.monotonic() - started)
                    if ahead > 0:
                        time.sleep(ahead)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        except OSError:
            pass

    def interleave(self, body, metaint):
        if not metaint:
            return body
        out = bytearray()
        index = 0
        for at in range(0, len(body), metaint):
            piece = body[at : at + metaint]
            out += piece
            if len(piece) == metaint:
                out += metadata_block(index)
                index += 1
        return bytes(out)


class Server(ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    server = Server(("127.0.0.1", ARGS.port), Handler)
    if ARGS.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(ARGS.cert, ARGS.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
