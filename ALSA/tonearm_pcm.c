/*
 * tonearm_pcm.c — the ALSA PCM plugin "tonearm" (playback only).
 *
 * A program that opens "tonearm" gets a session of the Tonearm daemon: its
 * frames go over a Unix SOCK_SEQPACKET socket, and the daemon decides
 * everything else (category rules, presets, formats, interruptions). The
 * plugin only moves frames and answers timing questions from the positions the
 * daemon reports.
 *
 * Wire protocol (host byte order, one connection per open PCM): every message
 * begins with struct wire_header. Plugin → daemon: 'O' open (JSON), 'F'
 * format, 'D' data, 'S' start, 'N' drain, 'X' drop, 'P' pause. Daemon →
 * plugin: 'o' opened, 'e' error, 'f' format accepted, 'p' position,
 * 's' suspended, 'r' resumed, 'n' drained.
 *
 * Timing: the hw pointer is the daemon's "accepted" count of the current
 * epoch (one epoch per prepare). There is no xrun emulation: when a program
 * is late, the daemon's stream just has a gap.
 *
 * The plugin has no threads and allocates nothing after open; every wait
 * polls the daemon's socket, so a daemon that goes away ends the wait.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <alsa/asoundlib.h>
#include <alsa/pcm_external.h>

#define DEFAULT_SOCKET_PATH "/run/tonearm/pcm.sock"
#define SOCKET_ENV "TONEARM_PCM_SOCKET"

/* The daemon's answers to 'O' and 'F' come at once; two seconds means it is stuck. */
#define ANSWER_TIMEOUT_MS 2000
/* The largest message the plugin sends, header included. */
#define MAX_MESSAGE_BYTES (32 * 1024)

enum message_type {
	MSG_OPEN = 'O',
	MSG_FORMAT = 'F',
	MSG_DATA = 'D',
	MSG_START = 'S',
	MSG_DRAIN = 'N',
	MSG_DROP = 'X',
	MSG_PAUSE = 'P',

	MSG_OPENED = 'o',
	MSG_ERROR = 'e',
	MSG_FORMAT_ACCEPTED = 'f',
	MSG_POSITION = 'p',
	MSG_SUSPENDED = 's',
	MSG_RESUMED = 'r',
	MSG_DRAINED = 'n',
};

struct wire_header {
	uint8_t type;
	uint8_t flags;
	uint16_t reserved;
	uint32_t epoch;
};

_Static_assert(sizeof(struct wire_header) == 8, "the wire header is 8 bytes");

/* Encodings of the 'F' message. */
enum wire_encoding {
	ENCODING_S16_LE = 1,
	ENCODING_S24_LE = 2,
	ENCODING_S24_3LE = 3,
	ENCODING_S32_LE = 4,
	ENCODING_FLOAT_LE = 5,
};

struct tonearm_pcm {
	snd_pcm_ioplug_t io;
	int fd;
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint64_t session;

	/* From hw_params / sw_params. */
	size_t frame_bytes;
	snd_pcm_uframes_t boundary;
	snd_pcm_uframes_t avail_min;

	/* The current epoch; everything below is reset by prepare. */
	uint32_t epoch;
	uint64_t written;     /* frames sent in 'D' messages */
	uint64_t accepted;    /* frames the daemon took into its stream */
	int64_t queued;       /* frames taken but not yet heard, as of queued_at */
	uint64_t queued_at;   /* CLOCK_MONOTONIC ns */
	bool started;         /* 'S' sent */
	bool paused;
	bool drain_sent;
	bool drained;         /* 'n' received */

	/* Session-wide. */
	bool interrupted;     /* between 's' and 'r' */
	snd_pcm_state_t state_before_suspend;
	bool daemon_gone;
	bool stream_failed;   /* the daemon sent 'e' for the current epoch */

	/* The answer a wait is looking for. */
	bool awaiting_answer;
	bool got_answer;
	uint8_t answer_type;
	char error_text[512];

	uint8_t receive_buffer[4096];
};

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- Socket I/O ------------------------------------------------------- */

static void mark_daemon_gone(struct tonearm_pcm *pcm)
{
	pcm->daemon_gone = true;
	snd_pcm_ioplug_set_state(&pcm->io, SND_PCM_STATE_DISCONNECTED);
}

/* Sends header + payload as one message. Returns 0, -EAGAIN (only with
 * MSG_DONTWAIT) or -ENODEV when the daemon is gone. */
