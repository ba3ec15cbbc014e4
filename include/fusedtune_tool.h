/*
 * fusedtune_tool.h — what tools built on fusedtune need beyond fusedtune.h.
 *
 * The fusedtune command line is a client of fusedtune.h and this header, nothing more:
 *   - export / import of a database (JSON, CSV), removing a database's files;
 *   - iteration over the stored best entries, lookup of one entry with its device and problem;
 *   - every stored result with its device and runs, read back for a report;
 *   - the visible CUDA devices;
 *   - the kernel variants of a problem (optionally compiled), epilogue inspection;
 *   - problem lists (a model's layers in a JSON or CSV file), checked whole;
 *   - a tune returning its full report (every result, counts, times);
 *   - the benchmark of a stored best beside the cuBLAS baselines;
 *   - the worker entry point the tuner runs candidates in.
 *
 * Conventions are those of fusedtune.h: functions return ft_status; results go through the last
 * pointer argument; the detail of a failure is in ft_errmsg(ctx). Functions that take no ft_ctx
 * write their one-line reason into a caller buffer (msg, msg_size: truncated, NUL-terminated when
 * msg_size > 0; msg may be NULL). Structs are plain data; an object the library allocates says who
 * frees it. Functions taking an ft_ctx follow its rule: one thread at a time per ctx. Functions
 * taking no ctx are thread-safe unless they say otherwise.
 */
#ifndef FUSEDTUNE_TOOL_H
#define FUSEDTUNE_TOOL_H

#include <stdio.h>

#include "fusedtune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a stored result measured, and how it ended: one list each, the enums and the names the
 * database and the exports store generated from them. */
#define FT_STRATEGY_MAP(X)                                                 \
  X(FUSED, "fused")                     /* a GEMM kernel with E fused */   \
  X(CUBLAS_EPILOGUE, "cublas+epilogue") /* cuBLAS(Lt) GEMM + one E pass */ \
  X(EAGER, "eager")                     /* baseline: GEMM + a kernel per op */ \
  X(CUBLAS_GEMM, "cublas_gemm")         /* baseline: the GEMM alone */     \
  X(CUBLASLT, "cublaslt")               /* baseline: cuBLASLt's own epilogue */

#define FT_RESULT_STATUS_MAP(X) \
  X(OK, "ok")                   \
  X(WRONG_RESULT, "wrong_result") \
  X(COMPILE_ERROR, "compile_error") \
  X(LAUNCH_ERROR, "launch_error") \
  X(TIMEOUT, "timeout")         \
  X(UNAVAILABLE, "unavailable") /* a baseline that does not apply (never stored) */

typedef enum ft_strategy {
#define FT_STRATEGY_ENUM_(name, text) FT_STRATEGY_##name,
  FT_STRATEGY_MAP(FT_STRATEGY_ENUM_)
#undef FT_STRATEGY_ENUM_
  FT_STRATEGY_COUNT
} ft_strategy;

typedef enum ft_result_status {
#define FT_RESULT_ENUM_(name, text) FT_RESULT_##name,
  FT_RESULT_STATUS_MAP(FT_RESULT_ENUM_)
#undef FT_RESULT_ENUM_
  FT_RESULT_STATUS_COUNT
} ft_result_status;

/* The stored name of s ("fused", "ok", ...); "?" outside the list. Static, thread-safe. */
FT_API const char *ft_strategy_name(ft_strategy s);
FT_API const char *ft_result_status_name(ft_result_status s);
/* The value named text: 1 and *out set, or 0 when no entry has that name. Thread-safe. */
FT_API int ft_strategy_from_name(const char *text, ft_strategy *out);
FT_API int ft_result_status_from_name(const char *text, ft_result_status *out);

/* ---- the database ---- */

/* The schema version this build writes (SQLite's PRAGMA user_version). Thread-safe. */
FT_API int ft_schema_version(void);

/* Flags of ft_export. */
#define FT_EXPORT_CSV 0x1u    /* one row per result (default: lossless JSON, see docs/FORMAT.md) */
#define FT_EXPORT_CUBINS 0x2u /* JSON only: include the cached cubins (base64; import drops them) */

/* Writes the whole database to out (deterministic order, no local row ids). Output already
 * written stays written on failure; the caller owns out and checks its own write errors too.
 * Returns FT_OK, FT_ERR_INVALID_ARG (out NULL, unknown flags, FT_EXPORT_CUBINS with CSV),
 * FT_ERR_DB, FT_ERR_IO, FT_ERR_NOMEM. */
FT_API ft_status ft_export(ft_ctx *ctx, FILE *out, unsigned flags);

