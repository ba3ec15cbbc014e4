#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

double ft__now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
