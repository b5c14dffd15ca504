#pragma once
#include <opusfile.h>

// The decoder of one stream of a multistream decoder, or NULL
// (opus_multistream_decoder_ctl is variadic, which Swift does not import).
static inline OpusDecoder *copusfile_stream_decoder(OpusMSDecoder *decoder, int stream) {
    OpusDecoder *state = NULL;
    if (opus_multistream_decoder_ctl(decoder, OPUS_MULTISTREAM_GET_DECODER_STATE(stream, &state)) != OPUS_OK) return NULL;
    return state;
}
