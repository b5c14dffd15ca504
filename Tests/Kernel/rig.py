"""Boots guests for the kernel suite and runs one test module in each (scripts/test-kernel).

Each guest is QEMU with software emulation (TCG) running Debian's kernel, this machine's root
shared read-only, and the devices the tests need: a USB audio device on an xHCI bus (what the
guest plays lands in a WAV file here), a 16550 UART whose other end is a pseudoterminal here,
and two virtio serial ports. The host side of each guest:

- relays the UART's pseudoterminal to the port `tonearm.uart`, so a test in the guest holds
  the far end of the cable;
- answers requests on the port `tonearm.rig` (JSON lines): `unplug` and `plug` the USB DAC
  through QMP (`device_del`, `device_add`), keeping each plug's WAV file;
- prints the guest's console, prefixed with the module's name.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import tty
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
GUEST = os.path.join(HERE, "guest")
sys.path.insert(0, GUEST)

PRINT_LOCK = threading.Lock()
KERNEL_LINE = re.compile(r"^\[ *\d+\.\d+\] ")


def say(prefix, line):
    with PRINT_LOCK:
        sys.stdout.write(f"[{prefix}] {line}\n" if prefix else line + "\n")
        sys.stdout.flush()


def connect_unix(path, deadline):
    while True:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class QMP:
    """QEMU's machine protocol: one command at a time, events kept aside."""

    def __init__(self, path):
        self.sock = connect_unix(path, time.monotonic() + 10)
        self.file = self.sock.makefile("rwb", buffering=0)
        self.events = []
        self.lock = threading.Lock()
        self._read()  # the greeting
        self.execute("qmp_capabilities")

    def _read(self):
        line = self.file.readline()
        if not line:
            raise EOFError("QMP closed")
        return json.loads(line)

    def execute(self, command, arguments=None):
        with self.lock:
            message = {"execute": command}
            if arguments:
                message["arguments"] = arguments
            self.file.write(json.dumps(message).encode() + b"\n")
            while True:
                reply = self._read()
                if "event" in reply:
                    self.events.append(reply)
                    continue
                return reply

    def wait_event(self, name, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                for i, event in enumerate(self.events):
                    if event["event"] == name:
                        return self.events.pop(i)
                self.sock.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    self.events.append(self._read())
                except (socket.timeout, TimeoutError):
                    pass
                finally:
                    self.sock.settimeout(None)
        return None


class Guest:
    def __init__(self, args, module, filters, shell=False, estimate=0, cpus=1):
        self.args = args
        self.cpus = cpus
        # A guest that takes twice what its module expects (and two minutes more) is stuck.
        self.timeout = 2 * estimate + 120
        self.module = module
        self.filters = filters
        self.shell = shell
        self.name = module or "shell"
        self.out = os.path.join(TOP, ".build-kernel", "runs", self.name)
        self.plugs = 0
        self.qmp = None

    # The guest's command, run by its init in the chroot.
    def write_job(self):
        env = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root",
            "LANG": "C.UTF-8",
            "TERM": os.environ.get("TERM", "vt100") if self.shell else "dumb",
            "TONEARM_BIN": os.environ["TONEARM_BIN"],
            "TONEARM_KERNEL_DIR": self.args.kernel_dir,
            "TONEARM_KERNEL_FIXTURES": self.args.fixtures,
            "TONEARM_RIG_OUT": "/rig",
        }
        for key in os.environ:
            if key == "TONEARM_SOAK_SECONDS" or key.startswith("TONEARM_BENCH_"):
                env[key] = os.environ[key]
        lines = ["set -e"] + [f"export {k}='{v}'" for k, v in env.items()] + [f"cd '{TOP}'"]
        if self.shell:
            lines.append(f"/usr/bin/python3 {GUEST}/run.py --prepare-only")
            lines.append("echo 'tonearm guest: drivers loaded; the project is here; exit powers off'")
            lines.append("exec /bin/bash -l")
        else:
            quoted = " ".join(f"'{f}'" for f in self.filters)
            lines.append(f"exec /usr/bin/python3 -u {GUEST}/run.py {self.module} {quoted}")
        with open(os.path.join(self.out, "job.sh"), "w") as f:
            f.write("\n".join(lines) + "\n")

    def qemu_command(self):
        k = self.args.kernel_dir
        # Without ACPI the boot is 3 s shorter, but the kernel then finds only one CPU.
        acpi = "acpi=off " if self.cpus == 1 else ""
        append = (f"console=ttyS0 quiet loglevel=4 {acpi}mitigations=off cryptomgr.notests "
                  f"tsc=reliable no_timer_check panic=-1 tonearm.modules={k}/lib/modules")
        o = self.out
        return [
            "qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-machine", "pc", "-accel", "tcg", "-cpu", "max", "-m", "512", "-smp", str(self.cpus),
            "-kernel", f"{k}/vmlinux", "-initrd", f"{k}/initramfs.cpio.gz", "-append", append,
            "-serial", f"file:{o}/kernel.log",
            "-virtfs", "local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap",
            "-virtfs", f"local,path={o},mount_tag=out,security_model=none,multidevs=remap",
            "-device", "virtio-serial-pci",
            "-chardev", "stdio,id=io,signal=off" if self.shell else f"socket,id=io,path={o}/console.sock,server=on,wait=off",
            "-device", "virtconsole,chardev=io",
            "-chardev", f"socket,id=rig,path={o}/rig.sock,server=on,wait=off",
            "-device", "virtserialport,chardev=rig,name=tonearm.rig",
            "-chardev", f"socket,id=uartpeer,path={o}/uart.sock,server=on,wait=off",
            "-device", "virtserialport,chardev=uartpeer,name=tonearm.uart",
            "-chardev", "pty,id=uart",
            "-device", "isa-serial,chardev=uart,index=1",
            "-qmp", f"unix:{o}/qmp.sock,server=on,wait=off",
            # At the USB device's own rate, so the file holds what was played, sample for sample.
            "-audiodev", f"wav,id=snd0,path={o}/usb-dac.wav,out.frequency=48000",
            "-device", "qemu-xhci,id=xhci",
            "-device", "usb-audio,id=dac,audiodev=snd0,bus=xhci.0",
        ]

    def run(self):
        shutil.rmtree(self.out, ignore_errors=True)
        os.makedirs(self.out)
        self.write_job()
        started = time.monotonic()
        stdio = None if self.shell else subprocess.DEVNULL
        qemu = subprocess.Popen(self.qemu_command(), stdin=stdio, stdout=stdio,
                                stderr=open(os.path.join(self.out, "qemu.log"), "wb"))
        deadline = time.monotonic() + 15
        try:
            self.qmp = QMP(os.path.join(self.out, "qmp.sock"))
            rig = connect_unix(os.path.join(self.out, "rig.sock"), deadline)
            uart = connect_unix(os.path.join(self.out, "uart.sock"), deadline)
            console = None if self.shell else connect_unix(os.path.join(self.out, "console.sock"), deadline)
        except OSError as error:
            qemu.kill()
            say(self.name, f"cannot start QEMU: {error}; {self.tail('qemu.log')}")
            return 125, 0.0
        threading.Thread(target=self.serve_rig, args=(rig,), daemon=True).start()
        threading.Thread(target=self.relay_uart, args=(uart,), daemon=True).start()
        if console:
            threading.Thread(target=self.print_console, args=(console,), daemon=True).start()
        limit = None if self.shell else self.timeout
        try:
            qemu.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            qemu.kill()
            qemu.wait()
            say(self.name, f"the guest did not finish within {limit} s")
        elapsed = time.monotonic() - started
        time.sleep(0.2)  # the console's last lines
        try:
            status = int(open(os.path.join(self.out, "exit-status")).read().strip())
        except (OSError, ValueError):
            status = 125
        if status != 0 and not self.shell:
            say(self.name, "the guest's kernel log, last lines:")
            for line in self.tail("kernel.log", 30).splitlines():
                say(self.name, "  " + line)
        return status, elapsed

    def tail(self, name, count=10):
        try:
            with open(os.path.join(self.out, name), errors="replace") as f:
                return "\n".join(f.read().splitlines()[-count:])
        except OSError:
            return ""

    def print_console(self, console):
        log = open(os.path.join(self.out, "console.log"), "w")
        pending = b""
        while True:
            data = console.recv(65536)
            if not data:
                break
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                text = line.decode(errors="replace").rstrip("\r")
                log.write(text + "\n")
                log.flush()
                if not KERNEL_LINE.match(text):  # the kernel's own lines are in kernel.log
                    say(self.name, text)
        if pending:
            say(self.name, pending.decode(errors="replace"))

    # The UART's far end: the pseudoterminal QEMU made, relayed byte for byte.
    def relay_uart(self, peer):
        chardevs = self.qmp.execute("query-chardev")["return"]
        path = next(c["filename"] for c in chardevs if c["label"] == "uart")
        pty = os.open(path.removeprefix("pty:"), os.O_RDWR | os.O_NOCTTY)
        tty.setraw(pty)

        def pump(read, write):
            try:
                while True:
                    data = read()
                    if not data:
                        return
                    write(data)
            except OSError:
                return

        threading.Thread(target=pump, args=(lambda: os.read(pty, 4096), peer.sendall), daemon=True).start()
        pump(lambda: peer.recv(4096), lambda data: os.write(pty, data))

    # Requests from the guest's tests: one JSON object a line, one reply each.
    def serve_rig(self, rig):
        stream = rig.makefile("rwb", buffering=0)
        for line in stream:
            try:
                request = json.loads(line)
                reply = self.handle(request)
            except Exception as error:  # the guest hears every failure
                reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            stream.write(json.dumps(reply).encode() + b"\n")

    def handle(self, request):
        op = request.get("op")
        if op == "unplug":
            reply = self.qmp.execute("device_del", {"id": "dac"})
            if "error" in reply:
                return {"ok": False, "error": reply["error"]["desc"]}
            if not self.qmp.wait_event("DEVICE_DELETED", 10):
                return {"ok": False, "error": "no DEVICE_DELETED within 10 s"}
            # The WAV file is written anew when the device comes back: keep this plug's.
            self.plugs += 1
            kept = f"usb-dac-{self.plugs}.wav"
            wav = os.path.join(self.out, "usb-dac.wav")
            if os.path.exists(wav):
                os.rename(wav, os.path.join(self.out, kept))
            return {"ok": True, "wav": kept}
        if op == "plug":
            reply = self.qmp.execute("device_add", {"driver": "usb-audio", "id": "dac",
                                                    "audiodev": "snd0", "bus": "xhci.0"})
            if "error" in reply:
                return {"ok": False, "error": reply["error"]["desc"]}
            return {"ok": True}
        return {"ok": False, "error": f"unknown op {op!r}"}