/* ft_export into the file at path, written as ft_out_open writes (refusing the database itself,
 * its side files, symbolic links and what is not a regular file; the file replaced only when the
 * export is complete). Returns FT_OK, FT_ERR_INVALID_ARG (path NULL or empty, unknown flags),
 * FT_ERR_IO (a refused path: why in ft_errmsg; a write that failed), FT_ERR_DB, FT_ERR_NOMEM. */
FT_API ft_status ft_export_file(ft_ctx *ctx, const char *path, unsigned flags);

/* Rows an import added (rows already present are not counted) and rows the file held. cubins
 * is always 0: imported cubins are checked, never stored (see ft_import_file). */
typedef struct ft_import_counts {
  int64_t devices, problems, runs, results, cubins;
  int64_t devices_in, problems_in, runs_in, results_in, cubins_in;
} ft_import_counts;

/* Merges the JSON export in the regular file at path (at most 1 GiB): importing twice is the
 * same as once, every measurement is kept. A malformed file is rejected whole, naming the place
 * ("import: results[3].median_ms: expected a number"), the database unchanged. Its cubins are
 * checked and dropped, never stored: GPU code is only ever compiled here, from the source its
 * hash names (docs/FORMAT.md). stats may be NULL. Needs a writable ctx.
 * Returns FT_OK, FT_ERR_INVALID_ARG, FT_ERR_IO (unreadable, a directory, not a regular file),
 * FT_ERR_FORMAT,
 * FT_ERR_VERSION (an export of a newer format), FT_ERR_DB, FT_ERR_NOMEM. */
FT_API ft_status ft_import_file(ft_ctx *ctx, const char *path, ft_import_counts *stats);

/* Deletes the database file at path and its -wal and -shm side files where they exist, whatever
 * the file holds. For a closed database only (no ft_ctx open on it); errors are ignored. NULL is
 * a no-op. ft_remove_database_v2 checks first. */
FT_API void ft_remove_database(const char *path);
/* ft_remove_database of a fusedtune database only: a file that is not one (not SQLite, another
 * program's SQLite file, an export, a directory) and a database open through an ft_ctx of this
 * process (by any name) are refused, nothing removed; a missing path is FT_OK. Thread-safe.
 * Returns FT_OK, FT_ERR_INVALID_ARG (path NULL or empty), FT_ERR_DB (not a fusedtune database),
 * FT_ERR_IO (open in this process, a directory, unreadable), FT_ERR_NOMEM; why in msg. */
FT_API ft_status ft_remove_database_v2(const char *path, char *msg, size_t msg_size);

/* One stored best: a (device, problem) and its best-ranked launchable configuration (docs/FORMAT.md,
 * "best"). Plain data. */
typedef struct ft_best_entry {
  char device_name[256];
  char math[16];           /* "fp32" */
  char epilogue[4096];     /* canonical epilogue text */
  ft_config config;        /* the configuration; config.tuned_m, _n, _k: the shape it was tuned for */
} ft_best_entry;

/* Called once per entry; return nonzero to stop. The entry is valid during the call only. The
 * callback must not call ft_each_best on the same ctx (other calls on ctx are fine). */
typedef int (*ft_best_entry_fn)(void *user, const ft_best_entry *entry);

/* Every (device, problem) best of the database, ordered by device fingerprint, then m, n, k.
 * No GPU is touched. Returns FT_OK (also when fn stopped early or there is nothing),
 * FT_ERR_INVALID_ARG (fn NULL), FT_ERR_DB. */
FT_API ft_status ft_each_best(ft_ctx *ctx, ft_best_entry_fn fn, void *user);

/* Whether a stored configuration was measured with the kernel source this fusedtune generates
 * for it: *current 1, or 0 for a stale one (an older kernel source: ft_lookup and ft_lookup_entry
 * skip it; tuning the problem again measures today's). epilogue is the stored canonical text
 * (ft_best_entry.epilogue, ft_stored_problem.epilogue), config_json and source_hash the stored
 * configuration's (ft_config.config and .source_hash, ft_stored_result's). No GPU is touched.
 * Returns FT_OK; FT_ERR_INVALID_ARG (a NULL argument, or config_json is not a kernel
 * configuration, as a baseline's "{}"), FT_ERR_PARSE (the epilogue no longer parses); *current is
 * 0 on any error. Thread-safety as every call on ctx. */
FT_API ft_status ft_source_current(ft_ctx *ctx, const char *epilogue, const char *config_json,
                                   const char *source_hash, int *current);

