/* Database commands: init, list, query, export, import. None needs a GPU (query needs one only
 * to name the current device; --device-name avoids it). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_init(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv,
                 "usage: fusedtune [--db PATH] init\n"
                 "Creates an empty fusedtune database at PATH. An existing fusedtune database is left as it\n"
                 "is (older schemas are migrated forward); any other file is refused.\n"))
    return 0;
  if (argc > 0) return unexpected_arg("init", argv[0], "unexpected argument");
  ft_ctx *ctx = NULL;
  ft_status s = ft_open(cli_db_path(c), FT_OPEN_CREATE, &ctx);
  const char *note = "";
  if (s != FT_OK && access(cli_db_path(c), F_OK) == 0) {
    /* An existing database at today's schema needs nothing written: a reader that opens it
     * proves that (one of an older schema is refused read-only, so it is still reported). */
    ft_ctx *ro = NULL;
    if (ft_open(cli_db_path(c), FT_OPEN_READONLY, &ro) == FT_OK) {
      ft_close(ctx);
      ctx = ro;
      s = FT_OK;
      note = "; not writable, left as it is";
    } else {
      ft_close(ro);
    }
  }
  if (s != FT_OK) return fail_ctx(s, ctx);
  ft_close(ctx);
  cli_line(stdout, "database %s ready (schema version %d%s)", cli_db_path(c), ft_schema_version(), note);
  return 0;
}

/* The tuned M values of one (device, math, epilogue, N, K): its M buckets (a lookup of an M not
 * tuned takes the smallest tuned M >= it). */
typedef struct bucket_row {
  char *device, *epilogue;
  char math[16];
  int64_t n, k, m;
} bucket_row;

typedef struct bucket_set {
  bucket_row *rows; /* sorted by group, then m */
  size_t count, cap;
  int oom;
} bucket_set;

static int collect_bucket(void *user, const ft_best_entry *e) {
  bucket_set *b = user;
  if (b->count == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 64;
    bucket_row *r = realloc(b->rows, cap * sizeof *r);
    if (!r) return b->oom = 1;
    b->rows = r, b->cap = cap;
  }
  bucket_row *r = &b->rows[b->count];
  r->device = strdup(e->device_name);
  r->epilogue = strdup(e->epilogue);
  if (!r->device || !r->epilogue) {
    free(r->device), free(r->epilogue);
    return b->oom = 1;
  }
  snprintf(r->math, sizeof r->math, "%s", e->math);
  r->n = e->config.tuned_n, r->k = e->config.tuned_k, r->m = e->config.tuned_m;
  b->count++;
  return 0;
}

/* By group (device, math, epilogue, N, K), then M. */
static int group_cmp(const bucket_row *a, const bucket_row *b) {
  int c = strcmp(a->device, b->device);
  if (!c) c = strcmp(a->math, b->math);
  if (!c) c = strcmp(a->epilogue, b->epilogue);
  if (!c && a->n != b->n) c = a->n < b->n ? -1 : 1;
  if (!c && a->k != b->k) c = a->k < b->k ? -1 : 1;
  return c;
}

static int row_cmp(const void *pa, const void *pb) {
  const bucket_row *a = pa, *b = pb;
  int c = group_cmp(a, b);
  return c ? c : (a->m > b->m) - (a->m < b->m);
}

static void bucket_set_free(bucket_set *b) {
  for (size_t i = 0; i < b->count; i++) free(b->rows[i].device), free(b->rows[i].epilogue);
  free(b->rows);
}

/* The rows [*first, *first + *n) of e's group; *n 0 when it is not there. */
static void bucket_group(const bucket_set *b, const ft_best_entry *e, size_t *first, size_t *n) {
  bucket_row key = {(char *)e->device_name, (char *)e->epilogue, "", e->config.tuned_n, e->config.tuned_k, 0};
  snprintf(key.math, sizeof key.math, "%s", e->math);
  size_t lo = 0, hi = b->count; /* the first row not before the group */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (group_cmp(&b->rows[mid], &key) < 0) lo = mid + 1;
    else hi = mid;
  }
  *first = lo;
  for (*n = 0; lo + *n < b->count && !group_cmp(&b->rows[lo + *n], &key); ++*n) {}
}

