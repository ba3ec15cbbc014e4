/* Argument scanning, parsing of shapes and numbers, error printing, database opening. */
#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char *opt_next(opt_iter *it, int *positional) {
  if (it->i >= it->argc) return NULL;
  const char *a = it->argv[it->i++];
  *positional = !(a[0] == '-' && a[1] != '\0');
  return a;
}

const char *opt_value(opt_iter *it, const char *name) {
  const char *eq = strchr(name, '=');
  if (eq) return eq + 1;
  if (it->i >= it->argc) {
    usage_error(it->cmd, "option %s needs a value", name);
    return NULL;
  }
  return it->argv[it->i++];
}

/* Writes prefix, the formatted text made printable (ft_text_printable: what it echoes of argv or
 * a file cannot steer the terminal) and suffix to f. */
static void put_printable(FILE *f, const char *prefix, const char *fmt, va_list ap, const char *suffix) {
  char small[2048], *text = small;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n >= (int)sizeof small && (text = malloc((size_t)n + 1)) != NULL) vsnprintf(text, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  if (!text) text = small;
  ft_text_printable(text);
  fprintf(f, "%s%s%s", prefix, text, suffix);
  if (text != small) free(text);
}

int cli_line(FILE *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  put_printable(f, "", fmt, ap, "\n");
  va_end(ap);
  return 0;
}

int usage_error(const char *cmd, const char *fmt, ...) {
  char prefix[64], suffix[64];
  snprintf(prefix, sizeof prefix, "fusedtune%s%s: ", cmd ? " " : "", cmd ? cmd : "");
  snprintf(suffix, sizeof suffix, " (see 'fusedtune %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
  va_list ap;
  va_start(ap, fmt);
  put_printable(stderr, prefix, fmt, ap, suffix);
  va_end(ap);
  return EXIT_USAGE;
}

int fail_msg(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  put_printable(stderr, "fusedtune: ", fmt, ap, "\n");
  va_end(ap);
  return 1;
}

int fail_status(ft_status s, const char *msg) {
  /* A machine with no GPU can still do all that needs none: say what. */
  const char *cpu = s == FT_ERR_NO_DEVICE ? "; without a GPU these still work: import, export, list, report, query "
                                            "--device-name NAME, variants, epilogue" : "";
  cli_line(stderr, "fusedtune: %s%s", msg && msg[0] ? msg : ft_status_string(s), cpu);
  return s == FT_ERR_PARSE || s == FT_ERR_INVALID_ARG ? EXIT_USAGE : 1;
}

int fail_ctx(ft_status s, ft_ctx *ctx) {
  int rc = fail_status(s, ctx ? ft_errmsg(ctx) : NULL);
  ft_close(ctx);
  return rc;
}

int parse_shape(const char *cmd, const char *s, ft_problem *pr) {
  char why[512];
  if (ft_shape_parse(s, &pr->m, &pr->n, &pr->k, why, sizeof why) != FT_OK) return usage_error(cmd, "%s", why);
  return 0;
}

int parse_math(const char *s, ft_math *out) { return ft_math_from_name(s, out); }

int parse_double(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

int parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

const char *cli_db_path(const cli *c) {
  if (c->db_path) return c->db_path;
  const char *env = getenv("FUSEDTUNE_DB");
  return env && env[0] ? env : "fusedtune.db";
}

int cli_open(const cli *c, int write, ft_ctx **ctx) {
  ft_status s = ft_open(cli_db_path(c), write ? FT_OPEN_CREATE : FT_OPEN_READONLY, ctx);
  if (s == FT_OK) return 0;
  int rc = fail_ctx(s, *ctx);
  *ctx = NULL;
  return rc;
}

int cli_problem(const char *cmd, const char *shape, const char *epi, ft_problem *p) {
  memset(p, 0, sizeof *p);
  int rc = parse_shape(cmd, shape, p);
  if (rc) return rc;
  p->epilogue = epi;
  return cli_problem_math(cmd, p, FT_MATH_FP32);
}

int cli_problem_math(const char *cmd, ft_problem *p, ft_math math) {
  p->math = math;
  char why[2048];
  ft_status s = ft_check_problem(p, why, sizeof why);
  if (s == FT_OK) return 0;
  /* A bad shape is a usage error of the command; a bad expression explains itself. */
  if (s == FT_ERR_INVALID_ARG) return usage_error(cmd, "%s", why);
  return fail_status(s, why);
}

const char *cli_self_exe(char *buf, size_t size) {
  ssize_t len = readlink("/proc/self/exe", buf, size - 1);
  if (len <= 0) return NULL;
  buf[len] = '\0';
  return buf;
}

int wants_help(int argc, char **argv, const char *text) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(text, stdout);
      return 1;
    }
  return 0;
}

