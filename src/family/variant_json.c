/* Variant names and their JSON form, from each family's key list (src/family/family.h). GPU-free. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family.h"
#include "json.h"
#include "space.h"

static const char *kind_name(ft_variant_kind kind) { return kind == FT_VK_GEMM ? "gemm" : "epilogue"; }

int ft_variant_name(const ft_variant *v, char *buf, size_t len) {
  const ft_family *f = ft_family_of(v);
  if (!f) return snprintf(buf, len, "unknown_variant");
  return f->variant_name(v, buf, len);
}

static int field(const ft_variant *v, const ft_json_key *k) { return *(const int *)((const char *)v + k->offset); }

int ft_variant_json(const ft_variant *v, char *buf, size_t len) {
  const ft_family *f = ft_family_of(v);
  if (!f) return snprintf(buf, len, "{}");
  size_t at = 0;
  int total = snprintf(buf, len, "{\"kind\":\"%s\"", kind_name(v->kind));
  for (int pass = 0; pass < 2; pass++)
    for (const ft_json_key *k = pass ? f->opt_keys : f->keys; k->name; k++) {
      if (pass && field(v, k) == 0) continue;
      at = total > 0 && (size_t)total < len ? (size_t)total : len;
      total += snprintf(buf + at, len - at, ",\"%s\":%d", k->name, field(v, k));
    }
  at = total > 0 && (size_t)total < len ? (size_t)total : len;
  total += snprintf(buf + at, len - at, "}");
  return total;
}

#define JSON_MAX_INPUT 1024
#define JSON_MAX_FIELDS 24 /* tc_pass's: a GEMM's keys and a pass's */

/* One member of a variant's flat object: its key and an integer or a string value. */
typedef struct json_field {
  const char *key;
  int is_string;
  const char *str;
  long num;
} json_field;

/* A string with no NUL inside it (json.c decodes "\u0000"). */
static int plain(const char *s, size_t len) { return strlen(s) == len; }

/* The members of a flat object (src/base/json.c reads it), each a non-negative integer of at most
 * 6 digits or a string. */
static ft_status read_fields(const ft_json *root, json_field *f, int *nf, ft_err *err) {
  *nf = 0;
  if (root->type != FT_JSON_OBJECT) return ft__fail(err, FT_ERR_FORMAT, "variant JSON: expected '{'");
  if (root->count == 0) return ft__fail(err, FT_ERR_FORMAT, "variant JSON: empty object");
  if (root->count > JSON_MAX_FIELDS) return ft__fail(err, FT_ERR_FORMAT, "variant JSON: too many keys");
  for (size_t i = 0; i < root->count; i++) {
    const ft_json_member *m = &root->members[i];
    const ft_json *val = m->value;
    json_field *fi = &f[(*nf)++];
    memset(fi, 0, sizeof *fi);
    fi->key = m->key;
    if (!plain(m->key, m->key_len)) return ft__fail(err, FT_ERR_FORMAT, "variant JSON: bad key");
    if (val->type == FT_JSON_STRING) {
      if (!plain(val->str, val->str_len))
        return ft__fail(err, FT_ERR_FORMAT, "variant JSON: unexpected character in string");
      fi->is_string = 1;
      fi->str = val->str;
    } else if (val->type != FT_JSON_NUMBER) {
      return ft__fail(err, FT_ERR_FORMAT, "variant JSON: expected a number or string");
    } else if (!val->is_integer) {
      return ft__fail(err, FT_ERR_FORMAT, "variant JSON: expected an integer");
    } else if (val->integer < 0 || val->integer > 999999) {
      return ft__fail(err, FT_ERR_FORMAT, "variant JSON: number out of range");
    } else {
      fi->num = (long)val->integer;
    }
  }
  return FT_OK;
}

static size_t key_count(const ft_json_key *k) {
  size_t n = 0;
  while (k[n].name) n++;
  return n;
}

static const ft_json_key *key_named(const ft_json_key *k, const char *name) {
  for (; k->name; k++)
    if (strcmp(k->name, name) == 0) return k;
  return NULL;
}