/* ft_lookup that also names the device and the problem. device_name NULL: the current CUDA
 * device; else the device stored under that exact name (as ft_each_best gives it; no GPU is
 * touched). flags as ft_lookup (FT_LOOKUP_NEAREST, FT_LOOKUP_EXACT). On success out->config.exact
 * says whether the entry was tuned for p's own shape (FT_MATCH_EXACT), is the M bucket that covers
 * p->m (FT_MATCH_BUCKET) or the nearest shape (FT_MATCH_NEAREST); out->config.tuned_m, _n, _k is
 * the shape it was tuned for.
 * Returns what ft_lookup returns; FT_ERR_NOT_FOUND also when no device of that name is stored. */
FT_API ft_status ft_lookup_entry(ft_ctx *ctx, const char *device_name, const ft_problem *p,
                                 unsigned flags, ft_best_entry *out);

/* ft_lookup_within that names the device as ft_lookup_entry does (device_name NULL: the current
 * device). out->math is the mode picked. */
FT_API ft_status ft_lookup_entry_within(ft_ctx *ctx, const char *device_name, const ft_problem *p,
                                        double tolerance, ft_best_entry *out);

/* ---- every stored result, read back (reports) ---- */

/* A device as the database stores it (docs/FORMAT.md, table devices). Plain data. */
typedef struct ft_stored_device {
  char fingerprint[17];
  char name[256];
  int cc_major, cc_minor, sm_count;
  int64_t mem_bytes;
  int driver_version, runtime_version, nvrtc_version, cublas_version; /* when last seen */
  char first_seen[32], last_seen[32]; /* ISO-8601 UTC timestamps */
} ft_stored_device;

/* A tuning run that measured at least one result of the problem. */
typedef struct ft_stored_run {
  char uuid[37];
  char started[32], ended[32]; /* ended "" when the run never finished (running, crashed) */
  char outcome[128];           /* "" when none; longer text cut on a character boundary */
  char tool_version[65];       /* the fusedtune that ran it */
  double budget_s;
  char *options;               /* the options it ran with, JSON text; owned by the ft_stored */
} ft_stored_run;

/* One integer key of a variant's JSON configuration ("bm": 64). */
typedef struct ft_variant_param {
  char name[16];
  int value;
} ft_variant_param;

#define FT_STORED_PARAMS_MAX 16

/* One stored result, whatever its status. Plain data. */
typedef struct ft_stored_result {
  ft_strategy strategy;
  ft_result_status status;          /* never UNAVAILABLE */
  char variant[FT_NAME_MAX];        /* variant name; a baseline's description */
  char config[FT_CONFIG_JSON_MAX];  /* the stored JSON ("{}" for baselines) */
  char family[32];                  /* the kernel family config names ("fp32_rows", "fp32_warp", "tc",
                                     * "epilogue_pass"); "" for a baseline; "unknown" when this
                                     * build reads no variant from config */
  int n_params;                     /* config's integer keys in its family's order (required keys,
                                     * then the optional ones that are not 0); 0 unless family is a
                                     * known family */
  ft_variant_param params[FT_STORED_PARAMS_MAX];
  double median_ms, min_ms, iqr_ms; /* < 0 when not measured */
  int repeats;
  double rel_err, max_abs_err;      /* against the float64 reference; < 0 when not checked */
  char source_hash[17];
  char fusedtune_version[65];
  char created[32];
  int run;                          /* index in the problem's runs; -1 when recorded outside a run */
  int is_best;                      /* the best of its (device, problem): what ft_each_best lists */
  char message[256];                /* head of the stored message, cut on a character boundary */
  double gemm_ratio;                /* what the best is chosen by, lowest first: the median over the
                                     * timed rounds of its time over cuBLAS's GEMM alone's in the
                                     * same round; < 0: none, after every ranked result
                                     * (docs/FORMAT.md, "best") */
} ft_stored_result;

/* A (device, problem) with at least one stored result. */
typedef struct ft_stored_problem {
  int device;                  /* index in ft_stored.devices */
  int64_t m, n, k;
  char layout[16];             /* "xrow_wrow" */
  ft_math math;
  char epilogue[4096];         /* canonical text */
  char epilogue_hash[17];
  int n_results;
  ft_stored_result *results;   /* every result, failures included, ordered by strategy name, then
                                * timed before untimed, then the best's order (gemm_ratio, unranked
                                * last; median_ms; created) */
  int n_runs;
  ft_stored_run *runs;         /* the runs its results belong to, by start time */
} ft_stored_problem;

/* What ft_stored_load read; every array is owned by it: ft_stored_free(). */
typedef struct ft_stored {
  int n_devices;
  ft_stored_device *devices;   /* the devices of the problems, by fingerprint */
  int n_problems;
  ft_stored_problem *problems; /* by device fingerprint, then m, n, k, epilogue hash, math mode
                                * (FT_MATH_MAP order) */
} ft_stored;

/* Flags of ft_stored_load. */
#define FT_STORED_ANY_MATH 0x1u /* p's shape and epilogue in every math mode (p->math ignored) */

