/* A strict JSON reader (DOM) and small writer helpers. GPU-free, no global state.
 *
 * The reader accepts RFC 8259 JSON and nothing else: no comments, no trailing commas, no BOM, no
 * NaN/Infinity, no duplicate object keys, no invalid UTF-8 or lone surrogates, no trailing text.
 * Numbers that overflow a double are rejected; integers are recognized exactly (int64 range).
 * Limits (bytes, nesting depth) bound the work an untrusted file can cause.
 *
 * The writer helpers produce text the reader accepts back, byte-for-byte stable: used by the
 * export and by the CLI's --json output. */
#ifndef FT_JSON_H
#define FT_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

typedef enum ft_json_type {
  FT_JSON_NULL,
  FT_JSON_BOOL,
  FT_JSON_NUMBER,
  FT_JSON_STRING,
  FT_JSON_ARRAY,
  FT_JSON_OBJECT
} ft_json_type;

typedef struct ft_json ft_json;

typedef struct ft_json_member {
  const char *key; /* decoded, NUL-terminated (may also contain NUL: see key_len) */
  size_t key_len;
  const ft_json *value;
} ft_json_member;

/* A parsed value. Everything it points to is owned by its ft_json_doc. */
struct ft_json {
  ft_json_type type;
  int boolean;      /* FT_JSON_BOOL */
  double number;    /* FT_JSON_NUMBER: the value */
  int is_integer;   /* FT_JSON_NUMBER written without fraction or exponent and within int64 */
  int64_t integer;  /* ...its exact value when is_integer */
  const char *str;  /* FT_JSON_STRING: decoded UTF-8, NUL-terminated */
  size_t str_len;   /* bytes, without the terminator (the text may contain "\u0000") */
  const ft_json *const *items;   /* FT_JSON_ARRAY, in document order */
  const ft_json_member *members; /* FT_JSON_OBJECT, sorted by key (bytewise) */
  size_t count;                  /* items or members */
  size_t offset;                 /* byte offset of the value's first character in the text, so a
                                  * reader can say on which line an item it refuses stands */
};

typedef struct ft_json_limits {
  size_t max_bytes; /* longest accepted text */
  int max_depth;    /* deepest nesting of arrays/objects; the root container is depth 1 */
} ft_json_limits;

#define FT_JSON_LIMITS_DEFAULT {(size_t)1 << 30, 64}

typedef struct ft_json_doc ft_json_doc;

/* Parses text[0..len). lim NULL means FT_JSON_LIMITS_DEFAULT. On success *doc owns the tree
 * (free with ft_json_free). On failure *doc is NULL and err says where ("line 3, column 14:
 * expected ',' or '}'"). Returns FT_OK, FT_ERR_FORMAT, FT_ERR_NOMEM, FT_ERR_INVALID_ARG. */
ft_status ft_json_parse(const char *text, size_t len, const ft_json_limits *lim, ft_json_doc **doc,
                        ft_err *err);
const ft_json *ft_json_root(const ft_json_doc *doc);
void ft_json_free(ft_json_doc *doc); /* NULL is a no-op */

/* The member named key of obj; NULL when obj is not an object or has no such key. */
const ft_json *ft_json_get(const ft_json *obj, const char *key);

/* "null", "a boolean", "a number", "a string", "an array", "an object". */
const char *ft_json_type_name(ft_json_type t);

/* Writes s (NUL-terminated) as a quoted JSON string. Control characters, '"' and '\\' are
 * escaped; valid UTF-8 is copied; each byte of invalid UTF-8 becomes U+FFFD (written as UTF-8)
 * so the output is always valid JSON. s NULL writes null. */
void ft_json_write_string(FILE *f, const char *s);
void ft_json_write_string_n(FILE *f, const char *s, size_t len);

/* Formats v with the fewest significant digits (15..17) that read back to the same double,
 * with '.' whatever the C locale; non-finite values give "null". Returns the length. */
size_t ft_json_format_double(double v, char buf[32]);
void ft_json_write_double(FILE *f, double v);

/* Locale-independent strtod of exactly text[0..len) (a JSON number). Returns 0 when the text is
 * not entirely a number or overflows a double, else 1. */
int ft_json_parse_double(const char *text, size_t len, double *out);

#endif
