/* Internal helpers shared by every module: error records and status plumbing. */
#ifndef FT_COMMON_H
#define FT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "fusedtune.h"

/* An error record: the status plus a message a person can act on. Modules that can fail take an
 * ft_err * and fill it; ft_ctx keeps one for ft_errmsg(). */
typedef struct ft_err {
  ft_status status;
  char msg[2048];
} ft_err;

#if defined(__GNUC__)
#define FT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FT_PRINTF(a, b)
#endif

/* Records s and the formatted message in e (e may be NULL) and returns s, so callers can write
 * `return ft__fail(err, FT_ERR_DB, "...: %s", detail);`. */
ft_status ft__fail(ft_err *e, ft_status s, const char *fmt, ...) FT_PRINTF(3, 4);
/* Copies len bytes of src into dst (cap bytes, NUL-terminated); text too long keeps its head and
 * its tail around "...", cut on UTF-8 character boundaries. */
void ft__fit_text(char *dst, size_t cap, const char *src, size_t len);

/* Length of the well-formed UTF-8 sequence at s (Unicode table 3-7: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0 when s does not start one. */
size_t ft__utf8_len(const unsigned char *s, size_t avail);

/* Makes text safe to show, in place: each character that steers a terminal (C0 and C1 controls,
 * newline and tab included, DEL, bidi overrides and isolates) and each byte that is not UTF-8
 * becomes '?'. Every message ft__fail records goes through it, so no user or file text echoed in
 * a message can move the cursor, retitle a terminal or reorder what it shows. */
void ft__printable(char *text);

/* Clears e to FT_OK with an empty message. */
void ft__err_clear(ft_err *e);

/* Propagates a non-FT_OK status from expr. */
#define FT_TRY(expr)                   \
  do {                                 \
    ft_status ft_try_s_ = (expr);      \
    if (ft_try_s_ != FT_OK) return ft_try_s_; \
  } while (0)

/* 64-bit FNV-1a: used for kernel source hashes and epilogue hashes (stable across machines).
 * ft__hash_hex writes 16 lowercase hex digits plus NUL into out[17]. */
uint64_t ft__fnv1a64(const void *data, size_t len);
void ft__hash_hex(const void *data, size_t len, char out[17]);

/* strlen bounded by max (strnlen is POSIX, not C17): reads no byte past the first NUL or max. */
size_t ft__bounded_len(const char *s, size_t max);

/* strdup that reports allocation failure through NULL. */
char *ft__strdup(const char *s);

/* Seconds on CLOCK_MONOTONIC (for durations and deadlines). */
double ft__now_s(void);

/* Whether a switch that is on by default stays on: unless the environment sets name to "0"
 * (FUSEDTUNE_PDL and FUSEDTUNE_GRAPH_TIMING). */
int ft__env_default_on(const char *name);

#endif
