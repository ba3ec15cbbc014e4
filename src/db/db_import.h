/* Shared by db_import_read.c (reading and checking an export's records against a field table)
 * and db_import.c (the tables, references, merge). The records and field tables are expanded
 * from the column lists of db_columns.h. */
#ifndef FT_DB_IMPORT_H
#define FT_DB_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "db_columns.h"
#include "json.h"

/* How a field is read and checked; FT_IK_kind for the kind of a db_columns.h entry. */
typedef enum ft_imp_kind {
  FT_IK_STR,       /* string, length within [lo, hi] bytes */
  FT_IK_STR_NULL,  /* the same, or null */
  FT_IK_JSON,      /* string holding a JSON document (config, options) */
  FT_IK_B64,       /* string holding base64 (a cubin), decoded after reading */
  FT_IK_UUID,      /* lowercase 8-4-4-4-12 hex */
  FT_IK_UUID_NULL, /* the same, or null */
  FT_IK_TIME,      /* ISO-8601 UTC, "YYYY-MM-DDTHH:MM:SS[.fff]Z" */
  FT_IK_TIME_NULL,
  FT_IK_INT,      /* integer within [lo, hi] */
  FT_IK_NUM,      /* finite number */
  FT_IK_NUM_NULL, /* non-negative number, or null (stored NAN) */
  FT_IK_POS_NULL_V2, /* positive number, or null; added in export version 2, so absent from a
                      * version-1 export (read as null) */
  FT_IK_KEY       /* a problem key object, read with sub */
} ft_imp_kind;

typedef struct ft_imp_field {
  const char *key;
  ft_imp_kind kind;
  size_t off; /* of the member in the record */
  int64_t lo, hi;
  int param; /* the column's parameter in import's insert; 0: bound by hand (a reference) */
  const struct ft_imp_field *sub; /* FT_IK_KEY: the key's fields */
  size_t n_sub;
} ft_imp_field;

/* The member a field of each kind is read into: strings point into the JSON document. */
#define FT__IMP_CTYPE_STR const char *
#define FT__IMP_CTYPE_STR_NULL const char *
#define FT__IMP_CTYPE_JSON const char *
#define FT__IMP_CTYPE_B64 const char *
#define FT__IMP_CTYPE_UUID const char *
#define FT__IMP_CTYPE_UUID_NULL const char *
#define FT__IMP_CTYPE_TIME const char *
#define FT__IMP_CTYPE_TIME_NULL const char *
#define FT__IMP_CTYPE_INT int64_t
#define FT__IMP_CTYPE_NUM double /* NAN: null */
#define FT__IMP_CTYPE_NUM_NULL double
#define FT__IMP_CTYPE_POS_NULL_V2 double
#define FT__IMP_CTYPE_KEY ft_imp_key

/* A record's members, one per column named by its JSON key; the problem key's columns (KCOL)
 * live in the ft_imp_key instead, FT_IMP_KEY_MEMBERS. */
#define FT__IMP_MEMBER(c, n, col, json, kind, lo, hi, ins, sel) FT__IMP_MEMBER_##sel(kind, json)
#define FT__IMP_MEMBER_COL(kind, json) FT__IMP_CTYPE_##kind json;
#define FT__IMP_MEMBER_KCOL(kind, json)
#define FT__IMP_MEMBER_DEV(kind, json) FT__IMP_CTYPE_##kind json;
#define FT__IMP_MEMBER_RUN(kind, json) FT__IMP_CTYPE_##kind json;
#define FT__IMP_MEMBER_PROB(kind, json) FT__IMP_CTYPE_##kind json;
#define FT_IMP_MEMBERS(LIST) LIST(FT__IMP_MEMBER, )
#define FT__IMP_KEY_MEMBER(c, n, col, json, kind, lo, hi, ins, sel) \
  FT__IMP_KEY_MEMBER_##sel(kind, json)
#define FT__IMP_KEY_MEMBER_KCOL(kind, json) FT__IMP_CTYPE_##kind json;
#define FT__IMP_KEY_MEMBER_COL(kind, json)
#define FT_IMP_KEY_MEMBERS FT_PROBLEM_COLUMNS(FT__IMP_KEY_MEMBER, )

