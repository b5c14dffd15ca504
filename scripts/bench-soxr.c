/* What libsoxr alone costs to resample stereo audio, in CPU seconds: the "bare soxr pass" that
 * Tonearm's resampled playback is held to (scripts/bench builds and runs it).
 *
 *   bench-soxr [--raw FILE|-] [--seconds N] [--quality Q] [--in T] [--out T] [--convert]
 *              [--chunk FRAMES] [--threads N] [--rate HZ] [--runs N] [--cpu-only]
 *   bench-soxr [--raw FILE|-] [--seconds N] [--runs N] --matrix
 *
 * The audio is 44.1 kHz stereo 16-bit: raw s16le from FILE (or standard input), e.g.
 *   flac -d -c -s --force-raw-format --endian=little --sign=signed x.flac | bench-soxr --raw -
 * or, without --raw, N seconds (default 600) of pink noise made here. It is held in memory as
 * Tonearm's decoder hands it on, left-justified int32 (the sample in the top 16 bits), and, for
 * the float types, as floats of the same value; none of that is timed.
 *
 * Timed, per run: soxr_create, soxr_process over the whole input in chunks of --chunk frames
 * (default 4096, what libFLAC decodes per block of a level-5 file), the flush, soxr_delete;
 * the CPU is the process's user + system time (CLOCK_PROCESS_CPUTIME_ID), so threads soxr may
 * start are counted too. The figure is the median of --runs runs (default 3).
 *
 *   --quality   quick, low, medium, high (default), very_high: SOXR_QQ ... SOXR_VHQ
 *   --in/--out  i32i (SOXR_INT32_I), f32i (SOXR_FLOAT32_I, the default), f32s (SOXR_FLOAT32_S);
 *               --in also i32s (SOXR_INT32_S: a channel per array, as libFLAC decodes)
 *   --convert   with a float type, the int32 <-> float conversion (and for f32s the
 *               (de)interleave) happens here, inside the timed loop, as a converter feeding
 *               soxr floats from int32 samples has to do
 *   --threads   soxr_runtime_spec(N) (default 1; 0 lets OpenMP pick, as soxr's
 *               documentation has it)
 *   --matrix    every variant of a fixed list, side by side on the same audio, with the
 *               clips soxr counted (for an int32 output: none, or the scaling is wrong)
 *
 * Floats carry int32 full scale throughout, so every variant computes the same samples.
 * Built as scripts/bench builds it:
 *   gcc -O3 -fno-math-errno -o bench-soxr bench-soxr.c $(pkg-config --cflags --libs soxr) -lm
 */
#define _POSIX_C_SOURCE 200809L  /* clock_gettime */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <soxr.h>

enum type { I32I, F32I, F32S, I32S };
static const char *type_names[] = {"i32i", "f32i", "f32s", "i32s"};
static const soxr_datatype_t soxr_types[] = {SOXR_INT32_I, SOXR_FLOAT32_I, SOXR_FLOAT32_S, SOXR_INT32_S};

static const struct { const char *name; unsigned long recipe; } qualities[] = {
    {"quick", SOXR_QQ}, {"low", SOXR_LQ}, {"medium", SOXR_MQ}, {"high", SOXR_HQ}, {"very_high", SOXR_VHQ},
};

struct variant {
    const char *label;
    int quality;               /* index into qualities */
    enum type in, out;
    int convert;
    size_t chunk;
    unsigned threads;
    unsigned long q_flags;     /* soxr_quality_spec flags */
    unsigned long r_flags;     /* soxr_runtime_spec flags */
    unsigned coef_kbytes;      /* 0: soxr's default */
};

/* The audio, as it is held before the clock starts. */
static size_t frames;
static int32_t *pcm;           /* interleaved, left-justified */
static float *pcm_f;           /* interleaved, same value as pcm (full scale 2^31) */
static float *pcm_l, *pcm_r;   /* split */
static int32_t *pcm_il, *pcm_ir; /* split int32, as libFLAC hands a block over */
static double out_rate = 48000;

