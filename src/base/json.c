/* The strict JSON reader (see json.h for what "strict" means). Numbers: json_number.c;
 * the writer: json_write.c.
 *
 * The tree lives in an arena owned by the document, so freeing is one walk over a few blocks and
 * a malformed input of any shape cannot leak. Containers collect their children on two shared
 * scratch stacks and copy them into the arena when they close, so each array or object costs
 * one allocation whatever its size. */
#include "json.h"

#include <stdlib.h>
#include <string.h>

#include "json_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Arena */

typedef struct arena_block {
  struct arena_block *next;
  size_t used, cap;
} arena_block;

#define ARENA_ALIGN 16
#define ARENA_HEAD (((sizeof(arena_block) + ARENA_ALIGN - 1) / ARENA_ALIGN) * ARENA_ALIGN)
#define ARENA_BLOCK_MIN ((size_t)64 * 1024)

struct ft_json_doc {
  arena_block *blocks;
  const ft_json *root;
};

static void *arena_alloc(ft_json_doc *d, size_t n) {
  n = (n + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
  arena_block *b = d->blocks;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > ARENA_BLOCK_MIN ? n : ARENA_BLOCK_MIN;
    if (cap > SIZE_MAX - ARENA_HEAD) return NULL;
    b = malloc(ARENA_HEAD + cap);
    if (!b) return NULL;
    b->cap = cap;
    b->used = 0;
    b->next = d->blocks;
    d->blocks = b;
  }
  void *p = (unsigned char *)b + ARENA_HEAD + b->used;
  b->used += n;
  return p;
}

void ft_json_free(ft_json_doc *doc) {
  if (!doc) return;
  arena_block *b = doc->blocks;
  while (b) {
    arena_block *next = b->next;
    free(b);
    b = next;
  }
  free(doc);
}

const ft_json *ft_json_root(const ft_json_doc *doc) { return doc ? doc->root : NULL; }

/* ---------------------------------------------------------------------------------------------
 * UTF-8 */

/* Length of the well-formed UTF-8 sequence at s (Unicode table 3-7: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0 when s does not start one. */
static size_t utf8_encode(unsigned long cp, char *out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}
/* ---------------------------------------------------------------------------------------------
 * Reader */

typedef struct parser {
  const char *start, *p, *end;
  int depth, max_depth;
  ft_json_doc *doc;
  const ft_json **vals; /* scratch stack of array items being collected */
  size_t n_vals, cap_vals;
  ft_json_member *mems; /* scratch stack of object members being collected */
  size_t n_mems, cap_mems;
  ft_err *err;
} parser;

/* Records a syntax error at the current position (line and column counted only now: errors
 * are rare, parsing is not). */
