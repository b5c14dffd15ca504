#!/bin/sh
# Plays through the tonearm PCM plugin into test/fake_daemon.py with ALSA's own
# tools and checks what arrives. Needs aplay, speaker-test, sox's play and
# gst-launch-1.0 (gstreamer1.0-tools, -alsa, -plugins-base); a missing tool's
# checks are skipped. Run from anywhere: sh ALSA/test/run.sh (builds first).
set -u

here=$(cd "$(dirname "$0")" && pwd)
alsa=$(dirname "$here")
make -s -C "$alsa" build/libasound_module_pcm_tonearm.so build/delay_check || exit 2

work=$(mktemp -d)
trap 'stop_daemon; rm -rf "$work"' EXIT INT TERM
# A private ALSA configuration: the plugin from the build, the snippet included.
export HOME="$work/home"
mkdir -p "$HOME"
cat >"$HOME/.asoundrc" <<EOF
pcm_type.tonearm { lib "$alsa/build/libasound_module_pcm_tonearm.so" }
<$alsa/50-tonearm.conf>
EOF
export TONEARM_PCM_SOCKET="$work/pcm.sock"
out="$work/out.raw"
events="$work/events.jsonl"

passed=0
failed=0
skipped=0
daemon_pid=

pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; [ -s "$work/log" ] && sed 's/^/     | /' "$work/log"; }
skip() { skipped=$((skipped + 1)); echo "skip $1"; }
have() { command -v "$1" >/dev/null 2>&1; }
now_ms() { date +%s%3N; }

start_daemon() {
	stop_daemon
	rm -f "$out" "$events" "$events.position" "$TONEARM_PCM_SOCKET"
	python3 "$here/fake_daemon.py" --socket "$TONEARM_PCM_SOCKET" --out "$out" \
		--events "$events" "$@" >"$work/daemon.log" 2>&1 &
	daemon_pid=$!
	i=0
	while [ ! -S "$TONEARM_PCM_SOCKET" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
}

stop_daemon() {
	if [ -n "$daemon_pid" ]; then
		kill "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
		daemon_pid=
	fi
}

# wav KIND PATH: two seconds of noise; KIND is s16, s24 (3 bytes), s32 or float.
wav() {
	python3 - "$1" "$2" <<'EOF'
import random, struct, sys
kind, path = sys.argv[1], sys.argv[2]
width, tag = {"s16": (2, 1), "s24": (3, 1), "s32": (4, 1), "float": (4, 3)}[kind]
rate, channels, frames = 44100, 2, 88200
random.seed(7)
if kind == "float":
    data = struct.pack("<%df" % (frames * channels),
                       *(random.uniform(-0.9, 0.9) for _ in range(frames * channels)))
else:
    data = random.randbytes(frames * channels * width)
fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * channels * width, channels * width, width * 8)
body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
open(path, "wb").write(b"RIFF" + struct.pack("<I", len(body)) + body)
EOF
}

# same_pcm WAV_OR_RAW: what the daemon took is the input, then only the
# silence aplay pads its last period with.
same_pcm() {
	python3 - "$1" "$out" <<'EOF'
import sys
src, got = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
if src[:4] == b"RIFF":
    src = src[src.index(b"data") + 8:]
ok = got[:len(src)] == src and not got[len(src):].strip(b"\0")
print("sent %d bytes, daemon took %d" % (len(src), len(got)))
sys.exit(0 if ok else 1)
EOF
}

# event NAME: a python expression over the parsed events list `e` is true.
event() {
	python3 - "$events" "$1" <<'EOF'
import json, sys
e = [json.loads(line) for line in open(sys.argv[1])]
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
}

# opened EXPR: the last open request, without its pid (which must be a number), EXPR.
opened() {
	event "[isinstance(r.pop('pid'), int) and r for r in [[x['request'] for x in e if x['event'] == 'open'][-1]]][0] $1"
}

wav s16 "$work/s16.wav"
wav s24 "$work/s24.wav"
wav s32 "$work/s32.wav"
wav float "$work/float.wav"
python3 -c "import random; random.seed(3); open('$work/s24_4.raw','wb').write(bytes(b for _ in range(44100*2) for b in random.randbytes(3) + b'\0'))"