typedef struct list_state {
  int json;
  int count;
  int n_stale;
  ft_ctx *ctx; /* to tell stale entries: measured with an older kernel source */
  const char *db_path; /* named in the command that tunes a stale entry again */
  bucket_set buckets;
} list_state;

/* The command that measures a problem again with today's kernels (results are keyed by kernel
 * source, so a plain tune does). */
static void tune_command(char *out, size_t cap, const char *db_path, const ft_best_entry *e) {
  const ft_config *b = &e->config;
  ft_tune_command(db_path, b->tuned_m, b->tuned_n, b->tuned_k, e->epilogue, e->math, out, cap);
}

/* eager over median; 0 when either is unknown, not finite (1e308 / 1e-300 overflows) included. */
static double speedup(const ft_config *b) {
  double r = b->eager_ms > 0 && b->median_ms > 0 ? b->eager_ms / b->median_ms : 0;
  return isfinite(r) ? r : 0;
}

/* JSON has no inf or nan: such a value is written as null. */
static void json_double(const char *fmt, double v) {
  if (isfinite(v)) printf(fmt, v);
  else printf("null");
}

/* stale: measured with an older kernel source (list shows such entries; query never returns one).
 * asked_m: query's M (a bucket or the nearest shape says it); ms, n_ms: list's M buckets of the
 * entry's (device, math, epilogue, N, K). */
static void best_json(const ft_best_entry *b, const char *stale_db, int stale, int64_t asked_m, const bucket_row *ms,
                      size_t n_ms) {
  const ft_config *c = &b->config;
  printf("{\"device\":");
  ft_write_json_string(stdout, b->device_name);
  printf(",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"math\":", (long long)c->tuned_m, (long long)c->tuned_n,
         (long long)c->tuned_k);
  ft_write_json_string(stdout, b->math);
  printf(",\"epilogue\":");
  ft_write_json_string(stdout, b->epilogue);
  printf(",\"strategy\":");
  ft_write_json_string(stdout, c->strategy);
  printf(",\"variant\":");
  ft_write_json_string(stdout, c->name);
  printf(",\"config\":%s,\"source_hash\":", c->config[0] ? c->config : "null");
  ft_write_json_string(stdout, c->source_hash);
  printf(",\"median_ms\":");
  json_double("%.17g", c->median_ms);
  printf(",\"eager_ms\":");
  json_double("%.17g", c->eager_ms);
  printf(",\"speedup_vs_eager\":");
  /* Both measured but the ratio does not fit in a double: null, never inf. */
  if (c->eager_ms > 0 && c->median_ms > 0 && !speedup(c)) printf("null");
  else printf("%.6g", speedup(c));
  printf(",\"rel_err\":");
  json_double("%.17g", c->rel_err);
  printf(",\"max_abs_err\":");
  json_double("%.17g", c->max_abs_err);
  /* query: not tuned for the asked shape, but for the one above: an M bucket of it, or (--nearest)
   * the nearest shape */
  if (c->exact == FT_MATCH_BUCKET)
    printf(",\"exact\":false,\"lookup\":\"bucket\",\"bucket_m\":%lld,\"asked_m\":%lld", (long long)c->tuned_m,
           (long long)asked_m);
  else if (c->exact != FT_MATCH_EXACT)
    printf(",\"exact\":false,\"lookup\":\"nearest\"");
  if (ms) {
    printf(",\"buckets\":[");
    for (size_t i = 0; i < n_ms; i++) printf("%s%lld", i ? "," : "", (long long)ms[i].m);
    printf("]");
  }
  printf(",\"stale\":%s", stale ? "true" : "false");
  if (stale) {
    /* The command is built from stored text, so it goes through the JSON escaper. */
    char cmd[8800];
    tune_command(cmd, sizeof cmd, stale_db, b);
    printf(",\"tune_again\":");
    ft_write_json_string(stdout, cmd);
  }
  printf("}");
}

