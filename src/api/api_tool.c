/* The database side of fusedtune_tool.h: export, import, iteration over the stored best entries
 * and lookup of one entry with its device and problem. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api_internal.h"
#include "fusedtune_tool.h"
#include "json.h"
#include "strbuf.h"

#define FT_IMPORT_MAX_BYTES ((size_t)1 << 30)

int ft_schema_version(void) { return ft_db_schema_version(); }

void ft_remove_database(const char *path) {
  if (path) ft_db_remove_files(path);
}

ft_status ft_remove_database_v2(const char *path, char *msg, size_t msg_size) {
  ft_err e;
  ft__err_clear(&e);
  struct stat sb;
  ft_status st = FT_OK;
  if (!path || !*path) st = ft__fail(&e, FT_ERR_INVALID_ARG, "ft_remove_database_v2: no path given");
  else if (lstat(path, &sb) != 0 && errno == ENOENT) st = FT_OK; /* nothing to remove */
  else if (ft_db_is_open(path))
    st = ft__fail(&e, FT_ERR_IO, "cannot remove %s: the database is open in this process (close it first)", path);
  else {
    /* Only what opens as a fusedtune database (any schema version) is removed. */
    ft_db *db = NULL;
    st = ft_db_open(path, FT_DB_READONLY, &db, &e);
    ft_db_close(db);
    if (st == FT_ERR_VERSION) st = FT_OK;
    if (st == FT_OK) ft_db_remove_files(path);
    else if (st != FT_ERR_NOMEM) {
      char why[sizeof e.msg];
      snprintf(why, sizeof why, "%s", e.msg);
      st = ft__fail(&e, st, "not removing %s: %s", path, why);
    }
  }
  if (msg && msg_size) snprintf(msg, msg_size, "%s", e.msg);
  return st;
}

void ft_text_printable(char *text) { ft__printable(text); }

/* s in single quotes for a POSIX shell (each ' as '\''), appended to b. */
static void shell_quote(ft_strbuf *b, const char *s) {
  ft_sb_puts(b, "'");
  for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
    ft_sb_putn(b, s, (size_t)(q - s));
    ft_sb_puts(b, "'\\''");
  }
  ft_sb_puts(b, s);
  ft_sb_puts(b, "'");
}

size_t ft_tune_command(const char *db_path, int64_t m, int64_t n, int64_t k, const char *epilogue, const char *math,
                       char *out, size_t out_size) {
  ft_strbuf b = {0};
  ft_sb_puts(&b, "fusedtune ");
  if (db_path && *db_path) {
    ft_sb_puts(&b, "--db ");
    shell_quote(&b, db_path);
    ft_sb_puts(&b, " ");
  }
  ft_sb_printf(&b, "tune --shape %lldx%lldx%lld --epilogue ", (long long)m, (long long)n, (long long)k);
  shell_quote(&b, epilogue ? epilogue : "none");
  ft_sb_printf(&b, " --math %s", math ? math : "fp32");
  size_t len = b.oom ? 0 : b.len;
  if (out && out_size) snprintf(out, out_size, "%s", b.p && !b.oom ? b.p : "");
  free(b.p);
  return len;
}

ft_status ft_export(ft_ctx *ctx, FILE *out, unsigned flags) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  ft_err *err = ft__ctx_err(ctx);
  if (!out) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_export: out is NULL");
  if (flags & ~(FT_EXPORT_CSV | FT_EXPORT_CUBINS))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_export: unknown flags 0x%x", flags);
  if ((flags & FT_EXPORT_CSV) && (flags & FT_EXPORT_CUBINS))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_export: cubins are exported in JSON only");
  if (flags & FT_EXPORT_CSV) return ft_db_export_csv(ft__ctx_db(ctx), out, err);
  return ft_db_export_json(ft__ctx_db(ctx), out, (flags & FT_EXPORT_CUBINS) != 0, err);
}

/* The whole file at path, NUL-terminated, malloc'd; NULL with err set on failure. Only a regular
 * file of at most FT_IMPORT_MAX_BYTES is read, and never more than its size said: a device
 * (/dev/zero), a FIFO or a file growing under us cannot make the import take unbounded memory. */
