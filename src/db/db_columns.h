/* The columns of each table, defined once. The INSERT statements (db_sql.c, db_import.c), the
 * export's SELECT lists and JSON keys (db_export.c), the CSV header and the import's records and
 * field tables (db_import.h) are all expanded from these lists, so they cannot drift apart.
 *
 * A list is called as LIST(X, c) and holds one X(c, n, col, json, kind, lo, hi, ins, sel) per
 * column, in export order (docs/FORMAT.md):
 *   c     passed through unchanged (a table alias, a record type: whatever X needs);
 *   n     the column's place in the list from 1, and its parameter ?n in every statement, so the
 *         C API's insert and import bind the same numbers;
 *   col   the SQL column;
 *   json  the key in an export and the member of the import record;
 *   kind  how import reads and checks the value (FT_IK_kind in db_import.h), within lo..hi
 *         (a length for text, a range for integers);
 *   ins   what the C API's insert writes: P the parameter, NOW the current time, NOW_FIRST the
 *         time of the first insert only (an upsert keeps it), NO nothing (set later);
 *   sel   what the export selects: COL the column, KCOL a column of the problem key, DEV / RUN /
 *         PROB the referenced device's fingerprint / run's uuid / problem's key.
 * Every SQL text made here is made of these constants only. */
#ifndef FT_DB_COLUMNS_H
#define FT_DB_COLUMNS_H

#include <stdint.h>

#include "db_internal.h"

/* Text bounds shared by several tables: what ft_device_info, ft_problem_key and ft_best hold
 * (db.h), less the NUL, so whatever is stored can be read back whole. */