static int send_message(struct tonearm_pcm *pcm, uint8_t type, uint8_t flags,
			uint32_t epoch, const void *payload, size_t length, int send_flags)
{
	struct wire_header header = { .type = type, .flags = flags, .reserved = 0, .epoch = epoch };
	struct iovec iov[2] = {
		{ .iov_base = &header, .iov_len = sizeof(header) },
		{ .iov_base = (void *)payload, .iov_len = length },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = length ? 2 : 1 };

	if (pcm->daemon_gone)
		return -ENODEV;
	for (;;) {
		ssize_t sent = sendmsg(pcm->fd, &msg, MSG_NOSIGNAL | send_flags);
		if (sent >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -EAGAIN;
		mark_daemon_gone(pcm);
		return -ENODEV;
	}
}

static int send_control(struct tonearm_pcm *pcm, uint8_t type, uint8_t flags)
{
	return send_message(pcm, type, flags, pcm->epoch, NULL, 0, 0);
}

static void handle_message(struct tonearm_pcm *pcm, const uint8_t *bytes, size_t length)
{
	struct wire_header header;
	const uint8_t *payload = bytes + sizeof(header);
	size_t payload_length;

	if (length < sizeof(header))
		return;
	memcpy(&header, bytes, sizeof(header));
	payload_length = length - sizeof(header);

	switch (header.type) {
	case MSG_OPENED:
		if (payload_length >= 8)
			memcpy(&pcm->session, payload, 8);
		pcm->got_answer = true;
		pcm->answer_type = header.type;
		break;
	case MSG_FORMAT_ACCEPTED:
		if (header.epoch == pcm->epoch) {
			pcm->got_answer = true;
			pcm->answer_type = header.type;
		}
		break;
	case MSG_ERROR: {
		size_t n = payload_length < sizeof(pcm->error_text) - 1 ?
			payload_length : sizeof(pcm->error_text) - 1;
		if (header.epoch != pcm->epoch)
			break;
		memcpy(pcm->error_text, payload, n);
		pcm->error_text[n] = '\0';
		if (pcm->awaiting_answer) {
			pcm->got_answer = true;
			pcm->answer_type = header.type;
		} else if (header.epoch != 0) {
			/* The daemon gave up on this stream: end it, like a lost device. */
			SNDERR("tonearm: the daemon ended the stream: %s", pcm->error_text);
			pcm->stream_failed = true;
			snd_pcm_ioplug_set_state(&pcm->io, SND_PCM_STATE_DISCONNECTED);
		}
		break;
	}
	case MSG_POSITION: {
		uint64_t accepted, at;
		int64_t queued;
		if (header.epoch != pcm->epoch || payload_length < 24)
			break;
		memcpy(&accepted, payload, 8);
		memcpy(&queued, payload + 8, 8);
		memcpy(&at, payload + 16, 8);
		/* The daemon never takes more than was sent; hold it to that. */
		if (accepted > pcm->written)
			accepted = pcm->written;
		if (accepted > pcm->accepted)
			pcm->accepted = accepted;
		pcm->queued = queued;
		pcm->queued_at = at;
		break;
	}
	case MSG_SUSPENDED:
		pcm->interrupted = true;
		/* The ALSA way: the program's next call sees -ESTRPIPE and resumes.
		 * A drain in progress just waits; the daemon holds its frames. */
		switch (pcm->io.state) {
		case SND_PCM_STATE_PREPARED:
		case SND_PCM_STATE_RUNNING:
		case SND_PCM_STATE_PAUSED:
			pcm->state_before_suspend = pcm->io.state;
			snd_pcm_ioplug_set_state(&pcm->io, SND_PCM_STATE_SUSPENDED);
			break;
		default:
			break;
		}
		break;
	case MSG_RESUMED:
		pcm->interrupted = false;
		break;
	case MSG_DRAINED:
		if (header.epoch == pcm->epoch)
			pcm->drained = true;
		break;
	default:
		break;
	}
}

/* Reads every message that is waiting, without blocking. Returns 0, or
 * -ENODEV when the daemon is gone. */
static int receive_pending(struct tonearm_pcm *pcm)
{
	if (pcm->daemon_gone)
		return -ENODEV;
	for (;;) {
		ssize_t n = recv(pcm->fd, pcm->receive_buffer, sizeof(pcm->receive_buffer),
				 MSG_DONTWAIT);
		if (n > 0) {
			handle_message(pcm, pcm->receive_buffer, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		/* 0 is the end of the connection; any other error means the same to us. */
		mark_daemon_gone(pcm);
		return -ENODEV;
	}
}

/* Waits up to timeout_ms (-1: forever) for something from the daemon and
 * reads it. Returns 0, -ETIMEDOUT or -ENODEV. */
static int wait_for_daemon(struct tonearm_pcm *pcm, int timeout_ms)
{
	struct pollfd pfd = { .fd = pcm->fd, .events = POLLIN };
	int n;

	do
		n = poll(&pfd, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	return receive_pending(pcm);
}

/* Waits for the answer to the message just sent: the given type, or 'e'. */
static int wait_for_answer(struct tonearm_pcm *pcm, uint8_t expected, const char *what)
{
	uint64_t deadline = monotonic_ns() + (uint64_t)ANSWER_TIMEOUT_MS * 1000000u;

	pcm->got_answer = false;
	pcm->awaiting_answer = true;
	while (!pcm->got_answer) {
		uint64_t now = monotonic_ns();
		int err = now < deadline ? wait_for_daemon(pcm, (int)((deadline - now) / 1000000u) + 1)
					 : -ETIMEDOUT;
		/* After an 'e' the daemon may close at once: the 'e' is the answer. */
		if (pcm->got_answer)
			break;
		if (err < 0)
			pcm->awaiting_answer = false;
		if (err == -ETIMEDOUT) {
			SNDERR("tonearm: the daemon at %s did not answer %s within %d ms",
			       pcm->socket_path, what, ANSWER_TIMEOUT_MS);
			return -ETIMEDOUT;
		}
		if (err < 0) {
			SNDERR("tonearm: the daemon at %s closed the connection during %s",
			       pcm->socket_path, what);
			return err;
		}
	}
	pcm->awaiting_answer = false;
	if (pcm->answer_type != expected) {
		SNDERR("tonearm: the daemon refused %s: %s", what, pcm->error_text);
		return -EINVAL;
	}
	return 0;
}

/* ---- Accounting --------------------------------------------------------- */

static snd_pcm_uframes_t frames_in_flight(const struct tonearm_pcm *pcm)
{
	return (snd_pcm_uframes_t)(pcm->written - pcm->accepted);
}

static snd_pcm_uframes_t available_frames(const struct tonearm_pcm *pcm)
{
	snd_pcm_uframes_t in_flight = frames_in_flight(pcm);
	return in_flight >= pcm->io.buffer_size ? 0 : pcm->io.buffer_size - in_flight;
}

/* Whether the stream is one the daemon is playing, so queued shrinks with time. */
static bool daemon_clock_runs(const struct tonearm_pcm *pcm)
{
	return (pcm->io.state == SND_PCM_STATE_RUNNING ||
		pcm->io.state == SND_PCM_STATE_DRAINING) &&
	       pcm->started && !pcm->paused && !pcm->interrupted;
}

/* ---- ioplug callbacks --------------------------------------------------- */

static snd_pcm_sframes_t tonearm_pointer(snd_pcm_ioplug_t *io)
{
	struct tonearm_pcm *pcm = io->private_data;
	uint64_t position;

	receive_pending(pcm);
	position = pcm->accepted;
	/* ioplug ends a drain itself once the pointer reaches the application
	 * pointer; accepted frames are not yet heard, so hold the last frame
	 * back until the daemon says 'n'. */
	if (io->state == SND_PCM_STATE_DRAINING && !pcm->drained && position > 0 &&
	    position == pcm->written)
		position--;
	return (snd_pcm_sframes_t)(pcm->boundary ? position % pcm->boundary : position);
}

static snd_pcm_sframes_t tonearm_transfer(snd_pcm_ioplug_t *io, const snd_pcm_channel_area_t *areas,
					  snd_pcm_uframes_t offset, snd_pcm_uframes_t size)
{
	struct tonearm_pcm *pcm = io->private_data;
	const uint8_t *frames = (const uint8_t *)areas[0].addr +
				(areas[0].first + areas[0].step * offset) / 8;
	const snd_pcm_uframes_t frames_per_message =
		(MAX_MESSAGE_BYTES - sizeof(struct wire_header)) / pcm->frame_bytes;
	snd_pcm_uframes_t done = 0;

	if (pcm->daemon_gone || pcm->stream_failed)
		return -ENODEV;
	if (io->state == SND_PCM_STATE_SUSPENDED)
		return -ESTRPIPE;

	while (done < size) {
		snd_pcm_uframes_t count = size - done;
		int err;
		if (count > frames_per_message)
			count = frames_per_message;
		err = send_message(pcm, MSG_DATA, 0, pcm->epoch, frames + done * pcm->frame_bytes,
				   count * pcm->frame_bytes, MSG_DONTWAIT);
		if (err == -EAGAIN) {
			/* The socket's send buffer is full: the daemon is behind reading. */
			if (io->nonblock)
				break;
			struct pollfd pfd = { .fd = pcm->fd, .events = POLLOUT | POLLIN };
			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -errno;
			if (receive_pending(pcm) < 0)
				return done ? (snd_pcm_sframes_t)done : -ENODEV;
			continue;
		}
		if (err < 0)
			return done ? (snd_pcm_sframes_t)done : err;
		done += count;
		pcm->written += count;
	}
	return done ? (snd_pcm_sframes_t)done : -EAGAIN;
}

static int tonearm_start(snd_pcm_ioplug_t *io)
{
	struct tonearm_pcm *pcm = io->private_data;
	int err = send_control(pcm, MSG_START, 0);
	if (err < 0)
		return err;
	pcm->started = true;
	return 0;
}

static int tonearm_stop(snd_pcm_ioplug_t *io)
{
	struct tonearm_pcm *pcm = io->private_data;

	pcm->paused = false;
	/* After 'n', or before anything was sent, nothing waits to be dropped. */
	if (!pcm->drained && (pcm->started || pcm->written > 0))
		send_control(pcm, MSG_DROP, 0);
	return 0;
}

static int tonearm_pause(snd_pcm_ioplug_t *io, int enable)
{
	struct tonearm_pcm *pcm = io->private_data;
	int err = send_control(pcm, MSG_PAUSE, enable ? 1 : 0);
	if (err < 0)
		return err;
	pcm->paused = enable != 0;
	return 0;
}

static int tonearm_prepare(snd_pcm_ioplug_t *io)
{
	struct tonearm_pcm *pcm = io->private_data;
	uint32_t format[5];
	int err;

	switch (io->format) {
	case SND_PCM_FORMAT_S16_LE: format[2] = ENCODING_S16_LE; break;
	case SND_PCM_FORMAT_S24_LE: format[2] = ENCODING_S24_LE; break;
	case SND_PCM_FORMAT_S24_3LE: format[2] = ENCODING_S24_3LE; break;
	case SND_PCM_FORMAT_S32_LE: format[2] = ENCODING_S32_LE; break;
	case SND_PCM_FORMAT_FLOAT_LE: format[2] = ENCODING_FLOAT_LE; break;
	default: return -EINVAL;
	}
	format[0] = io->rate;
	format[1] = io->channels;
	format[3] = (uint32_t)io->buffer_size;
	format[4] = (uint32_t)io->period_size;

	if (receive_pending(pcm) < 0)
		return -ENODEV;

	pcm->epoch++;
	if (pcm->epoch == 0)
		pcm->epoch = 1;
	pcm->written = 0;
	pcm->accepted = 0;
	pcm->queued = 0;
	pcm->queued_at = 0;
	pcm->started = false;
	pcm->paused = false;
	pcm->drain_sent = false;
	pcm->drained = false;
	pcm->stream_failed = false;

	err = send_message(pcm, MSG_FORMAT, 0, pcm->epoch, format, sizeof(format), 0);
	if (err < 0) {
		SNDERR("tonearm: the daemon at %s closed the connection", pcm->socket_path);
		return err;
	}
	err = wait_for_answer(pcm, MSG_FORMAT_ACCEPTED, "the stream's format");
	if (err == -ENODEV)
		mark_daemon_gone(pcm);
	return err;
}

static int tonearm_drain(snd_pcm_ioplug_t *io)
{
	struct tonearm_pcm *pcm = io->private_data;
	int err;

	if (receive_pending(pcm) < 0)
		return -ENODEV;
	if (!pcm->started) {
		if (pcm->written == 0)
			return 0;
		/* Held frames are played only after a start. */
		err = send_control(pcm, MSG_START, 0);
		if (err < 0)
			return err;
		pcm->started = true;
	}
	if (!pcm->drain_sent) {
		err = send_control(pcm, MSG_DRAIN, 0);
		if (err < 0)
			return err;
		pcm->drain_sent = true;
	}
	while (!pcm->drained) {
		if (io->nonblock)
			return -EAGAIN;
		err = wait_for_daemon(pcm, -1);
		if (err < 0)
			return err;
	}
	return 0;
}

/* alsa-lib ignores what resume returns; the state set here is what counts. */
static int tonearm_resume(snd_pcm_ioplug_t *io)
{
	struct tonearm_pcm *pcm = io->private_data;

	if (io->state != SND_PCM_STATE_SUSPENDED)
		return 0;
	if (receive_pending(pcm) < 0)
		return -ENODEV;
	/* A blocking program waits for the interruption to end. A non-blocking one
	 * goes on at once: the daemon keeps the stream held, so accepted stays put
	 * and poll sleeps until 'r'. */
	while (pcm->interrupted && !io->nonblock) {
		int err = wait_for_daemon(pcm, -1);
		if (err < 0)
			return err;
	}
	snd_pcm_ioplug_set_state(io, pcm->state_before_suspend);
	return 0;
}

static int tonearm_delay(snd_pcm_ioplug_t *io, snd_pcm_sframes_t *delay)
{
	struct tonearm_pcm *pcm = io->private_data;
	int64_t queued;

	if (receive_pending(pcm) < 0)
		return -ENODEV;
	queued = pcm->queued;
	if (daemon_clock_runs(pcm) && pcm->queued_at != 0) {
		uint64_t now = monotonic_ns();
		if (now > pcm->queued_at) {
			int64_t heard = (int64_t)((now - pcm->queued_at) * io->rate / 1000000000u);
			queued -= heard;
		}
	}
	if (queued < 0)
		queued = 0;
	*delay = (snd_pcm_sframes_t)(frames_in_flight(pcm) + (uint64_t)queued);
	return 0;
}

static int tonearm_poll_descriptors_count(snd_pcm_ioplug_t *io)
{
	(void)io;
	return 1;
}

static int tonearm_poll_descriptors(snd_pcm_ioplug_t *io, struct pollfd *pfd, unsigned int space)
{
	struct tonearm_pcm *pcm = io->private_data;
	bool ready;

	if (space < 1)
		return 0;
	receive_pending(pcm);
	/* Asking POLLOUT of a writable socket makes poll return at once: do it
	 * only when the answer is already "ready" (or an error to report). */
	ready = pcm->daemon_gone || io->state == SND_PCM_STATE_SUSPENDED ||
		(io->state != SND_PCM_STATE_DRAINING && available_frames(pcm) >= pcm->avail_min);
	pfd->fd = pcm->fd;
	pfd->events = POLLIN | (ready ? POLLOUT : 0);
	pfd->revents = 0;
	return 1;
}

static int tonearm_poll_revents(snd_pcm_ioplug_t *io, struct pollfd *pfd, unsigned int nfds,
				unsigned short *revents)
{
	struct tonearm_pcm *pcm = io->private_data;

	(void)pfd;
	(void)nfds;
	receive_pending(pcm);
	if (pcm->daemon_gone || pcm->stream_failed || io->state == SND_PCM_STATE_SUSPENDED)
		*revents = POLLERR;
	else if (io->state == SND_PCM_STATE_DRAINING)
		*revents = pcm->drained ? POLLOUT : 0;
	else if (available_frames(pcm) >= pcm->avail_min)
		*revents = POLLOUT;
	else
		*revents = 0;
	return 0;
}

static int tonearm_hw_params(snd_pcm_ioplug_t *io, snd_pcm_hw_params_t *params)
{
	struct tonearm_pcm *pcm = io->private_data;
	snd_pcm_uframes_t boundary;
	ssize_t bits = snd_pcm_format_physical_width(io->format);

	(void)params;
	if (bits <= 0)
		return -EINVAL;
	pcm->frame_bytes = (size_t)bits / 8 * io->channels;
	/* The same boundary alsa-lib picks, until sw_params tells us. */
	boundary = io->buffer_size;
	while (boundary * 2 <= LONG_MAX - io->buffer_size)
		boundary *= 2;
	pcm->boundary = boundary;
	pcm->avail_min = io->period_size;
	return 0;
}

static int tonearm_sw_params(snd_pcm_ioplug_t *io, snd_pcm_sw_params_t *params)
{
	struct tonearm_pcm *pcm = io->private_data;
	snd_pcm_uframes_t value;

	if (snd_pcm_sw_params_get_boundary(params, &value) == 0 && value > 0)
		pcm->boundary = value;
	if (snd_pcm_sw_params_get_avail_min(params, &value) == 0)
		pcm->avail_min = value ? value : 1;
	return 0;
}

static int tonearm_close(snd_pcm_ioplug_t *io)
{
	struct tonearm_pcm *pcm = io->private_data;

	if (pcm->fd >= 0)
		close(pcm->fd);
	free(pcm);
	return 0;
}

static void tonearm_dump(snd_pcm_ioplug_t *io, snd_output_t *out)
{
	struct tonearm_pcm *pcm = io->private_data;

	snd_output_printf(out, "Tonearm session %llu at %s\n",
			  (unsigned long long)pcm->session, pcm->socket_path);
	snd_output_printf(out, "Its setup is:\n");
	snd_pcm_dump_setup(io->pcm, out);
}

static const snd_pcm_ioplug_callback_t tonearm_callbacks = {
	.start = tonearm_start,
	.stop = tonearm_stop,
	.pointer = tonearm_pointer,
	.transfer = tonearm_transfer,
	.close = tonearm_close,
	.hw_params = tonearm_hw_params,
	.sw_params = tonearm_sw_params,
	.prepare = tonearm_prepare,
	.drain = tonearm_drain,
	.pause = tonearm_pause,
	.resume = tonearm_resume,
	.poll_descriptors_count = tonearm_poll_descriptors_count,
	.poll_descriptors = tonearm_poll_descriptors,
	.poll_revents = tonearm_poll_revents,
	.dump = tonearm_dump,
	.delay = tonearm_delay,
};

/* ---- Open ------------------------------------------------------------- */

static int set_hw_constraints(snd_pcm_ioplug_t *io)
{
	static const unsigned int accesses[] = {
		SND_PCM_ACCESS_RW_INTERLEAVED,
		SND_PCM_ACCESS_MMAP_INTERLEAVED,
	};
	static const unsigned int formats[] = {
		SND_PCM_FORMAT_S16_LE,
		SND_PCM_FORMAT_S24_LE,
		SND_PCM_FORMAT_S24_3LE,
		SND_PCM_FORMAT_S32_LE,
		SND_PCM_FORMAT_FLOAT_LE,
	};
	/* Periods of at least 64 frames of 16-bit stereo; buffers of at most
	 * 4 MiB (half a second of 8 channels of 32 bits at 192 kHz). */
	const unsigned int min_period_bytes = 64 * 4;
	const unsigned int max_buffer_bytes = 4 * 1024 * 1024;
	int err;

	if ((err = snd_pcm_ioplug_set_param_list(io, SND_PCM_IOPLUG_HW_ACCESS,
						 sizeof(accesses) / sizeof(accesses[0]), accesses)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_list(io, SND_PCM_IOPLUG_HW_FORMAT,
						 sizeof(formats) / sizeof(formats[0]), formats)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_CHANNELS, 1, 8)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_RATE, 8000, 384000)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_PERIOD_BYTES,
						   min_period_bytes, max_buffer_bytes / 2)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_BUFFER_BYTES,
						   2 * min_period_bytes, max_buffer_bytes)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_PERIODS, 2, 64)) < 0)
		return err;
	return 0;
}

