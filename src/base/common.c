#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

size_t ft__utf8_len(const unsigned char *s, size_t avail) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t n;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (avail < n) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return n;
}

/* Whether the well-formed n-byte UTF-8 sequence at s steers a terminal rather than shows: C0
 * and C1 controls, DEL, the bidi embeddings, overrides and isolates (U+202A-U+202E,
 * U+2066-U+2069). */
static int steers_terminal(const unsigned char *s, size_t n) {
  if (n == 1) return s[0] < 0x20 || s[0] == 0x7F;
  if (n == 2) return s[0] == 0xC2 && s[1] <= 0x9F;
  return n == 3 && s[0] == 0xE2 &&
         ((s[1] == 0x80 && s[2] >= 0xAA && s[2] <= 0xAE) || (s[1] == 0x81 && s[2] >= 0xA6 && s[2] <= 0xA9));
}

void ft__printable(char *text) {
  if (!text) return;
  unsigned char *r = (unsigned char *)text, *w = r;
  size_t left = strlen(text);
  while (left > 0) {
    size_t n = ft__utf8_len(r, left);
    if (n == 0 || steers_terminal(r, n)) {
      *w++ = '?';
      n = n ? n : 1;
    } else {
      memmove(w, r, n);
      w += n;
    }
    r += n;
    left -= n;
  }
  *w = '\0';
}

/* A UTF-8 continuation byte (10xxxxxx): never the place to cut. */
static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

void ft__fit_text(char *dst, size_t cap, const char *src, size_t len) {
  if (!dst || cap == 0) return;
  if (len < cap) {
    memcpy(dst, src, len);
    dst[len] = '\0';
    return;
  }
  /* Too long: keep the head and the tail (where "does not exist" and the like are) and put
   * "..." between them, cutting on character boundaries. */
  if (cap < 8) {
    dst[0] = '\0';
    return;
  }
  size_t head = (cap - 4) / 2, tail = cap - 4 - head;
  while (head > 0 && is_cont((unsigned char)src[head])) head--;
  size_t from = len - tail;
  while (from < len && is_cont((unsigned char)src[from])) from++;
  memcpy(dst, src, head);
  memcpy(dst + head, "...", 3);
  memcpy(dst + head + 3, src + from, len - from);
  dst[head + 3 + (len - from)] = '\0';
}

ft_status ft__fail(ft_err *e, ft_status s, const char *fmt, ...) {
  if (e) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    char *full = n >= (int)sizeof e->msg ? malloc((size_t)n + 1) : NULL;
    if (full) {
      vsnprintf(full, (size_t)n + 1, fmt, ap2);
      ft__fit_text(e->msg, sizeof e->msg, full, (size_t)n);
      free(full);
    } else if (n >= (int)sizeof e->msg) {
      /* No memory for the whole text: at least never end mid-character. */
      size_t end = sizeof e->msg - 2;
      while (end > 0 && is_cont((unsigned char)e->msg[end])) end--;
      e->msg[end] = '\0';
    }
    va_end(ap2);
    ft__printable(e->msg);
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

int ft__env_default_on(const char *name) {
  const char *v = getenv(name);
  return !v || strcmp(v, "0") != 0;
}

double ft__now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