def discover(filters, kind="test"):
    """Modules (test_*.py, or bench_*.py for benchmarks) with at least one test whose id
    contains a filter word."""
    from run import selected  # the guest's own selection
    loader = unittest.TestLoader()
    chosen = []
    for name in sorted(os.listdir(GUEST)):
        if not re.fullmatch(kind + r"_\w+\.py", name):
            continue
        module = name[:-3]
        if any(selected(loader.loadTestsFromName(module), filters)):
            estimate = getattr(sys.modules[module], "GUEST_SECONDS", 60)
            chosen.append((estimate, module, getattr(sys.modules[module], "GUEST_CPUS", 1),
                           getattr(sys.modules[module], "GUEST_ALONE", False)))
    return sorted(chosen, reverse=True)


def main():
    parser = argparse.ArgumentParser(description="Run the kernel suite (see scripts/test-kernel).")
    parser.add_argument("--kernel-dir", required=True)
    parser.add_argument("--kernel-version", required=True)
    parser.add_argument("--shell", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("filters", nargs="*")
    args = parser.parse_args()

    import fixtures
    args.fixtures = os.path.join(TOP, ".build-kernel", "fixtures")
    fixtures.make_all(args.fixtures)

    if args.shell:
        status, _ = Guest(args, None, [], shell=True).run()
        return status

    found = discover(args.filters, "bench" if args.bench else "test")
    estimates = {m: e for e, m, _, _ in found}
    cpus = {m: c for _, m, c, _ in found}
    lonely = {m: a for _, m, _, a in found}
    modules = list(estimates)
    # An emulated CPU loses real time whenever the host runs something else: a module whose
    # timing is what it tests asks for a second CPU, or to be alone, and runs alone, after the
    # others.
    shared = [m for m in modules if cpus[m] == 1 and not lonely[m]]
    alone = [m for m in modules if cpus[m] > 1 or lonely[m]]
    if not modules:
        print(f"test-kernel: no test matches {' '.join(args.filters)}", file=sys.stderr)
        return 2
    print(f"kernel suite: Linux {args.kernel_version} under QEMU (TCG), "
          f"{len(modules)} guest(s): "
          + "; then ".join(filter(None, [shared and f"{', '.join(shared)} ({args.jobs} at a time)",
                                         alone and f"{', '.join(alone)} alone"])), flush=True)
    started = time.monotonic()
    def run(module):
        return Guest(args, module, args.filters, estimate=estimates[module], cpus=cpus[module]).run()

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = dict(zip(shared, pool.map(run, shared)))
    results.update((module, run(module)) for module in alone)
    passed = failed = 0
    for module in modules:
        out = os.path.join(TOP, ".build-kernel", "runs", module)
        summary = os.path.join(out, "summary.json")
        status, seconds = results[module]
        try:
            counts = json.load(open(summary))
        except (OSError, ValueError):
            counts = {"passed": 0, "failed": 1, "measured": []}
        if status != 0 and counts["failed"] == 0:
            counts["failed"] = 1
        passed += counts["passed"]
        failed += counts["failed"]
        print(f"kernel suite: {module}: {counts['passed']} passed, {counts['failed']} failed "
              f"in {seconds:.1f} s (boot {counts.get('boot', 0):.1f} s)")
        for line in counts.get("measured", []):
            print(f"  measured: {line}")
        for failure in counts.get("failures", []):
            print(f"  FAILED: {failure['test']}")
            for line in failure["why"]:
                print(f"    {line}")
        if status != 0 and not counts.get("failures"):
            print(f"  FAILED: the guest ended with status {status} (its output is above)")
        if status == 0 and not args.keep:
            shutil.rmtree(out, ignore_errors=True)
    print(f"kernel suite: {time.monotonic() - started:.0f} s")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
