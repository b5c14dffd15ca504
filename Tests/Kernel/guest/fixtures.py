"""The kernel suite's audio files, made once on the host with sox and flac (a guest under
software emulation would take minutes) and read by the guests through the shared root."""

import hashlib
import os
import shutil
import subprocess
import sys

DIR = os.environ.get("TONEARM_KERNEL_FIXTURES", "")

# name: (sox synthesis, rate, bits, seconds, tags)
TONE = "sine 1000 vol 0.5"
FILES = {
    # Bit-exactness and gapless: one noise signal cut into files at odd sample counts.
    "noise16": ("whitenoise vol 0.7", 44100, 16, 4.0, {}),
    "noise24": ("whitenoise vol 0.7", 48000, 24, 3.0, {}),
    # Levels: a 1 kHz tone at -6 dBFS under prompts of digital silence.
    "tone48k": (TONE, 48000, 16, 16.0, {"TITLE": "Tone"}),
    "silence2": ("sine 1000 vol 0", 48000, 16, 2.0, {}),
    "silence3": ("sine 1000 vol 0", 48000, 16, 3.0, {}),
    # The USB DAC plays 44.1 kHz.
    "tone44k": (TONE, 44100, 16, 40.0, {"TITLE": "USB tone"}),
    # Commands heard through a large buffer: noise, so any change shows in the first sample.
    "music48": ("whitenoise vol 0.5", 48000, 16, 30.0, {"TITLE": "Noise"}),
    # Music on the left only, so that a program's sound on the right is told apart from it.
    "tone48k_left": (TONE + " remix 1 0", 48000, 16, 30.0, {"TITLE": "Left tone"}),
    # Ten minutes and a little on the dummy card.
    "soak": ("sine 440 vol 0.3", 44100, 16, 630.0, {"TITLE": "Soak"}),
}
# Tracks for the controls: quiet, tagged, long enough to be playing when a control acts.
for number, title in enumerate(["One", "Two", "Three"], 1):
    FILES[f"track{number}"] = ("sine 300 vol 0.1", 48000, 16, 60.0,
                               {"TITLE": title, "ARTIST": "Kernel", "ALBUM": "Rig",
                                "TRACKNUMBER": str(number)})
# Where the gapless sets are cut (in samples): none at a FLAC block boundary.
CUTS = {"noise16": [57331, 101203], "noise24": [70001], "music48": []}


def path(name):
    return os.path.join(DIR, name + ".flac")


def tracks():
    """The three tagged tracks, in order."""
    return [path(f"track{n}") for n in (1, 2, 3)]


def reference(name):
    """The whole of a cut signal as left-justified 32-bit samples."""
    return os.path.join(DIR, name + ".s32")


def parts(name):
    """The files a cut signal was split into, in order."""
    return [os.path.join(DIR, f"{name}-{i}.flac") for i in range(len(CUTS[name]) + 1)]


def _stamp():
    return hashlib.sha256(open(__file__, "rb").read()).hexdigest()[:16]


def make_all(directory):
    global DIR
    DIR = directory
    os.environ["TONEARM_KERNEL_FIXTURES"] = directory
    stamp_file = os.path.join(directory, "stamp")
    if os.path.exists(stamp_file) and open(stamp_file).read() == _stamp():
        return
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for name, (synth, rate, bits, seconds, tags) in FILES.items():
        wav = os.path.join(directory, name + ".wav")
        subprocess.run(["sox", "-n", "-r", str(rate), "-b", str(bits), "-c", "2", wav,
                        "synth", str(seconds)] + synth.split(), check=True)
        tag_args = [f"--tag={k}={v}" for k, v in tags.items()]
        subprocess.run(["flac", "-s", "-f", "-o", path(name)] + tag_args + [wav], check=True)
        if name in CUTS:
            edges = [0] + CUTS[name] + [None]
            for i, (start, end) in enumerate(zip(edges, edges[1:])):
                trim = ["trim", f"{start}s"] + ([f"{end - start}s"] if end else [])
                piece = os.path.join(directory, f"{name}-{i}.wav")
                subprocess.run(["sox", wav, piece] + trim, check=True)
                subprocess.run(["flac", "-s", "-f", "-o", os.path.join(directory, f"{name}-{i}.flac"),
                                piece], check=True)
                os.remove(piece)
        if name in CUTS:
            # The whole signal as left-justified 32-bit samples: what a bit-exact capture holds.
            subprocess.run(["sox", wav, "-t", "raw", "-e", "signed", "-b", "32",
                            os.path.join(directory, name + ".s32")], check=True)
        os.remove(wav)
    with open(stamp_file, "w") as f:
        f.write(_stamp())


if __name__ == "__main__":
    make_all(sys.argv[1])