static int list_one(void *user, const ft_best_entry *e) {
  list_state *s = user;
  const ft_config *b = &e->config;
  int current = 0;
  ft_source_current(s->ctx, e->epilogue, b->config, b->source_hash, &current);
  s->n_stale += !current;
  if (s->json) {
    printf("%s\n  ", s->count ? "," : "");
    size_t first = 0, n = 0;
    bucket_group(&s->buckets, e, &first, &n);
    best_json(e, s->db_path, !current, 0, s->buckets.rows + first, n);
  } else {
    /* The epilogue goes last and whole: cut, it would read as another expression. */
    if (!s->count)
      printf("%-24s %-20s %-6s %-16s %-44s %10s %8s  %s\n", "device", "shape", "math", "strategy", "variant",
             "median_ms", "speedup", "epilogue");
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)b->tuned_m, (long long)b->tuned_n,
             (long long)b->tuned_k);
    char sp[16] = "-";
    if (!current) snprintf(sp, sizeof sp, "stale");
    else if (speedup(b) > 0) snprintf(sp, sizeof sp, "%.3fx", speedup(b));
    /* Stored text may come from an import: never let it steer the terminal or split a character. */
    static char epi[4 * sizeof e->epilogue + 1];
    char dev[4 * 24 + 1], math[4 * 6 + 1], strat[4 * 16 + 1], name[4 * 44 + 1];
    cli_cell(dev, sizeof dev, e->device_name, 24);
    cli_cell(math, sizeof math, e->math, 6);
    cli_cell(epi, sizeof epi, e->epilogue, cli_columns(e->epilogue));
    cli_cell(strat, sizeof strat, b->strategy, 16);
    cli_cell(name, sizeof name, b->name, 44);
    printf("%s %-20s %s %s %s %10.4f %8s  %s\n", dev, shape, math, strat, name, b->median_ms, sp, epi);
  }
  s->count++;
  return 0;
}

/* After the table: the command that tunes each stale entry again. */
static int list_stale_command(void *user, const ft_best_entry *e) {
  list_state *s = user;
  int current = 0;
  ft_source_current(s->ctx, e->epilogue, e->config.config, e->config.source_hash, &current);
  if (current) return 0;
  char cell[4 * 8800 + 1], cmd[8800];
  tune_command(cmd, sizeof cmd, s->db_path, e);
  cli_cell(cell, sizeof cell, cmd, cli_columns(cmd)); /* stored text: no control reaches the terminal */
  printf("  %s\n", cell);
  return 0;
}

/* After the table: each (device, math, epilogue, N, K) tuned at more than one M, as M buckets. */
static void print_buckets(const bucket_set *b) {
  int shown = 0;
  for (size_t i = 0, n; i < b->count; i += n) {
    for (n = 1; i + n < b->count && !group_cmp(&b->rows[i], &b->rows[i + n]); n++) {}
    if (n < 2) continue;
    const bucket_row *r = &b->rows[i];
    if (!shown++)
      printf("\nM buckets (an M not tuned is served by the smallest tuned M >= it of the same device, N, K, math and "
             "epilogue; beyond the largest, the largest):\n");
    char dev[4 * 24 + 1], math[4 * 6 + 1];
    static char epi[4 * sizeof((ft_best_entry *)0)->epilogue + 1];
    cli_cell(dev, sizeof dev, r->device, 24);
    cli_cell(math, sizeof math, r->math, 6);
    cli_cell(epi, sizeof epi, r->epilogue, cli_columns(r->epilogue));
    char nk[64];
    snprintf(nk, sizeof nk, "N=%lld K=%lld", (long long)r->n, (long long)r->k);
    printf("  %s %-20s %s M %lld..%lld (%zu buckets:", dev, nk, math, (long long)r->m, (long long)r[n - 1].m, n);
    for (size_t j = 0; j < n; j++) printf(" %lld", (long long)r[j].m);
    printf(")  %s\n", epi);
  }
}