/* Reads every stored result of the database (p NULL), or of problem p on every device, into
 * *out, in one read transaction; no GPU is touched and nothing is written, so a read-only ctx is
 * enough. A database with no results, or none for p, is FT_OK with n_problems = 0. *out is the
 * caller's: ft_stored_free(). Not thread-safe with other calls on ctx.
 * Returns FT_OK, FT_ERR_INVALID_ARG (out NULL, unknown flags, a bad problem), FT_ERR_PARSE,
 * FT_ERR_UNSUPPORTED (p's math mode), FT_ERR_DB (also a stored text longer than these structs
 * hold, or a math mode, strategy or status this build does not know), FT_ERR_NOMEM. */
FT_API ft_status ft_stored_load(ft_ctx *ctx, const ft_problem *p, unsigned flags, ft_stored **out);
FT_API void ft_stored_free(ft_stored *s); /* NULL is a no-op */

/* ---- devices ---- */

typedef struct ft_device_desc {
  int ordinal;            /* CUDA device ordinal (after CUDA_VISIBLE_DEVICES) */
  char name[256];
  char fingerprint[17];   /* what results are stored under */
  char arch[16];          /* "sm_90" */
  int sm_count;
  int64_t mem_bytes;
  int driver_version, runtime_version, nvrtc_version, cublas_version;
} ft_device_desc;

/* How many CUDA devices are visible. Returns FT_OK, FT_ERR_NO_DEVICE ("no CUDA device: ..." in
 * msg: no driver, no device). Thread-safe. */
FT_API ft_status ft_device_count(int *count, char *msg, size_t msg_size);

/* Describes device ordinal (-1: the calling thread's current device). The current device is
 * left as it was. Returns FT_OK, FT_ERR_INVALID_ARG (out NULL), FT_ERR_NO_DEVICE (no such
 * ordinal, no driver), FT_ERR_CUDA, FT_ERR_NOMEM. Thread-safe. */
FT_API ft_status ft_device_describe(int ordinal, ft_device_desc *out, char *msg, size_t msg_size);

/* ---- kernel variants and epilogues (no GPU needed) ---- */

typedef struct ft_variant_info {
  char name[FT_NAME_MAX];         /* "gemm_bm64_bn128_bk16_t8x8_v4_s2_k1_z8" */
  char config[FT_CONFIG_JSON_MAX]; /* the variant's JSON configuration */
  ft_strategy strategy;           /* FT_STRATEGY_FUSED or FT_STRATEGY_CUBLAS_EPILOGUE */
  char source_hash[17];           /* hash of the kernel text generated for it */
  ft_status compile_status;       /* FT_VARIANTS_COMPILE: FT_OK or FT_ERR_COMPILE; else FT_OK */
  char compile_log[512];          /* head of the NVRTC log when it failed */
  int regs;                       /* registers per thread ptxas reported (families compiled with
                                   * ptxas -v, e.g. tc), else -1 */
  int spill_bytes;                /* spill stores + loads ptxas reported, else -1 */
} ft_variant_info;

typedef struct ft_variant_list {
  char arch[16];           /* the architecture enumerated for */
  char epilogue[4096];     /* canonical epilogue */
  int count;
  ft_variant_info *items;  /* count items, owned by the list */
  int compiled;            /* FT_VARIANTS_COMPILE was given */
  int n_compiled_ok;
  double compile_s;        /* wall time of the compilation */
} ft_variant_list;

#define FT_VARIANTS_COMPILE 0x1u /* compile every variant with NVRTC (no GPU needed) */
#define FT_VARIANTS_FULL 0x2u    /* the full space the exhaustive and random searches take (else the
                                  * pruned one of the default search) */

/* Enumerates the kernel variants applicable to p on arch ("sm_90"; NULL: the current device's,
 * else sm_90), likely-good first, GEMM kernels then epilogue passes. *out is the caller's:
 * ft_variant_list_free(). A variant that does not compile is an item, not a failure.
 * Returns FT_OK, FT_ERR_INVALID_ARG (unknown arch or flags, out NULL, bad shape), FT_ERR_PARSE,
 * FT_ERR_UNSUPPORTED, FT_ERR_COMPILE (NVRTC unusable), FT_ERR_NOMEM. */
FT_API ft_status ft_variants(const ft_problem *p, const char *arch, unsigned flags,
                             ft_variant_list **out, char *msg, size_t msg_size);

/* Called during ft_variants_v2's compilation after each distinct source is compiled: done of
 * total. It runs on the compiling threads, never on two at once; it must not call back into
 * fusedtune for the same list. */
typedef void (*ft_variants_progress_fn)(void *user, int done, int total);

