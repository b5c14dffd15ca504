/*
 * delay_check DEVICE POSITION_FILE — checks snd_pcm_delay against the fake
 * daemon's last reported position: delay = (written - accepted) + queued.
 */
#define _DEFAULT_SOURCE
#include <alsa/asoundlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define RATE 48000
#define CHUNK 960

static int failures;
static snd_pcm_t *pcm;
static long written;

static void check(int ok, const char *what, long got, long want)
{
	printf("%s %s: got %ld, want %ld\n", ok ? "ok  " : "FAIL", what, got, want);
	if (!ok)
		failures++;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "delay_check: %s: %s\n", what, snd_strerror(err));
	exit(2);
}

static void write_frames(long frames)
{
	static short silence[CHUNK * 2];
	while (frames > 0) {
		snd_pcm_sframes_t n = snd_pcm_writei(pcm, silence, frames < CHUNK ? frames : CHUNK);
		if (n < 0)
			die("write", (int)n);
		frames -= n;
		written += n;
	}
}

static long daemon_position(const char *path, long *queued)
{
	long epoch, accepted;
	FILE *f = fopen(path, "r");
	if (!f || fscanf(f, "{\"epoch\": %ld, \"accepted\": %ld, \"queued\": %ld}",
			 &epoch, &accepted, queued) != 3)
		die("reading the daemon's position", -EIO);
	fclose(f);
	return accepted;
}

int main(int argc, char **argv)
{
	snd_pcm_uframes_t buffer = 9600, period = CHUNK, boundary;
	snd_pcm_sw_params_t *sw;
	snd_pcm_sframes_t delay, d1, d2, avail;
	long accepted, queued;
	int err;

	if (argc != 3) {
		fprintf(stderr, "usage: delay_check DEVICE POSITION_FILE\n");
		return 2;
	}
	if ((err = snd_pcm_open(&pcm, argv[1], SND_PCM_STREAM_PLAYBACK, 0)) < 0)
		die("open", err);
	if ((err = snd_pcm_set_params(pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED,
				      2, RATE, 0, 200000)) < 0)
		die("hw params", err);
	snd_pcm_get_params(pcm, &buffer, &period);
	/* Start by hand. */
	snd_pcm_sw_params_alloca(&sw);
	snd_pcm_sw_params_current(pcm, sw);
	snd_pcm_sw_params_get_boundary(sw, &boundary);
	snd_pcm_sw_params_set_start_threshold(pcm, sw, boundary);
	if ((err = snd_pcm_sw_params(pcm, sw)) < 0)
		die("sw params", err);

	write_frames(buffer / 2);
	snd_pcm_delay(pcm, &delay);
	check(delay == (snd_pcm_sframes_t)buffer / 2, "delay before start = written", delay, buffer / 2);

	if ((err = snd_pcm_start(pcm)) < 0)
		die("start", err);
	write_frames(RATE);

	if ((err = snd_pcm_pause(pcm, 1)) < 0)
		die("pause", err);
	usleep(100000);
	snd_pcm_delay(pcm, &delay);
	avail = snd_pcm_avail(pcm);
	accepted = daemon_position(argv[2], &queued);
	check(written - accepted == (long)buffer - avail, "paused: buffer - avail = written - accepted",
	      (long)buffer - avail, written - accepted);
	check(delay == written - accepted + queued, "paused: delay = (written - accepted) + queued",
	      delay, written - accepted + queued);

	if ((err = snd_pcm_pause(pcm, 0)) < 0)
		die("release", err);
	write_frames(RATE / 2);
	/* No more writes: the delay must fall at the stream's rate, smoothly. */
	snd_pcm_delay(pcm, &d1);
	usleep(50000);
	snd_pcm_delay(pcm, &d2);
	check(labs((d1 - d2) - RATE / 20) <= RATE / 200, "running: delay falls by 50 ms in 50 ms",
	      d1 - d2, RATE / 20);

	if ((err = snd_pcm_drain(pcm)) < 0)
		die("drain", err);
	snd_pcm_close(pcm);
	printf("delay_check: %d\n", failures ? 1 : 0);
	return failures ? 1 : 0;
}