/* Moves the integer fields named by the family's keys into v; every key required, no other
 * key allowed, except its optional keys, read when present. */
static ft_status assign_fields(const json_field *f, int nf, const ft_family *fam, ft_variant *v, ft_err *err) {
  size_t present = 0;
  for (int i = 0; i < nf; i++) present += key_named(fam->opt_keys, f[i].key) != NULL;
  const size_t nkeys = key_count(fam->keys);
  if ((size_t)nf != nkeys + 1 + present)
    return ft__fail(err, FT_ERR_FORMAT, "variant JSON: expected %zu keys, found %d", nkeys + 1 + present, nf);
  for (int i = 0; i < nf; i++) {
    if (strcmp(f[i].key, "kind") == 0) continue;
    const ft_json_key *key = key_named(fam->keys, f[i].key);
    if (!key) key = key_named(fam->opt_keys, f[i].key);
    if (!key) return ft__fail(err, FT_ERR_FORMAT, "variant JSON: unknown key \"%s\"", f[i].key);
    if (f[i].is_string)
      return ft__fail(err, FT_ERR_FORMAT, "variant JSON: \"%s\" must be an integer", f[i].key);
    *(int *)((char *)v + key->offset) = (int)f[i].num;
  }
  return FT_OK;
}

static ft_status variant_of(const json_field *f, int nf, ft_variant *out, ft_err *err);

ft_status ft_variant_from_json(const char *json, ft_variant *out, ft_err *err) {
  if (!json || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "variant JSON: NULL argument");
  if (ft__bounded_len(json, JSON_MAX_INPUT + 1) > JSON_MAX_INPUT)
    return ft__fail(err, FT_ERR_FORMAT, "variant JSON: longer than %d bytes", JSON_MAX_INPUT);
  const ft_json_limits lim = {JSON_MAX_INPUT, 1}; /* a flat object */
  ft_json_doc *doc = NULL;
  if (ft_json_parse(json, strlen(json), &lim, &doc, err) != FT_OK) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return ft__fail(err, FT_ERR_FORMAT, "variant JSON: %s", msg);
  }
  json_field f[JSON_MAX_FIELDS];
  int nf;
  ft_status st = read_fields(ft_json_root(doc), f, &nf, err);
  if (st == FT_OK) st = variant_of(f, nf, out, err);
  ft_json_free(doc);
  return st;
}

/* The variant the fields describe: its kind and family id (key "layout") choose the family, whose keys the rest must be. */
static ft_status variant_of(const json_field *f, int nf, ft_variant *out, ft_err *err) {
  const json_field *kind = NULL;
  int family = 0; /* the key "layout" */
  for (int i = 0; i < nf; i++) {
    if (strcmp(f[i].key, "kind") == 0) kind = &f[i];
    if (strcmp(f[i].key, "layout") == 0 && !f[i].is_string) family = (int)f[i].num;
  }
  if (!kind || !kind->is_string) return ft__fail(err, FT_ERR_FORMAT, "variant JSON: missing string \"kind\"");
  ft_variant v;
  memset(&v, 0, sizeof v);
  if (strcmp(kind->str, kind_name(FT_VK_GEMM)) == 0)
    v.kind = FT_VK_GEMM;
  else if (strcmp(kind->str, kind_name(FT_VK_EPILOGUE)) == 0)
    v.kind = FT_VK_EPILOGUE;
  else
    return ft__fail(err, FT_ERR_FORMAT, "variant JSON: unknown kind \"%s\"", kind->str);
  char why[160];
  const ft_family *fam = ft_family_find(v.kind, family);
  if (!fam) {
    ft_family_missing(v.kind, family, why, sizeof why);
    return ft__fail(err, FT_ERR_FORMAT, "variant JSON: %s", why);
  }
  FT_TRY(assign_fields(f, nf, fam, &v, err));
  if (!ft_variant_valid(&v, why, sizeof why)) return ft__fail(err, FT_ERR_FORMAT, "variant JSON: %s", why);
  *out = v;
  return FT_OK;
}
