#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ft_status ft__fail(ft_err *e, ft_status s, const char *fmt, ...) {
  if (e) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->status = s;
  }
  return s;
}

void ft__err_clear(ft_err *e) {
  if (e) {
    e->status = FT_OK;
    e->msg[0] = '\0';
  }
}

uint64_t ft__fnv1a64(const void *data, size_t len) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

void ft__hash_hex(const void *data, size_t len, char out[17]) {
  snprintf(out, 17, "%016llx", (unsigned long long)ft__fnv1a64(data, len));
}

char *ft__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

const char *ft_status_string(ft_status s) {
  switch (s) {
#define FT_STATUS_CASE_(name, value, text) \
  case FT_##name:                          \
    return text;
    FT_STATUS_MAP(FT_STATUS_CASE_)
#undef FT_STATUS_CASE_
  }
  return "unknown status";
}

int ft_version_number(void) { return FUSEDTUNE_VERSION_NUMBER; }
const char *ft_version_string(void) { return FUSEDTUNE_VERSION_STRING; }

size_t ft__bounded_len(const char *s, size_t max) {
  /* memchr stops at the first match (C11 7.24.5.1), so nothing past the terminator is read. */
  const char *z = memchr(s, '\0', max);
  return z ? (size_t)(z - s) : max;
}
