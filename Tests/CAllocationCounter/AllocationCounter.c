// Counts malloc-family calls on one thread. Linked into the test executable, these definitions
// take precedence over libc's for the whole process; they forward to glibc's own entry points.
#include "AllocationCounter.h"
#include <stddef.h>
#include <errno.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static __thread int counting;
static __thread uint64_t count;
static __thread uint64_t bytes;

void allocation_counter_start(void) { count = 0; bytes = 0; counting = 1; }
uint64_t allocation_counter_stop(void) { counting = 0; return count; }
uint64_t allocation_counter_bytes(void) { return bytes; }

#define COUNT(size) do { if (counting) { count++; bytes += (size); } } while (0)

void *malloc(size_t size) { COUNT(size); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { COUNT(n * size); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { COUNT(size); return __libc_realloc(p, size); }
void free(void *p) { __libc_free(p); }
void *aligned_alloc(size_t alignment, size_t size) { COUNT(size); return __libc_memalign(alignment, size); }
void *memalign(size_t alignment, size_t size) { COUNT(size); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    COUNT(size);
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
