/* Problem lists (fusedtune_tool.h): a model's layers in a JSON or CSV file, every entry checked
 * by the one problem check before anything is tuned, identical keys marked so they run once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_internal.h"
#include "fusedtune_tool.h"
#include "json.h"

#define LIST_MAX_BYTES ((size_t)16 << 20)
#define FIELDS "shape, epilogue, math"

/* One decimal dimension; 0 when there is none, -1 when it does not fit in 63 bits. */
static int parse_dim(const char **p, int64_t *out) {
  const char *s = *p;
  if (*s < '0' || *s > '9') return 0;
  int64_t v = 0;
  while (*s >= '0' && *s <= '9') {
    if (v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (*s - '0');
    s++;
  }
  *p = s;
  *out = v;
  return 1;
}

static ft_status shape_parse(const char *s, int64_t *dims[3], ft_err *err) {
  static const char *const names[3] = {"M", "N", "K"};
  const char *p = s;
  for (int i = 0; i < 3; i++) {
    int r = parse_dim(&p, dims[i]);
    if (r < 0) return ft__fail(err, FT_ERR_INVALID_ARG, "shape '%.100s': %s is too large", s, names[i]);
    if (r == 0 || (i < 2 && *p++ != 'x'))
      return ft__fail(err, FT_ERR_INVALID_ARG,
                      "shape '%.100s' is not MxNxK with positive integers (e.g. 128x16384x16384)", s);
  }
  if (*p) return ft__fail(err, FT_ERR_INVALID_ARG, "shape '%.100s' has trailing text '%.100s'", s, p);
  return FT_OK;
}

ft_status ft_shape_parse(const char *text, int64_t *m, int64_t *n, int64_t *k, char *msg, size_t msg_size) {
  ft_err err;
  ft__err_clear(&err);
  ft_status s;
  if (!text || !m || !n || !k) {
    s = ft__fail(&err, FT_ERR_INVALID_ARG, "ft_shape_parse: NULL argument");
  } else {
    int64_t *dims[3] = {m, n, k};
    s = shape_parse(text, dims, &err);
  }
  if (s != FT_OK) ft__copy_msg(msg, msg_size, err.msg);
  return s;
}

/* "A..BxNxK" or "MxNxK" (then lo = hi = M). */
static ft_status range_parse(const char *s, int64_t *lo, int64_t *hi, int64_t *n, int64_t *k, ft_err *err) {
  const char *p = s;
  int r = parse_dim(&p, lo);
  if (r < 0) return ft__fail(err, FT_ERR_INVALID_ARG, "shape '%.100s': M is too large", s);
  if (r == 0)
    return ft__fail(err, FT_ERR_INVALID_ARG,
                    "shape '%.100s' is not MxNxK or A..BxNxK with positive integers (e.g. 1..4096x14336x4096)", s);
  *hi = *lo;
  if (p[0] == '.' && p[1] == '.') {
    const char *b = p + 2;
    r = parse_dim(&b, hi);
    const int len = (int)(strcspn(s, "x") < 100 ? strcspn(s, "x") : 100);
    if (r < 0) return ft__fail(err, FT_ERR_INVALID_ARG, "shape '%.100s': M range '%.*s': B is too large", s, len, s);
    if (r == 0 || (*b && *b != 'x'))
      return ft__fail(err, FT_ERR_INVALID_ARG,
                      "shape '%.100s': M range '%.*s' is not A..B with decimal integers (e.g. 1..4096x14336x4096)",
                      s, len, s);
    if (*lo < 1 || *hi < 1)
      return ft__fail(err, FT_ERR_INVALID_ARG, "shape '%.100s': M range %lld..%lld: A and B must be >= 1", s,
                      (long long)*lo, (long long)*hi);
    if (*lo > *hi)
      return ft__fail(err, FT_ERR_INVALID_ARG, "shape '%.100s': M range %lld..%lld is reversed (A..B needs A <= B)",
                      s, (long long)*lo, (long long)*hi);
    p = b;
  }
  static const char *const names[2] = {"N", "K"};
  int64_t *dims[2] = {n, k};
  for (int i = 0; i < 2; i++) {
    if (*p++ != 'x')
      return ft__fail(err, FT_ERR_INVALID_ARG,
                      "shape '%.100s' is not MxNxK or A..BxNxK with positive integers (e.g. 1..4096x14336x4096)", s);
    r = parse_dim(&p, dims[i]);
    if (r < 0) return ft__fail(err, FT_ERR_INVALID_ARG, "shape '%.100s': %s is too large", s, names[i]);
    if (r == 0)
      return ft__fail(err, FT_ERR_INVALID_ARG,
                      "shape '%.100s' is not MxNxK or A..BxNxK with positive integers (e.g. 1..4096x14336x4096)", s);
  }
  if (*p) return ft__fail(err, FT_ERR_INVALID_ARG, "shape '%.100s' has trailing text '%.100s'", s, p);
  return FT_OK;
}

ft_status ft_shape_range_parse(const char *text, int64_t *m_lo, int64_t *m_hi, int64_t *n, int64_t *k, char *msg,
                               size_t msg_size) {
  ft_err err;
  ft__err_clear(&err);
  ft_status s = !text || !m_lo || !m_hi || !n || !k
                    ? ft__fail(&err, FT_ERR_INVALID_ARG, "ft_shape_range_parse: NULL argument")
                    : range_parse(text, m_lo, m_hi, n, k, &err);
  if (s != FT_OK) ft__copy_msg(msg, msg_size, err.msg);
  return s;
}

int ft_shape_range_values(int64_t lo, int64_t hi, int64_t *ms, int max) {
  if (lo < 1 || lo > hi) return 0;
  int count = 0;
  int64_t v = lo;
  for (;;) {
    if (count < max && ms) ms[count] = v;
    count++;
    if (v == hi) return count;
    /* the next power of two above v, or hi */
    int64_t next = 1;
    while (next <= v && next <= INT64_MAX / 2) next *= 2;
    v = next > v && next < hi ? next : hi;
  }
}

/* ---- building the list ---- */

typedef struct builder {
  const char *name; /* what messages call the text */
  const char *text; /* for line numbers of JSON entries */
  size_t line_pos;  /* a cursor: line line_no starts at or before line_pos */
  int line_no;
  ft_problem_list *l;
  int cap;
  ft_err *err;
} builder;

/* "line 4" (CSV) or "entry 2 (line 5)" (JSON) */
static void where(const builder *b, int line, int entry, char *out, size_t size) {
  if (b->l->csv) snprintf(out, size, "line %d", line);
  else snprintf(out, size, "entry %d (line %d)", entry, line);
}

static ft_status bad_entry(builder *b, int line, int entry, const char *why) {
  char at[64];
  where(b, line, entry, at, sizeof at);
  return ft__fail(b->err, FT_ERR_FORMAT, "%s: %s: %s", b->name, at, why);
}

static ft_status push_item(builder *b, const ft_problem *p, int line, int entry) {
  if (b->l->count == b->cap) {
    int cap = b->cap ? b->cap * 2 : 16;
    ft_problem_item *n = realloc(b->l->items, (size_t)cap * sizeof *n);
    if (!n) return ft__fail(b->err, FT_ERR_NOMEM, "out of memory reading %s", b->name);
    b->l->items = n;
    b->cap = cap;
  }
  char *epi = ft__strdup(p->epilogue);
  if (!epi) return ft__fail(b->err, FT_ERR_NOMEM, "out of memory reading %s", b->name);
  ft_problem_item *it = &b->l->items[b->l->count++];
  it->problem = *p;
  it->problem.epilogue = epi;
  it->line = line;
  it->entry = entry;
  it->duplicate_of = -1;
  return FT_OK;
}

/* Checks one entry (shape and epilogue NULL when absent) with the library's own problem check and
 * adds its items: one, or three for math "auto". */
static ft_status add_entry(builder *b, int line, int entry, const char *shape, const char *epi, const char *math) {
  if (b->l->n_entries >= FT_PROBLEM_LIST_MAX_ENTRIES)
    return ft__fail(b->err, FT_ERR_FORMAT, "%s: more than %d entries", b->name, FT_PROBLEM_LIST_MAX_ENTRIES);
  b->l->n_entries++;
  ft_err e;
  ft__err_clear(&e);
  if (!shape || !shape[0]) return bad_entry(b, line, entry, "no shape (\"MxNxK\") given");
  ft_problem p = {0, 0, 0, epi && epi[0] ? epi : "none", FT_MATH_FP32};
  static const ft_math auto_modes[] = {FT_MATH_FP32, FT_MATH_3XTF32, FT_MATH_TF32};
  int n_modes = 1, is_auto = math && !strcmp(math, "auto");
  if (is_auto) n_modes = 3;
  else if (math && math[0] && !ft_math_from_name(math, &p.math)) {
    char why[200];
    snprintf(why, sizeof why, "unknown math '%.60s' (fp32, tf32, bf16, fp16, 3xtf32, fp8, auto)", math);
    return bad_entry(b, line, entry, why);
  }
  ft_epilogue *ep = NULL;
  int64_t lo = 0, hi = 0, ms[FT_SHAPE_RANGE_MAX];
  ft_status s = range_parse(shape, &lo, &hi, &p.n, &p.k, &e);
  /* The smallest and the largest M decide the range's: check both. */
  if (s == FT_OK) p.m = lo, s = ft__check_problem(&p, &e);
  if (s == FT_OK) p.m = hi, s = ft__check_problem(&p, &e);
  const int n_ms = s == FT_OK ? ft_shape_range_values(lo, hi, ms, FT_SHAPE_RANGE_MAX) : 0;
  if (s == FT_OK) s = ft_ep_parse(p.epilogue, &ep, &e);
  if (s == FT_OK) s = ft__check_epilogue_fits(&p, ep, &e);
  if (s != FT_OK) {
    ft_ep_free(ep);
    return bad_entry(b, line, entry, e.msg);
  }
  p.epilogue = ft_ep_canonical(ep);
  for (int j = 0; j < n_ms && s == FT_OK; j++)
    for (int i = 0; i < n_modes && s == FT_OK; i++) {
      p.m = ms[j];
      if (is_auto) p.math = auto_modes[i];
      s = push_item(b, &p, line, entry);
    }
  ft_ep_free(ep);
  return s;
}

/* The line of text offset off (1-based); offsets asked for only grow. */
static int line_of(builder *b, size_t off) {
  for (; b->line_pos < off; b->line_pos++) b->line_no += b->text[b->line_pos] == '\n';
  return b->line_no;
}

/* ---- JSON ---- */

/* A string member of an entry: NULL when absent; an error for another type or an embedded NUL. */
static ft_status json_field(builder *b, const ft_json *obj, const char *key, int line, int entry, const char **out) {
  const ft_json *v = ft_json_get(obj, key);
  *out = NULL;
  if (!v) return FT_OK;
  char why[128];
  if (v->type != FT_JSON_STRING) {
    snprintf(why, sizeof why, "\"%s\" must be a string, not %s", key, ft_json_type_name(v->type));
    return bad_entry(b, line, entry, why);
  }
  if (strlen(v->str) != v->str_len) {
    snprintf(why, sizeof why, "\"%s\" contains a NUL character", key);
    return bad_entry(b, line, entry, why);
  }
  *out = v->str;
  return FT_OK;
}

static ft_status parse_json(builder *b, const char *text, size_t len) {
  ft_json_limits lim = {LIST_MAX_BYTES, 8};
  ft_json_doc *doc = NULL;
  ft_err e;
  ft__err_clear(&e);
  ft_status s = ft_json_parse(text, len, &lim, &doc, &e);
  if (s != FT_OK) return ft__fail(b->err, s, "%s: %s", b->name, e.msg);
  const ft_json *root = ft_json_root(doc);
  if (root->type != FT_JSON_ARRAY)
    s = ft__fail(b->err, FT_ERR_FORMAT, "%s: expected a JSON array of problems, found %s", b->name,
                 ft_json_type_name(root->type));
  else if (root->count == 0)
    s = ft__fail(b->err, FT_ERR_FORMAT, "%s: no problems (the array is empty)", b->name);
  for (size_t i = 0; s == FT_OK && i < root->count; i++) {
    const ft_json *o = root->items[i];
    const int line = line_of(b, o->offset), entry = (int)i;
    if (o->type != FT_JSON_OBJECT) {
      char why[96];
      snprintf(why, sizeof why, "expected an object {\"shape\": ...}, found %s", ft_json_type_name(o->type));
      s = bad_entry(b, line, entry, why);
      break;
    }
    for (size_t j = 0; j < o->count; j++) {
      const char *k = o->members[j].key;
      if (strcmp(k, "shape") && strcmp(k, "epilogue") && strcmp(k, "math")) {
        char why[200];
        snprintf(why, sizeof why, "unknown field \"%.60s\" (fields: " FIELDS ")", k);
        s = bad_entry(b, line, entry, why);
        break;
      }
    }
    const char *shape = NULL, *epi = NULL, *math = NULL;
    if (s == FT_OK) s = json_field(b, o, "shape", line, entry, &shape);
    if (s == FT_OK) s = json_field(b, o, "epilogue", line, entry, &epi);
    if (s == FT_OK) s = json_field(b, o, "math", line, entry, &math);
    if (s == FT_OK) s = add_entry(b, line, entry, shape, epi, math);
  }
  ft_json_free(doc);
  return s;
}

/* ---- CSV ---- */

enum { COL_SHAPE, COL_EPILOGUE, COL_MATH, N_COLS };
static const char *const col_names[N_COLS] = {"shape", "epilogue", "math"};

/* Splits line (modified in place) into at most max fields, RFC 4180 quotes ("a, b", "" for a
 * quote) and blanks around fields dropped. Returns the field count, or -1 with *why set. */
static int split_csv(char *line, char **fields, int max, const char **why) {
  int n = 0;
  char *p = line;
  for (;;) {
    while (*p == ' ' || *p == '\t') p++;
    char *start = p, *w = p;
    if (*p == '"') {
      start = w = ++p;
      for (;;) {
        if (!*p) return *why = "unterminated quoted field", -1;
        if (*p == '"' && p[1] == '"') *w++ = '"', p += 2;
        else if (*p == '"') break;
        else *w++ = *p++;
      }
      p++;
      while (*p == ' ' || *p == '\t') p++;
      if (*p && *p != ',') return *why = "text after a quoted field", -1;
    } else {
      while (*p && *p != ',') p++;
      w = p;
      while (w > start && (w[-1] == ' ' || w[-1] == '\t')) w--;
    }
    const int more = *p == ',';
    *w = '\0';
    if (n == max) return *why = "more fields than the header names", -1;
    fields[n++] = start;
    if (!more) return n;
    p++;
  }
}

static int is_blank(const char *s) {
  while (*s == ' ' || *s == '\t') s++;
  return !*s;
}

static ft_status csv_header(builder *b, int line_no, char *line, int *cols, int *n_cols) {
  char *f[N_COLS + 1];
  const char *why = NULL;
  int n = split_csv(line, f, N_COLS, &why);
  if (n < 0) return bad_entry(b, line_no, 0, "the header names at most the columns " FIELDS);
  int have[N_COLS] = {0, 0, 0};
  for (int i = 0; i < n; i++) {
    int c = 0;
    while (c < N_COLS && strcmp(f[i], col_names[c])) c++;
    char why2[160];
    if (c == N_COLS) {
      snprintf(why2, sizeof why2, "unknown column '%.60s' in the header (columns: " FIELDS ")", f[i]);
      return bad_entry(b, line_no, 0, why2);
    }
    if (have[c]++) {
      snprintf(why2, sizeof why2, "column '%s' named twice in the header", col_names[c]);
      return bad_entry(b, line_no, 0, why2);
    }
    cols[i] = c;
  }
  if (!have[COL_SHAPE]) return bad_entry(b, line_no, 0, "the header names no 'shape' column (columns: " FIELDS ")");
  *n_cols = n;
  return FT_OK;
}

static ft_status parse_csv(builder *b, const char *text, size_t len) {
  if (memchr(text, '\0', len)) return ft__fail(b->err, FT_ERR_FORMAT, "%s: contains a NUL byte", b->name);
  char *copy = malloc(len + 1);
  if (!copy) return ft__fail(b->err, FT_ERR_NOMEM, "out of memory reading %s", b->name);
  memcpy(copy, text, len);
  copy[len] = '\0';
  int cols[N_COLS], n_cols = 0, line_no = 0, header_seen = 0, entry = 0;
  ft_status s = FT_OK;
  for (char *line = copy, *next; s == FT_OK && line; line = next) {
    line_no++;
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    size_t n = strlen(line);
    if (n && line[n - 1] == '\r') line[n - 1] = '\0';
    if (is_blank(line)) continue;
    if (!header_seen) {
      s = csv_header(b, line_no, line, cols, &n_cols);
      header_seen = 1;
      continue;
    }
    char *f[N_COLS + 1];
    const char *why = NULL;
    int nf = split_csv(line, f, n_cols, &why);
    char text_why[160];
    if (nf >= 0 && nf != n_cols) {
      snprintf(text_why, sizeof text_why, "%d field(s), the header names %d (quote an epilogue with commas: "
               "\"max(x, 0)\")", nf, n_cols);
      why = text_why;
    }
    if (why) {
      s = bad_entry(b, line_no, entry, why);
      break;
    }
    const char *v[N_COLS] = {NULL, NULL, NULL};
    for (int i = 0; i < nf; i++) v[cols[i]] = f[i];
    s = add_entry(b, line_no, entry++, v[COL_SHAPE], v[COL_EPILOGUE], v[COL_MATH]);
  }
  if (s == FT_OK && b->l->n_entries == 0)
    s = ft__fail(b->err, FT_ERR_FORMAT, "%s: no problems (only a header line)", b->name);
  free(copy);
  return s;
}

/* ---- duplicates ---- */

static int key_cmp(const ft_problem_item *x, const ft_problem_item *y) {
  const ft_problem *a = &x->problem, *b = &y->problem;
  if (a->m != b->m) return a->m < b->m ? -1 : 1;
  if (a->n != b->n) return a->n < b->n ? -1 : 1;
  if (a->k != b->k) return a->k < b->k ? -1 : 1;
  if (a->math != b->math) return a->math < b->math ? -1 : 1;
  return strcmp(a->epilogue, b->epilogue);
}

/* By key, then by position (the pointers are into one array). */
static int item_cmp(const void *pa, const void *pb) {
  const ft_problem_item *a = *(const ft_problem_item *const *)pa, *b = *(const ft_problem_item *const *)pb;
  int c = key_cmp(a, b);
  return c ? c : (a > b) - (a < b);
}

/* Marks every item whose key an earlier item has: in key order, the first of a run is the one. */
static ft_status mark_duplicates(ft_problem_list *l, ft_err *err) {
  ft_problem_item **order = malloc((size_t)l->count * sizeof *order + 1);
  if (!order) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < l->count; i++) order[i] = &l->items[i];
  qsort(order, (size_t)l->count, sizeof *order, item_cmp);
  l->n_unique = 0;
  int first = -1;
  for (int i = 0; i < l->count; i++) {
    if (i && !key_cmp(order[i - 1], order[i])) {
      order[i]->duplicate_of = first;
    } else {
      first = (int)(order[i] - l->items);
      l->n_unique++;
    }
  }
  free(order);
  return FT_OK;
}