/* ft_variants that reports compile progress through progress(user, ...) (NULL: none), since
 * FT_VARIANTS_COMPILE can take minutes. Returns what ft_variants returns. */
FT_API ft_status ft_variants_v2(const ft_problem *p, const char *arch, unsigned flags,
                                ft_variants_progress_fn progress, void *user, ft_variant_list **out,
                                char *msg, size_t msg_size);
FT_API void ft_variant_list_free(ft_variant_list *list); /* NULL is a no-op */

#define FT_EPILOGUE_MAX_PARAMS 8

typedef enum ft_param_type {
  FT_PARAM_TYPE_SCALAR = 0,
  FT_PARAM_TYPE_COLVEC = 1,
  FT_PARAM_TYPE_ROWVEC = 2,
  FT_PARAM_TYPE_MATRIX = 3 /* `mat NAME`: an [m, n] row-major matrix of the args' dtype */
} ft_param_type;

typedef struct ft_epilogue_param {
  char name[32];
  ft_param_type type;  /* a scalar; a vector of n (per column) or m (per row) elements; an m x n matrix */
  int has_default;     /* scalars only */
  double default_value;
} ft_epilogue_param;

typedef struct ft_epilogue_info {
  const char *canonical; /* one text for every spelling of the expression */
  char hash[17];
  const char *cuda;      /* the generated CUDA float expression; "" for a reduction */
  int n_params;
  ft_epilogue_param params[FT_EPILOGUE_MAX_PARAMS]; /* in kernel slot order */
  int uses_x2; /* reads x2, a gated pair's second product: its plans take w = the interleaved [2n, k]
                * weight (ft_gated_interleave); added in 0.3, after the fields above */
} ft_epilogue_info;

/* Parses an expression or preset name. *out (strings included) is the caller's:
 * ft_epilogue_info_free(). Returns FT_OK, FT_ERR_INVALID_ARG, FT_ERR_PARSE ("epilogue: col C:
 * what (hint)" in msg), FT_ERR_NOMEM. */
FT_API ft_status ft_epilogue_inspect(const char *text, ft_epilogue_info **out, char *msg, size_t msg_size);
FT_API void ft_epilogue_info_free(ft_epilogue_info *info); /* NULL is a no-op */

/* The presets: returns their count; for i in range sets *name and *text (static strings) when
 * those are not NULL. */
FT_API int ft_epilogue_preset(int i, const char **name, const char **text);

/* ---- problem lists (a model's layers, for `fusedtune tune --problems FILE`) ---- */

/* Parses "MxNxK" (three decimal integers joined by 'x', nothing else) into *m, *n, *k; the range
 * is ft_check_problem's to judge. Returns FT_OK, FT_ERR_INVALID_ARG (not that form, a dimension
 * past 63 bits, NULL pointers: the reason in msg). Thread-safe. */
FT_API ft_status ft_shape_parse(const char *text, int64_t *m, int64_t *n, int64_t *k, char *msg, size_t msg_size);

/* The most M values one range gives (every power of two up to 2^62, and both ends). */
#define FT_SHAPE_RANGE_MAX 65

/* Parses "MxNxK" or an M range "A..BxNxK" (A <= B, both decimal integers >= 1): *m_lo = A and
 * *m_hi = B (both M for the plain form). A range stands for the M values ft_shape_range_values
 * lists: the M buckets of the problem. A malformed range (not A..B, A or B zero, A > B, a number
 * past 63 bits) is FT_ERR_INVALID_ARG, msg naming it ("shape '64..8x256x256': M range 64..8 is
 * reversed (A..B needs A <= B)"); the range of the numbers is ft_check_problem's to judge.
 * Returns FT_OK, FT_ERR_INVALID_ARG (also NULL pointers). Thread-safe. */
FT_API ft_status ft_shape_range_parse(const char *text, int64_t *m_lo, int64_t *m_hi, int64_t *n, int64_t *k,
                                      char *msg, size_t msg_size);
/* The M values of the range lo..hi (1 <= lo <= hi), ascending: lo, every power of two p with
 * lo < p < hi, and hi (1..4096: 1, 2, 4, ..., 4096, 13 values; 40..100: 40, 64, 100). Writes at
 * most max of them into ms (ms may be NULL when max is 0) and returns how many there are (at most
 * FT_SHAPE_RANGE_MAX); 0 for lo < 1 or lo > hi. Thread-safe. */
FT_API int ft_shape_range_values(int64_t lo, int64_t hi, int64_t *ms, int max);

