#pragma once
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift does not import.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

// Called once before the first connection: no global memory statistics, whose mutex every
// allocation would take (sqlite3_config is variadic, which Swift does not import).
static inline int csqlite_configure(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
