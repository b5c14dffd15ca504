#pragma once
#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed
// entry point for each kind of argument Tonearm passes.
static inline CURLcode tonearm_curl_setopt_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode tonearm_curl_setopt_pointer(CURL *curl, CURLoption option, const void *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode tonearm_curl_setopt_write(CURL *curl, CURLoption option,
                                                 size_t (*callback)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(curl, option, callback);
}
static inline CURLcode tonearm_curl_getinfo_long(CURL *curl, CURLINFO info, long *value) {
    return curl_easy_getinfo(curl, info, value);
}