static void die(const char *message) {
    fprintf(stderr, "bench-soxr: %s\n", message);
    exit(1);
}

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double wall_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *allocate(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) die("out of memory");
    memset(p, 0, bytes);   /* touched now, so no run pays for the first page faults */
    return p;
}

static void read_raw(const char *path) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) die("cannot open the raw input");
    size_t capacity = 1 << 20, used = 0;
    int16_t *s = malloc(capacity * sizeof *s);
    for (;;) {
        if (used == capacity) {
            capacity *= 2;
            if (!(s = realloc(s, capacity * sizeof *s))) die("out of memory");
        }
        size_t n = fread(s + used, sizeof *s, capacity - used, f);
        if (n == 0) break;
        used += n;
    }
    if (f != stdin) fclose(f);
    frames = used / 2;
    if (frames == 0) die("no audio in the raw input");
    pcm = allocate(frames * 2 * sizeof *pcm);
    for (size_t i = 0; i < frames * 2; i++) pcm[i] = (int32_t)((uint32_t)(uint16_t)s[i] << 16);
    free(s);
}

/* Pink noise (Paul Kellet's economy filter over xorshift white noise), about -10 dBFS RMS. */
static void make_pink(double seconds) {
    frames = (size_t)(seconds * 44100);
    pcm = allocate(frames * 2 * sizeof *pcm);
    uint32_t x = 0x9E3779B9u;
    for (int c = 0; c < 2; c++) {
        double b0 = 0, b1 = 0, b2 = 0;
        for (size_t i = 0; i < frames; i++) {
            x ^= x << 13; x ^= x >> 17; x ^= x << 5;
            double white = (double)x / 2147483648.0 - 1.0;
            b0 = 0.99765 * b0 + white * 0.0990460;
            b1 = 0.96300 * b1 + white * 0.2965164;
            b2 = 0.57000 * b2 + white * 1.0526913;
            double v = (b0 + b1 + b2 + white * 0.1848) * 0.08;
            long s = lrint(v * 32767);
            if (s > 32767) s = 32767;
            if (s < -32768) s = -32768;
            pcm[2 * i + c] = (int32_t)((uint32_t)(uint16_t)(int16_t)s << 16);
        }
    }
}

static void prepare_floats(void) {
    pcm_f = allocate(frames * 2 * sizeof *pcm_f);
    pcm_l = allocate(frames * sizeof *pcm_l);
    pcm_r = allocate(frames * sizeof *pcm_r);
    pcm_il = allocate(frames * sizeof *pcm_il);
    pcm_ir = allocate(frames * sizeof *pcm_ir);
    for (size_t i = 0; i < frames; i++) {
        pcm_il[i] = pcm[2 * i];
        pcm_ir[i] = pcm[2 * i + 1];
        pcm_f[2 * i] = pcm_l[i] = (float)pcm[2 * i];
        pcm_f[2 * i + 1] = pcm_r[i] = (float)pcm[2 * i + 1];
    }
}

/* Float (int32 full scale) to int32, rounded and clipped: what a converter hands on. */
static void to_int32(const float *src, int32_t *dst, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = src[i];
        v = v < 2147483520.0f ? v : 2147483520.0f;   /* the largest float below 2^31 */
        v = v > -2147483648.0f ? v : -2147483648.0f;
        dst[i] = (int32_t)lrintf(v);
    }
}

static void interleave_to_int32(const float *l, const float *r, int32_t *dst, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float a = l[i] < 2147483520.0f ? l[i] : 2147483520.0f, b = r[i] < 2147483520.0f ? r[i] : 2147483520.0f;
        a = a > -2147483648.0f ? a : -2147483648.0f;
        b = b > -2147483648.0f ? b : -2147483648.0f;
        dst[2 * i] = (int32_t)lrintf(a);
        dst[2 * i + 1] = (int32_t)lrintf(b);
    }
}

/* soxr scales between a float and an int32 type (by 2^31 or 2^-31); here that is undone, as
 * the floats already carry int32 full scale. */