/* One problem of a list. */
typedef struct ft_problem_item {
  ft_problem problem; /* checked as ft_check_problem checks; problem.epilogue is the canonical
                       * text, owned by the list */
  int line;           /* the line of the file the entry starts on, from 1 */
  int entry;          /* the entry: JSON array index, or CSV data row, from 0 ("auto" gives three
                       * items of one entry, an M range "A..BxNxK" one per M value, times the
                       * modes) */
  int duplicate_of;   /* -1, or the index of the earlier item with the same key (shape, canonical
                       * epilogue, math): tune that one only */
} ft_problem_item;

/* A parsed problem file; owned by the caller: ft_problem_list_free(). */
typedef struct ft_problem_list {
  int count;              /* items, in file order */
  ft_problem_item *items;
  int n_unique;           /* items with duplicate_of == -1 */
  int n_entries;          /* entries of the file */
  int csv;                /* 1: the file was CSV, 0: JSON */
} ft_problem_list;

#define FT_PROBLEM_LIST_MAX_ENTRIES 10000 /* more entries are refused */

/* Parses a problem list (docs/FORMAT.md, "Problem lists"): a JSON array of objects
 * {"shape": "MxNxK", "epilogue": E, "math": M} (text whose first non-blank character is '[' or '{'),
 * the shape also an M range "A..BxNxK" (ft_shape_range_parse: one item per M bucket),
 * else CSV with a header naming the columns shape, epilogue, math. epilogue defaults to "none",
 * math to "fp32"; math "auto" stands for fp32, 3xtf32 and tf32. Every entry is checked (shape,
 * range, epilogue, math) before the call returns: the first bad one fails the whole list, msg
 * naming it ("layers.csv: line 4: shape '0x8x8': m, n and k must be positive"; JSON: "entry 2
 * (line 5)"). name is what messages call the text (NULL: "problems").
 * Returns FT_OK, FT_ERR_INVALID_ARG (text or out NULL), FT_ERR_FORMAT (syntax, an unknown or
 * missing field, a bad value, no entries), FT_ERR_NOMEM. Thread-safe. */
FT_API ft_status ft_problem_list_parse(const char *text, size_t len, const char *name, ft_problem_list **out,
                                       char *msg, size_t msg_size);
/* ft_problem_list_parse of the regular file at path (at most 16 MiB); messages name the path.
 * Returns what it returns and FT_ERR_IO (missing, unreadable, not a regular file, too large). */
FT_API ft_status ft_problem_list_load(const char *path, ft_problem_list **out, char *msg, size_t msg_size);
FT_API void ft_problem_list_free(ft_problem_list *list); /* NULL is a no-op */

/* ---- tune with a report ---- */



typedef struct ft_result_info {
  ft_strategy strategy;    /* a candidate (FUSED, CUBLAS_EPILOGUE) or a baseline */
  char variant[FT_NAME_MAX];
  ft_result_status status; /* never UNAVAILABLE */
  double median_ms, min_ms, iqr_ms; /* < 0 when not measured */
  double rel_err, max_abs_err;      /* < 0 when not checked */
  char message[256];
  double gemm_ratio; /* the median over the timed rounds of its time over cuBLAS's GEMM alone's in the
                      * same round (1 for that GEMM); < 0 when not timed so: the best is the lowest */
} ft_result_info;

/* Where a tune's wall time went, in seconds. The search's time is measure + compile_wait plus
 * its own bookkeeping (storing results); measure is the runner's round trips, of which the worker
 * spent load (cubins), verify (a run on poisoned output compared with the float64 reference) and
 * timing (the timed calls). compile_wait: the search waiting for a kernel still compiling. */
typedef struct ft_tune_phases {
  double prepare_s;   /* worker start, inputs, the float64 reference, the tolerance; of it, in
                       * the worker: */
  double gpu_open_s, data_s, tolerance_s, baselines_setup_s; /* CUDA context and handles; inputs and
                       * references; cuBLAS's error (the tolerance; in 3xtf32 also the eager chain's
                       * error); baseline plans and the eager
                       * chain's kernels (compiled by NVRTC) */
  double baselines_s; /* eager-style chain, cuBLAS alone, cuBLASLt epilogue */
  double search_s;    /* everything the search did */
  double measure_s, load_s, verify_s, timing_s;
  double compile_wait_s;
  double nvrtc_s;     /* NVRTC's wall time summed over the kernels compiled for the search (on its
                       * threads, so it may exceed the search's own time) */
  int measurements;   /* runner calls for candidates (a screened and re-timed one counts twice) */
  double enumerate_s; /* inside prepare_s, once the device is known: the candidates enumerated and
                       * generated, the compile plan's cache read (compilation then runs beside
                       * the rest of the preparation) */
  double stop_s;      /* the runner stopped: the worker's exit waited for */
} ft_tune_phases;

