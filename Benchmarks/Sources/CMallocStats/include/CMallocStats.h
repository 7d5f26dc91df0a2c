#ifndef CMALLOCSTATS_H
#define CMALLOCSTATS_H

#include <malloc.h>
#include <stddef.h>

/// What glibc's allocator holds, from mallinfo2 (summed over every arena): the soak's way to
/// tell memory the program still holds from free memory the allocator keeps mapped.
/// <malloc.h> is not part of Swift's Glibc module, hence this header.
typedef struct {
    /// Bytes in live allocations: arena chunks in use plus mmap'ed blocks.
    size_t inUse;
    /// Bytes in free chunks inside the arenas: counted in RSS, held by nobody.
    size_t free;
} cmallocstats_heap;

static inline cmallocstats_heap cmallocstats_read(void) {
    struct mallinfo2 info = mallinfo2();
    cmallocstats_heap heap = { info.uordblks + info.hblkhd, info.fordblks };
    return heap;
}

#endif