static char *slurp(const char *path, size_t *len, ft_err *err) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    ft__fail(err, FT_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  if (S_ISDIR(sb.st_mode)) {
    ft__fail(err, FT_ERR_IO, "cannot read %s: it is a directory", path);
    return NULL;
  }
  /* Checked before opening: opening a FIFO would wait for a writer. */
  if (!S_ISREG(sb.st_mode)) {
    ft__fail(err, FT_ERR_IO, "cannot import %s: not a regular file (a device, FIFO or socket)", path);
    return NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    ft__fail(err, FT_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) { /* replaced since the stat */
    fclose(f);
    ft__fail(err, FT_ERR_IO, "cannot import %s: not a regular file", path);
    return NULL;
  }
  if (sb.st_size < 0 || (uintmax_t)sb.st_size > FT_IMPORT_MAX_BYTES) {
    fclose(f);
    ft__fail(err, FT_ERR_FORMAT, "import: %s is %jd bytes, larger than the limit of %zu bytes (1 GiB)",
             path, (intmax_t)sb.st_size, FT_IMPORT_MAX_BYTES);
    return NULL;
  }
  size_t cap = (size_t)sb.st_size, n = 0;
  char *buf = malloc(cap + 2); /* one byte more than the size, to notice growth */
  if (!buf) {
    fclose(f);
    ft__fail(err, FT_ERR_NOMEM, "out of memory reading %s", path);
    return NULL;
  }
  size_t got;
  while (n <= cap && (got = fread(buf + n, 1, cap + 1 - n, f)) > 0) n += got;
  int bad = ferror(f);
  fclose(f);
  if (bad || n > cap) {
    free(buf);
    ft__fail(err, FT_ERR_IO, bad ? "error reading %s" : "import: %s grew while it was read", path);
    return NULL;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

ft_status ft_import_file(ft_ctx *ctx, const char *path, ft_import_counts *stats) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  ft_err *err = ft__ctx_err(ctx);
  if (!path) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_import_file: path is NULL");
  if (ft__ctx_flags(ctx) & FT_OPEN_READONLY)
    return ft__fail(err, FT_ERR_INVALID_ARG, "import: the database was opened read-only");
  size_t len = 0;
  char *text = slurp(path, &len, err);
  if (!text) return err->status;
  ft_import_stats st;
  memset(&st, 0, sizeof st);
  ft_status s = ft_db_import_json_stats(ft__ctx_db(ctx), text, len, &st, err);
  free(text);
  if (s == FT_OK && stats) {
    ft_import_counts c = {st.devices,    st.problems,    st.runs,    st.results,    st.cubins,
                          st.devices_in, st.problems_in, st.runs_in, st.results_in, st.cubins_in};
    *stats = c;
  }
  return s;
}

static void fill_entry(ft_best_entry *e, const ft_best *b, int exact) {
  memset(e, 0, sizeof *e);
  snprintf(e->device_name, sizeof e->device_name, "%s", b->device_name);
  snprintf(e->math, sizeof e->math, "%s", b->key.math);
  snprintf(e->epilogue, sizeof e->epilogue, "%s", b->key.epilogue);
  ft__fill_config(&e->config, b, exact);
}

typedef struct each_state {
  ft_db *db;
  ft_best_entry_fn fn;
  void *user;
  ft_best_entry entry;
} each_state;

static int each_one(void *user, const ft_best *b) {
  each_state *s = user;
  fill_entry(&s->entry, b, 1);
  return s->fn(s->user, &s->entry);
}

ft_status ft_each_best(ft_ctx *ctx, ft_best_entry_fn fn, void *user) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  if (!fn) return ft__fail(ft__ctx_err(ctx), FT_ERR_INVALID_ARG, "ft_each_best: fn is NULL");
  each_state *s = malloc(sizeof *s); /* the entry is large: not on the stack of every caller */
  if (!s) return ft__fail(ft__ctx_err(ctx), FT_ERR_NOMEM, "out of memory");
  s->db = ft__ctx_db(ctx);
  s->fn = fn;
  s->user = user;
  ft_status st = ft_db_each_best(s->db, each_one, s, ft__ctx_err(ctx));
  free(s);
  return st;
}

ft_status ft_lookup_entry(ft_ctx *ctx, const char *device_name, const ft_problem *p, unsigned flags,
                          ft_best_entry *out) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  if (!out) return ft__fail(ft__ctx_err(ctx), FT_ERR_INVALID_ARG, "ft_lookup_entry: out is NULL");
  ft_best *b = malloc(sizeof *b);
  if (!b) return ft__fail(ft__ctx_err(ctx), FT_ERR_NOMEM, "out of memory");
  int exact = 0;
  ft_status s = ft__lookup_best(ctx, device_name, p, flags, b, &exact);
  if (s == FT_OK) fill_entry(out, b, exact);
  free(b);
  return s;
}

ft_status ft_lookup_entry_within(ft_ctx *ctx, const char *device_name, const ft_problem *p, double tolerance,
                                 ft_best_entry *out) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  if (!out) return ft__fail(ft__ctx_err(ctx), FT_ERR_INVALID_ARG, "ft_lookup_entry_within: out is NULL");
  ft_best *b = malloc(sizeof *b);
  if (!b) return ft__fail(ft__ctx_err(ctx), FT_ERR_NOMEM, "out of memory");
  ft_status s = ft__lookup_within(ctx, device_name, p, tolerance, b);
  if (s == FT_OK) fill_entry(out, b, 1);
  free(b);
  return s;
}

void ft_write_json_string(FILE *out, const char *s) {
  if (!out) return;
  if (!s) fputs("null", out);
  else ft_json_write_string(out, s);
}
