/* Argument scanning, parsing of shapes and numbers, error printing, database opening. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "space.h"

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

int usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "fusedtune%s%s: ", cmd ? " " : "", cmd ? cmd : "");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see 'fusedtune %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
  return EXIT_USAGE;
}

int fail_msg(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "fusedtune: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return 1;
}

int fail_err(const ft_err *e) {
  fprintf(stderr, "fusedtune: %s\n", e->msg[0] ? e->msg : ft_status_string(e->status));
  return e->status == FT_ERR_PARSE || e->status == FT_ERR_INVALID_ARG ? EXIT_USAGE : 1;
}

static int parse_dim(const char **p, int64_t *out) {
  const char *s = *p;
  if (*s < '0' || *s > '9') return 0;
  int64_t v = 0;
  while (*s >= '0' && *s <= '9') {
    v = v * 10 + (*s - '0');
    if (v > FT_MAX_DIM) return -1;
    s++;
  }
  *p = s;
  *out = v;
  return 1;
}

int parse_shape(const char *s, int64_t *m, int64_t *n, int64_t *k, char *why, size_t whylen) {
  int64_t *dims[3] = {m, n, k};
  const char *names[3] = {"M", "N", "K"};
  const char *p = s;
  for (int i = 0; i < 3; i++) {
    int r = parse_dim(&p, dims[i]);
    if (r < 0) {
      snprintf(why, whylen, "shape '%s': %s is larger than %lld", s, names[i], (long long)FT_MAX_DIM);
      return 0;
    }
    if (r == 0) {
      snprintf(why, whylen, "shape '%s' is not MxNxK with positive integers (e.g. 128x16384x16384)", s);
      return 0;
    }
    if (*dims[i] == 0) {
      snprintf(why, whylen, "shape '%s': %s must be at least 1", s, names[i]);
      return 0;
    }
    if (i < 2 && *p++ != 'x') {
      snprintf(why, whylen, "shape '%s' is not MxNxK with positive integers (e.g. 128x16384x16384)", s);
      return 0;
    }
  }
  if (*p) {
    snprintf(why, whylen, "shape '%s' has trailing text '%s'", s, p);
    return 0;
  }
  ft_err e;
  if (ft_check_shape(*m, *n, *k, &e) != FT_OK) {
    snprintf(why, whylen, "%s", e.msg);
    return 0;
  }
  return 1;
}

int parse_math(const char *s, ft_math *out) {
  if (strcmp(s, "fp32") == 0) {
    *out = FT_MATH_FP32;
    return 1;
  }
  return 0;
}

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

ft_status cli_open_db(const cli *c, int write, ft_db **db, ft_err *err) {
  return ft_db_open(cli_db_path(c), write ? FT_DB_CREATE : FT_DB_READONLY, db, err);
}

int cli_problem_key(const char *cmd, const char *shape, const char *epi, ft_problem_key *key,
                    ft_epilogue **ep, ft_err *err) {
  char why[256];
  int64_t m, n, k;
  *ep = NULL;
  ft__err_clear(err);
  if (!parse_shape(shape, &m, &n, &k, why, sizeof why)) return usage_error(cmd, "%s", why);
  if (ft_ep_parse(epi, ep, err) != FT_OK) return fail_err(err);
  ft_problem_key_set(key, m, n, k, ft_ep_canonical(*ep), ft_ep_hash(*ep));
  return 0;
}

int wants_help(int argc, char **argv, const char *text) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(text, stdout);
      return 1;
    }
  return 0;
}
