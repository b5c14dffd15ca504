#pragma once
#include <stdint.h>

/// Starts counting heap allocations made by the calling thread.
void allocation_counter_start(void);
/// Stops counting and returns how many allocations the calling thread made since the start.
uint64_t allocation_counter_stop(void);
/// The bytes those allocations asked for (a `realloc` counts its new size), until the next start.
uint64_t allocation_counter_bytes(void);