static soxr_io_spec_t io_spec(enum type in, enum type out) {
    soxr_io_spec_t io = soxr_io_spec(soxr_types[in], soxr_types[out]);
    int int_in = in == I32I || in == I32S, int_out = out == I32I || out == I32S;
    if (!int_in && int_out) io.scale = 1 / 2147483648.0;
    if (int_in && !int_out) io.scale = 2147483648.0;
    return io;
}

struct result { double cpu, wall; size_t out_frames, clips; };

static struct result run(const struct variant *v) {
    size_t chunk = v->chunk;
    size_t room = (size_t)ceil(chunk * out_rate / 44100) + 64;
    /* Output and conversion buffers, per run (outside the clock). */
    int32_t *o_i = allocate(room * 2 * sizeof *o_i);
    float *o_f = allocate(room * 2 * sizeof *o_f);
    float *o_l = allocate(room * sizeof *o_l), *o_r = allocate(room * sizeof *o_r);
    float *c_f = allocate(chunk * 2 * sizeof *c_f);
    float *c_l = allocate(chunk * sizeof *c_l), *c_r = allocate(chunk * sizeof *c_r);
    int32_t *sink = allocate(room * 2 * sizeof *sink);

    struct result r = {0, 0, 0, 0};
    double c0 = cpu_now(), w0 = wall_now();

    soxr_error_t error = NULL;
    soxr_io_spec_t io = io_spec(v->in, v->out);
    soxr_quality_spec_t q = soxr_quality_spec(qualities[v->quality].recipe, v->q_flags);
    soxr_runtime_spec_t rt = soxr_runtime_spec(v->threads);
    rt.flags |= v->r_flags;
    if (v->coef_kbytes) rt.coef_size_kbytes = v->coef_kbytes;
    soxr_t s = soxr_create(44100, out_rate, 2, &error, &io, &q, &rt);
    if (error) die(error);

    size_t done = 0;
    for (;;) {
        size_t n = frames - done < chunk ? frames - done : chunk;
        int flushing = n == 0;
        const void *in = NULL;
        const void *split_in[2];
        if (!flushing) {
            switch (v->in) {
            case I32I: in = pcm + 2 * done; break;
            case I32S:
                split_in[0] = pcm_il + done; split_in[1] = pcm_ir + done;
                in = split_in;
                break;
            case F32I:
                if (v->convert) {
                    const int32_t *p = pcm + 2 * done;
                    for (size_t i = 0; i < 2 * n; i++) c_f[i] = (float)p[i];
                    in = c_f;
                } else in = pcm_f + 2 * done;
                break;
            case F32S:
                if (v->convert) {
                    const int32_t *p = pcm + 2 * done;
                    for (size_t i = 0; i < n; i++) { c_l[i] = (float)p[2 * i]; c_r[i] = (float)p[2 * i + 1]; }
                    split_in[0] = c_l; split_in[1] = c_r;
                } else { split_in[0] = pcm_l + done; split_in[1] = pcm_r + done; }
                in = split_in;
                break;
            }
        }
        void *split_out[2] = {o_l, o_r};
        void *out = v->out == I32I ? (void *)o_i : v->out == F32I ? (void *)o_f : (void *)split_out;
        if (v->out == I32S) die("i32s is an input type only here");
        size_t idone = 0, odone = 0;
        error = soxr_process(s, in, n, &idone, out, room, &odone);
        if (error) die(error);
        if (!flushing && idone != n) die("soxr took less than a whole chunk");
        done += idone;
        r.out_frames += odone;
        if (v->convert && v->out == F32I) to_int32(o_f, sink, 2 * odone);
        if (v->convert && v->out == F32S) interleave_to_int32(o_l, o_r, sink, odone);
        if (flushing && odone == 0) break;
    }
    r.clips = *soxr_num_clips(s);
    soxr_delete(s);

