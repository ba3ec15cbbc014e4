/* Import (JSON): the whole file is read and checked into memory first (db_import_read.c), its
 * references and duplicates resolved, then merged in batches of results: a bad file changes
 * nothing, importing twice is importing once. Records, field tables and inserts all come from
 * db_columns.h. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "db_import.h"
#include "epilogue.h"
#include "fusedtune_tool.h"
#include "space.h"

/* Records as validated from the file; strings point into the JSON document. */
typedef struct imp_device {
  FT_IMP_MEMBERS(FT_DEVICE_COLUMNS)
  size_t idx;
  int64_t id; /* local row id, once merged */
} imp_device;

typedef struct imp_problem {
  ft_imp_key key;
  FT_IMP_MEMBERS(FT_PROBLEM_COLUMNS) /* the columns outside the key */
  size_t idx;
  int64_t id;
} imp_problem;

typedef struct imp_run {
  FT_IMP_MEMBERS(FT_RUN_COLUMNS)
  size_t idx;
  imp_device *dev;
  int64_t id;
} imp_run;

typedef struct imp_result {
  FT_IMP_MEMBERS(FT_RESULT_COLUMNS)
  size_t idx;
  imp_device *dev;
  imp_problem *prob;
  imp_run *run_rec;
} imp_result;

typedef struct imp_cubin {
  FT_IMP_MEMBERS(FT_CUBIN_COLUMNS)
  unsigned char *bytes; /* data decoded, owned */
  size_t n_bytes, idx;
} imp_cubin;

typedef struct imp_best { /* validated for shape, then ignored: best is derived */
  FT_IMP_MEMBERS(FT_BEST_COLUMNS)
} imp_best;

const ft_imp_field ft__imp_key_fields[FT_IMP_N_KEY_FIELDS] = {
    FT_PROBLEM_COLUMNS(FT__IMP_KEY_FIELD, )};
static const ft_imp_field k_device_fields[] = {FT_IMP_FIELDS(FT_DEVICE_COLUMNS, imp_device)};
static const ft_imp_field k_problem_fields[] = {FT_IMP_FIELDS(FT_PROBLEM_COLUMNS, imp_problem)};
static const ft_imp_field k_run_fields[] = {FT_IMP_FIELDS(FT_RUN_COLUMNS, imp_run)};
static const ft_imp_field k_result_fields[] = {FT_IMP_FIELDS(FT_RESULT_COLUMNS, imp_result)};
static const ft_imp_field k_cubin_fields[] = {FT_IMP_FIELDS(FT_CUBIN_COLUMNS, imp_cubin)};
static const ft_imp_field k_best_fields[] = {FT_IMP_FIELDS(FT_BEST_COLUMNS, imp_best)};

typedef struct import_set {
  imp_device *devices;
  imp_problem *problems;
  imp_run *runs;
  imp_result *results;
  imp_cubin *cubins;
  size_t n_devices, n_problems, n_runs, n_results, n_cubins;
  imp_device **dev_sorted; /* by fingerprint, for references */
  imp_problem **prob_sorted;
  imp_run **run_sorted;
} import_set;

static void import_set_free(import_set *s) {
  for (size_t i = 0; i < s->n_cubins; i++) free(s->cubins[i].bytes);
  free(s->devices);
  free(s->problems);
  free(s->runs);
  free(s->results);
  free(s->cubins);
  free(s->dev_sorted);
  free(s->prob_sorted);
  free(s->run_sorted);
}

/* ---------------------------------------------------------------------------------------------
 * Import: references and duplicates */

static int cmp_INT(int64_t a, int64_t b) { return a < b ? -1 : a > b; }
static int cmp_STR(const char *a, const char *b) { return strcmp(a, b); }

