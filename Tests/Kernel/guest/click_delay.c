/*
 * click_delay DEVICE CLICKS [DAEMON_PID] — what a program that syncs to snd_pcm_delay sees.
 *
 * Plays silence (S16_LE, stereo, 48 kHz, a 100 ms buffer) for two seconds, then CLICKS times,
 * at a moment that falls anywhere in a period: reads snd_pcm_delay D and CLOCK_MONOTONIC t, and
 * writes one frame at full scale as the very next frame, then silence again. Each click is
 * printed as "click T_SECONDS DELAY_FRAMES"; a click is heard D frames after t if the delay is
 * the truth. Ends with a drain, so every click is played before it exits.
 *
 * With DAEMON_PID, once every click has played, the daemon is stopped (SIGSTOP) while snd_pcm_delay is read once more,
 * and continued: a delay that waited for the daemon would never return, and an alarm ends the
 * program after 10 s. Printed as "stopped-delay DELAY_FRAMES".
 *
 * Built by scripts/test-kernel for the kernel suite (test_programs.py).
 */
#define _DEFAULT_SOURCE
#include <alsa/asoundlib.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define RATE 48000
#define CHUNK 480

static snd_pcm_t *pcm;

static void die(const char *what, int err)
{
	fprintf(stderr, "click_delay: %s: %s\n", what, snd_strerror(err));
	exit(2);
}

static double monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_all(const short *frames, long count)
{
	while (count > 0) {
		snd_pcm_sframes_t n = snd_pcm_writei(pcm, frames, (snd_pcm_uframes_t)count);
		if (n < 0)
			die("write", (int)n);
		frames += 2 * n;
		count -= n;
	}
}

static void silence(long frames)
{
	static const short zero[CHUNK * 2];
	while (frames > 0) {
		long n = frames < CHUNK ? frames : CHUNK;
		write_all(zero, n);
		frames -= n;
	}
}

int main(int argc, char **argv)
{
	static const short click[2] = { 28000, 28000 };
	snd_pcm_uframes_t buffer, period;
	int clicks, err;

	pid_t daemon = argc == 4 ? (pid_t)atoi(argv[3]) : 0;
	if (argc < 3 || argc > 4 || (clicks = atoi(argv[2])) < 1 || (argc == 4 && daemon <= 0)) {
		fprintf(stderr, "usage: click_delay DEVICE CLICKS [DAEMON_PID]\n");
		return 2;
	}
	if ((err = snd_pcm_open(&pcm, argv[1], SND_PCM_STREAM_PLAYBACK, 0)) < 0)
		die("open", err);
	if ((err = snd_pcm_set_params(pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED,
				      2, RATE, 0, 100000)) < 0)
		die("hw params", err);
	snd_pcm_get_params(pcm, &buffer, &period);
	printf("params %lu %lu\n", (unsigned long)buffer, (unsigned long)period);

	/* Steady state: the program's buffer and everything behind it full. */
	silence(2 * RATE);
	srand(7);
	for (int i = 0; i < clicks; i++) {
		snd_pcm_sframes_t delay;
		double before, after;
		/* Anywhere within a period, not just after a write returned. */
		usleep((useconds_t)(rand() % 20000));
		before = monotonic();
		if ((err = snd_pcm_delay(pcm, &delay)) < 0)
			die("delay", err);
		after = monotonic();
		write_all(click, 1);
		printf("click %.6f %ld %.6f\n", (before + after) / 2, (long)delay, after - before);
		fflush(stdout);
		silence(RATE * 3 / 5);
	}
	silence(RATE / 2);
	if (daemon) {
		/* Every click played first: what a stop delays is silence. */
		silence(RATE * 3 / 2);
		snd_pcm_sframes_t delay;
		if (kill(daemon, SIGSTOP) < 0) {
			perror("click_delay: SIGSTOP");
			return 2;
		}
		alarm(10);
		err = snd_pcm_delay(pcm, &delay);
		alarm(0);
		kill(daemon, SIGCONT);
		if (err < 0)
			die("delay with the daemon stopped", err);
		printf("stopped-delay %ld\n", (long)delay);
		fflush(stdout);
	}
	if ((err = snd_pcm_drain(pcm)) < 0)
		die("drain", err);
	snd_pcm_close(pcm);
	return 0;
}