# --- Playing -----------------------------------------------------------------
start_daemon
if aplay -q -D tonearm:nav "$work/s16.wav" >"$work/log" 2>&1 && same_pcm "$work/s16.wav" >>"$work/log"; then
	pass "aplay -D tonearm:nav of a 16-bit WAV arrives bit-exact"
else fail "aplay -D tonearm:nav of a 16-bit WAV arrives bit-exact"; fi
if opened "== dict(name='aplay', preset='nav', category='', mode='', options=[], notify=True)" 2>>"$work/log" &&
	event "[x['encoding'] for x in e if x['event'] == 'format'] == [1]"; then
	pass "the open message names aplay and the preset; the format is S16_LE"
else fail "the open message names aplay and the preset; the format is S16_LE"; fi

for kind in s24:3 s32:4 float:5; do
	name=${kind%%:*} encoding=${kind##*:}
	start_daemon
	if aplay -q -D tonearm "$work/$name.wav" >"$work/log" 2>&1 && same_pcm "$work/$name.wav" >>"$work/log" &&
		event "[x['encoding'] for x in e if x['event'] == 'format'] == [$encoding]"; then
		pass "a $name WAV arrives bit-exact with encoding $encoding"
	else fail "a $name WAV arrives bit-exact with encoding $encoding"; fi
done

start_daemon
if aplay -q -D tonearm -t raw -f S24_LE -c 2 -r 44100 "$work/s24_4.raw" >"$work/log" 2>&1 &&
	same_pcm "$work/s24_4.raw" >>"$work/log" && event "[x['encoding'] for x in e if x['event'] == 'format'] == [2]"; then
	pass "S24_LE (24 bits in four bytes) arrives bit-exact with encoding 2"
else fail "S24_LE (24 bits in four bytes) arrives bit-exact with encoding 2"; fi

start_daemon
if aplay -q -M -D tonearm "$work/s16.wav" >"$work/log" 2>&1 && same_pcm "$work/s16.wav" >>"$work/log"; then
	pass "aplay -M (mmap access) arrives bit-exact"
else fail "aplay -M (mmap access) arrives bit-exact"; fi

start_daemon
if aplay -q -N -D tonearm "$work/s16.wav" >"$work/log" 2>&1 && same_pcm "$work/s16.wav" >>"$work/log"; then
	pass "aplay -N (non-blocking) arrives bit-exact"
else fail "aplay -N (non-blocking) arrives bit-exact"; fi

start_daemon
t0=$(now_ms)
aplay -q -D tonearm "$work/s16.wav" >"$work/log" 2>&1
t1=$(now_ms)
if [ $((t1 - t0)) -ge 1950 ] && [ $((t1 - t0)) -le 2600 ]; then
	pass "two seconds of audio take two seconds to play and drain ($((t1 - t0)) ms)"
else fail "two seconds of audio take two seconds to play and drain ($((t1 - t0)) ms)"; fi
if event "not [x for x in e if x['event'] in ('bad-data', 'stale')]"; then
	pass "every data message is whole frames of at most 32 KiB, of the current epoch"
else fail "every data message is whole frames of at most 32 KiB, of the current epoch"; fi

if have speaker-test; then
	start_daemon
	if timeout 30 speaker-test -D tonearm -c 2 -l 1 -t sine -b 200000 >"$work/log" 2>&1 &&
		event "[x for x in e if x['event'] == 'drained' and x['frames'] >= 2 * 48000]"; then
		pass "speaker-test plays both channels"
	else fail "speaker-test plays both channels"; fi
else skip "speaker-test is not installed"; fi

if have play; then
	start_daemon
	if AUDIODEV=tonearm AUDIODRIVER=alsa timeout 20 play -q "$work/s16.wav" >"$work/log" 2>&1 &&
		event "[x for x in e if x['event'] == 'drained' and x['frames'] >= 88200]"; then
		pass "sox's play plays through"
	else fail "sox's play plays through"; fi
else skip "sox's play is not installed"; fi

if have gst-launch-1.0; then
	start_daemon
	if timeout 20 gst-launch-1.0 -q audiotestsrc num-buffers=100 ! alsasink device=tonearm >"$work/log" 2>&1 &&
		[ "$(stat -c %s "$out")" -ge $((102400 * 4)) ]; then
		pass "gst-launch-1.0 audiotestsrc ! alsasink device=tonearm plays every frame"
	else fail "gst-launch-1.0 audiotestsrc ! alsasink device=tonearm plays every frame"; fi
else skip "gst-launch-1.0 is not installed"; fi

# --- Arguments ------------------------------------------------------------------
start_daemon
aplay -q -D "tonearm:CATEGORY=ambient" "$work/s16.wav" >"$work/log" 2>&1
aplay -q -D "tonearm:PRESET=media,MODE=spokenAudio,OPTIONS='duckOthers, mixWithOthers',NAME='my player',NOTIFY=0" \
	"$work/s16.wav" >>"$work/log" 2>&1
if event "[x['request'] for x in e if x['event'] == 'open'][0]['category'] == 'ambient'" &&
	opened "== dict(name='my player', preset='media', category='', mode='spokenAudio', options=['duckOthers', 'mixWithOthers'], notify=False)"; then
	pass "CATEGORY, MODE, OPTIONS, NAME and NOTIFY reach the open message"
else fail "CATEGORY, MODE, OPTIONS, NAME and NOTIFY reach the open message"; fi

start_daemon
aplay -q -D "tonearm:NAME='say \"hi\"\\\\ \\ttab'" "$work/s16.wav" >"$work/log" 2>&1
if event "[x['request'] for x in e if x['event'] == 'open'][0]['name'] == 'say \"hi\"\\\\ \\ttab'"; then
	pass "quotes, backslashes and tabs in a name are escaped in the JSON"
else fail "quotes, backslashes and tabs in a name are escaped in the JSON"; fi

cat >"$work/bad.conf" <<EOF
pcm_type.tonearm { lib "$alsa/build/libasound_module_pcm_tonearm.so" }
pcm.bad { type tonearm colour blue }
EOF
if ALSA_CONFIG_PATH="$work/bad.conf" aplay -q -D bad "$work/s16.wav" >"$work/log" 2>&1; then
	fail "an unknown key is refused"
elif grep -q "unknown field colour" "$work/log"; then pass "an unknown key is refused"
else fail "an unknown key is refused"; fi

if arecord -q -D tonearm -d 1 "$work/capture.wav" >"$work/log" 2>&1; then
	fail "capture is refused"
elif grep -q "playback only" "$work/log"; then pass "capture is refused"
else fail "capture is refused"; fi

# --- Failures ---------------------------------------------------------------------
stop_daemon
rm -f "$TONEARM_PCM_SOCKET"
t0=$(now_ms)
aplay -q -D tonearm "$work/s16.wav" >"$work/log" 2>&1
rc=$?
t1=$(now_ms)
if [ $rc -ne 0 ] && [ $((t1 - t0)) -lt 500 ] &&
	grep -q "cannot reach the Tonearm daemon at $TONEARM_PCM_SOCKET: No such file or directory (is tonearmd running?)" "$work/log"; then
	pass "with no daemon, aplay fails at once naming the socket"
else fail "with no daemon, aplay fails at once naming the socket"; fi

if aplay -q -D "tonearm:SOCKET=$work/elsewhere.sock" "$work/s16.wav" >"$work/log" 2>&1; then
	fail "SOCKET= overrides the environment"
elif grep -q "at $work/elsewhere.sock" "$work/log"; then pass "SOCKET= overrides the environment"
else fail "SOCKET= overrides the environment"; fi

if have setpriv && id nobody >/dev/null 2>&1; then
	start_daemon
	chmod 0600 "$TONEARM_PCM_SOCKET"
	chmod 0755 "$work" "$HOME"
	if setpriv --reuid=nobody --regid=nogroup --clear-groups aplay -q -D tonearm "$work/s16.wav" >"$work/log" 2>&1; then
		fail "a user who may not connect is told about group audio"
	elif grep -q "Permission denied (the user must be in group audio)" "$work/log"; then
		pass "a user who may not connect is told about group audio"
	else fail "a user who may not connect is told about group audio"; fi
else skip "setpriv or user nobody is missing"; fi

start_daemon --refuse-open "no such preset: bogus"
if aplay -q -D tonearm:bogus "$work/s16.wav" >"$work/log" 2>&1; then
	fail "the daemon's refusal of the open is shown"
elif grep -q "no such preset: bogus" "$work/log"; then pass "the daemon's refusal of the open is shown"
else fail "the daemon's refusal of the open is shown"; fi

start_daemon --refuse-format "the output cannot play 8 channels"
if aplay -q -D tonearm "$work/s16.wav" >"$work/log" 2>&1; then
	fail "the daemon's refusal of a format is shown"
elif grep -q "the output cannot play 8 channels" "$work/log"; then pass "the daemon's refusal of a format is shown"
else fail "the daemon's refusal of a format is shown"; fi

start_daemon --die-after 1
t0=$(now_ms)
aplay -q -D tonearm "$work/s16.wav" >"$work/log" 2>&1
rc=$?
t1=$(now_ms)
if [ $rc -ne 0 ] && [ $((t1 - t0)) -lt 2000 ]; then
	pass "the daemon killed mid-stream: aplay fails within 1 s ($((t1 - t0)) ms from start, death at 1000)"
else fail "the daemon killed mid-stream: aplay fails within 1 s ($((t1 - t0)) ms from start, death at 1000)"; fi

start_daemon --die-after 0.3
aplay -q -D tonearm "$work/s16.wav" 2>/dev/null &
player=$!
sleep 2
if kill -0 $player 2>/dev/null; then
	kill $player; fail "the daemon killed during the drain: aplay does not hang"
else pass "the daemon killed during the drain: aplay does not hang"; fi

# --- Interruptions --------------------------------------------------------------------
start_daemon --suspend-after 0.7 --resume-after 1.5
t0=$(now_ms)
aplay -D tonearm "$work/s16.wav" >"$work/log" 2>&1
rc=$?
t1=$(now_ms)
if [ $rc -eq 0 ] && grep -q "Suspended. Trying resume. Done." "$work/log" && same_pcm "$work/s16.wav" >>"$work/log" &&
	[ $((t1 - t0)) -ge 3400 ]; then
	pass "suspend/resume: aplay waits $((t1 - t0- 2000)) ms and continues, every frame kept"
else fail "suspend/resume: aplay waits $((t1 - t0 - 2000)) ms and continues, every frame kept"; fi

start_daemon --suspend-after 0.7 --resume-after 1.5
t0=$(now_ms)
aplay -N -D tonearm "$work/s16.wav" >"$work/log" 2>&1
rc=$?
t1=$(now_ms)
if [ $rc -eq 0 ] && same_pcm "$work/s16.wav" >>"$work/log" && [ $((t1 - t0)) -ge 3400 ]; then
	pass "suspend/resume, non-blocking: aplay -N waits and continues, every frame kept"
else fail "suspend/resume, non-blocking: aplay -N waits and continues, every frame kept"; fi

start_daemon --suspend-after 0.5
aplay -D tonearm "$work/s16.wav" >"$work/log" 2>&1 &
player=$!
sleep 1
stop_daemon
sleep 0.5
if kill -0 $player 2>/dev/null; then
	kill $player; fail "the daemon gone while aplay waits to resume: aplay ends"
else pass "the daemon gone while aplay waits to resume: aplay ends"; fi

# --- Timing -------------------------------------------------------------------------
start_daemon
if "$alsa/build/delay_check" tonearm "$events.position" >"$work/log" 2>&1; then
	pass "snd_pcm_delay = (written - accepted) + queued, extrapolated while running"
else fail "snd_pcm_delay = (written - accepted) + queued, extrapolated while running"; fi

stop_daemon
echo
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