/* ---- entry points ---- */

void ft_problem_list_free(ft_problem_list *list) {
  if (!list) return;
  for (int i = 0; i < list->count; i++) free((char *)list->items[i].problem.epilogue);
  free(list->items);
  free(list);
}

ft_status ft_problem_list_parse(const char *text, size_t len, const char *name, ft_problem_list **out, char *msg,
                                size_t msg_size) {
  ft_err err;
  ft__err_clear(&err);
  if (out) *out = NULL;
  if (!out || (!text && len)) {
    ft__copy_msg(msg, msg_size, "ft_problem_list_parse: NULL argument");
    return FT_ERR_INVALID_ARG;
  }
  if (!name) name = "problems";
  ft_problem_list *l = calloc(1, sizeof *l);
  if (!l) {
    ft__copy_msg(msg, msg_size, "out of memory");
    return FT_ERR_NOMEM;
  }
  builder b = {name, text, 0, 1, l, 0, &err};
  size_t i = 0;
  if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) i = 3; /* a spreadsheet's byte-order mark */
  while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) i++;
  ft_status s;
  if (i == len) {
    s = ft__fail(&err, FT_ERR_FORMAT, "%s: empty: expected a JSON array of {\"shape\": \"MxNxK\", ...} or CSV "
                 "with a header line (" FIELDS ")", name);
  } else if (text[i] == '[' || text[i] == '{') {
    s = parse_json(&b, text, len);
  } else {
    l->csv = 1;
    const size_t bom = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
    s = parse_csv(&b, text + bom, len - bom);
  }
  if (s == FT_OK) s = mark_duplicates(l, &err);
  if (s != FT_OK) {
    ft__copy_msg(msg, msg_size, err.msg);
    ft_problem_list_free(l);
    return s;
  }
  *out = l;
  return FT_OK;
}