typedef struct ft_tune_report {
  char device_name[256];
  char epilogue[4096];     /* canonical */
  double flops;            /* 2 m n k */
  double eager_ms;         /* eager baseline of this run; 0 when not measured */
  int n_candidates;        /* fused + cublas+epilogue candidates enumerated */
  int n_measured, n_ok, n_wrong, n_compile_error, n_launch_error, n_timeout;
  int n_known;             /* measured before with the same kernel source, skipped */
  int n_compiled, n_cached;
  double compile_s, total_s;
  int budget_exhausted;
  int worker_restarts;     /* workers replaced after a fault or a hang */
  int has_best;            /* 0: no candidate was correct */
  ft_config best;          /* the database's best after the run (has_best) */
  int n_results;
  ft_result_info *results; /* this run's results in order, owned by the report */
  int n_early_stopped;     /* fast search: fused candidates not measured because the cost model,
                            * with its error measured in this run, says they cannot win */
  ft_tune_phases phases;   /* where total_s went */
  int n_error_pruned;      /* fast search: fused candidates not measured because one whose tensor-core
                            * partial sums are as long or shorter was beyond the tolerance */
} ft_tune_report;

/* The modes ft_tune covers for p, in the order it tunes them: p->math alone, or for p in fp32 (the
 * default mode) without mode_only, fp32 accuracy: 3xtf32 (where the current device's compute
 * capability is 9.0 or newer), then fp32. Writes up to 2 modes and *n. Reads the current device
 * only for fp32. Returns FT_OK, FT_ERR_INVALID_ARG (an argument NULL), FT_ERR_NO_DEVICE,
 * FT_ERR_CUDA. */
FT_API ft_status ft_tune_modes(ft_ctx *ctx, const ft_problem *p, int mode_only, ft_math modes[2], int *n);

/* ft_tune with everything the run found (one mode: p->math; ft_tune_modes says which modes ft_tune
 * runs, and opt->mode_only 0 lets an fp32 tune leave out the FFMA kernels as ft_tune's does): *report is the caller's (ft_tune_report_free), set on
 * FT_OK only. Unlike ft_tune, a run where no candidate was correct is FT_OK with has_best = 0.
 * Returns what ft_tune returns, except FT_ERR_NOT_FOUND. */
FT_API ft_status ft_tune_ex(ft_ctx *ctx, const ft_problem *p, const ft_tune_options *opt,
                            ft_tune_report **report);
FT_API void ft_tune_report_free(ft_tune_report *report); /* NULL is a no-op */

/* ---- bench ---- */

typedef struct ft_bench_report {
  char device_name[256];
  char epilogue[4096];     /* canonical */
  int repeats;
  double flops, peak_flops; /* 2 m n k of the problem and of the 8192^3 reference */
  double eager_ms;          /* eager-style baseline: cuBLAS + one kernel per operation */
  double gemm_ms;           /* cuBLAS GEMM alone, no epilogue */
  double peak_ms;           /* cuBLAS's GEMM 8192^3 in the problem's mode: that mode's rate here */
  ft_config best;           /* the stored best that was timed */
  double best_ms, best_rel_err;
  int best_ok;              /* within the mode's tolerance (tolerance) */
  double tolerance;         /* on rel_err (docs/MODES.md): 1e-5 in fp32; 3xtf32 SGEMM's error or the fp32
                             * eager chain's; else 2x cuBLAS's error + unit roundoff */
  int has_fused;            /* the best is not a fused GEMM and the fastest fused GEMM was timed */
  ft_config fused;
  double fused_ms, fused_rel_err;
  int fused_ok;
  char warning[512];        /* why the fastest fused GEMM was skipped, or that a shape timed as CUDA graphs
                             * (src/tune/timing_rule.c) was timed on the stream; "" when neither */
} ft_bench_report;

/* Times in one run, on the current device, interleaved, in p's math mode: the eager-style
 * baseline, cuBLAS GEMM alone, the best stored for p (checked against float64 first) and, when
 * that is not a fused GEMM kernel, the fastest current fused GEMM result, then cuBLAS's GEMM of
 * the mode at 8192^3. repeats timed
 * calls each (20..1000). Compiled cubins are cached unless ctx is read-only.
 * Returns FT_OK (a result out of tolerance is FT_OK with best_ok / fused_ok 0),
 * FT_ERR_INVALID_ARG, FT_ERR_PARSE, FT_ERR_UNSUPPORTED, FT_ERR_NOT_FOUND (nothing tuned for p
 * here), FT_ERR_NO_DEVICE, FT_ERR_CUDA, FT_ERR_CUBLAS, FT_ERR_COMPILE, FT_ERR_DB, FT_ERR_NOMEM. */