struct session_request {
	const char *name;
	const char *preset;
	const char *category;
	const char *mode;
	const char *options; /* comma-separated */
	bool notify;
	const char *socket_path;
};

/* A growable string for the open message; only used while opening. */
struct json_text {
	char *bytes;
	size_t length;
	size_t capacity;
	bool failed;
};

static void json_append(struct json_text *json, const char *bytes, size_t length)
{
	if (json->failed)
		return;
	if (json->length + length + 1 > json->capacity) {
		size_t capacity = (json->capacity ? json->capacity : 256);
		while (json->length + length + 1 > capacity)
			capacity *= 2;
		char *grown = realloc(json->bytes, capacity);
		if (!grown) {
			json->failed = true;
			return;
		}
		json->bytes = grown;
		json->capacity = capacity;
	}
	memcpy(json->bytes + json->length, bytes, length);
	json->length += length;
	json->bytes[json->length] = '\0';
}

static void json_append_literal(struct json_text *json, const char *text)
{
	json_append(json, text, strlen(text));
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_sequence_length(const unsigned char *s, size_t n)
{
	size_t length, i;
	uint32_t code;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) { length = 2; code = s[0] & 0x1f; }
	else if (s[0] >= 0xe0 && s[0] <= 0xef) { length = 3; code = s[0] & 0x0f; }
	else if (s[0] >= 0xf0 && s[0] <= 0xf4) { length = 4; code = s[0] & 0x07; }
	else return 0;
	if (length > n)
		return 0;
	for (i = 1; i < length; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		code = (code << 6) | (s[i] & 0x3f);
	}
	if ((length == 3 && (code < 0x800 || (code >= 0xd800 && code <= 0xdfff))) ||
	    (length == 4 && (code < 0x10000 || code > 0x10ffff)))
		return 0;
	return length;
}