ft_status ft_problem_list_load(const char *path, ft_problem_list **out, char *msg, size_t msg_size) {
  if (out) *out = NULL;
  if (!path || !out) {
    ft__copy_msg(msg, msg_size, "ft_problem_list_load: NULL argument");
    return FT_ERR_INVALID_ARG;
  }
  ft_err err;
  ft__err_clear(&err);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the open */
  struct stat st;
  ft_status s = FT_OK;
  if (fd < 0) s = ft__fail(&err, FT_ERR_IO, "problems file %.300s: %s", path, strerror(errno));
  else if (fstat(fd, &st) != 0) s = ft__fail(&err, FT_ERR_IO, "problems file %.300s: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode)) s = ft__fail(&err, FT_ERR_IO, "problems file %.300s: not a regular file", path);
  else if ((size_t)st.st_size > LIST_MAX_BYTES)
    s = ft__fail(&err, FT_ERR_IO, "problems file %.300s: larger than %zu MiB", path, LIST_MAX_BYTES >> 20);
  char *text = NULL;
  size_t len = 0;
  if (s == FT_OK && !(text = malloc((size_t)st.st_size + 1))) s = ft__fail(&err, FT_ERR_NOMEM, "out of memory");
  while (s == FT_OK && len < (size_t)st.st_size) {
    ssize_t r = read(fd, text + len, (size_t)st.st_size - len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) s = ft__fail(&err, FT_ERR_IO, "problems file %.300s: %s", path, strerror(errno));
    if (r <= 0) break; /* a file that shrank: what was there */
    len += (size_t)r;
  }
  if (fd >= 0) close(fd);
  if (s != FT_OK) {
    free(text);
    ft__copy_msg(msg, msg_size, err.msg);
    return s;
  }
  s = ft_problem_list_parse(text, len, path, out, msg, msg_size);
  free(text);
  return s;
}