#define FT_DB_HASH_MAX 16 /* fingerprints and hashes */
#define FT_DB_STRATEGY_MAX 31
#define FT_DB_VARIANT_MAX 127
#define FT_DB_CONFIG_MAX (FT_CONFIG_JSON_MAX - 1)
#define FT__FITS(type, field, max) \
  _Static_assert(sizeof(((type *)0)->field) == (max) + 1, #type "." #field " holds " #max)
FT__FITS(ft_device_info, fingerprint, FT_DB_HASH_MAX);
FT__FITS(ft_problem_key, epilogue_hash, FT_DB_HASH_MAX);
FT__FITS(ft_best, source_hash, FT_DB_HASH_MAX);
FT__FITS(ft_best, strategy, FT_DB_STRATEGY_MAX);
FT__FITS(ft_best, variant, FT_DB_VARIANT_MAX);
FT__FITS(ft_best, config_json, FT_DB_CONFIG_MAX);

#define FT_DEVICE_COLUMNS(X, c)                                               \
  X(c, 1, fingerprint, fingerprint, STR, 1, FT_DB_HASH_MAX, P, COL)           \
  X(c, 2, name, name, STR, 0, 255, P, COL)                                    \
  X(c, 3, cc_major, cc_major, INT, 0, INT32_MAX, P, COL)                      \
  X(c, 4, cc_minor, cc_minor, INT, 0, INT32_MAX, P, COL)                      \
  X(c, 5, sm_count, sm_count, INT, 0, INT32_MAX, P, COL)                      \
  X(c, 6, mem_bytes, mem_bytes, INT, 0, INT64_MAX, P, COL)                    \
  X(c, 7, driver_version, driver_version, INT, 0, INT32_MAX, P, COL)          \
  X(c, 8, runtime_version, runtime_version, INT, 0, INT32_MAX, P, COL)        \
  X(c, 9, nvrtc_version, nvrtc_version, INT, 0, INT32_MAX, P, COL)            \
  X(c, 10, cublas_version, cublas_version, INT, 0, INT32_MAX, P, COL)         \
  X(c, 11, first_seen, first_seen, TIME, 0, 0, NOW_FIRST, COL)                \
  X(c, 12, last_seen, last_seen, TIME, 0, 0, NOW, COL)

#define FT_PROBLEM_COLUMNS(X, c)                                              \
  X(c, 1, m, m, INT, 1, INT64_MAX, P, KCOL)                                   \
  X(c, 2, n, n, INT, 1, INT64_MAX, P, KCOL)                                   \
  X(c, 3, k, k, INT, 1, INT64_MAX, P, KCOL)                                   \
  X(c, 4, layout, layout, STR, 1, 15, P, KCOL)                                \
  X(c, 5, math, math, STR, 1, 15, P, KCOL)                                    \
  X(c, 6, epilogue, epilogue, STR, 0, 4095, P, COL)                           \
  X(c, 7, epilogue_hash, epilogue_hash, STR, 1, FT_DB_HASH_MAX, P, KCOL)

#define FT_RUN_COLUMNS(X, c)                                                  \
  X(c, 1, uuid, uuid, UUID, 0, 0, P, COL)                                     \
  X(c, 2, device_id, device, STR, 1, FT_DB_HASH_MAX, P, DEV)                  \
  X(c, 3, started, started, TIME, 0, 0, NOW, COL)                             \
  X(c, 4, ended, ended, TIME_NULL, 0, 0, NO, COL)                             \
  X(c, 5, tool_version, tool_version, STR, 0, 64, P, COL)                     \
  X(c, 6, options, options, JSON, 0, FT_DB_MESSAGE_MAX, P, COL)               \
  X(c, 7, budget_s, budget_s, NUM, 0, 0, P, COL)                              \
  X(c, 8, outcome, outcome, STR_NULL, 0, 4096, NO, COL)

#define FT_RESULT_COLUMNS(X, c)                                               \
  X(c, 1, uuid, uuid, UUID, 0, 0, P, COL)                                     \
  X(c, 2, run_id, run, UUID_NULL, 0, 0, P, RUN)                               \
  X(c, 3, device_id, device, STR, 1, FT_DB_HASH_MAX, P, DEV)                  \
  X(c, 4, problem_id, problem, KEY, 0, 0, P, PROB)                            \
  X(c, 5, strategy, strategy, STR, 1, FT_DB_STRATEGY_MAX, P, COL)             \
  X(c, 6, variant, variant, STR, 0, FT_DB_VARIANT_MAX, P, COL)                \
  X(c, 7, config, config, JSON, 0, FT_DB_CONFIG_MAX, P, COL)                  \
  X(c, 8, status, status, STR, 1, 32, P, COL)                                 \
  X(c, 9, median_ms, median_ms, NUM_NULL, 0, 0, P, COL)                       \
  X(c, 10, min_ms, min_ms, NUM_NULL, 0, 0, P, COL)                            \
  X(c, 11, iqr_ms, iqr_ms, NUM_NULL, 0, 0, P, COL)                            \
  X(c, 12, repeats, repeats, INT, 0, INT32_MAX, P, COL)                       \
  X(c, 13, rel_err, rel_err, NUM_NULL, 0, 0, P, COL)                          \
  X(c, 14, max_abs_err, max_abs_err, NUM_NULL, 0, 0, P, COL)                  \
  X(c, 15, source_hash, source_hash, STR, 0, FT_DB_HASH_MAX, P, COL)          \
  X(c, 16, fusedtune_version, fusedtune_version, STR, 0, 64, P, COL)          \
  X(c, 17, message, message, STR, 0, FT_DB_MESSAGE_MAX, P, COL)               \
  X(c, 18, created, created, TIME, 0, 0, NOW, COL)                            \
  X(c, 19, gemm_ratio, gemm_ratio, POS_NULL_V2, 0, 0, P, COL)

/* The best view (db/schema.sql): exported and checked on import, never inserted. */
#define FT_BEST_COLUMNS(X, c)                                                 \
  X(c, 1, device_id, device, STR, 1, FT_DB_HASH_MAX, NO, DEV)                 \
  X(c, 2, problem_id, problem, KEY, 0, 0, NO, PROB)                           \
  X(c, 3, uuid, result, UUID, 0, 0, NO, COL)                                  \
  X(c, 4, strategy, strategy, STR, 1, FT_DB_STRATEGY_MAX, NO, COL)            \
  X(c, 5, variant, variant, STR, 0, FT_DB_VARIANT_MAX, NO, COL)               \
  X(c, 6, config, config, JSON, 0, FT_DB_CONFIG_MAX, NO, COL)                 \
  X(c, 7, source_hash, source_hash, STR, 0, FT_DB_HASH_MAX, NO, COL)          \
  X(c, 8, median_ms, median_ms, NUM, 0, 0, NO, COL)

/* Export order, which is not the schema's: data, the long one, last. */
#define FT_CUBIN_COLUMNS(X, c)                                                \
  X(c, 1, source_hash, source_hash, STR, 1, FT_DB_HASH_MAX, P, COL)           \
  X(c, 2, arch, arch, STR, 1, 64, P, COL)                                     \
  X(c, 3, nvrtc_version, nvrtc_version, INT, 0, INT32_MAX, P, COL)            \
  X(c, 4, options, options, STR, 0, 1 << 16, P, COL)                          \
  X(c, 5, size, size, INT, 0, INT32_MAX, P, COL)                              \
  X(c, 6, created, created, TIME, 0, 0, NOW, COL)                             \
  X(c, 7, data, data, B64, 0, INT64_MAX, P, COL)

/* The CSV export (one row per result): X(n, header, expression), and PROBLEM(n) where every
 * column of the problem stands. */
#define FT_CSV_COLUMNS(X, PROBLEM)                                            \
  X(1, uuid, "r.uuid")                                                        \
  X(2, created, "r.created")                                                  \
  X(3, device, "d.name")                                                      \
  X(4, fingerprint, "d.fingerprint")                                          \
  PROBLEM(5)                                                                  \
  X(6, strategy, "r.strategy")                                                \
  X(7, variant, "r.variant")                                                  \
  X(8, status, "r.status")                                                    \
  X(9, median_ms, "r.median_ms")                                              \
  X(10, min_ms, "r.min_ms")                                                   \
  X(11, iqr_ms, "r.iqr_ms")                                                   \
  X(12, repeats, "r.repeats")                                                 \
  X(13, rel_err, "r.rel_err")                                                 \
  X(14, max_abs_err, "r.max_abs_err")                                         \
  X(15, source_hash, "r.source_hash")                                         \
  X(16, config, "r.config")                                                   \
  X(17, message, "r.message")                                                 \
  X(18, run, "ru.uuid")                                                       \
  X(19, gemm_ratio, "r.gemm_ratio")

/* Parameter numbers: FT_COL(results, strategy) is 5. */
#define FT__COL_ENUM(t, n, col, ...) FT__COL_##t##_##col = n,
enum {
  FT_DEVICE_COLUMNS(FT__COL_ENUM, devices) FT_PROBLEM_COLUMNS(FT__COL_ENUM, problems)
  FT_RUN_COLUMNS(FT__COL_ENUM, runs) FT_RESULT_COLUMNS(FT__COL_ENUM, results)
  FT_CUBIN_COLUMNS(FT__COL_ENUM, cubins)
};
#define FT_COL(table, col) FT__COL_##table##_##col

/* Each n is checked to be the entry's place in its list: a column inserted in the middle must
 * renumber those after it. */
#define FT__POS_ENUM(t, n, col, ...) FT__POS_##t##_##col,
#define FT__POS_CHECK(t, n, col, ...) \
  _Static_assert(n == FT__POS_##t##_##col, #t "." #col ": n is not its place in the list");
#define FT__POS_TABLE(LIST, t)                     \
  enum { FT__POS_##t = 0, LIST(FT__POS_ENUM, t) }; \
  LIST(FT__POS_CHECK, t)
FT__POS_TABLE(FT_DEVICE_COLUMNS, devices)
FT__POS_TABLE(FT_PROBLEM_COLUMNS, problems)
FT__POS_TABLE(FT_RUN_COLUMNS, runs)
FT__POS_TABLE(FT_RESULT_COLUMNS, results)
FT__POS_TABLE(FT_BEST_COLUMNS, best)
FT__POS_TABLE(FT_CUBIN_COLUMNS, cubins)

/* FT__SEP(n, sep): nothing before the first column (n is 1), sep before the others. */
#define FT__SECOND(a, b, ...) b
#define FT__SECOND_(...) FT__SECOND(__VA_ARGS__)
#define FT__SEP(n, sep) FT__SECOND_(FT__IS_FIRST_##n, sep, ~)
#define FT__IS_FIRST_1 ~, ""

/* "col, col, ..." and "?1, ?2, ..." of the columns the C API's insert writes. */
#define FT__INS_COL(c, n, col, json, kind, lo, hi, ins, sel) FT__INS_COL_##ins(n, col)
#define FT__INS_COL_P(n, col) FT__SEP(n, ", ") #col
#define FT__INS_COL_NOW(n, col) FT__SEP(n, ", ") #col
#define FT__INS_COL_NOW_FIRST(n, col) FT__SEP(n, ", ") #col
#define FT__INS_COL_NO(n, col)
#define FT__INS_VAL(c, n, col, json, kind, lo, hi, ins, sel) FT__INS_VAL_##ins(n)
#define FT__INS_VAL_P(n) FT__SEP(n, ", ") "?" #n
#define FT__INS_VAL_NOW(n) FT__SEP(n, ", ") FT_DB_NOW
#define FT__INS_VAL_NOW_FIRST(n) FT__SEP(n, ", ") FT_DB_NOW
#define FT__INS_VAL_NO(n)
/* "col = excluded.col, ..." of what an upsert replaces: all it writes but NOW_FIRST. */
#define FT__UPD(c, n, col, json, kind, lo, hi, ins, sel) FT__UPD_##ins(n, col)
#define FT__UPD_P(n, col) FT__SEP(n, ", ") #col " = excluded." #col
#define FT__UPD_NOW(n, col) FT__UPD_P(n, col)
#define FT__UPD_NOW_FIRST(n, col)
#define FT__UPD_NO(n, col)

/* The C API's insert: "INSERT INTO table (...) VALUES (...)". */
#define FT_DB_INSERT(table, LIST) \
  "INSERT INTO " #table " (" LIST(FT__INS_COL, ) ") VALUES (" LIST(FT__INS_VAL, ) ")"
/* The upsert tail replacing what LIST writes except NOW_FIRST columns. */
#define FT_DB_UPSERT_SET(LIST) " DO UPDATE SET " LIST(FT__UPD, )

/* Import's insert: every column a parameter, so the file's values are kept as they are. */
#define FT__ALL_COL(c, n, col, ...) FT__SEP(n, ", ") #col
#define FT__ALL_VAL(c, n, ...) FT__SEP(n, ", ") "?" #n
#define FT_DB_INSERT_ALL(table, LIST) \
  "INSERT INTO " #table " (" LIST(FT__ALL_COL, ) ") VALUES (" LIST(FT__ALL_VAL, ) ")"

/* The problem key: "m = ?1 AND ... AND epilogue_hash = ?7", the numbers of FT_PROBLEM_COLUMNS. */
#define FT__KEY_EQ(c, n, col, json, kind, lo, hi, ins, sel) FT__KEY_EQ_##sel(n, col)
#define FT__KEY_EQ_KCOL(n, col) FT__SEP(n, " AND ") #col " = ?" #n
#define FT__KEY_EQ_COL(n, col)
#define FT_DB_PROBLEM_KEY_WHERE FT_PROBLEM_COLUMNS(FT__KEY_EQ, )

/* The problem key's columns prefixed with alias c: "p.m, p.n, ...". */
#define FT__KEY_SEL(c, n, col, json, kind, lo, hi, ins, sel) FT__KEY_SEL_##sel(c, n, col)
#define FT__KEY_SEL_KCOL(c, n, col) FT__SEP(n, ", ") c #col
#define FT__KEY_SEL_COL(c, n, col)
#define FT_DB_PROBLEM_KEY_COLS(alias) FT_PROBLEM_COLUMNS(FT__KEY_SEL, alias)

/* An export's SELECT list, columns prefixed with alias c; references joined as d (devices),
 * ru (runs) and p (problems). */
#define FT__SEL(c, n, col, json, kind, lo, hi, ins, sel) FT__SEP(n, ", ") FT__SEL_##sel(c, col)
#define FT__SEL_COL(c, col) c #col
#define FT__SEL_KCOL(c, col) c #col
#define FT__SEL_DEV(c, col) "d.fingerprint"
#define FT__SEL_RUN(c, col) "ru.uuid"
#define FT__SEL_PROB(c, col) FT_DB_PROBLEM_KEY_COLS("p.")
#define FT_DB_COLS(LIST, alias) LIST(FT__SEL, alias)

/* An export's JSON keys, one string per selected column: "problem.m" style keys nest (see
 * db_export.c). */
#define FT__JKEY(c, n, col, json, kind, lo, hi, ins, sel) FT__JKEY_##sel(json)
#define FT__JKEY_COL(json) #json,
#define FT__JKEY_KCOL(json) #json,
#define FT__JKEY_DEV(json) #json,
#define FT__JKEY_RUN(json) #json,
#define FT__JKEY_PROB(json) FT_PROBLEM_COLUMNS(FT__JKEY_KEY, )
#define FT__JKEY_KEY(c, n, col, json, kind, lo, hi, ins, sel) FT__JKEY_KEY_##sel(json)
#define FT__JKEY_KEY_KCOL(json) "problem." #json,
#define FT__JKEY_KEY_COL(json)
#define FT_DB_JSON_KEYS(LIST) {LIST(FT__JKEY, )}

/* The CSV header ("uuid,created,...") and its SELECT list; the problem's columns are never
 * first. */
#define FT__CSV_HEAD(n, name, expr) FT__SEP(n, ",") #name
#define FT__CSV_HEAD_PROBLEM(n) FT_PROBLEM_COLUMNS(FT__CSV_HEAD_PCOL, )
#define FT__CSV_HEAD_PCOL(c, n, col, ...) "," #col
#define FT__CSV_SEL(n, name, expr) FT__SEP(n, ", ") expr
#define FT__CSV_SEL_PROBLEM(n) FT_PROBLEM_COLUMNS(FT__CSV_SEL_PCOL, )
#define FT__CSV_SEL_PCOL(c, n, col, ...) ", p." #col
#define FT_DB_CSV_HEADER FT_CSV_COLUMNS(FT__CSV_HEAD, FT__CSV_HEAD_PROBLEM)
#define FT_DB_CSV_COLS FT_CSV_COLUMNS(FT__CSV_SEL, FT__CSV_SEL_PROBLEM)

#endif