/* Appends a JSON string; bytes that are not UTF-8 (a program's name may hold
 * anything) become U+FFFD so the daemon's decoder accepts the message. */
static void json_append_string(struct json_text *json, const char *text, size_t n)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0;

	json_append_literal(json, "\"");
	while (i < n) {
		char escape[8];
		size_t length;
		switch (s[i]) {
		case '"': json_append_literal(json, "\\\""); i++; continue;
		case '\\': json_append_literal(json, "\\\\"); i++; continue;
		case '\n': json_append_literal(json, "\\n"); i++; continue;
		case '\r': json_append_literal(json, "\\r"); i++; continue;
		case '\t': json_append_literal(json, "\\t"); i++; continue;
		default: break;
		}
		if (s[i] < 0x20) {
			snprintf(escape, sizeof(escape), "\\u%04x", s[i]);
			json_append_literal(json, escape);
			i++;
			continue;
		}
		length = utf8_sequence_length(s + i, n - i);
		if (length == 0) {
			json_append_literal(json, "\\ufffd");
			i++;
			continue;
		}
		json_append(json, text + i, length);
		i += length;
	}
	json_append_literal(json, "\"");
}

static void json_append_field(struct json_text *json, const char *key, const char *value)
{
	json_append_literal(json, ",\"");
	json_append_literal(json, key);
	json_append_literal(json, "\":");
	json_append_string(json, value, strlen(value));
}