    r.cpu = cpu_now() - c0;
    r.wall = wall_now() - w0;
    free(o_i); free(o_f); free(o_l); free(o_r); free(c_f); free(c_l); free(c_r); free(sink);
    return r;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void describe(const struct variant *v, char *text, size_t size) {
    snprintf(text, size, "%s %s->%s%s chunk %zu threads %u", qualities[v->quality].name, type_names[v->in],
             type_names[v->out], v->convert ? " (+int32<->float here)" : "", v->chunk, v->threads);
}

static int parse_type(const char *s) {
    for (int i = 0; i < 4; i++) if (!strcmp(s, type_names[i])) return i;
    die("a type is i32i, f32i, f32s or i32s (input only)");
    return 0;
}

static int parse_quality(const char *s) {
    for (int i = 0; i < 5; i++) if (!strcmp(s, qualities[i].name)) return i;
    die("a quality is quick, low, medium, high or very_high");
    return 0;
}

#define V(label, q, in, out, conv, chunk, threads, qf, rf, kb) {label, q, in, out, conv, chunk, threads, qf, rf, kb}
static const struct variant matrix[] = {
    V("bare: f32i, soxr only", 3, F32I, F32I, 0, 4096, 1, 0, 0, 0),
    V("i32i in and out", 3, I32I, I32I, 0, 4096, 1, 0, 0, 0),
    V("f32i + conversion here", 3, F32I, F32I, 1, 4096, 1, 0, 0, 0),
    V("i32i in, f32i out + conversion", 3, I32I, F32I, 1, 4096, 1, 0, 0, 0),
    V("f32i in + conversion, i32i out", 3, F32I, I32I, 1, 4096, 1, 0, 0, 0),
    V("f32s + split/convert here", 3, F32S, F32S, 1, 4096, 1, 0, 0, 0),
    V("f32s, soxr only", 3, F32S, F32S, 0, 4096, 1, 0, 0, 0),
    V("i32s in (as libFLAC), i32i out", 3, I32S, I32I, 0, 4096, 1, 0, 0, 0),
    V("i32i->f32i+conv, chunk 512", 3, I32I, F32I, 1, 512, 1, 0, 0, 0),
    V("i32i->f32i+conv, chunk 1024", 3, I32I, F32I, 1, 1024, 1, 0, 0, 0),
    V("i32i->f32i+conv, chunk 16384", 3, I32I, F32I, 1, 16384, 1, 0, 0, 0),
    V("i32i->f32i+conv, chunk 65536", 3, I32I, F32I, 1, 65536, 1, 0, 0, 0),
    V("bare, threads 0 (OpenMP)", 3, F32I, F32I, 0, 4096, 0, 0, 0, 0),
    V("bare, threads 2", 3, F32I, F32I, 0, 4096, 2, 0, 0, 0),
    V("bare, SOXR_COEF_INTERP_LOW", 3, F32I, F32I, 0, 4096, 1, 0, SOXR_COEF_INTERP_LOW, 0),
    V("bare, SOXR_COEF_INTERP_HIGH", 3, F32I, F32I, 0, 4096, 1, 0, SOXR_COEF_INTERP_HIGH, 0),
    V("bare, coef_size_kbytes 800", 3, F32I, F32I, 0, 4096, 1, 0, 0, 800),
    V("bare, SOXR_HI_PREC_CLOCK", 3, F32I, F32I, 0, 4096, 1, SOXR_HI_PREC_CLOCK, 0, 0),
    V("bare, SOXR_DOUBLE_PRECISION", 3, F32I, F32I, 0, 4096, 1, SOXR_DOUBLE_PRECISION, 0, 0),
    V("bare, quick", 0, F32I, F32I, 0, 4096, 1, 0, 0, 0),
    V("bare, low", 1, F32I, F32I, 0, 4096, 1, 0, 0, 0),
    V("bare, medium", 2, F32I, F32I, 0, 4096, 1, 0, 0, 0),
    V("bare, very_high", 4, F32I, F32I, 0, 4096, 1, 0, 0, 0),
    V("i32i, very_high", 4, I32I, I32I, 0, 4096, 1, 0, 0, 0),
    V("i32i->f32i+conv, very_high", 4, I32I, F32I, 1, 4096, 1, 0, 0, 0),
};

int main(int argc, char **argv) {
    struct variant one = V("", 3, F32I, F32I, 0, 4096, 1, 0, 0, 0);
    const char *raw = NULL;
    double seconds = 600;
    int runs = 3, cpu_only = 0, show_matrix = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (!strcmp(a, "--raw") && value) raw = value;
        else if (!strcmp(a, "--seconds") && value) seconds = atof(value);
        else if (!strcmp(a, "--quality") && value) one.quality = parse_quality(value);
        else if (!strcmp(a, "--in") && value) one.in = parse_type(value);
        else if (!strcmp(a, "--out") && value) one.out = parse_type(value);
        else if (!strcmp(a, "--chunk") && value) one.chunk = (size_t)atol(value);
        else if (!strcmp(a, "--threads") && value) one.threads = (unsigned)atoi(value);
        else if (!strcmp(a, "--rate") && value) out_rate = atof(value);
        else if (!strcmp(a, "--runs") && value) runs = atoi(value);
        else {
            takes = 0;
            if (!strcmp(a, "--convert")) one.convert = 1;
            else if (!strcmp(a, "--cpu-only")) cpu_only = 1;
            else if (!strcmp(a, "--matrix")) show_matrix = 1;
            else { fprintf(stderr, "bench-soxr: unknown argument '%s' (see the top of bench-soxr.c)\n", a); return 2; }
        }
        i += takes;
    }
    if (one.chunk == 0 || runs < 1 || seconds <= 0 || out_rate <= 0) die("chunk, runs, seconds and rate must be positive");