int unexpected_arg(const char *cmd, const char *a, const char *what) {
  if (!strcmp(a, "--db") || !strncmp(a, "--db=", 5))
    return usage_error(cmd, "--db is a global option: it goes before the command ('fusedtune --db PATH %s ...')",
                       cmd);
  return usage_error(cmd, "%s '%s'", what, a);
}

int opt_once(const char *cmd, const char *const *names, size_t n, unsigned *seen, const char *a) {
  const size_t nl = strcspn(a, "=");
  for (size_t j = 0; j < n && j < 32; j++) {
    if (nl != strlen(names[j]) || strncmp(a, names[j], nl)) continue;
    if (*seen & (1u << j)) return usage_error(cmd, "option %.*s given twice (each option at most once)", (int)nl, a);
    *seen |= 1u << j;
  }
  return 0;
}

/* The code point of the UTF-8 sequence at s (its length in *len), or -1 for a byte that does not
 * start a well-formed sequence (overlong forms and surrogates included). */
static long utf8_decode(const unsigned char *s, int *len) {
  int n = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
        : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
  *len = 1;
  if (!n) return -1;
  long cp = n == 1 ? s[0] : s[0] & (0x7F >> n);
  for (int i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return -1;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  static const long min[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  *len = n;
  return cp;
}

/* Terminal columns a code point takes: 0 for combining marks and zero-width characters, 2 for
 * East Asian wide and full-width forms and emoji, else 1 (Unicode's EastAsianWidth W and F
 * blocks, coarsely: enough to keep a table's columns in line). */
static int cp_columns(long cp) {
  if ((cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0xFE00 && cp <= 0xFE0F) ||
      (cp >= 0x20D0 && cp <= 0x20FF))
    return 0;
  static const long wide[][2] = {{0x1100, 0x115F}, {0x2E80, 0x303E}, {0x3041, 0x33FF}, {0x3400, 0x4DBF},
                                 {0x4E00, 0x9FFF}, {0xA000, 0xA4CF}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF},
                                 {0xFE30, 0xFE4F}, {0xFF00, 0xFF60}, {0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F},
                                 {0x1F900, 0x1F9FF}, {0x20000, 0x3FFFD}};
  for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
    if (cp >= wide[i][0] && cp <= wide[i][1]) return 2;
  return 1;
}

/* s made printable (ft_text_printable), malloc'd; NULL when out of memory. */
static char *printable_copy(const char *s) {
  size_t n = strlen(s ? s : "");
  char *t = malloc(n + 1);
  if (t) memcpy(t, s ? s : "", n + 1), ft_text_printable(t);
  return t;
}

/* The columns of t, text already printable (valid UTF-8 with no controls). */
static int columns_of(const char *t) {
  const unsigned char *p = (const unsigned char *)t;
  int cols = 0;
  while (*p) {
    int len;
    long cp = utf8_decode(p, &len);
    cols += cp < 0 ? 1 : cp_columns(cp);
    p += len;
  }
  return cols;
}

int cli_columns(const char *s) {
  char *t = printable_copy(s);
  int cols = t ? columns_of(t) : (int)strlen(s ? s : "");
  free(t);
  return cols;
}

void cli_cell(char *out, size_t out_size, const char *s, int width) {
  char *t = printable_copy(s);
  const unsigned char *p = (const unsigned char *)(t ? t : "");
  const int cut = columns_of((const char *)p) > width; /* then the last column shows that text is missing */
  const int room = cut ? width - 1 : width;
  size_t o = 0;
  int shown = 0;
  while (*p && o + 5 < out_size) {
    int len;
    long cp = utf8_decode(p, &len);
    const int cols = cp < 0 ? 1 : cp_columns(cp);
    if (shown + cols > room) break;
    memcpy(out + o, p, (size_t)len), o += (size_t)len;
    p += len;
    shown += cols;
  }
  free(t);
  if (cut && o + 4 < out_size) memcpy(out + o, "\xe2\x80\xa6", 3), o += 3, shown++; /* U+2026 */
  while (shown < width && o + 1 < out_size) out[o++] = ' ', shown++;
  out[o] = '\0';
}