static char *open_message_json(const struct session_request *request)
{
	struct json_text json = { 0 };
	const char *option = request->options;
	bool first = true;
	char number[32];

	json_append_literal(&json, "{\"name\":");
	json_append_string(&json, request->name, strlen(request->name));
	json_append_field(&json, "preset", request->preset);
	json_append_field(&json, "category", request->category);
	json_append_field(&json, "mode", request->mode);
	json_append_literal(&json, ",\"options\":[");
	while (*option) {
		const char *end = strchr(option, ',');
		size_t length = end ? (size_t)(end - option) : strlen(option);
		const char *start = option;
		while (length > 0 && (*start == ' ' || *start == '\t')) {
			start++;
			length--;
		}
		while (length > 0 && (start[length - 1] == ' ' || start[length - 1] == '\t'))
			length--;
		if (length > 0) {
			if (!first)
				json_append_literal(&json, ",");
			json_append_string(&json, start, length);
			first = false;
		}
		option = end ? end + 1 : option + strlen(option);
	}
	json_append_literal(&json, "],\"notify\":");
	json_append_literal(&json, request->notify ? "true" : "false");
	snprintf(number, sizeof(number), ",\"pid\":%ld}", (long)getpid());
	json_append_literal(&json, number);
	if (json.failed) {
		free(json.bytes);
		return NULL;
	}
	return json.bytes;
}

