/* Database commands: init, list, query, export, import. None needs a GPU (query needs one only
 * to name the current device; --device-name avoids it). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "best.h"
#include "device.h"

#define FT_IMPORT_MAX_BYTES ((size_t)1 << 30)

int cmd_init(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv,
                 "usage: fusedtune [--db PATH] init\n"
                 "Creates an empty fusedtune database at PATH. An existing fusedtune database is left as it\n"
                 "is (older schemas are migrated forward); any other file is refused.\n"))
    return 0;
  if (argc > 0) return usage_error("init", "unexpected argument '%s'", argv[0]);
  ft_db *db = NULL;
  ft_err err;
  ft__err_clear(&err);
  if (ft_db_open(cli_db_path(c), FT_DB_CREATE, &db, &err) != FT_OK) return fail_err(&err);
  ft_db_close(db);
  printf("database %s ready (schema version %d)\n", cli_db_path(c), ft_db_schema_version());
  return 0;
}

typedef struct list_state {
  int json;
  int count;
} list_state;

static double speedup(const ft_best *b) { return b->eager_ms > 0 && b->median_ms > 0 ? b->eager_ms / b->median_ms : 0; }

static void best_json(const ft_best *b) {
  printf("{\"device\":");
  ft_json_write_string(stdout, b->device_name);
  printf(",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"math\":", (long long)b->key.m, (long long)b->key.n, (long long)b->key.k);
  ft_json_write_string(stdout, b->key.math);
  printf(",\"epilogue\":");
  ft_json_write_string(stdout, b->key.epilogue);
  printf(",\"strategy\":");
  ft_json_write_string(stdout, b->strategy);
  printf(",\"variant\":");
  ft_json_write_string(stdout, b->variant);
  printf(",\"config\":%s,\"source_hash\":", b->config_json[0] ? b->config_json : "null");
  ft_json_write_string(stdout, b->source_hash);
  printf(",\"median_ms\":%.17g,\"eager_ms\":%.17g,\"speedup_vs_eager\":%.6g}", b->median_ms, b->eager_ms, speedup(b));
}

static int list_one(void *user, const ft_best *b) {
  list_state *s = user;
  if (s->json) {
    printf("%s\n  ", s->count ? "," : "");
    best_json(b);
  } else {
    if (!s->count)
      printf("%-24s %-20s %-28s %-16s %-44s %10s %8s\n", "device", "shape", "epilogue", "strategy", "variant",
             "median_ms", "speedup");
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)b->key.m, (long long)b->key.n, (long long)b->key.k);
    char sp[16] = "-";
    if (speedup(b) > 0) snprintf(sp, sizeof sp, "%.3fx", speedup(b));
    printf("%-24.24s %-20s %-28.28s %-16s %-44.44s %10.4f %8s\n", b->device_name, shape, b->key.epilogue, b->strategy,
           b->variant, b->median_ms, sp);
  }
  s->count++;
  return 0;
}

int cmd_list(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv,
                 "usage: fusedtune [--db PATH] list [--json]\n"
                 "Lists every tuned (device, problem) with its best configuration, median time and speedup\n"
                 "over the eager-style baseline (cuBLAS GEMM + one kernel per op) measured in the same run.\n"))
    return 0;
  list_state s = {0, 0};
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) s.json = 1;
    else return usage_error("list", "unexpected argument '%s'", argv[i]);
  }
  ft_db *db = NULL;
  ft_err err;
  ft__err_clear(&err);
  if (cli_open_db(c, 0, &db, &err) != FT_OK) return fail_err(&err);
  if (s.json) printf("[");
  ft_status st = ft_db_each_best(db, list_one, &s, &err);
  ft_db_close(db);
  if (st != FT_OK) return fail_err(&err);
  if (s.json) printf("%s]\n", s.count ? "\n" : "");
  else if (!s.count) printf("nothing tuned yet in %s\n", cli_db_path(c));
  return 0;
}

static const char *query_help =
    "usage: fusedtune [--db PATH] query --shape MxNxK --epilogue E [--math fp32] [--device-name NAME] [--json]\n"
    "Prints the best configuration tuned for the problem on this GPU (or on the device named NAME,\n"
    "as 'list' shows it). Exit status 3 when nothing was tuned for that key.\n";

int cmd_query(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv, query_help)) return 0;
  const char *shape = NULL, *epi = NULL, *devname = NULL;
  int json = 0;
  ft_math math = FT_MATH_FP32;
  opt_iter it = {argc, argv, 0, "query"};
  const char *a;
  int pos;
  while ((a = opt_next(&it, &pos))) {
    const char **dst = NULL;
    if (pos) return usage_error("query", "unexpected argument '%s'", a);
    if (!strcmp(a, "--json")) {
      json = 1;
      continue;
    }
    if (!strncmp(a, "--shape", 7) && (a[7] == 0 || a[7] == '=')) dst = &shape;
    else if (!strncmp(a, "--epilogue", 10) && (a[10] == 0 || a[10] == '=')) dst = &epi;
    else if (!strncmp(a, "--device-name", 13) && (a[13] == 0 || a[13] == '=')) dst = &devname;
    else if (!strncmp(a, "--math", 6) && (a[6] == 0 || a[6] == '=')) {
      const char *v = opt_value(&it, a);
      if (!v) return EXIT_USAGE;
      if (!parse_math(v, &math)) return usage_error("query", "unknown --math '%s' (only fp32 exists)", v);
      continue;
    } else return usage_error("query", "unknown option '%s'", a);
    if (!(*dst = opt_value(&it, a))) return EXIT_USAGE;
  }
  if (!shape) return usage_error("query", "--shape is required");
  if (!epi) return usage_error("query", "--epilogue is required");
  int rc;
  ft_problem_key key;
  ft_epilogue *ep = NULL;
  ft_err err;
  rc = cli_problem_key("query", shape, epi, &key, &ep, &err);
  if (rc) return rc;

  rc = 1;
  ft_db *db = NULL;
  ft_gpu *g = NULL;
  ft_device_info dev;
  int64_t device_id = 0;
  ft_best b;
  if (cli_open_db(c, 0, &db, &err) != FT_OK) {
    ft_ep_free(ep);
    return fail_err(&err);
  }
  ft_status st = devname ? FT_OK : ft_gpu_open(0, &g, &err);
  if (st == FT_OK)
    st = ft_db_find_device(db, devname ? NULL : ft_gpu_info(g)->fingerprint, devname, &dev, &device_id, &err);
  int stale = 0;
  if (st == FT_OK) st = ft_best_current(db, device_id, &key, ep, NULL, NULL, &b, &stale, &err);
  if (st == FT_ERR_NOT_FOUND) {
    fprintf(stderr, "fusedtune: %s for %s, epilogue '%s', fp32 on %s\n",
            stale ? "only stale results (older kernel source; tune again)" : "nothing tuned", shape, key.epilogue,
            devname ? devname : g ? ft_gpu_info(g)->name : "this device");
    rc = EXIT_NOT_TUNED;
  } else if (st != FT_OK) {
    rc = fail_err(&err);
  } else {
    if (json) {
      best_json(&b);
      printf("\n");
    } else {
      printf("device     %s\nproblem    %lldx%lldx%lld fp32, epilogue %s\nstrategy   %s\nvariant    %s\n"
             "config     %s\nmedian     %.4f ms\n",
             b.device_name, (long long)key.m, (long long)key.n, (long long)key.k, key.epilogue, b.strategy, b.variant,
             b.config_json, b.median_ms);
      if (b.eager_ms > 0) printf("eager      %.4f ms (speedup %.3fx)\n", b.eager_ms, speedup(&b));
    }
    rc = 0;
  }
  ft_gpu_close(g);
  ft_db_close(db);
  ft_ep_free(ep);
  return rc;
}

int cmd_export(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv,
                 "usage: fusedtune [--db PATH] export [--format json|csv] [--out FILE] [--with-cubins]\n"
                 "Writes the whole database (devices, problems, runs, results, best) to stdout or FILE.\n"
                 "JSON is lossless and can be imported elsewhere; CSV is one row per result. See docs/FORMAT.md.\n"))
    return 0;
  const char *format = "json", *out = NULL;
  int cubins = 0;
  opt_iter it = {argc, argv, 0, "export"};
  const char *a;
  int pos;
  while ((a = opt_next(&it, &pos))) {
    if (pos) return usage_error("export", "unexpected argument '%s'", a);
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
  ft_err err;
  ft__err_clear(&err);
  ft_db *db = NULL;
  if (cli_open_db(c, 0, &db, &err) != FT_OK) return fail_err(&err);
  /* Write FILE through a temporary name so a failed export never leaves half a file. */
  char tmp[4096];
  FILE *f = stdout;
  if (out) {
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", out, (long)getpid());
    f = fopen(tmp, "w");
    if (!f) {
      ft_db_close(db);
      return fail_msg("cannot write %s: %s", out, strerror(errno));
    }
  }
  ft_status st = csv ? ft_db_export_csv(db, f, &err) : ft_db_export_json(db, f, cubins, &err);
  ft_db_close(db);
  int werr = ferror(f);
  if (out) {
    werr |= fclose(f) != 0;
    if (st == FT_OK && !werr && rename(tmp, out) != 0) werr = 1;
    if (st != FT_OK || werr) remove(tmp);
  } else {
    werr |= fflush(f) != 0;
  }
  if (st != FT_OK) return fail_err(&err);
  if (werr) return fail_msg("writing %s failed: %s", out ? out : "standard output", strerror(errno));
  return 0;
}

