/* Import, reading: an export's records checked field by field against a field table (types,
 * lengths, ranges, uuid and time syntax, JSON text) and stored in memory. Nothing is written
 * to the database here. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "db_import.h"

ft_status ft__imp_bad(ft_err *err, const char *where, const char *fmt, const char *detail) {
  char what[512];
  snprintf(what, sizeof what, fmt, detail);
  return ft__fail(err, FT_ERR_FORMAT, "import: %s: %s", where, what);
}

static int is_uuid(const char *s, size_t n) {
  if (n != 36) return 0;
  for (size_t i = 0; i < n; i++) {
    int dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  }
  return 1;
}

static int digits(const char *s, int n) {
  int v = 0;
  for (int i = 0; i < n; i++) v = v * 10 + (s[i] - '0');
  return v;
}

/* Whether "YYYY-MM-DDTHH:MM:SS" names a real UTC time: month, day of that month (leap years
 * included), hour, minute and second in range. No leap second: SQLite's clock never writes one. */
static int time_in_range(const char *s) {
  static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1]) return 0;
  if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))) return 0;
  return digits(s + 11, 2) < 24 && digits(s + 14, 2) < 60 && digits(s + 17, 2) < 60;
}

static int is_timestamp(const char *s, size_t n) {
  static const char pat[] = "dddd-dd-ddTdd:dd:dd"; /* then optional .d+ then Z */
  size_t p = sizeof pat - 1;
  if (n < p + 1 || s[n - 1] != 'Z') return 0;
  for (size_t i = 0; i < p; i++)
    if (pat[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pat[i]) return 0;
  if (n == p + 1) return time_in_range(s);
  if (s[p] != '.' || n < p + 3) return 0;
  for (size_t i = p + 1; i < n - 1; i++)
    if (!(s[i] >= '0' && s[i] <= '9')) return 0;
  return time_in_range(s);
}

static ft_status read_fields(const ft_json *obj, int version, const char *where, const ft_imp_field *fs,
                             size_t nf, void *rec, ft_err *err);

static ft_status read_string(const ft_json *v, const char *path, const ft_imp_field *fd,
                             void *slot, ft_err *err) {
  int nullable =
      fd->kind == FT_IK_STR_NULL || fd->kind == FT_IK_UUID_NULL || fd->kind == FT_IK_TIME_NULL;
  if (v->type == FT_JSON_NULL && nullable) {
    *(const char **)slot = NULL;
    return FT_OK;
  }
  if (v->type != FT_JSON_STRING)
    return ft__imp_bad(err, path,
                       nullable ? "expected a string or null, found %s"
                                : "expected a string, found %s",
                       ft_json_type_name(v->type));
  if (strlen(v->str) != v->str_len) return ft__imp_bad(err, path, "contains a NUL character%s", "");
  if (fd->kind == FT_IK_UUID || fd->kind == FT_IK_UUID_NULL) {
    if (!is_uuid(v->str, v->str_len))
      return ft__imp_bad(err, path, "not a lowercase uuid: \"%.60s\"", v->str);
  } else if (fd->kind == FT_IK_TIME || fd->kind == FT_IK_TIME_NULL) {
    if (!is_timestamp(v->str, v->str_len))
      return ft__imp_bad(err, path,
                         "not an ISO-8601 UTC time (YYYY-MM-DDTHH:MM:SS.fffZ): \"%.60s\"", v->str);
  } else if ((int64_t)v->str_len < fd->lo || (int64_t)v->str_len > fd->hi) {
    char what[96];
    snprintf(what, sizeof what, "length %zu outside %" PRId64 "..%" PRId64 " bytes", v->str_len,
             fd->lo, fd->hi);
    return ft__imp_bad(err, path, "%s", what);
  }
  if (fd->kind == FT_IK_JSON) {
    ft_json_doc *doc = NULL;
    ft_err jerr;
    ft_status s = ft_json_parse(v->str, v->str_len, NULL, &doc, &jerr);
    ft_json_free(doc);
    if (s != FT_OK) return ft__imp_bad(err, path, "not valid JSON text: %.400s", jerr.msg);
  }
  *(const char **)slot = v->str;
  return FT_OK;
}

static ft_status read_number(const ft_json *v, const char *path, const ft_imp_field *fd,
                             void *slot, ft_err *err) {
  if (fd->kind == FT_IK_INT) {
    if (v->type != FT_JSON_NUMBER)
      return ft__imp_bad(err, path, "expected an integer, found %s", ft_json_type_name(v->type));
    if (!v->is_integer || v->integer < fd->lo || v->integer > fd->hi) {
      char what[96];
      snprintf(what, sizeof what, "expected an integer in %" PRId64 "..%" PRId64, fd->lo, fd->hi);
      return ft__imp_bad(err, path, "%s", what);
    }
    *(int64_t *)slot = v->integer;
    return FT_OK;
  }
  const int nullable = fd->kind == FT_IK_NUM_NULL || fd->kind == FT_IK_POS_NULL_V2;
  if (v->type == FT_JSON_NULL && nullable) {
    *(double *)slot = NAN;
    return FT_OK;
  }
  if (v->type != FT_JSON_NUMBER)
    return ft__imp_bad(err, path, nullable ? "expected a number or null, found %s" : "expected a number, found %s",
                       ft_json_type_name(v->type));
  if (fd->kind == FT_IK_NUM_NULL && v->number < 0)
    return ft__imp_bad(err, path, "expected a non-negative number or null%s", "");
  if (fd->kind == FT_IK_POS_NULL_V2 && !(v->number > 0 && v->number < 1e300)) /* 1e308: the best's "unranked" */
    return ft__imp_bad(err, path, "expected a positive number below 1e300 or null%s", "");
  *(double *)slot = v->number;
  return FT_OK;
}

static ft_status read_field(const ft_json *v, int version, const char *path, const ft_imp_field *fd,
                            void *rec, ft_err *err) {
  void *slot = (char *)rec + fd->off;
  switch (fd->kind) {
    case FT_IK_INT:
    case FT_IK_NUM:
    case FT_IK_NUM_NULL:
    case FT_IK_POS_NULL_V2: return read_number(v, path, fd, slot, err);
    case FT_IK_KEY: return read_fields(v, version, path, fd->sub, fd->n_sub, slot, err);
    default: return read_string(v, path, fd, slot, err);
  }
}

/* Reads every field of fs from obj into rec; a missing or unknown field is an error (an export
 * of this version has exactly these), except one added after the export's version, read as null. */
static ft_status read_fields(const ft_json *obj, int version, const char *where, const ft_imp_field *fs,
                             size_t nf, void *rec, ft_err *err) {
  if (obj->type != FT_JSON_OBJECT)
    return ft__imp_bad(err, where, "expected an object, found %s", ft_json_type_name(obj->type));
  for (size_t i = 0; i < obj->count; i++) {
    size_t j = 0;
    while (j < nf && strcmp(fs[j].key, obj->members[i].key) != 0) j++;
    if (j == nf) return ft__imp_bad(err, where, "unknown field \"%.80s\"", obj->members[i].key);
  }
  for (size_t j = 0; j < nf; j++) {
    char path[256];
    snprintf(path, sizeof path, "%s.%s", where, fs[j].key);
    const ft_json *v = ft_json_get(obj, fs[j].key);
    if (!v && fs[j].kind == FT_IK_POS_NULL_V2 && version < 2) {
      *(double *)((char *)rec + fs[j].off) = NAN;
      continue;
    }
    if (!v) return ft__imp_bad(err, where, "missing field \"%s\"", fs[j].key);
    FT_TRY(read_field(v, version, path, &fs[j], rec, err));
  }
  return FT_OK;
}

ft_status ft__imp_read_array(const ft_json *root, int version, const char *name, int optional,
                             const ft_imp_field *fs, size_t nf, size_t rec_size, void **recs,
                             size_t *n, ft_err *err) {
  const ft_json *arr = ft_json_get(root, name);
  *recs = NULL;
  *n = 0;
  if (!arr && optional) return FT_OK;
  if (!arr) return ft__imp_bad(err, "top level", "missing field \"%s\"", name);
  if (arr->type != FT_JSON_ARRAY)
    return ft__imp_bad(err, name, "expected an array, found %s", ft_json_type_name(arr->type));
  if (arr->count == 0) return FT_OK;
  *recs = calloc(arr->count, rec_size);
  if (!*recs) return ft__fail(err, FT_ERR_NOMEM, "import: out of memory reading %s", name);
  *n = arr->count;
  for (size_t i = 0; i < arr->count; i++) {
    char where[64];
    snprintf(where, sizeof where, "%s[%zu]", name, i);
    ft_status s = read_fields(arr->items[i], version, where, fs, nf, (char *)*recs + i * rec_size, err);
    if (s != FT_OK) {
      free(*recs);
      *recs = NULL;
      *n = 0;
      return s;
    }
  }
  return FT_OK;
}