static ft_status syntax_error(parser *ps, const char *what) {
  size_t line = 1, col = 1;
  for (const char *q = ps->start; q < ps->p && q < ps->end; q++) {
    if (*q == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  return ft__fail(ps->err, FT_ERR_FORMAT, "line %zu, column %zu: %s", line, col, what);
}

static ft_status out_of_memory(parser *ps) {
  return ft__fail(ps->err, FT_ERR_NOMEM, "out of memory while parsing JSON");
}

static void skip_ws(parser *ps) {
  while (ps->p < ps->end &&
         (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    ps->p++;
}

static ft_json *new_node(parser *ps, ft_json_type t) {
  ft_json *v = arena_alloc(ps->doc, sizeof *v);
  if (v) {
    memset(v, 0, sizeof *v);
    v->type = t;
  }
  return v;
}

static int hex4(const char *s, unsigned long *out) {
  unsigned long v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
          : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (d < 0) return 0;
    v = v * 16 + (unsigned long)d;
  }
  *out = v;
  return 1;
}

/* Decodes one \u escape (ps->p at the 'u'), joining a surrogate pair, into out. */
static ft_status decode_u_escape(parser *ps, char *out, size_t *n) {
  unsigned long cp, lo;
  if (ps->end - ps->p < 5 || !hex4(ps->p + 1, &cp)) return syntax_error(ps, "bad \\u escape");
  ps->p += 5;
  if (cp >= 0xDC00 && cp <= 0xDFFF) return syntax_error(ps, "lone low surrogate in \\u escape");
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' || !hex4(ps->p + 2, &lo) ||
        lo < 0xDC00 || lo > 0xDFFF)
      return syntax_error(ps, "high surrogate not followed by a low surrogate");
    ps->p += 6;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }
  *n = utf8_encode(cp, out);
  return FT_OK;
}

static ft_status decode_escape(parser *ps, char *out, size_t *n) {
  ps->p++; /* the backslash */
  if (ps->p >= ps->end) return syntax_error(ps, "unterminated string");
  char c = *ps->p;
  const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
  const char *hit = c ? strchr(from, c) : NULL;
  if (hit) {
    out[0] = to[hit - from];
    *n = 1;
    ps->p++;
    return FT_OK;
  }
  if (c == 'u') return decode_u_escape(ps, out, n);
  return syntax_error(ps, "invalid escape in string");
}

/* Parses a string (ps->p at the opening quote) into arena memory. Decoded text is never longer
 * than the raw text, so the raw length bounds the buffer. */
static ft_status parse_string(parser *ps, const char **s, size_t *len) {
  const char *q = ps->p + 1;
  while (q < ps->end && *q != '"') q += (*q == '\\' && ps->end - q > 1) ? 2 : 1;
  if (q >= ps->end) return syntax_error(ps, "unterminated string");
  char *buf = arena_alloc(ps->doc, (size_t)(q - ps->p));
  if (!buf) return out_of_memory(ps);
  size_t o = 0;
  ps->p++;
  while (ps->p < q) {
    unsigned char c = (unsigned char)*ps->p;
    if (c == '\\') {
      size_t n = 0;
      FT_TRY(decode_escape(ps, buf + o, &n));
      o += n;
    } else if (c < 0x20) {
      return syntax_error(ps, "control character in string (must be escaped)");
    } else {
      size_t n = ft__utf8_len((const unsigned char *)ps->p, (size_t)(ps->end - ps->p));
      if (n == 0) return syntax_error(ps, "invalid UTF-8 in string");
      memcpy(buf + o, ps->p, n);
      o += n;
      ps->p += n;
    }
  }
  ps->p++; /* closing quote */
  buf[o] = '\0';
  *s = buf;
  *len = o;
  return FT_OK;
}

/* Exact int64 value of an integral number's text, 0 when out of range. */
static int integer_value(const char *s, size_t len, int64_t *out) {
  int neg = s[0] == '-';
  uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
  for (size_t i = (size_t)neg; i < len; i++) {
    uint64_t d = (uint64_t)(s[i] - '0');
    if (v > (limit - d) / 10) return 0;
    v = v * 10 + d;
  }
  *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  return 1;
}

static ft_status parse_number(parser *ps, const ft_json **out) {
  int integral;
  size_t n = ft__json_scan_number(ps->p, (size_t)(ps->end - ps->p), &integral);
  if (n == 0) return syntax_error(ps, "invalid number");
  ft_json *v = new_node(ps, FT_JSON_NUMBER);
  if (!v) return out_of_memory(ps);
  if (!ft_json_parse_double(ps->p, n, &v->number))
    return syntax_error(ps, "number out of range of a double");
  v->is_integer = integral && integer_value(ps->p, n, &v->integer);
  ps->p += n;
  *out = v;
  return FT_OK;
}

static ft_status parse_literal(parser *ps, const ft_json **out) {
  static const struct { const char *text; ft_json_type t; int b; } lits[] = {
      {"true", FT_JSON_BOOL, 1}, {"false", FT_JSON_BOOL, 0}, {"null", FT_JSON_NULL, 0}};
  for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++) {
    size_t n = strlen(lits[i].text);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, lits[i].text, n) == 0) {
      ft_json *v = new_node(ps, lits[i].t);
      if (!v) return out_of_memory(ps);
      v->boolean = lits[i].b;
      ps->p += n;
      *out = v;
      return FT_OK;
    }
  }
  return syntax_error(ps, "unexpected character");
}