static int connect_to_daemon(struct tonearm_pcm *pcm, const char *path)
{
	struct sockaddr_un address = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(address.sun_path)) {
		SNDERR("cannot reach the Tonearm daemon at %s: the socket path is too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(address.sun_path, path);
	strcpy(pcm->socket_path, path);

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		SNDERR("cannot reach the Tonearm daemon at %s: %s", path, strerror(errno));
		return err;
	}
	if (connect(fd, (struct sockaddr *)&address, sizeof(address)) < 0) {
		err = -errno;
		if (errno == EACCES || errno == EPERM)
			SNDERR("cannot reach the Tonearm daemon at %s: %s (the user must be in group audio)",
			       path, strerror(errno));
		else
			SNDERR("cannot reach the Tonearm daemon at %s: %s (is tonearmd running?)",
			       path, strerror(errno));
		close(fd);
		return err;
	}
	pcm->fd = fd;
	return 0;
}

static int open_session(struct tonearm_pcm *pcm, const struct session_request *request)
{
	char *json;
	int err;

	err = connect_to_daemon(pcm, request->socket_path);
	if (err < 0)
		return err;
	json = open_message_json(request);
	if (!json)
		return -ENOMEM;
	pcm->epoch = 0;
	err = send_message(pcm, MSG_OPEN, 0, 0, json, strlen(json), 0);
	free(json);
	if (err < 0) {
		SNDERR("cannot reach the Tonearm daemon at %s: it closed the connection",
		       pcm->socket_path);
		return err;
	}
	return wait_for_answer(pcm, MSG_OPENED, "the session's opening");
}

