"""Runs one kernel test module in the guest (started by the guest's /rig/job.sh) and writes
/rig/summary.json: counts, the figures measured, and how long the guest took to boot."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402

BOOT = float(open("/proc/uptime").read().split()[0])


class Result(unittest.TextTestResult):
    """On a failure, the daemons' logs and the kernel's log tail."""

    def report(self, test):
        if isinstance(test, support.KernelTestCase):
            self.stream.writeln(test.failure_report())
            self.stream.flush()

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.report(test)

    def addError(self, test, err):
        super().addError(test, err)
        self.report(test)


def selected(suite, filters):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from selected(item, filters)
        elif not filters or any(f in item.id() for f in filters):
            yield item


def main():
    if sys.argv[1:] == ["--prepare-only"]:
        # The interactive shell: every driver the suite uses, loaded.
        for name in sorted(os.listdir(os.path.dirname(os.path.abspath(__file__)))):
            if name.startswith("test_") and name.endswith(".py"):
                module = __import__(name[:-3])
                if hasattr(module, "setUpModule"):
                    module.setUpModule()
        return 0
    module, filters = sys.argv[1], sys.argv[2:]
    print(f"guest: Linux {os.uname().release}, {os.cpu_count()} CPU(s), booted in {BOOT:.1f} s; running {module}",
          flush=True)
    suite = unittest.TestSuite(selected(unittest.TestLoader().loadTestsFromName(module), filters))
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=Result)
    result = runner.run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    # A module that failed to set up ran no test but failed.
    failed_tests = {t.id() for t, _ in result.failures + result.errors if isinstance(t, unittest.TestCase)}
    measured_path = os.path.join(support.RIG_OUT, "measured.txt")
    measured = open(measured_path).read().splitlines() if os.path.exists(measured_path) else []
    # What went wrong, short enough to stand in the suite's closing lines: the test and the
    # last lines of its traceback (the assertion and its message).
    failures = [{"test": t.id(), "why": trace.rstrip().splitlines()[-6:]}
                for t, trace in result.failures + result.errors]
    with open(os.path.join(support.RIG_OUT, "summary.json"), "w") as f:
        json.dump({"passed": result.testsRun - len(failed_tests) - len(result.skipped), "failed": failed,
                   "skipped": len(result.skipped), "boot": BOOT, "measured": measured,
                   "failures": failures}, f)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