static ft_status parse_value(parser *ps, const ft_json **out);

static ft_status push_val(parser *ps, const ft_json *v) {
  if (ps->n_vals == ps->cap_vals) {
    size_t cap = ps->cap_vals ? ps->cap_vals * 2 : 64;
    const ft_json **nv = realloc(ps->vals, cap * sizeof *nv);
    if (!nv) return out_of_memory(ps);
    ps->vals = nv;
    ps->cap_vals = cap;
  }
  ps->vals[ps->n_vals++] = v;
  return FT_OK;
}

static ft_status push_member(parser *ps, const char *key, size_t key_len, const ft_json *v) {
  if (ps->n_mems == ps->cap_mems) {
    size_t cap = ps->cap_mems ? ps->cap_mems * 2 : 64;
    ft_json_member *nm = realloc(ps->mems, cap * sizeof *nm);
    if (!nm) return out_of_memory(ps);
    ps->mems = nm;
    ps->cap_mems = cap;
  }
  ps->mems[ps->n_mems++] = (ft_json_member){key, key_len, v};
  return FT_OK;
}

static ft_status enter(parser *ps) {
  if (++ps->depth > ps->max_depth) {
    char what[64];
    snprintf(what, sizeof what, "nesting deeper than %d levels", ps->max_depth);
    return syntax_error(ps, what);
  }
  return FT_OK;
}

static ft_status parse_array(parser *ps, const ft_json **out) {
  FT_TRY(enter(ps));
  size_t base = ps->n_vals;
  ps->p++; /* '[' */
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == ']') {
    ps->p++;
  } else {
    for (;;) {
      const ft_json *item;
      FT_TRY(parse_value(ps, &item));
      FT_TRY(push_val(ps, item));
      skip_ws(ps);
      if (ps->p < ps->end && *ps->p == ',') {
        ps->p++;
        continue;
      }
      if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        break;
      }
      return syntax_error(ps, "expected ',' or ']'");
    }
  }
  ft_json *v = new_node(ps, FT_JSON_ARRAY);
  size_t n = ps->n_vals - base;
  const ft_json **items = n ? arena_alloc(ps->doc, n * sizeof *items) : NULL;
  if (!v || (n && !items)) return out_of_memory(ps);
  if (n) memcpy(items, ps->vals + base, n * sizeof *items);
  v->items = items;
  v->count = n;
  ps->n_vals = base;
  ps->depth--;
  *out = v;
  return FT_OK;
}

static int key_cmp(const char *a, size_t al, const char *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c ? c : (al < bl ? -1 : al > bl);
}

static int member_cmp(const void *a, const void *b) {
  const ft_json_member *x = a, *y = b;
  return key_cmp(x->key, x->key_len, y->key, y->key_len);
}

/* Copies the members collected since base into the arena, sorted, refusing duplicates. */
static ft_status close_object(parser *ps, size_t base, const char *obj_start, const ft_json **out) {
  ft_json *v = new_node(ps, FT_JSON_OBJECT);
  size_t n = ps->n_mems - base;
  ft_json_member *m = n ? arena_alloc(ps->doc, n * sizeof *m) : NULL;
  if (!v || (n && !m)) return out_of_memory(ps);
  if (n) {
    memcpy(m, ps->mems + base, n * sizeof *m);
    qsort(m, n, sizeof *m, member_cmp);
  }
  for (size_t i = 1; i < n; i++) {
    if (member_cmp(&m[i - 1], &m[i]) == 0) {
      char what[160];
      snprintf(what, sizeof what, "duplicate key \"%.100s\" in this object", m[i].key);
      ps->p = obj_start;
      return syntax_error(ps, what);
    }
  }
  v->members = m;
  v->count = n;
  ps->n_mems = base;
  ps->depth--;
  *out = v;
  return FT_OK;
}