    if (raw) read_raw(raw); else make_pink(seconds);
    prepare_floats();

    const struct variant *list = show_matrix ? matrix : &one;
    int count = show_matrix ? (int)(sizeof matrix / sizeof *matrix) : 1;
    double *cpu = allocate(sizeof(double) * count * runs), *wall = allocate(sizeof(double) * count * runs);
    size_t *out_frames = allocate(sizeof(size_t) * count), *clips = allocate(sizeof(size_t) * count);
    /* Interleaved, so that drift on the machine spreads over every variant. */
    for (int k = 0; k < runs; k++)
        for (int j = 0; j < count; j++) {
            struct result r = run(&list[j]);
            cpu[j * runs + k] = r.cpu;
            wall[j * runs + k] = r.wall;
            out_frames[j] = r.out_frames;
            clips[j] += r.clips;
        }

    double audio = frames / 44100.0;
    if (cpu_only) {
        printf("%.3f\n", median(cpu, runs));
        return 0;
    }
    printf("libsoxr %s, engine of the first variant: ", soxr_version());
    {
        soxr_error_t e;
        soxr_io_spec_t io = io_spec(list[0].in, list[0].out);
        soxr_quality_spec_t q = soxr_quality_spec(qualities[list[0].quality].recipe, list[0].q_flags);
        soxr_runtime_spec_t rt = soxr_runtime_spec(list[0].threads);
        soxr_t s = soxr_create(44100, out_rate, 2, &e, &io, &q, &rt);
        printf("%s\n", s ? soxr_engine(s) : e);
        soxr_delete(s);
    }
    printf("%.1f s of 44.1 kHz stereo -> %.0f Hz, %d run(s) each: median CPU seconds (user + sys)\n\n", audio, out_rate, runs);
    printf("%-34s %-58s %7s %7s %10s %6s\n", "variant", "settings", "CPU s", "wall s", "frames out", "clips");
    for (int j = 0; j < count; j++) {
        char text[160];
        describe(&list[j], text, sizeof text);
        if (list[j].q_flags || list[j].r_flags || list[j].coef_kbytes)
            snprintf(text + strlen(text), sizeof text - strlen(text), " q%lx r%lx kb%u", list[j].q_flags, list[j].r_flags, list[j].coef_kbytes);
        printf("%-34s %-58s %7.3f %7.3f %10zu %6zu\n", list[j].label[0] ? list[j].label : "-", text,
               median(cpu + j * runs, runs), median(wall + j * runs, runs), out_frames[j], clips[j]);
    }
    return 0;
}
