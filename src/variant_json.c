/* Variant names and their JSON form, from each family's key list (src/family.h). GPU-free. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family.h"
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
#define JSON_MAX_FIELDS 16

typedef struct json_field {
  char key[16];
  int is_string;
  char str[16];
  long num;
} json_field;

typedef struct json_cursor {
  const char *p;
  ft_err *err;
} json_cursor;

static void skip_ws(json_cursor *c) {
  while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r') c->p++;
}

/* A short string of [a-z_] only: the only strings a variant has. */
static ft_status parse_word(json_cursor *c, char *out, size_t cap) {
  if (*c->p != '"') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected a string");
  c->p++;
  size_t n = 0;
  while ((*c->p >= 'a' && *c->p <= 'z') || *c->p == '_') {
    if (n + 1 >= cap) return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: string too long");
    out[n++] = *c->p++;
  }
  out[n] = '\0';
  if (*c->p != '"') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: unexpected character in string");
  c->p++;
  return FT_OK;
}

/* A non-negative integer of at most 6 digits, no sign, no leading zeros, no fraction. */
static ft_status parse_int(json_cursor *c, long *out) {
  const char *s = c->p;
  long v = 0;
  int digits = 0;
  while (*c->p >= '0' && *c->p <= '9') {
    if (++digits > 6) return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: number out of range");
    v = v * 10 + (*c->p++ - '0');
  }
  if (digits == 0) return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected a number or string");
  if (digits > 1 && *s == '0') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: leading zero");
  if (*c->p == '.' || *c->p == 'e' || *c->p == 'E')
    return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected an integer");
  *out = v;
  return FT_OK;
}

static ft_status parse_field(json_cursor *c, json_field *f) {
  memset(f, 0, sizeof *f);
  FT_TRY(parse_word(c, f->key, sizeof f->key));
  skip_ws(c);
  if (*c->p != ':') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected ':' after \"%s\"", f->key);
  c->p++;
  skip_ws(c);
  if (*c->p == '"') {
    f->is_string = 1;
    return parse_word(c, f->str, sizeof f->str);
  }
  return parse_int(c, &f->num);
}

/* Splits a flat object into fields; nothing but whitespace may follow it. */
static ft_status parse_object(json_cursor *c, json_field *fields, int *nfields) {
  *nfields = 0;
  skip_ws(c);
  if (*c->p != '{') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected '{'");
  c->p++;
  skip_ws(c);
  if (*c->p == '}') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: empty object");
  for (;;) {
    skip_ws(c);
    if (*nfields == JSON_MAX_FIELDS) return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: too many keys");
    FT_TRY(parse_field(c, &fields[*nfields]));
    for (int i = 0; i < *nfields; i++)
      if (strcmp(fields[i].key, fields[*nfields].key) == 0)
        return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: duplicate key \"%s\"", fields[i].key);
    (*nfields)++;
    skip_ws(c);
    if (*c->p == ',') {
      c->p++;
      continue;
    }
    if (*c->p != '}') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected ',' or '}'");
    c->p++;
    break;
  }
  skip_ws(c);
  if (*c->p != '\0') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: trailing characters");
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

ft_status ft_variant_from_json(const char *json, ft_variant *out, ft_err *err) {
  if (!json || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "variant JSON: NULL argument");
  if (ft__bounded_len(json, JSON_MAX_INPUT + 1) > JSON_MAX_INPUT)
    return ft__fail(err, FT_ERR_FORMAT, "variant JSON: longer than %d bytes", JSON_MAX_INPUT);
  json_field f[JSON_MAX_FIELDS];
  int nf;
  json_cursor c = {json, err};
  FT_TRY(parse_object(&c, f, &nf));
  const json_field *kind = NULL;
  int layout = 0;
  for (int i = 0; i < nf; i++) {
    if (strcmp(f[i].key, "kind") == 0) kind = &f[i];
    if (strcmp(f[i].key, "layout") == 0 && !f[i].is_string) layout = (int)f[i].num;
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
  const ft_family *fam = ft_family_find(v.kind, layout);
  if (!fam) {
    ft_family_missing(v.kind, layout, why, sizeof why);
    return ft__fail(err, FT_ERR_FORMAT, "variant JSON: %s", why);
  }
  FT_TRY(assign_fields(f, nf, fam, &v, err));
  if (!ft_variant_valid(&v, why, sizeof why)) return ft__fail(err, FT_ERR_FORMAT, "variant JSON: %s", why);
  *out = v;
  return FT_OK;
}
