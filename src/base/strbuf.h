/* A growable string: appends never fail midway; an allocation failure is remembered in oom and
 * checked once at the end (then free p). Start from ft_strbuf b = {0}. */
#ifndef FT_STRBUF_H
#define FT_STRBUF_H

#include <stddef.h>

#include "common.h"

typedef struct ft_strbuf {
  char *p; /* NUL-terminated once anything was appended */
  size_t len, cap;
  int oom;
} ft_strbuf;

void ft_sb_putn(ft_strbuf *b, const char *s, size_t n);
void ft_sb_puts(ft_strbuf *b, const char *s);
void ft_sb_printf(ft_strbuf *b, const char *fmt, ...) FT_PRINTF(2, 3);

#endif