int cmd_list(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv,
                 "usage: fusedtune [--db PATH] list [--json]\n"
                 "Lists every tuned (device, problem: shape, math mode, epilogue) with its best configuration,\n"
                 "median time and speedup over the eager-style baseline (cuBLAS GEMM + one kernel per op)\n"
                 "measured in the same run. A best measured with an older kernel source is marked stale (JSON:\n"
                 "\"stale\":true and \"tune_again\", the command that measures it with today's kernels).\n"
                 "Shapes tuned at several M with the same N, K, math, epilogue and device are M buckets\n"
                 "(`tune --shape A..BxNxK`): after the table, each such group as \"M 1..4096 (13 buckets: ...)\"\n"
                 "(JSON: \"buckets\", the tuned M values of the entry's group, its own included).\n"))
    return 0;
  list_state s = {0, 0, 0, NULL, NULL, {NULL, 0, 0, 0}};
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--json") && s.json) return usage_error("list", "option --json given twice (each option at most once)");
    if (!strcmp(argv[i], "--json")) s.json = 1;
    else return unexpected_arg("list", argv[i], "unexpected argument");
  }
  ft_ctx *ctx = NULL;
  int rc = cli_open(c, 0, &ctx);
  if (rc) return rc;
  s.ctx = ctx;
  s.db_path = cli_db_path(c);
  ft_status st = ft_each_best(ctx, collect_bucket, &s.buckets);
  if (st == FT_OK && s.buckets.oom) {
    bucket_set_free(&s.buckets);
    ft_close(ctx);
    return fail_msg("out of memory");
  }
  if (st == FT_OK && s.buckets.count > 0) qsort(s.buckets.rows, s.buckets.count, sizeof *s.buckets.rows, row_cmp);
  if (st == FT_OK && s.json) printf("[");
  if (st == FT_OK) st = ft_each_best(ctx, list_one, &s);
  if (st == FT_OK) {
    if (s.json) printf("%s]\n", s.count ? "\n" : "");
    else if (!s.count) cli_line(stdout, "nothing tuned yet in %s", cli_db_path(c));
    else print_buckets(&s.buckets);
  }
  if (st == FT_OK && !s.json && s.n_stale) {
    printf("\nstale: measured with an older kernel source, so query and ft_lookup skip it and its time is not "
           "today's kernel's; tune again:\n");
    st = ft_each_best(ctx, list_stale_command, &s);
  }
  bucket_set_free(&s.buckets);
  if (st != FT_OK) return fail_ctx(st, ctx);
  ft_close(ctx);
  return 0;
}