/* The problem key's columns in list order, each compared as its kind. */
#define KEY_CMP(c, n, col, json, kind, lo, hi, ins, sel) KEY_CMP_##sel(kind, json)
#define KEY_CMP_KCOL(kind, json) \
  if ((c = cmp_##kind(a->json, b->json)) != 0) return c;
#define KEY_CMP_COL(kind, json)

static int key_cmp(const ft_imp_key *a, const ft_imp_key *b) {
  int c;
  FT_PROBLEM_COLUMNS(KEY_CMP, )
  return 0;
}

static int dev_cmp(const void *a, const void *b) {
  return strcmp((*(imp_device *const *)a)->fingerprint, (*(imp_device *const *)b)->fingerprint);
}
static int prob_cmp(const void *a, const void *b) {
  return key_cmp(&(*(imp_problem *const *)a)->key, &(*(imp_problem *const *)b)->key);
}
static int run_cmp(const void *a, const void *b) {
  return strcmp((*(imp_run *const *)a)->uuid, (*(imp_run *const *)b)->uuid);
}
static int result_cmp(const void *a, const void *b) {
  return strcmp((*(imp_result *const *)a)->uuid, (*(imp_result *const *)b)->uuid);
}
static int cubin_cmp(const void *a, const void *b) {
  const imp_cubin *x = *(imp_cubin *const *)a, *y = *(imp_cubin *const *)b;
  int c = strcmp(x->source_hash, y->source_hash);
  if (!c) c = strcmp(x->arch, y->arch);
  if (!c && x->nvrtc_version != y->nvrtc_version) c = x->nvrtc_version < y->nvrtc_version ? -1 : 1;
  return c ? c : strcmp(x->options, y->options);
}

/* Sorts pointers to recs[0..n) with cmp and refuses two equal neighbours. *sorted is malloc'd
 * (the caller keeps it for lookups or frees it). */
static ft_status sort_unique(void *recs, size_t n, size_t rec_size, size_t idx_off,
                             int (*cmp)(const void *, const void *), const char *name,
                             const char *keyname, void ***sorted, ft_err *err) {
  *sorted = NULL;
  if (n == 0) return FT_OK;
  void **p = malloc(n * sizeof *p);
  if (!p) return ft__fail(err, FT_ERR_NOMEM, "import: out of memory indexing %s", name);
  for (size_t i = 0; i < n; i++) {
    p[i] = (char *)recs + i * rec_size;
    *(size_t *)((char *)p[i] + idx_off) = i;
  }
  qsort(p, n, sizeof *p, cmp);
  for (size_t i = 1; i < n; i++) {
    if (cmp(&p[i - 1], &p[i]) == 0) {
      size_t a = *(size_t *)((char *)p[i - 1] + idx_off), b = *(size_t *)((char *)p[i] + idx_off);
      char where[64], what[96];
      snprintf(where, sizeof where, "%s[%zu]", name, a > b ? a : b);
      snprintf(what, sizeof what, "same %s as %s[%zu]", keyname, name, a < b ? a : b);
      free(p);
      return ft__imp_bad(err, where, "%s", what);
    }
  }
  *sorted = p;
  return FT_OK;
}

static imp_device *find_device(const import_set *s, const char *fp) {
  imp_device key = {.fingerprint = fp}, *kp = &key;
  imp_device **hit =
      s->n_devices ? bsearch(&kp, s->dev_sorted, s->n_devices, sizeof kp, dev_cmp) : NULL;
  return hit ? *hit : NULL;
}

static imp_problem *find_problem(const import_set *s, const ft_imp_key *k) {
  imp_problem key = {.key = *k}, *kp = &key;
  imp_problem **hit =
      s->n_problems ? bsearch(&kp, s->prob_sorted, s->n_problems, sizeof kp, prob_cmp) : NULL;
  return hit ? *hit : NULL;
}

static imp_run *find_run(const import_set *s, const char *uuid) {
  imp_run key = {.uuid = uuid}, *kp = &key;
  imp_run **hit = s->n_runs ? bsearch(&kp, s->run_sorted, s->n_runs, sizeof kp, run_cmp) : NULL;
  return hit ? *hit : NULL;
}

static ft_status ref_error(ft_err *err, const char *section, size_t i, const char *field,
                           const char *what) {
  char where[80];
  snprintf(where, sizeof where, "%s[%zu].%s", section, i, field);
  return ft__imp_bad(err, where, "%s", what);
}

#define STRATEGY_TEXT_(name, text) " " text
#define MATH_TEXT_(name, value, text) " " text
static const char k_strategies[] = FT_STRATEGY_MAP(STRATEGY_TEXT_);
static const char k_maths[] = FT_MATH_MAP(MATH_TEXT_);

/* "import: SECTION[i].FIELD: unknown WHAT "value" (one of: LIST)". */
static ft_status bad_name(ft_err *err, const char *section, size_t i, const char *field,
                          const char *what, const char *value, const char *list) {
  char msg[256];
  snprintf(msg, sizeof msg, "unknown %s \"%.40s\" (one of:%s)", what, value, list);
  return ref_error(err, section, i, field, msg);
}

static ft_status resolve_results(import_set *s, ft_err *err) {
  for (size_t i = 0; i < s->n_results; i++) {
    imp_result *r = &s->results[i];
    ft_result_status st;
    if (!ft_result_status_from_name(r->status, &st) || st == FT_RESULT_UNAVAILABLE)
      return ref_error(err, "results", i, "status",
                       "expected one of ok, compile_error, wrong_result, launch_error, timeout");
    if (!ft_strategy_from_name(r->strategy, NULL))
      return bad_name(err, "results", i, "strategy", "strategy", r->strategy, k_strategies);
    if (!(r->dev = find_device(s, r->device)))
      return ref_error(err, "results", i, "device", "no device with this fingerprint in devices");
    if (!(r->prob = find_problem(s, &r->problem)))
      return ref_error(err, "results", i, "problem", "no such problem in problems");
    if (r->run && !(r->run_rec = find_run(s, r->run)))
      return ref_error(err, "results", i, "run", "no run with this uuid in runs");
    if (r->run_rec && r->run_rec->dev != r->dev)
      return ref_error(err, "results", i, "device", "differs from the device of its run");
  }
  return FT_OK;
}

static ft_status decode_cubins(import_set *s, ft_err *err) {
  for (size_t i = 0; i < s->n_cubins; i++) {
    imp_cubin *c = &s->cubins[i];
    int nomem;
    if (!ft__db_base64_decode(c->data, strlen(c->data), &c->bytes, &c->n_bytes, &nomem)) {
      if (nomem) return ft__fail(err, FT_ERR_NOMEM, "import: out of memory decoding cubins");
      return ref_error(err, "cubins", i, "data", "not canonical base64");
    }
    if ((int64_t)c->n_bytes != c->size)
      return ref_error(err, "cubins", i, "size", "differs from the length of data");
  }
  return FT_OK;
}

/* Checks references and duplicates across the sections. */
static ft_status resolve(import_set *s, ft_err *err) {
  void **tmp;
  FT_TRY(sort_unique(s->devices, s->n_devices, sizeof *s->devices, offsetof(imp_device, idx),
                     dev_cmp, "devices", "fingerprint", &tmp, err));
  s->dev_sorted = (imp_device **)tmp;
  FT_TRY(sort_unique(s->problems, s->n_problems, sizeof *s->problems, offsetof(imp_problem, idx),
                     prob_cmp, "problems", "key (" FT_DB_PROBLEM_KEY_COLS("") ")", &tmp, err));
  s->prob_sorted = (imp_problem **)tmp;
  FT_TRY(sort_unique(s->runs, s->n_runs, sizeof *s->runs, offsetof(imp_run, idx), run_cmp, "runs",
                     "uuid", &tmp, err));
  s->run_sorted = (imp_run **)tmp;
  for (size_t i = 0; i < s->n_runs; i++)
    if (!(s->runs[i].dev = find_device(s, s->runs[i].device)))
      return ref_error(err, "runs", i, "device", "no device with this fingerprint in devices");
  FT_TRY(sort_unique(s->results, s->n_results, sizeof *s->results, offsetof(imp_result, idx),
                     result_cmp, "results", "uuid", &tmp, err));
  free(tmp);
  FT_TRY(resolve_results(s, err));
  FT_TRY(sort_unique(s->cubins, s->n_cubins, sizeof *s->cubins, offsetof(imp_cubin, idx),
                     cubin_cmp, "cubins", "key (source_hash, arch, nvrtc_version, options)", &tmp,
                     err));
  free(tmp);
  return decode_cubins(s, err);
}

/* "import: WHERE: " and the message the library's own check left in err. */
static ft_status rewrap(ft_err *err, const char *section, size_t i, const char *field) {
  char where[80], detail[sizeof err->msg];
  snprintf(where, sizeof where, field ? "%s[%zu].%s" : "%s[%zu]", section, i, field ? field : "");
  snprintf(detail, sizeof detail, "%s", err->msg);
  return ft__imp_bad(err, where, "%.1800s", detail);
}

/* Each problem passes the checks a tuned problem passes: the kernels' shape limits
 * (ft_check_shape), a known layout and math mode, and an epilogue that parses to the stored
 * canonical text and hash. Results and best refer to these problems by key, so they are
 * checked with them. */
static ft_status check_problems(const import_set *s, ft_err *err) {
  for (size_t i = 0; i < s->n_problems; i++) {
    const imp_problem *p = &s->problems[i];
    if (ft_check_shape(p->key.m, p->key.n, p->key.k, err) != FT_OK)
      return rewrap(err, "problems", i, NULL);
    if (strcmp(p->key.layout, FT_DB_LAYOUT) != 0)
      return bad_name(err, "problems", i, "layout", "layout", p->key.layout, " " FT_DB_LAYOUT);
    if (!ft_math_from_name(p->key.math, NULL))
      return bad_name(err, "problems", i, "math", "math mode", p->key.math, k_maths);
    ft_epilogue *ep = NULL;
    if (ft_ep_parse(p->epilogue, &ep, err) != FT_OK) return rewrap(err, "problems", i, "epilogue");
    ft_status st = FT_OK;
    if (strcmp(ft_ep_canonical(ep), p->epilogue) != 0)
      st = ref_error(err, "problems", i, "epilogue", "not in canonical form (fusedtune epilogue shows it)");
    else if (strcmp(ft_ep_hash(ep), p->key.epilogue_hash) != 0)
      st = ref_error(err, "problems", i, "epilogue_hash", "does not match the epilogue");
    ft_ep_free(ep);
    FT_TRY(st);
  }
  return FT_OK;
}

/* Checks the header; *version is the export's version. */
static ft_status read_header(const ft_json *root, int *version, ft_err *err) {
  static const char *const known[] = {"format", "version", "devices", "problems",
                                      "runs",   "results", "best",    "cubins"};
  if (root->type != FT_JSON_OBJECT)
    return ft__imp_bad(err, "top level", "expected an object, found %s",
                       ft_json_type_name(root->type));
  const ft_json *fmt = ft_json_get(root, "format"), *ver = ft_json_get(root, "version");
  if (!fmt || fmt->type != FT_JSON_STRING || strcmp(fmt->str, FT_DB_EXPORT_FORMAT) != 0)
    return ft__imp_bad(err, "format", "expected \"%s\"", FT_DB_EXPORT_FORMAT);
  if (!ver || ver->type != FT_JSON_NUMBER || !ver->is_integer || ver->integer < 1)
    return ft__imp_bad(err, "version", "expected a positive integer%s", "");
  if (ver->integer > FT_DB_EXPORT_VERSION)
    return ft__fail(err, FT_ERR_VERSION,
                    "import: the file has export version %" PRId64 ", this fusedtune reads up to "
                    "%d: upgrade fusedtune",
                    ver->integer, FT_DB_EXPORT_VERSION);
  for (size_t i = 0; i < root->count; i++) {
    size_t j = 0;
    while (j < sizeof known / sizeof known[0] && strcmp(known[j], root->members[i].key) != 0) j++;
    if (j == sizeof known / sizeof known[0])
      return ft__imp_bad(err, "top level", "unknown field \"%.80s\"", root->members[i].key);
  }
  *version = (int)ver->integer;
  return FT_OK;
}

#define NF(a) (sizeof a / sizeof a[0])
/* Reads the array name of root into s->field and its count into s->n_field. */
#define READ(name, optional, table, type, field)                                               \
  do {                                                                                         \
    FT_TRY(ft__imp_read_array(root, version, name, optional, table, NF(table), sizeof(type),   \
                              &p, &s->n_##field, err));                                        \
    s->field = p;                                                                              \
  } while (0)

/* Reads and checks the whole document into s; nothing is written. */
static ft_status validate(const ft_json *root, import_set *s, ft_err *err) {
  int version = 0;
  FT_TRY(read_header(root, &version, err));
  void *p;
  READ("devices", 0, k_device_fields, imp_device, devices);
  READ("problems", 0, k_problem_fields, imp_problem, problems);
  FT_TRY(check_problems(s, err));
  READ("runs", 0, k_run_fields, imp_run, runs);
  READ("results", 0, k_result_fields, imp_result, results);
  size_t n_best;
  ft_status st = ft__imp_read_array(root, version, "best", 0, k_best_fields, NF(k_best_fields),
                                    sizeof(imp_best), &p, &n_best, err);
  free(p); /* best is derived: its rows were only checked for shape */
  FT_TRY(st);
  READ("cubins", 1, k_cubin_fields, imp_cubin, cubins);
  return resolve(s, err);
}

/* ---------------------------------------------------------------------------------------------
 * Import: merge */

enum {
  M_DEV_INS, M_DEV_ID, M_PROB_INS, M_PROB_ID, M_RUN_INS, M_RUN_ID, M_RES_INS, M_N
};

/* Every column a parameter, so the file's times and versions are kept; rows already present
 * stay as they are. */
static const char *const k_merge_sql[M_N] = {
    [M_DEV_INS] = FT_DB_INSERT_ALL(devices, FT_DEVICE_COLUMNS) " ON CONFLICT DO NOTHING",
    [M_DEV_ID] = "SELECT id FROM devices WHERE fingerprint = ?1",
    [M_PROB_INS] = FT_DB_INSERT_ALL(problems, FT_PROBLEM_COLUMNS) " ON CONFLICT DO NOTHING",
    [M_PROB_ID] = "SELECT id FROM problems WHERE " FT_DB_PROBLEM_KEY_WHERE,
    [M_RUN_INS] = FT_DB_INSERT_ALL(runs, FT_RUN_COLUMNS) " ON CONFLICT DO NOTHING",
    [M_RUN_ID] = "SELECT id FROM runs WHERE uuid = ?1",
    [M_RES_INS] = FT_DB_INSERT_ALL(results, FT_RESULT_COLUMNS) " ON CONFLICT DO NOTHING",
};

typedef struct merger {
  ft_db *db;
  sqlite3_stmt *st[M_N];
  ft_import_stats *stats;
  ft_err *err;
} merger;

static ft_status bound(merger *m, int rc, const char *doing) {
  return rc == SQLITE_OK ? FT_OK : ft__db_error(m->db, m->err, rc, doing);
}

/* Binds every field of rec that is a column of its own (param) at its number; references and
 * the decoded cubin are the caller's. */
static ft_status bind_fields(merger *m, sqlite3_stmt *st, const ft_imp_field *fs, size_t nf,
                             const void *rec, const char *doing) {
  for (size_t i = 0; i < nf; i++) {
    const ft_imp_field *f = &fs[i];
    const char *slot = (const char *)rec + f->off;
    int rc = SQLITE_OK;
    if (!f->param || f->kind == FT_IK_B64 || f->kind == FT_IK_KEY) continue;
    if (f->kind == FT_IK_INT) {
      rc = sqlite3_bind_int64(st, f->param, *(const int64_t *)slot);
    } else if (f->kind == FT_IK_NUM || f->kind == FT_IK_NUM_NULL || f->kind == FT_IK_POS_NULL_V2) {
      double v = *(const double *)slot; /* NAN: read as null */
      rc = isnan(v) ? sqlite3_bind_null(st, f->param) : sqlite3_bind_double(st, f->param, v);
    } else {
      const char *s = *(const char *const *)slot;
      rc = s ? sqlite3_bind_text(st, f->param, s, -1, SQLITE_STATIC)
             : sqlite3_bind_null(st, f->param);
    }
    FT_TRY(bound(m, rc, doing));
  }
  return FT_OK;
}

/* Runs an insert; adds 1 to *added when it inserted a row (not an already present one). */
static ft_status run_insert(merger *m, int which, int64_t *added, const char *doing) {
  sqlite3_stmt *st = m->st[which];
  int rc = sqlite3_step(st);
  ft_status s = rc == SQLITE_DONE ? FT_OK : ft__db_error(m->db, m->err, rc, doing);
  if (s == FT_OK) *added += sqlite3_changes(m->db->h);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return s;
}

static ft_status run_select_id(merger *m, int which, int64_t *id, const char *doing) {
  sqlite3_stmt *st = m->st[which];
  int rc = sqlite3_step(st);
  ft_status s = FT_OK;
  if (rc == SQLITE_ROW)
    *id = sqlite3_column_int64(st, 0);
  else
    s = ft__db_error(m->db, m->err, rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, doing);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return s;
}

static ft_status merge_device(merger *m, imp_device *d) {
  static const char doing[] = "importing a device";
  FT_TRY(bind_fields(m, m->st[M_DEV_INS], k_device_fields, NF(k_device_fields), d, doing));
  FT_TRY(run_insert(m, M_DEV_INS, &m->stats->devices, doing));
  FT_TRY(bound(m, sqlite3_bind_text(m->st[M_DEV_ID], 1, d->fingerprint, -1, SQLITE_STATIC), doing));
  return run_select_id(m, M_DEV_ID, &d->id, doing);
}

static ft_status merge_problem(merger *m, imp_problem *p) {
  static const char doing[] = "importing a problem";
  FT_TRY(bind_fields(m, m->st[M_PROB_INS], k_problem_fields, NF(k_problem_fields), p, doing));
  FT_TRY(run_insert(m, M_PROB_INS, &m->stats->problems, doing));
  FT_TRY(bind_fields(m, m->st[M_PROB_ID], ft__imp_key_fields, FT_IMP_N_KEY_FIELDS, &p->key, doing));
  return run_select_id(m, M_PROB_ID, &p->id, doing);
}

static ft_status merge_run(merger *m, imp_run *r) {
  static const char doing[] = "importing a run";
  sqlite3_stmt *st = m->st[M_RUN_INS];
  FT_TRY(bind_fields(m, st, k_run_fields, NF(k_run_fields), r, doing));
  FT_TRY(bound(m, sqlite3_bind_int64(st, FT_COL(runs, device_id), r->dev->id), doing));
  FT_TRY(run_insert(m, M_RUN_INS, &m->stats->runs, doing));
  FT_TRY(bound(m, sqlite3_bind_text(m->st[M_RUN_ID], 1, r->uuid, -1, SQLITE_STATIC), doing));
  return run_select_id(m, M_RUN_ID, &r->id, doing);
}

static ft_status merge_result(merger *m, const imp_result *r) {
  static const char doing[] = "importing a result";
  sqlite3_stmt *st = m->st[M_RES_INS];
  FT_TRY(bind_fields(m, st, k_result_fields, NF(k_result_fields), r, doing));
  if (r->run_rec)
    FT_TRY(bound(m, sqlite3_bind_int64(st, FT_COL(results, run_id), r->run_rec->id), doing));
  FT_TRY(bound(m, sqlite3_bind_int64(st, FT_COL(results, device_id), r->dev->id), doing));
  FT_TRY(bound(m, sqlite3_bind_int64(st, FT_COL(results, problem_id), r->prob->id), doing));
  return run_insert(m, M_RES_INS, &m->stats->results, doing);
}

/* Results per write transaction: each commit is short (well under a second), so two large
 * imports, or an import and a tune, take turns within the busy timeout instead of one waiting
 * for the whole of the other. */
#define IMPORT_BATCH 2000
#define IMPORT_WAIT_MS 60000

/* One write transaction: the devices, problems and runs with the first results, or the next
 * IMPORT_BATCH results from *next. */
static ft_status merge_batch(merger *m, import_set *s, size_t *next) {
  /* A batch tool can wait longer for its turn than a tune's single result: several busy
   * timeouts, up to IMPORT_WAIT_MS. */
  ft_status st = ft__db_begin_write(m->db, "importing", m->err);
  for (int waited = FT_DB_BUSY_TIMEOUT_MS; st != FT_OK && waited < IMPORT_WAIT_MS &&
                                           (sqlite3_extended_errcode(m->db->h) & 0xff) == SQLITE_BUSY;
       waited += FT_DB_BUSY_TIMEOUT_MS)
    st = ft__db_begin_write(m->db, "importing", m->err);
  if (st == FT_OK && *next == 0) {
    for (size_t i = 0; i < s->n_devices && st == FT_OK; i++) st = merge_device(m, &s->devices[i]);
    for (size_t i = 0; i < s->n_problems && st == FT_OK; i++) st = merge_problem(m, &s->problems[i]);
    for (size_t i = 0; i < s->n_runs && st == FT_OK; i++) st = merge_run(m, &s->runs[i]);
  }
  size_t end = s->n_results - *next > IMPORT_BATCH ? *next + IMPORT_BATCH : s->n_results;
  for (size_t i = *next; i < end && st == FT_OK; i++) st = merge_result(m, &s->results[i]);
  /* Imported cubins are checked and then dropped: GPU code from a file is never stored, so
   * never loaded; plans compile their kernels here from the source the hash names
   * (docs/FORMAT.md). */
  int busy = st != FT_OK && (sqlite3_extended_errcode(m->db->h) & 0xff) == SQLITE_BUSY;
  st = ft__db_finish(m->db, st, "importing", m->err);
  if (st == FT_OK) {
    *next = end;
  } else if (busy && m->err) {
    char detail[sizeof m->err->msg];
    snprintf(detail, sizeof detail, "%s", m->err->msg);
    ft__fail(m->err, st,
             "%.1700s: another process kept the database busy for over %d s; run the import again "
             "(it adds only what is still missing)",
             detail, IMPORT_WAIT_MS / 1000);
  }
  return st;
}

/* Merges in batches of results: a failure after the first batch (the database locked or full)
 * leaves whole batches, which importing the file again completes. Bad input never gets here. */
static ft_status merge(ft_db *db, import_set *s, ft_import_stats *stats, ft_err *err) {
  merger m = {.db = db, .stats = stats, .err = err};
  ft_status st = FT_OK;
  for (int i = 0; i < M_N && st == FT_OK; i++) {
    int rc = sqlite3_prepare_v2(db->h, k_merge_sql[i], -1, &m.st[i], NULL);
    if (rc != SQLITE_OK) st = ft__db_error(db, err, rc, "preparing the import");
  }
  size_t next = 0;
  do {
    if (st == FT_OK) st = merge_batch(&m, s, &next);
  } while (st == FT_OK && next < s->n_results);
  for (int i = 0; i < M_N; i++) sqlite3_finalize(m.st[i]);
  return st;
}

ft_status ft_db_import_json_stats(ft_db *db, const char *text, size_t len, ft_import_stats *stats,
                                  ft_err *err) {
  if (!db || (!text && len))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_db_import_json: NULL argument");
  ft_import_stats local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  if (db->readonly)
    return ft__fail(err, FT_ERR_DB, "database %s: importing: the database is open read-only",
                    db->path);
  ft_json_doc *doc = NULL;
  ft_status s = ft_json_parse(text ? text : "", len, NULL, &doc, err);
  if (s != FT_OK) {
    /* A CSV export's header row (its first column's name is enough): say what import reads. */
    static const char csv_head[] = "uuid,";
    if (err && s == FT_ERR_FORMAT && len >= sizeof csv_head - 1 && !memcmp(text, csv_head, sizeof csv_head - 1)) {
      ft__fail(err, s, "import: this is a CSV export: CSV is export-only (one row per result, not the whole "
               "database); import a JSON export: fusedtune export --format json");
    } else if (err && s == FT_ERR_FORMAT) {
      char detail[sizeof err->msg];
      snprintf(detail, sizeof detail, "%s", err->msg);
      ft__fail(err, s, "import: not valid JSON: %.1900s", detail);
    }
    return s;
  }
  import_set set = {0};
  s = validate(ft_json_root(doc), &set, err);
  if (s == FT_OK) {
    stats->devices_in = (int64_t)set.n_devices;
    stats->problems_in = (int64_t)set.n_problems;
    stats->runs_in = (int64_t)set.n_runs;
    stats->results_in = (int64_t)set.n_results;
    stats->cubins_in = (int64_t)set.n_cubins;
    s = merge(db, &set, stats, err);
  }
  import_set_free(&set);
  ft_json_free(doc);
  return s;
}

ft_status ft_db_import_json(ft_db *db, const char *text, size_t len, ft_err *err) {
  return ft_db_import_json_stats(db, text, len, NULL, err);
}