static char *read_file(const char *path, size_t *len, ft_err *err) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    ft__fail(err, FT_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  if (S_ISDIR(sb.st_mode)) {
    ft__fail(err, FT_ERR_IO, "cannot read %s: it is a directory", path);
    return NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    ft__fail(err, FT_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
    if (n == cap) {
      if (cap >= FT_IMPORT_MAX_BYTES) {
        ft__fail(err, FT_ERR_FORMAT, "import: %s is larger than %zu bytes", path, FT_IMPORT_MAX_BYTES);
        free(buf);
        fclose(f);
        return NULL;
      }
      cap *= 2;
      char *nb = realloc(buf, cap + 1);
      if (!nb) free(buf);
      buf = nb;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf) {
    ft__fail(err, FT_ERR_NOMEM, "out of memory reading %s", path);
    return NULL;
  }
  if (bad) {
    free(buf);
    ft__fail(err, FT_ERR_IO, "error reading %s", path);
    return NULL;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

int cmd_import(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv,
                 "usage: fusedtune [--db PATH] import FILE\n"
                 "Merges a JSON export (from 'fusedtune export') into the database: importing twice is the same\n"
                 "as once; every measurement is kept and best is recomputed. A malformed file is rejected whole,\n"
                 "naming the place that is wrong, and the database is left unchanged.\n"))
    return 0;
  if (argc != 1) return usage_error("import", argc ? "exactly one FILE expected" : "FILE is required");
  ft_err err;
  ft__err_clear(&err);
  size_t len = 0;
  char *text = read_file(argv[0], &len, &err);
  if (!text) return fail_err(&err);
  ft_db *db = NULL;
  const char *path = cli_db_path(c);
  int existed = access(path, F_OK) == 0;
  ft_status st = cli_open_db(c, 1, &db, &err);
  if (st == FT_OK) st = ft_db_import_json(db, text, len, &err);
  ft_db_close(db);
  free(text);
  if (st != FT_OK && !existed && strcmp(path, ":memory:") != 0) {
    /* A rejected import leaves no trace: not even the empty database it would have filled. */
    ft_db_remove_files(path);
  }
  if (st != FT_OK) return fail_err(&err);
  printf("imported %s into %s\n", argv[0], cli_db_path(c));
  return 0;
}