/* A field table {FT_IMP_FIELDS(LIST, record type)}; sub is the key's table for FT_IK_KEY. */
#define FT__IMP_FIELD(t, n, col, json, kind, lo, hi, ins, sel) \
  {#json, FT_IK_##kind, FT__IMP_OFF_##sel(t, json), lo, hi, FT__IMP_PARAM_##sel(n),  \
   FT__IMP_SUB_##kind},
#define FT__IMP_OFF_COL(t, json) offsetof(t, json)
#define FT__IMP_OFF_KCOL(t, json) offsetof(t, key.json)
#define FT__IMP_OFF_DEV(t, json) offsetof(t, json)
#define FT__IMP_OFF_RUN(t, json) offsetof(t, json)
#define FT__IMP_OFF_PROB(t, json) offsetof(t, json)
#define FT__IMP_PARAM_COL(n) n
#define FT__IMP_PARAM_KCOL(n) n
#define FT__IMP_PARAM_DEV(n) 0
#define FT__IMP_PARAM_RUN(n) 0
#define FT__IMP_PARAM_PROB(n) 0
#define FT__IMP_SUB_KEY ft__imp_key_fields, FT_IMP_N_KEY_FIELDS
#define FT__IMP_SUB_STR NULL, 0
#define FT__IMP_SUB_STR_NULL NULL, 0
#define FT__IMP_SUB_JSON NULL, 0
#define FT__IMP_SUB_B64 NULL, 0
#define FT__IMP_SUB_UUID NULL, 0
#define FT__IMP_SUB_UUID_NULL NULL, 0
#define FT__IMP_SUB_TIME NULL, 0
#define FT__IMP_SUB_TIME_NULL NULL, 0
#define FT__IMP_SUB_INT NULL, 0
#define FT__IMP_SUB_NUM NULL, 0
#define FT__IMP_SUB_NUM_NULL NULL, 0
#define FT__IMP_SUB_POS_NULL_V2 NULL, 0
#define FT_IMP_FIELDS(LIST, type) LIST(FT__IMP_FIELD, type)

/* The problem key as results and best refer to it. */
typedef struct ft_imp_key {
  FT_IMP_KEY_MEMBERS
} ft_imp_key;

#define FT__IMP_KEY_FIELD(c, n, col, json, kind, lo, hi, ins, sel) \
  FT__IMP_KEY_FIELD_##sel(n, json, kind, lo, hi)
#define FT__IMP_KEY_FIELD_KCOL(n, json, kind, lo, hi) \
  {#json, FT_IK_##kind, offsetof(ft_imp_key, json), lo, hi, n, NULL, 0},
#define FT__IMP_KEY_FIELD_COL(n, json, kind, lo, hi)
#define FT__IMP_KEY_ONE(c, n, col, json, kind, lo, hi, ins, sel) FT__IMP_KEY_ONE_##sel
#define FT__IMP_KEY_ONE_KCOL +1
#define FT__IMP_KEY_ONE_COL
#define FT_IMP_N_KEY_FIELDS (0 FT_PROBLEM_COLUMNS(FT__IMP_KEY_ONE, ))
extern const ft_imp_field ft__imp_key_fields[FT_IMP_N_KEY_FIELDS];

/* "import: WHERE: " and fmt with detail, as FT_ERR_FORMAT. */
ft_status ft__imp_bad(ft_err *err, const char *where, const char *fmt, const char *detail);

/* Reads the array member name of root into a new calloc'd array of *n records of rec_size
 * bytes, each field of fs checked and stored at its offset; a missing or unknown field is an
 * error (an export of this version has exactly these), except a field added after the export's
 * version (FT_IK_POS_NULL_V2 in a version-1 export), read as null. A missing array is an error
 * unless optional. The caller frees *recs. */
ft_status ft__imp_read_array(const ft_json *root, int version, const char *name, int optional,
                             const ft_imp_field *fs, size_t nf, size_t rec_size, void **recs,
                             size_t *n, ft_err *err);

#endif
