/* Shared by json.c (the reader), json_number.c and json_write.c. Not part of the interface
 * other modules use: that is json.h. */
#ifndef FT_JSON_INTERNAL_H
#define FT_JSON_INTERNAL_H

#include <stddef.h>

/* Length of the JSON number at s (RFC 8259 grammar), 0 if none; *integral tells whether it has
 * neither fraction nor exponent. */
size_t ft__json_scan_number(const char *s, size_t avail, int *integral);

#endif