static const char *query_help =
    "usage: fusedtune [--db PATH] query --shape MxNxK --epilogue E [--math M] [--device-name NAME] [--nearest]\n"
    "                                   [--exact]\n"
    "                                   [--tolerance T] [--json]\n"
    "Prints the best configuration tuned for the problem on this GPU (the current CUDA device; or on\n"
    "the device named NAME, as 'list' shows it). Exit status 3 when nothing was tuned for that key.\n"
    "An M not tuned is served by its M bucket: the smallest M tuned with the same N, K, epilogue, math\n"
    "and device that is >= M (beyond the largest, the largest), marked \"(bucket M=64 serves m=40)\"\n"
    "(JSON: \"exact\":false, \"lookup\":\"bucket\", \"bucket_m\", \"asked_m\", m/n/k the tuned shape).\n"
    "  --exact     the exact key only: no M bucket\n"
    "  --nearest   when neither the exact shape nor an M bucket was tuned, the best of the nearest tuned\n"
    "              shape (same epilogue and device; another N or K) that applies to this one, marked\n"
    "              \"(nearest tuned shape MxNxK)\" (JSON: \"exact\":false, \"lookup\":\"nearest\", m/n/k the\n"
    "              tuned shape). Off by default.\n"
    "  --tolerance T  the fastest stored configuration whose measured error (relative L2 against float64,\n"
    "              measured when tuned) is <= T, across fp32, 3xtf32 and tf32 for fp32 tensors (bf16: bf16\n"
    "              and the fp8 layer of E with x * sx * sw, row sx, col sw, whose error is against the bf16\n"
    "              layer; fp16: that mode only); prints the mode and epilogue it picked and its error.\n"
    "              Exact shapes only.\n"
    "              Without it the mode is --math, whatever its error; without --math, fp32 tensors at fp32\n"
    "              accuracy: the faster of the fp32 result (FFMA kernels, cuBLAS SGEMM + a pass) and the\n"
    "              3xtf32 one, which is stored only within cuBLAS SGEMM's own error (`--math fp32`: FFMA\n"
    "              and SGEMM alone). The mode printed is the one that serves.\n";

