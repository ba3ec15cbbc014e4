/* Files embedded at build time (the kernel sources and db/schema.sql), by their path relative to the
 * source root, e.g. "db/schema.sql". Returns NULL for an unknown name. */
#ifndef FT_EMBEDDED_H
#define FT_EMBEDDED_H
#include <stddef.h>
const char *ft__embedded(const char *name, size_t *len);
#endif
