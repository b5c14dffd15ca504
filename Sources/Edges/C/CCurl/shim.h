#pragma once
// curl's types and constants only: libcurl is not linked but loaded when the first stream
// plays (TonearmStreams/LibCurl.swift), so a daemon that never plays one never maps it.
#include <curl/curl.h>