int cmd_query(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv, query_help)) return 0;
  const char *shape = NULL, *epi = NULL, *devname = NULL;
  int json = 0;
  unsigned flags = 0;
  ft_math math = FT_MATH_FP32;
  opt_iter it = {argc, argv, 0, "query"};
  const char *a;
  int pos;
  static const char *const names[] = {"--json", "--nearest", "--shape", "--epilogue", "--device-name", "--math",
                                      "--tolerance", "--exact"};
  double tolerance = 0;
  unsigned seen = 0;
  while ((a = opt_next(&it, &pos))) {
    const char **dst = NULL;
    if (pos) return usage_error("query", "unexpected argument '%s'", a);
    if (opt_once("query", names, sizeof names / sizeof names[0], &seen, a)) return EXIT_USAGE;
    if (!strcmp(a, "--json") || !strcmp(a, "--nearest") || !strcmp(a, "--exact")) {
      if (a[2] == 'j') json = 1;
      else flags |= a[2] == 'n' ? FT_LOOKUP_NEAREST : FT_LOOKUP_EXACT;
      continue;
    }
    if (!strncmp(a, "--shape", 7) && (a[7] == 0 || a[7] == '=')) dst = &shape;
    else if (!strncmp(a, "--epilogue", 10) && (a[10] == 0 || a[10] == '=')) dst = &epi;
    else if (!strncmp(a, "--device-name", 13) && (a[13] == 0 || a[13] == '=')) dst = &devname;
    else if (!strncmp(a, "--math", 6) && (a[6] == 0 || a[6] == '=')) {
      const char *v = opt_value(&it, a);
      if (!v) return EXIT_USAGE;
      if (!parse_math(v, &math))
        return usage_error("query", "unknown --math '%s' (fp32, tf32, bf16, fp16, 3xtf32, fp8)", v);
      flags |= FT_LOOKUP_MODE_ONLY; /* --math fp32: FFMA and SGEMM alone */
      continue;
    } else if (!strncmp(a, "--tolerance", 11) && (a[11] == 0 || a[11] == '=')) {
      const char *v = opt_value(&it, a);
      if (!v) return EXIT_USAGE;
      if (!parse_double(v, &tolerance) || !(tolerance > 0) || !isfinite(tolerance))
        return usage_error("query", "--tolerance '%s' is not a positive number", v);
      continue;
    } else return usage_error("query", "unknown option '%s'", a);
    if (!(*dst = opt_value(&it, a))) return EXIT_USAGE;
  }
  if (!shape) return usage_error("query", "--shape is required");
  if (!epi) return usage_error("query", "--epilogue is required");
  if (tolerance > 0 && (flags & FT_LOOKUP_NEAREST))
    return usage_error("query", "--tolerance and --nearest do not combine (a tolerance picks among exact shapes)");
  if ((flags & (FT_LOOKUP_NEAREST | FT_LOOKUP_EXACT)) == (FT_LOOKUP_NEAREST | FT_LOOKUP_EXACT))
    return usage_error("query", "--exact and --nearest exclude each other");
  if (devname && !devname[0]) return usage_error("query", "--device-name is empty (name a device as 'list' shows it)");
  if (devname && strlen(devname) > 255)
    return usage_error("query", "--device-name is %zu bytes long: device names are at most 255", strlen(devname));
  ft_problem p;
  int rc = cli_problem("query", shape, epi, &p);
  if (rc || (rc = cli_problem_math("query", &p, math))) return rc;
  ft_ctx *ctx = NULL;
  if ((rc = cli_open(c, 0, &ctx))) return rc;
  ft_best_entry *e = malloc(sizeof *e);
  if (!e) {
    ft_close(ctx);
    return fail_msg("out of memory");
  }
  ft_status st = tolerance > 0 ? ft_lookup_entry_within(ctx, devname, &p, tolerance, e)
                                : ft_lookup_entry(ctx, devname, &p, flags, e);
  if (st == FT_ERR_NOT_FOUND) {
    cli_line(stderr, "fusedtune: %s", ft_errmsg(ctx));
    rc = EXIT_NOT_TUNED;
  } else if (st == FT_ERR_NO_DEVICE && !devname) {
    /* The device is part of the key; a stored one can be named instead of present. */
    cli_line(stderr, "fusedtune: %s; to read the results stored for a device without it, add --device-name NAME "
             "(the device column of 'fusedtune list')", ft_errmsg(ctx));
    rc = 1;
  } else if (st != FT_OK) {
    rc = fail_status(st, ft_errmsg(ctx));
  } else if (json) {
    best_json(e, NULL, 0, p.m, NULL, 0);
    printf("\n");
  } else {
    const ft_config *b = &e->config;
    char near[96] = "";
    if (b->exact == FT_MATCH_BUCKET)
      snprintf(near, sizeof near, " (bucket M=%lld serves m=%lld)", (long long)b->tuned_m, (long long)p.m);
    else if (b->exact != FT_MATCH_EXACT)
      snprintf(near, sizeof near, " (nearest tuned shape %lldx%lldx%lld)", (long long)b->tuned_m,
               (long long)b->tuned_n, (long long)b->tuned_k);
    /* Stored text (an imported device name) is shown printable. */
    cli_line(stdout, "device     %s", e->device_name);
    cli_line(stdout, "problem    %lldx%lldx%lld %s, epilogue %s%s", (long long)p.m, (long long)p.n, (long long)p.k,
             ft_math_name(b->math), e->epilogue, near);
    cli_line(stdout, "strategy   %s", b->strategy);
    cli_line(stdout, "variant    %s", b->name);
    cli_line(stdout, "config     %s", b->config);
    printf("median     %.4f ms\n", b->median_ms);
    printf("error      rel_err %.3g, max_abs_err %.3g (measured against float64 when tuned)\n", b->rel_err,
           b->max_abs_err);
    if (b->eager_ms > 0) printf("eager      %.4f ms (speedup %.3fx)\n", b->eager_ms, speedup(b));
  }
  free(e);
  ft_close(ctx);
  return rc;
}