static int read_string(snd_config_t *n, const char *key, const char **value)
{
	if (snd_config_get_string(n, value) < 0) {
		SNDERR("tonearm: %s must be a string", key);
		return -EINVAL;
	}
	return 0;
}

SND_PCM_PLUGIN_DEFINE_FUNC(tonearm)
{
	struct session_request request = {
		.name = "", .preset = "", .category = "", .mode = "", .options = "",
		.notify = true, .socket_path = "",
	};
	snd_config_iterator_t i, next;
	struct tonearm_pcm *pcm;
	int err;

	(void)root;
	snd_config_for_each(i, next, conf) {
		snd_config_t *n = snd_config_iterator_entry(i);
		const char *key;
		if (snd_config_get_id(n, &key) < 0)
			continue;
		if (strcmp(key, "comment") == 0 || strcmp(key, "type") == 0 ||
		    strcmp(key, "hint") == 0)
			continue;
		if (strcmp(key, "preset") == 0)
			err = read_string(n, key, &request.preset);
		else if (strcmp(key, "category") == 0)
			err = read_string(n, key, &request.category);
		else if (strcmp(key, "mode") == 0)
			err = read_string(n, key, &request.mode);
		else if (strcmp(key, "options") == 0)
			err = read_string(n, key, &request.options);
		else if (strcmp(key, "name") == 0)
			err = read_string(n, key, &request.name);
		else if (strcmp(key, "socket") == 0)
			err = read_string(n, key, &request.socket_path);
		else if (strcmp(key, "notify") == 0) {
			int value = snd_config_get_bool(n);
			if (value < 0) {
				SNDERR("tonearm: notify must be 0 or 1");
				err = -EINVAL;
			} else {
				request.notify = value != 0;
				err = 0;
			}
		} else {
			SNDERR("tonearm: unknown field %s", key);
			err = -EINVAL;
		}
		if (err < 0)
			return err;
	}

	if (stream != SND_PCM_STREAM_PLAYBACK) {
		SNDERR("tonearm: playback only");
		return -EINVAL;
	}
	if (request.name[0] == '\0')
		request.name = program_invocation_short_name;
	if (request.socket_path[0] == '\0') {
		const char *from_environment = getenv(SOCKET_ENV);
		request.socket_path = from_environment && from_environment[0] ?
			from_environment : DEFAULT_SOCKET_PATH;
	}

	pcm = calloc(1, sizeof(*pcm));
	if (!pcm)
		return -ENOMEM;
	pcm->fd = -1;

	err = open_session(pcm, &request);
	if (err < 0)
		goto failed;

	pcm->io.version = SND_PCM_IOPLUG_VERSION;
	pcm->io.name = "Tonearm audio session";
	pcm->io.flags = SND_PCM_IOPLUG_FLAG_BOUNDARY_WA | SND_PCM_IOPLUG_FLAG_MONOTONIC;
	pcm->io.poll_fd = pcm->fd;
	pcm->io.poll_events = POLLIN;
	pcm->io.mmap_rw = 0;
	pcm->io.callback = &tonearm_callbacks;
	pcm->io.private_data = pcm;

	err = snd_pcm_ioplug_create(&pcm->io, name, stream, mode);
	if (err < 0)
		goto failed;
	pcm->io.nonblock = (mode & SND_PCM_NONBLOCK) != 0;

	err = set_hw_constraints(&pcm->io);
	if (err < 0) {
		snd_pcm_ioplug_delete(&pcm->io); /* calls tonearm_close */
		return err;
	}
	*pcmp = pcm->io.pcm;
	return 0;

failed:
	if (pcm->fd >= 0)
		close(pcm->fd);
	free(pcm);
	return err;
}

SND_PCM_PLUGIN_SYMBOL(tonearm);
