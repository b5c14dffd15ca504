#pragma once
#include <alsa/asoundlib.h>

// alsa-lib's per-thread error handler takes a va_list, which Swift closures cannot be (Swift
// 6.0 crashes compiling one for aarch64): a handler that prints nothing, set from here.
static void tonearm_alsa_discard_error(const char *file, int line, const char *function, int err,
                                       const char *format, va_list arguments) {
    (void)file; (void)line; (void)function; (void)err; (void)format; (void)arguments;
}

static inline void tonearm_alsa_silence_thread(void) {
    snd_lib_error_set_local(tonearm_alsa_discard_error);
}