int cmd_export(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv,
                 "usage: fusedtune [--db PATH] export [--format json|csv] [--out FILE] [--with-cubins]\n"
                 "Writes the whole database (devices, problems, runs, results, best) to stdout or FILE.\n"
                 "JSON is lossless and can be imported elsewhere; CSV is one row per result. See docs/FORMAT.md.\n"
                 "--with-cubins adds the compiled kernels, for inspection: import ignores them.\n"
                 "FILE is replaced only when the export is complete, keeping its mode; a FILE that is not a\n"
                 "regular file (a device, FIFO, symbolic link) or is the database itself is refused.\n"))
    return 0;
  const char *format = "json", *out = NULL;
  int cubins = 0;
  opt_iter it = {argc, argv, 0, "export"};
  const char *a;
  int pos;
  static const char *const names[] = {"--with-cubins", "--format", "--out"};
  unsigned seen = 0;
  while ((a = opt_next(&it, &pos))) {
    if (pos) return usage_error("export", "unexpected argument '%s'", a);
    if (opt_once("export", names, sizeof names / sizeof names[0], &seen, a)) return EXIT_USAGE;
    if (!strcmp(a, "--with-cubins")) cubins = 1;
    else if (!strncmp(a, "--format", 8) && (a[8] == 0 || a[8] == '=')) {
      if (!(format = opt_value(&it, a))) return EXIT_USAGE;
    } else if (!strncmp(a, "--out", 5) && (a[5] == 0 || a[5] == '=')) {
      if (!(out = opt_value(&it, a))) return EXIT_USAGE;
    } else return usage_error("export", "unknown option '%s'", a);
  }
  int csv = !strcmp(format, "csv");
  if (!csv && strcmp(format, "json")) return usage_error("export", "unknown --format '%s' (json or csv)", format);
  if (csv && cubins) return usage_error("export", "--with-cubins needs --format json");
  if (out && !*out) return usage_error("export", "--out needs a file name");
  ft_ctx *ctx = NULL;
  int rc = cli_open(c, 0, &ctx);
  if (rc) return rc;
  const unsigned flags = (csv ? FT_EXPORT_CSV : 0) | (cubins ? FT_EXPORT_CUBINS : 0);
  if (out) {
    /* The library's safe output: the database, its side files, links and devices refused. */
    ft_status st = ft_export_file(ctx, out, flags);
    if (st != FT_OK) return fail_ctx(st, ctx);
    ft_close(ctx);
    return 0;
  }
  ft_status st = ft_export(ctx, stdout, flags);
  int werr = ferror(stdout) || fflush(stdout) != 0;
  if (st != FT_OK) return fail_ctx(st, ctx);
  ft_close(ctx);
  if (werr) return fail_msg("writing standard output failed: %s", strerror(errno));
  return 0;
}

int cmd_import(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv,
                 "usage: fusedtune [--db PATH] import FILE\n"
                 "Merges a JSON export (from 'fusedtune export') into the database: importing twice is the same\n"
                 "as once; every measurement is kept and best is recomputed. A malformed file is rejected whole,\n"
                 "naming the place that is wrong, and the database is left unchanged. Cubins in the file are\n"
                 "checked and ignored: GPU code is never imported, kernels are compiled here (docs/FORMAT.md).\n"
                 "FILE must be a regular file of at most 1 GiB.\n"))
    return 0;
  if (argc != 1) return usage_error("import", argc ? "exactly one FILE expected" : "FILE is required");
  if (!*argv[0]) return usage_error("import", "FILE is empty: name the export to import");
  const char *path = cli_db_path(c);
  int existed = access(path, F_OK) == 0;
  ft_ctx *ctx = NULL;
  ft_status st = ft_open(path, FT_OPEN_CREATE, &ctx);
  ft_import_counts counts = {0};
  if (st == FT_OK) st = ft_import_file(ctx, argv[0], &counts);
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", ft_errmsg(ctx));
  ft_close(ctx);
  if (st != FT_OK && !existed && strcmp(path, ":memory:") != 0) {
    /* A rejected import leaves no trace: not even the empty database it would have filled. */
    ft_remove_database(path);
  }
  if (st != FT_OK) return fail_status(st, msg);
  cli_line(stdout, "imported %s into %s", argv[0], cli_db_path(c));
  if (counts.cubins_in > 0)
    printf("%lld cubin%s ignored: GPU code is never imported, kernels are compiled here from their source\n",
           (long long)counts.cubins_in, counts.cubins_in == 1 ? "" : "s");
  return 0;
}