FT_API ft_status ft_bench_problem(ft_ctx *ctx, const ft_problem *p, int repeats, ft_bench_report *out);

/* ---- output ---- */

/* Writes s as a quoted JSON string to out, as fusedtune's own JSON does: control characters,
 * '"' and '\\' escaped, valid UTF-8 copied, each invalid byte written as U+FFFD. NULL s writes
 * null. Write errors show in ferror(out). Thread-safe (as far as out is). */
FT_API void ft_write_json_string(FILE *out, const char *s);

/* Makes text safe to print, in place: each character that steers a terminal rather than shows
 * (C0 and C1 controls, newline and tab included, DEL, the bidi embeddings, overrides and isolates
 * U+202A-U+202E and U+2066-U+2069) and each byte that is not UTF-8 becomes '?'. The library's
 * messages (ft_errmsg, every msg buffer) already are; a tool runs its own messages that echo user
 * or file text through it. NULL is a no-op. Thread-safe. */
FT_API void ft_text_printable(char *text);

/* The command line that tunes (m, n, k, epilogue, math) into the database at db_path (NULL or
 * "": none named, so the default database): "fusedtune --db 'PATH' tune --shape MxNxK --epilogue
 * 'E' --math MODE", each text quoted for a POSIX shell. Writes it to out (truncated,
 * NUL-terminated when out_size > 0; out may be NULL) and returns its full length, as snprintf
 * does. The library's own advice ("tune it again: ...") is written by it. Thread-safe. */
FT_API size_t ft_tune_command(const char *db_path, int64_t m, int64_t n, int64_t k, const char *epilogue,
                              const char *math, char *out, size_t out_size);

/* An output file written safely: what a tool writes (an export, a report) goes to a new temporary
 * file in the path's folder and is renamed over the path only when complete, so a failure never
 * leaves half a file and an existing file keeps its mode. Refused before anything is written: a
 * path that is a symbolic link or not a regular file (a directory, device, FIFO: never opened,
 * so never waited on), the database db_path itself (also through a hard link), and a file SQLite
 * keeps beside it (-wal, -shm, -journal; also those of a hard or symbolic link to it), which
 * SQLite would remove or overwrite. */
typedef struct ft_out ft_out;

/* Opens an output for path; db_path is the database whose files are refused (NULL: none). what
 * starts every message ("export: x.db is the database being exported: ..."; any what but
 * "export" says "being read"). *out is the caller's: ft_out_close(). Thread-safe.
 * Returns FT_OK, FT_ERR_INVALID_ARG (path NULL or empty, out NULL), FT_ERR_IO (refused, or the
 * temporary file cannot be made: why in msg), FT_ERR_NOMEM. */
FT_API ft_status ft_out_open(const char *path, const char *db_path, const char *what, ft_out **out, char *msg,
                             size_t msg_size);
/* The stream to write to; owned by o (closed by ft_out_close). */
FT_API FILE *ft_out_stream(ft_out *o);
/* Closes o and frees it. commit nonzero: the temporary file, when its stream shows no write
 * error and closes cleanly, is renamed over the path; else (or commit 0) it is removed and the
 * path left as it was. NULL is a no-op. Returns FT_OK, FT_ERR_IO (a write or the rename failed,
 * nothing replaced: why in msg). */
FT_API ft_status ft_out_close(ft_out *o, int commit, char *msg, size_t msg_size);

/* ---- the worker ---- */

/* Serves the tuner's jobs on the connected socket fd until the tuner closes it: what an
 * executable named in ft_tune_options.worker_exe runs for `EXE __worker FD`, as the library's own
 * fusedtune-worker does. Returns the process exit code (0 after a clean close). Call from a process of its own, on its main thread. */
FT_API int ft_worker_serve(int fd);

/* ---- messages between a program's own processes ---- */

/* The library's framing between processes (its worker, `tune --problems`'s children), for a
 * program's own messages: a message of type carrying n bytes, no fixed part. Sent whole on the
 * stream socket fd, restarted after EINTR; a gone peer is -1, never SIGPIPE. 0 ok, -1 closed or
 * error. Thread-safe per fd. */
FT_API int ft_message_send(int fd, uint32_t type, const void *bytes, size_t n);

/* The message at the start of buf[0, len), as ft_message_send framed it: 1 when it is whole (its
 * bytes at buf + *at, *n of them, the whole message *size bytes), 0 when more must be read first,
 * -1 when buf does not start with a message of type with no fixed part and at most max bytes
 * (nothing more can be read). Pure. */
FT_API int ft_message_parse(const void *buf, size_t len, uint32_t type, size_t max, size_t *at, size_t *n,
                            size_t *size);

#ifdef __cplusplus
}
#endif
#endif /* FUSEDTUNE_TOOL_H */