static ft_status parse_member(parser *ps) {
  skip_ws(ps);
  if (ps->p >= ps->end || *ps->p != '"') return syntax_error(ps, "expected a string key");
  const char *key;
  size_t key_len;
  FT_TRY(parse_string(ps, &key, &key_len));
  skip_ws(ps);
  if (ps->p >= ps->end || *ps->p != ':') return syntax_error(ps, "expected ':'");
  ps->p++;
  const ft_json *val;
  FT_TRY(parse_value(ps, &val));
  return push_member(ps, key, key_len, val);
}

static ft_status parse_object(parser *ps, const ft_json **out) {
  FT_TRY(enter(ps));
  const char *obj_start = ps->p;
  size_t base = ps->n_mems;
  ps->p++; /* '{' */
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == '}') {
    ps->p++;
    return close_object(ps, base, obj_start, out);
  }
  for (;;) {
    FT_TRY(parse_member(ps));
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == '}') {
      ps->p++;
      return close_object(ps, base, obj_start, out);
    }
    return syntax_error(ps, "expected ',' or '}'");
  }
}

static ft_status parse_value_at(parser *ps, const ft_json **out);

static ft_status parse_value(parser *ps, const ft_json **out) {
  skip_ws(ps);
  const size_t offset = (size_t)(ps->p - ps->start);
  ft_status s = parse_value_at(ps, out);
  if (s == FT_OK) ((ft_json *)*out)->offset = offset; /* every node is the arena's, writable */
  return s;
}

static ft_status parse_value_at(parser *ps, const ft_json **out) {
  if (ps->p >= ps->end) return syntax_error(ps, "unexpected end of input");
  char c = *ps->p;
  if (c == '{') return parse_object(ps, out);
  if (c == '[') return parse_array(ps, out);
  if (c == '-' || (c >= '0' && c <= '9')) return parse_number(ps, out);
  if (c == '"') {
    ft_json *v = new_node(ps, FT_JSON_STRING);
    if (!v) return out_of_memory(ps);
    FT_TRY(parse_string(ps, &v->str, &v->str_len));
    *out = v;
    return FT_OK;
  }
  return parse_literal(ps, out);
}

ft_status ft_json_parse(const char *text, size_t len, const ft_json_limits *lim, ft_json_doc **doc,
                        ft_err *err) {
  static const ft_json_limits defaults = FT_JSON_LIMITS_DEFAULT;
  if (!doc || (!text && len)) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_json_parse: NULL argument");
  *doc = NULL;
  if (!lim) lim = &defaults;
  if (len > lim->max_bytes)
    return ft__fail(err, FT_ERR_FORMAT, "JSON text of %zu bytes exceeds the limit of %zu", len,
                    lim->max_bytes);
  parser ps = {.start = text, .p = text, .end = text + len, .max_depth = lim->max_depth, .err = err};
  ps.doc = calloc(1, sizeof *ps.doc);
  if (!ps.doc) return ft__fail(err, FT_ERR_NOMEM, "out of memory while parsing JSON");
  const ft_json *root = NULL;
  ft_status s = len ? parse_value(&ps, &root) : syntax_error(&ps, "empty input");
  if (s == FT_OK) {
    skip_ws(&ps);
    if (ps.p != ps.end) s = syntax_error(&ps, "unexpected text after the JSON value");
  }
  free(ps.vals);
  free(ps.mems);
  if (s != FT_OK) {
    ft_json_free(ps.doc);
    return s;
  }
  ps.doc->root = root;
  *doc = ps.doc;
  return FT_OK;
}

const ft_json *ft_json_get(const ft_json *obj, const char *key) {
  if (!obj || obj->type != FT_JSON_OBJECT || !key) return NULL;
  size_t kl = strlen(key), lo = 0, hi = obj->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = key_cmp(obj->members[mid].key, obj->members[mid].key_len, key, kl);
    if (c == 0) return obj->members[mid].value;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

const char *ft_json_type_name(ft_json_type t) {
  switch (t) {
    case FT_JSON_NULL: return "null";
    case FT_JSON_BOOL: return "a boolean";
    case FT_JSON_NUMBER: return "a number";
    case FT_JSON_STRING: return "a string";
    case FT_JSON_ARRAY: return "an array";
    case FT_JSON_OBJECT: return "an object";
  }
  return "an unknown type";
}
