/* The public C API: open a database, look up the best configuration for a problem on this GPU,
 * turn it into a launchable plan (cubin from the cache), launch it, or tune. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "launch.h"
#include "api_internal.h"
#include "fusedtune_tool.h"
#include "best.h"
#include "search.h"
#include "tuner.h"

#define FT_HASH_CACHE 16

/* Remembers the kernel source hash of (epilogue hash, config) so a warm lookup does not
 * regenerate kernel text to detect stale results. */
typedef struct hash_memo {
  char ep_hash[17];
  char config[FT_CONFIG_JSON_MAX];
  char src_hash[17];
} hash_memo;

struct ft_ctx {
  ft_db *db;
  unsigned flags;
  ft_gpu *gpu;
  int have_dev;      /* dev/lim are known (from the GPU, or set by a test) */
  ft_device_info dev;
  ft_device_limits lim;
  int64_t device_id; /* 0 until the device is found in the database */
  ft_err err;
  ft_epilogue *last_ep; /* parse cache for repeated lookups of one expression */
  char *last_ep_text;
  hash_memo memo[FT_HASH_CACHE];
  int memo_next;
};


static ft_status fail(ft_ctx *ctx, ft_status s, const char *msg) {
  return ctx ? ft__fail(&ctx->err, s, "%s", msg) : s;
}

ft_status ft_open(const char *db_path, unsigned flags, ft_ctx **out) {
  if (!out) return FT_ERR_INVALID_ARG;
  *out = NULL;
  ft_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return FT_ERR_NOMEM;
  *out = ctx;
  if (flags & ~(FT_OPEN_READONLY | FT_OPEN_CREATE))
    return ft__fail(&ctx->err, FT_ERR_INVALID_ARG, "ft_open: unknown flags 0x%x", flags);
  if ((flags & FT_OPEN_READONLY) && (flags & FT_OPEN_CREATE))
    return fail(ctx, FT_ERR_INVALID_ARG, "ft_open: FT_OPEN_READONLY and FT_OPEN_CREATE exclude each other");
  if (!db_path) db_path = getenv("FUSEDTUNE_DB");
  if (!db_path || !db_path[0]) db_path = "fusedtune.db";
  ctx->flags = flags;
  unsigned dbf = (flags & FT_OPEN_READONLY ? FT_DB_READONLY : 0) | (flags & FT_OPEN_CREATE ? FT_DB_CREATE : 0);
  return ft_db_open(db_path, dbf, &ctx->db, &ctx->err);
}

void ft_close(ft_ctx *ctx) {
  if (!ctx) return;
  ft_db_close(ctx->db);
  ft_gpu_close(ctx->gpu);
  ft_ep_free(ctx->last_ep);
  free(ctx->last_ep_text);
  free(ctx);
}

const char *ft_errmsg(const ft_ctx *ctx) {
  if (!ctx) return "no context (ft_open was given a NULL pointer or ran out of memory)";
  return ctx->err.msg[0] ? ctx->err.msg : ft_status_string(ctx->err.status);
}

/* Checks what can be checked without a device or database and parses the epilogue (cached). */
static ft_status check_problem(ft_ctx *ctx, const ft_problem *p, const ft_epilogue **ep) {
  FT_TRY(ft__check_problem(p, &ctx->err));
  if (!ctx->last_ep || strcmp(ctx->last_ep_text, p->epilogue) != 0) {
    ft_epilogue *e = NULL;
    FT_TRY(ft_ep_parse(p->epilogue, &e, &ctx->err));
    char *text = ft__strdup(p->epilogue);
    if (!text) {
      ft_ep_free(e);
      return fail(ctx, FT_ERR_NOMEM, "out of memory");
    }
    ft_ep_free(ctx->last_ep);
    free(ctx->last_ep_text);
    ctx->last_ep = e;
    ctx->last_ep_text = text;
  }
  FT_TRY(ft__check_epilogue_fits(p, ctx->last_ep, &ctx->err));
  *ep = ctx->last_ep;
  return FT_OK;
}

/* The caller's current CUDA device ("this GPU" in the header). */
int ft__current_device(void) {
  int d = 0;
  if (cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    d = 0;
  }
  return d;
}

static ft_status need_gpu(ft_ctx *ctx) {
  if (ctx->gpu) return FT_OK;
  return ft_gpu_open(ft__current_device(), &ctx->gpu, &ctx->err);
}

ft_err *ft__ctx_err(ft_ctx *ctx) { return &ctx->err; }
ft_db *ft__ctx_db(ft_ctx *ctx) { return ctx->db; }
unsigned ft__ctx_flags(const ft_ctx *ctx) { return ctx->flags; }

ft_status ft__ctx_gpu(ft_ctx *ctx, ft_gpu **out) {
  *out = NULL;
  FT_TRY(need_gpu(ctx));
  *out = ctx->gpu;
  return FT_OK;
}

ft_status ft__ctx_problem(ft_ctx *ctx, const ft_problem *p, const ft_epilogue **ep) {
  return check_problem(ctx, p, ep);
}

void ft__ctx_set_device(ft_ctx *ctx, const ft_device_info *dev, const ft_device_limits *lim) {
  ctx->dev = *dev;
  ctx->lim = *lim;
  ctx->have_dev = 1;
  ctx->device_id = 0;
}

/* The device identity: from the GPU, unless a test set one (lookups need no more than that). */
static ft_status need_device(ft_ctx *ctx) {
  if (ctx->have_dev) return FT_OK;
  FT_TRY(need_gpu(ctx));
  ft__ctx_set_device(ctx, ft_gpu_info(ctx->gpu), ft_gpu_limits(ctx->gpu));
  return FT_OK;
}

static ft_status need_device_row(ft_ctx *ctx) {
  if (ctx->device_id) return FT_OK;
  FT_TRY(need_device(ctx));
  ft_device_info found;
  ft_status s = ft_db_find_device(ctx->db, ctx->dev.fingerprint, NULL, &found, &ctx->device_id, &ctx->err);
  if (s == FT_ERR_NOT_FOUND)
    return ft__fail(&ctx->err, FT_ERR_NOT_FOUND, "nothing was tuned on this device (%s) in this database",
                    ctx->dev.name);
  return s;
}

/* The hash of the kernel source today's fusedtune generates for (epilogue, config). */
static ft_status current_hash(ft_ctx *ctx, const ft_epilogue *ep, const char *config, char out[17]) {
  for (int i = 0; i < FT_HASH_CACHE; i++) {
    hash_memo *m = &ctx->memo[i];
    if (m->src_hash[0] && !strcmp(m->ep_hash, ft_ep_hash(ep)) && !strcmp(m->config, config)) {
      memcpy(out, m->src_hash, 17);
      return FT_OK;
    }
  }
  ft_variant v;
  FT_TRY(ft_variant_from_json(config, &v, &ctx->err));
  ft_kernel_src src;
  FT_TRY(ft_codegen_variant(&v, ep, &src, &ctx->err));
  memcpy(out, src.hash, 17);
  ft_kernel_src_free(&src);
  hash_memo *m = &ctx->memo[ctx->memo_next++ % FT_HASH_CACHE];
  snprintf(m->ep_hash, sizeof m->ep_hash, "%s", ft_ep_hash(ep));
  snprintf(m->config, sizeof m->config, "%s", config);
  memcpy(m->src_hash, out, 17);
  return FT_OK;
}

typedef struct source_check {
  ft_ctx *ctx;
  const ft_epilogue *ep;
} source_check;

/* ft_source_check through the context's memo of source hashes (warm lookups stay fast). */
static int memo_is_current(void *user, const ft_best *b) {
  source_check *c = user;
  char h[17];
  return current_hash(c->ctx, c->ep, b->config_json, h) == FT_OK && strcmp(h, b->source_hash) == 0;
}

int ft__ctx_source_current(ft_ctx *ctx, const ft_epilogue *ep, const ft_best *b) {
  source_check chk = {ctx, ep};
  return memo_is_current(&chk, b);
}

ft_status ft_source_current(ft_ctx *ctx, const char *epilogue, const char *config_json, const char *source_hash,
                            int *current) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  if (!epilogue || !config_json || !source_hash || !current)
    return ft__fail(&ctx->err, FT_ERR_INVALID_ARG, "ft_source_current: NULL argument");
  *current = 0;
  ft_epilogue *ep = NULL;
  FT_TRY(ft_ep_parse(epilogue, &ep, &ctx->err));
  char h[17];
  ft_status s = current_hash(ctx, ep, config_json, h);
  ft_ep_free(ep);
  if (s == FT_OK) *current = strcmp(h, source_hash) == 0;
  return s;
}

void ft__fill_config(ft_config *out, const ft_best *b, int exact) {
  memset(out, 0, sizeof *out);
  snprintf(out->strategy, sizeof out->strategy, "%s", b->strategy);
  snprintf(out->name, sizeof out->name, "%s", b->variant);
  snprintf(out->config, sizeof out->config, "%s", b->config_json);
  snprintf(out->source_hash, sizeof out->source_hash, "%s", b->source_hash);
  out->median_ms = b->median_ms;
  out->eager_ms = b->eager_ms;
  if (!ft_math_from_name(b->key.math, &out->math)) out->math = FT_MATH_FP32;
  out->rel_err = b->rel_err;
  out->max_abs_err = b->max_abs_err;
  out->tuned_m = b->key.m;
  out->tuned_n = b->key.n;
  out->tuned_k = b->key.k;
  out->exact = exact;
}

typedef struct nearest {
  ft_ctx *ctx;
  const ft_device_limits *lim; /* the device's, for applicability */
  const ft_problem *p;
  const ft_epilogue *ep;
  double best_dist;
  ft_best best;
  int found;
} nearest;

/* Of one tuned shape's results (fastest first), the first that applies to the asked shape and
 * was measured with today's kernel source. */
typedef struct usable {
  nearest *nr;
  ft_best row;
  int found;
} usable;

static int take_usable(void *user, const ft_best *b) {
  usable *u = user;
  ft_variant v;
  char why[128];
  source_check chk = {u->nr->ctx, u->nr->ep};
  if (ft_variant_from_json(b->config_json, &v, NULL) != FT_OK) return 0;
  if (!ft_variant_applicable(&v, u->nr->p->m, u->nr->p->n, u->nr->p->k, u->nr->lim, why, sizeof why)) return 0;
  if (!memo_is_current(&chk, b)) return 0;
  u->row = *b;
  u->found = 1;
  return 1;
}

static int consider_nearest(void *user, const ft_best *best) {
  nearest *nr = user;
  usable u = {nr, {0}, 0};
  ft_err e;
  if (ft_db_each_candidate(nr->ctx->db, best, take_usable, &u, &e) != FT_OK || !u.found) return 0;
  const ft_best *b = &u.row;
  double d = 0;
  double a[3] = {(double)nr->p->m, (double)nr->p->n, (double)nr->p->k};
  double t[3] = {(double)b->key.m, (double)b->key.n, (double)b->key.k};
  for (int i = 0; i < 3; i++) d += pow(log(a[i]) - log(t[i]), 2);
  if (!nr->found || d < nr->best_dist) {
    nr->best_dist = d;
    nr->best = *b;
    nr->found = 1;
  }
  return 0;
}

/* FT_ERR_NOT_FOUND for a key whose results all came from an older kernel source: the same words
 * for every lookup (by mode or by tolerance), with the command that measures it again (tune
 * skips only what was measured with today's source). */
static ft_status stale_message(ft_ctx *ctx, const ft_problem *p, const char *canonical, const char *modes,
                               const char *device) {
  char cmd[FT_EP_MAX_TEXT + 4096];
  ft_tune_command(ft_db_path(ctx->db), p->m, p->n, p->k, canonical, strchr(modes, ' ') ? "auto" : modes, cmd,
                  sizeof cmd);
  return ft__fail(&ctx->err, FT_ERR_NOT_FOUND,
                  "only a stale result for %lldx%lldx%lld, epilogue '%s', %s on %s (measured with an older "
                  "kernel source): tune it again: %s",
                  (long long)p->m, (long long)p->n, (long long)p->k, canonical, modes, device, cmd);
}

/* The device row and limits a lookup runs against: the current device, or the one stored under
 * name (limits then from its architecture). */
typedef struct lookup_dev {
  int64_t id;
  ft_device_limits lim;
  char name[256];
} lookup_dev;

static ft_status find_lookup_dev(ft_ctx *ctx, const char *name, lookup_dev *d) {
  memset(d, 0, sizeof *d);
  if (!name) {
    FT_TRY(need_device_row(ctx));
    d->id = ctx->device_id;
    d->lim = ctx->lim;
    snprintf(d->name, sizeof d->name, "%s", ctx->dev.name);
    return FT_OK;
  }
  const size_t len = strlen(name);
  if (len == 0 || len > 255)
    return ft__fail(&ctx->err, FT_ERR_INVALID_ARG, "device name %s: stored names are 1 to 255 bytes",
                    len ? "too long" : "empty");
  ft_device_info found;
  ft_status s = ft_db_find_device(ctx->db, NULL, name, &found, &d->id, &ctx->err);
  if (s != FT_OK) return s;
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%d", found.cc_major, found.cc_minor);
  if (ft_limits_for_arch(arch, &d->lim, NULL) != FT_OK) ft_limits_for_arch("sm_90", &d->lim, NULL);
  snprintf(d->name, sizeof d->name, "%s", found.name);
  return FT_OK;
}

/* One mode's lookup (p->math alone); on FT_ERR_NOT_FOUND *stale is 1 when only results of an older
 * kernel source were found, -1 when no device is stored under device_name. */
static ft_status lookup_mode(ft_ctx *ctx, const char *device_name, const ft_problem *p, unsigned flags, ft_best *out,
                             int *exact, int *stale) {
  const ft_epilogue *ep = NULL;
  FT_TRY(check_problem(ctx, p, &ep));
  ft_problem_key key;
  ft_problem_key_set(&key, p->m, p->n, p->k, p->math, ft_ep_canonical(ep), ft_ep_hash(ep));
  lookup_dev d;
  ft_status s = find_lookup_dev(ctx, device_name, &d);
  source_check chk = {ctx, ep};
  if (s == FT_OK) s = ft_best_current(ctx->db, d.id, &key, ep, memo_is_current, &chk, out, stale, &ctx->err);
  if (s != FT_OK && s != FT_ERR_NOT_FOUND) return s;
  if (s == FT_OK) {
    *exact = 1;
    return FT_OK;
  }
  int found = 0;
  if (d.id && !(flags & FT_LOOKUP_EXACT)) FT_TRY(ft__lookup_bucket(ctx, d.id, &d.lim, p, ep, &key, out, &found));
  if (found) {
    *exact = FT_MATCH_BUCKET;
    return FT_OK;
  }
  if (d.id && (flags & FT_LOOKUP_NEAREST)) {
    nearest nr = {ctx, &d.lim, p, ep, 0, {0}, 0};
    FT_TRY(ft_db_each_best_for_epilogue(ctx->db, d.id, key.epilogue_hash, key.math, consider_nearest, &nr,
                                        &ctx->err));
    if (nr.found) {
      *out = nr.best;
      *exact = 0;
      return FT_OK;
    }
  }
  if (!d.id) {
    /* find_lookup_dev said why: no device row here, or no stored device by that name. */
    if (device_name) *stale = -1;
    return FT_ERR_NOT_FOUND;
  }
  if (*stale) return stale_message(ctx, p, key.epilogue, key.math, d.name);
  return ft__fail(&ctx->err, FT_ERR_NOT_FOUND, "nothing tuned for %lldx%lldx%lld, epilogue '%s', %s on %s%s",
                  (long long)p->m, (long long)p->n, (long long)p->k, key.epilogue, key.math, d.name,
                  flags & FT_LOOKUP_NEAREST ? " (nor a nearby applicable shape)" : "");
}

/* How closely a match serves the problem asked: exact, then an M bucket, then the nearest shape. */
static int match_rank(int exact) { return exact == FT_MATCH_EXACT ? 2 : exact == FT_MATCH_BUCKET ? 1 : 0; }

/* Of two matches of one fp32-tensor problem in different modes, whether b serves it better than a:
 * the closer match; at the same tuned shape the faster, by the ratio to cuBLAS SGEMM that both
 * modes are ranked by (docs/FORMAT.md, "best"), else by the stored medians; a tighter bucket. */
static int serves_better(const ft_best *b, int b_exact, const ft_best *a, int a_exact) {
  if (match_rank(b_exact) != match_rank(a_exact)) return match_rank(b_exact) > match_rank(a_exact);
  if (b->key.m == a->key.m && b->key.n == a->key.n && b->key.k == a->key.k) {
    if (b->gemm_ratio > 0 && a->gemm_ratio > 0) return b->gemm_ratio < a->gemm_ratio;
    return b->median_ms < a->median_ms;
  }
  return b_exact == FT_MATCH_BUCKET && b->key.m < a->key.m;
}

/* ft__lookup_best. A problem in fp32 (the default mode) is served at fp32 accuracy unless
 * FT_LOOKUP_MODE_ONLY: by the better of its fp32 and 3xtf32 results, since every stored 3xtf32
 * result was held to cuBLAS SGEMM's own error on the problem (docs/MODES.md). */
static ft_status lookup_best(ft_ctx *ctx, const char *device_name, const ft_problem *p, unsigned flags, ft_best *out,
                             int *exact, int *stale) {
  const unsigned known = FT_LOOKUP_NEAREST | FT_LOOKUP_EXACT | FT_LOOKUP_MODE_ONLY;
  if (flags & ~known || (flags & (FT_LOOKUP_NEAREST | FT_LOOKUP_EXACT)) == (FT_LOOKUP_NEAREST | FT_LOOKUP_EXACT))
    return ft__fail(&ctx->err, FT_ERR_INVALID_ARG, "ft_lookup: flags 0x%x: unknown, or EXACT with NEAREST", flags);
  const unsigned mode_flags = flags & ~FT_LOOKUP_MODE_ONLY;
  ft_status s = lookup_mode(ctx, device_name, p, mode_flags, out, exact, stale);
  if ((flags & FT_LOOKUP_MODE_ONLY) || !p || p->math != FT_MATH_FP32 || (s != FT_OK && s != FT_ERR_NOT_FOUND) ||
      *stale < 0)
    return s;
  ft_problem q = *p;
  q.math = FT_MATH_3XTF32;
  ft_best alt;
  int alt_exact = 0, alt_stale = 0;
  char first_msg[sizeof ctx->err.msg];
  snprintf(first_msg, sizeof first_msg, "%s", ctx->err.msg);
  const ft_status s3 = lookup_mode(ctx, device_name, &q, mode_flags, &alt, &alt_exact, &alt_stale);
  if (s3 == FT_OK && (s != FT_OK || serves_better(&alt, alt_exact, out, *exact))) {
    *out = alt;
    *exact = alt_exact;
    return FT_OK;
  }
  if (s3 != FT_OK && s3 != FT_ERR_NOT_FOUND) return s3;
  if (s != FT_OK) snprintf(ctx->err.msg, sizeof ctx->err.msg, "%s", first_msg); /* the fp32 message names the tune */
  return s;
}

ft_status ft__lookup_best(ft_ctx *ctx, const char *device_name, const ft_problem *p, unsigned flags, ft_best *out,
                          int *exact) {
  int stale = 0;
  return lookup_best(ctx, device_name, p, flags, out, exact, &stale);
}

/* Of one mode's results (fastest first): the first current one within the tolerance, and the
 * smallest error of the current ones. */
typedef struct within {
  source_check chk;
  double tol;
  ft_best row;
  int found;
  double least_err;
  int seen;
} within;

static int take_within(void *user, const ft_best *b) {
  within *w = user;
  if (!memo_is_current(&w->chk, b)) return 0;
  if (!w->seen || b->rel_err < w->least_err) w->least_err = b->rel_err;
  w->seen = 1;
  if (!(b->rel_err <= w->tol)) return 0;
  w->row = *b;
  w->found = 1;
  return 1;
}

ft_status ft__lookup_within(ft_ctx *ctx, const char *device_name, const ft_problem *p, double tolerance,
                            ft_best *out) {
  if (!p) return ft__fail(&ctx->err, FT_ERR_INVALID_ARG, "lookup within a tolerance: problem is NULL");
  if (!(tolerance > 0) || !isfinite(tolerance))
    return ft__fail(&ctx->err, FT_ERR_INVALID_ARG, "tolerance %g: must be a finite number > 0", tolerance);
  static const ft_math fp32_inputs[] = {FT_MATH_FP32, FT_MATH_3XTF32, FT_MATH_TF32};
  const int fp32_class = p && ft_math_dtype(p->math) == FT_DTYPE_F32;
  /* bf16: also the fp8 layer of its weights (ft_fp8_epilogue), whose stored error is against bf16. */
  const int bf16 = p && p->math == FT_MATH_BF16 && p->n % 16 == 0 && p->k % 16 == 0, nmodes = fp32_class ? 3 : bf16 ? 2 : 1;
  char tried[160] = "", fp8_text[FT_EP_MAX_TEXT + 64], stale_modes[64] = "", device[256] = "", canonical[4096];
  const ft_epilogue *ep0 = NULL;
  FT_TRY(ft__ctx_problem(ctx, p, &ep0));
  snprintf(canonical, sizeof canonical, "%s", ft_ep_canonical(ep0)); /* the key's text, not a preset's name */
  int found = 0, seen = 0;
  double least = 0;
  const char *least_mode = "";
  for (int i = 0; i < nmodes; i++) {
    ft_problem q = *p;
    if (fp32_class) q.math = fp32_inputs[i];
    if (bf16 && i && ft_fp8_epilogue(p->epilogue, fp8_text, sizeof fp8_text) == FT_OK) q.math = FT_MATH_FP8, q.epilogue = fp8_text;
    if (bf16 && i && q.math != FT_MATH_FP8) continue;
    ft_best best;
    int exact = 0, stale = 0;
    ft_status s = lookup_mode(ctx, device_name, &q, FT_LOOKUP_EXACT, &best, &exact, &stale);
    const ft_epilogue *ep = NULL;
    if (s == FT_ERR_NOT_FOUND) {
      if (stale < 0) return s; /* the named device is not stored: its message says so */
      if (stale) {
        const size_t at = strlen(stale_modes);
        snprintf(stale_modes + at, sizeof stale_modes - at, "%s%s", at ? " or " : "", ft_math_name(q.math));
        if (!device[0]) snprintf(device, sizeof device, "%s", device_name ? device_name : ctx->dev.name);
      }
      continue;
    }
    FT_TRY(s);
    FT_TRY(ft__ctx_problem(ctx, &q, &ep));
    within w = {{ctx, ep}, tolerance, {0}, 0, 0, 0};
    FT_TRY(ft_db_each_candidate(ctx->db, &best, take_within, &w, &ctx->err));
    const size_t at = strlen(tried);
    if (w.seen) snprintf(tried + at, sizeof tried - at, "%s%s %.3g", at ? ", " : "", ft_math_name(q.math), w.least_err);
    if (w.seen && (!seen || w.least_err < least)) least = w.least_err, least_mode = ft_math_name(q.math);
    seen |= w.seen;
    /* Faster wins; equal times go to the smaller error (the modes are tried most accurate first). */
    if (w.found && (!found || w.row.median_ms < out->median_ms ||
                    (w.row.median_ms == out->median_ms && w.row.rel_err < out->rel_err))) {
      *out = w.row;
      found = 1;
    }
  }
  if (found) return FT_OK;
  if (!seen && stale_modes[0]) return stale_message(ctx, p, canonical, stale_modes, device);
  if (!seen)
    return ft__fail(&ctx->err, FT_ERR_NOT_FOUND, "nothing tuned for %lldx%lldx%lld, epilogue '%s', in %s%s",
                    (long long)p->m, (long long)p->n, (long long)p->k, canonical,
                    fp32_class ? "fp32, 3xtf32 or tf32" : ft_math_name(p->math),
                    fp32_class ? " (tune --math auto tunes all three)" : "");
  return ft__fail(&ctx->err, FT_ERR_NOT_FOUND,
                  "nothing stored for %lldx%lldx%lld within tolerance %g: the smallest measured error is %.3g (%s); "
                  "per mode: %s",
                  (long long)p->m, (long long)p->n, (long long)p->k, tolerance, least, least_mode, tried);
}

ft_status ft_lookup_within(ft_ctx *ctx, const ft_problem *p, double tolerance, ft_config *out) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  if (!out || !p) return fail(ctx, FT_ERR_INVALID_ARG, "ft_lookup_within: NULL argument");
  ft_best b;
  FT_TRY(ft__lookup_within(ctx, NULL, p, tolerance, &b));
  ft__fill_config(out, &b, 1);
  return FT_OK;
}

ft_status ft_lookup(ft_ctx *ctx, const ft_problem *p, unsigned flags, ft_config *out) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  if (!out) return fail(ctx, FT_ERR_INVALID_ARG, "ft_lookup: out is NULL");
  ft_best b;
  int exact = 0;
  FT_TRY(ft__lookup_best(ctx, NULL, p, flags, &b, &exact));
  ft__fill_config(out, &b, exact);
  return FT_OK;
}

ft_status ft_plan_create(ft_ctx *ctx, const ft_problem *p, const ft_config *cfg, ft_plan **plan) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  if (!plan || !cfg) return fail(ctx, FT_ERR_INVALID_ARG, "ft_plan_create: cfg and plan must not be NULL");
  *plan = NULL;
  const ft_epilogue *ep = NULL;
  FT_TRY(check_problem(ctx, p, &ep));
  ft_variant v;
  FT_TRY(ft_variant_from_json(cfg->config, &v, &ctx->err));
  /* fp32, the default mode, is served at fp32 accuracy: by a 3xtf32 configuration too (ft_lookup). */
  const int fp32_served = p->math == FT_MATH_FP32 && v.math == FT_MATH_3XTF32;
  if (v.math != (int)p->math && !fp32_served)
    return ft__fail(&ctx->err, FT_ERR_INVALID_ARG, "configuration %s computes in %s, the problem asks for %s",
                    cfg->name, ft_math_name((ft_math)v.math), ft_math_name(p->math));
  FT_TRY(need_gpu(ctx));
  char why[256];
  if (!ft_variant_applicable(&v, p->m, p->n, p->k, ft_gpu_limits(ctx->gpu), why, sizeof why))
    return ft__fail(&ctx->err, FT_ERR_UNSUPPORTED, "configuration %s does not apply to %lldx%lldx%lld: %s", cfg->name,
                    (long long)p->m, (long long)p->n, (long long)p->k, why);
  ft_plan *pl = calloc(1, sizeof *pl);
  if (!pl) return fail(ctx, FT_ERR_NOMEM, "out of memory");
  pl->ctx = ctx;
  ft_variant_name(&v, pl->name, sizeof pl->name);
  ft_kernel_src src = {0};
  ft_compile_job job = {0};
  ft_status s = ft_ep_parse(p->epilogue, &pl->ep, &ctx->err);
  if (s == FT_OK) s = ft_codegen_variant(&v, pl->ep, &src, &ctx->err);
  if (s == FT_OK) {
    job = (ft_compile_job){.src = src.text, .hash = src.hash, .arch_suffix = src.arch_suffix};
    /* A read-only database quietly keeps what it has (ft_compile_many). */
    s = ft_compile_source(ctx->db, ft_gpu_arch(ctx->gpu), &job, cfg->name, &ctx->err);
  }
  if (s == FT_OK)
    s = ft_launchable_init_ep(&pl->run, ctx->gpu, &v, pl->ep, (int)p->m, (int)p->n, (int)p->k, job.cubin, job.cubin_size,
                              src.kernel, src.reduce, &ctx->err);
  ft_compile_job_clear(&job);
  ft_kernel_src_free(&src);
  if (s != FT_OK) {
    ft_plan_destroy(pl);
    return s;
  }
  *plan = pl;
  return FT_OK;
}

void ft_plan_weight_changed(ft_plan *plan) {
  if (plan) ft_launchable_weight_changed(&plan->run);
}

void ft_plan_destroy(ft_plan *plan) {
  if (!plan) return;
  ft_launchable_free(&plan->run);
  ft_ep_free(plan->ep);
  free(plan);
}

/* The fields of ft_tune_options after seed exist only when struct_size covers them. */
#define FT_OPT_HAS(opt, field) ((opt)->struct_size >= offsetof(ft_tune_options, field) + sizeof((opt)->field))

ft_status ft__tune_summary(ft_ctx *ctx, const ft_problem *p, const ft_tune_options *opt, ft_tune_summary *sum) {
  memset(sum, 0, sizeof *sum);
  if (!opt || opt->struct_size < FT_TUNE_OPTIONS_V1_SIZE || opt->struct_size > sizeof(ft_tune_options))
    return fail(ctx, FT_ERR_INVALID_ARG, "ft_tune: options must start from FT_TUNE_OPTIONS_INIT");
  const ft_epilogue *ep = NULL;
  FT_TRY(check_problem(ctx, p, &ep));
  const char *search = opt->strategy ? opt->strategy : FT_SEARCH_DEFAULT;
  if (!ft_search_parse(search, NULL))
    return ft__fail(&ctx->err, FT_ERR_INVALID_ARG, "ft_tune: unknown strategy '%.40s' (" FT_SEARCH_NAMES ")", search);
  if (opt->repeats != 0 && opt->repeats < 20)
    return fail(ctx, FT_ERR_INVALID_ARG, "ft_tune: repeats must be >= 20");
  if (opt->budget_s < 0 || !isfinite(opt->budget_s)) return fail(ctx, FT_ERR_INVALID_ARG, "ft_tune: budget_s must be >= 0");
  int max_cand = FT_OPT_HAS(opt, max_candidates) ? opt->max_candidates : 0;
  if (max_cand < 0) return fail(ctx, FT_ERR_INVALID_ARG, "ft_tune: max_candidates must be >= 0");
  if (ctx->flags & FT_OPEN_READONLY) return fail(ctx, FT_ERR_INVALID_ARG, "ft_tune: the database was opened read-only");
  const char *worker = FT_OPT_HAS(opt, worker_exe) && opt->worker_exe ? opt->worker_exe : ft_default_worker();
  const ft_tune_problem problem = {.m = p->m, .n = p->n, .k = p->k, .math = p->math, .ep = ep,
                                   .epilogue = p->epilogue};
  ft_tune_req req = {.problem = &problem,
                     .search = search,
                     .budget_s = opt->budget_s > 0 ? opt->budget_s : FT_TUNE_DEFAULT_BUDGET_S,
                     .repeats = opt->repeats ? opt->repeats : FT_TUNE_DEFAULT_REPEATS,
                     .retune = opt->retune,
                     .flush_l2 = opt->flush_l2,
                     .seed = opt->seed,
                     .max_candidates = max_cand,
                     .stop = FT_OPT_HAS(opt, stop) ? opt->stop : NULL,
                     .worker_exe = worker,
                     .device = ft__current_device(),
                     .prune_ffma = p->math == FT_MATH_FP32 && !(FT_OPT_HAS(opt, mode_only) && opt->mode_only)};
  /* The device this context opened (the fp32 default asks it which modes to tune), when it is the
   * one the tune runs on: a repeat then finds nothing to measure without starting a worker. */
  ft_runner_device known;
  if (ctx->gpu && ft_gpu_ordinal(ctx->gpu) == req.device) {
    memset(&known, 0, sizeof known);
    known.info = *ft_gpu_info(ctx->gpu);
    known.limits = *ft_gpu_limits(ctx->gpu);
    snprintf(known.arch, sizeof known.arch, "%s", ft_gpu_arch(ctx->gpu));
    req.device_known = &known;
  }
  if (!opt->quiet && FT_OPT_HAS(opt, progress_user)) {
    req.progress = opt->progress;
    req.progress_user = opt->progress_user;
  }
  ft_status s = ft_tune_run(ctx->db, &req, sum, &ctx->err);
  ctx->device_id = 0; /* the device row may be new */
  return s;
}

/* One mode's tune, as ft_tune reports it. */
static ft_status tune_mode(ft_ctx *ctx, const ft_problem *p, const ft_tune_options *opt, ft_config *best) {
  ft_tune_summary sum;
  ft_status s = ft__tune_summary(ctx, p, opt, &sum);
  if (s == FT_OK && !sum.has_best && sum.n_measured + sum.n_skipped_known == 0)
    s = fail(ctx, FT_ERR_NOT_FOUND, sum.budget_exhausted ? "no candidate was measured: the budget ran out first (give it more)"
                                                         : "no candidate was measured; nothing to choose");
  else if (s == FT_OK && !sum.has_best)
    s = fail(ctx, FT_ERR_NOT_FOUND, "no candidate was correct; nothing to choose");
  if (s == FT_OK) ft__fill_config(best, &sum.best, 1);
  ft_tune_summary_free(&sum);
  return s;
}

static int fp32_accuracy_modes(const ft_problem *p, const ft_device_limits *lim, ft_math modes[2]) {
  if (p->math != FT_MATH_FP32) {
    modes[0] = p->math;
    return 1;
  }
  int n = 0;
  /* 3xtf32 first: the fp32 tune then skips FFMA kernels its stored best has outrun. */
  if (lim->cc_major >= 9) modes[n++] = FT_MATH_3XTF32;
  modes[n++] = FT_MATH_FP32;
  return n;
}

ft_status ft_tune_modes(ft_ctx *ctx, const ft_problem *p, int mode_only, ft_math modes[2], int *n) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  if (!p || !modes || !n) return fail(ctx, FT_ERR_INVALID_ARG, "ft_tune_modes: NULL argument");
  *n = 0;
  if (mode_only || p->math != FT_MATH_FP32) {
    modes[0] = p->math;
    *n = 1;
    return FT_OK;
  }
  FT_TRY(need_device(ctx));
  *n = fp32_accuracy_modes(p, &ctx->lim, modes);
  return FT_OK;
}

ft_status ft_tune(ft_ctx *ctx, const ft_problem *p, const ft_tune_options *opt, ft_config *best) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  if (!best) return fail(ctx, FT_ERR_INVALID_ARG, "ft_tune: best is NULL");
  const int mode_only = opt && opt->struct_size >= FT_TUNE_OPTIONS_V1_SIZE && FT_OPT_HAS(opt, mode_only) && opt->mode_only;
  if (mode_only || !p || p->math != FT_MATH_FP32) return tune_mode(ctx, p, opt, best);
  ft_math modes[2];
  int n = 0;
  /* No device to ask: the fp32 tune alone, whose own checks (options, worker, device) say what is wrong. */
  if (ft_tune_modes(ctx, p, 0, modes, &n) != FT_OK) return tune_mode(ctx, p, opt, best);
  ft_status s = FT_OK;
  for (int i = 0; i < n; i++) {
    ft_problem q = *p;
    q.math = modes[i];
    ft_config one;
    s = tune_mode(ctx, &q, opt, &one);
    if (s != FT_OK && s != FT_ERR_NOT_FOUND) return s;
  }
  /* What a lookup serves now, across both modes. */
  ft_best b;
  int exact = 0;
  ft_status ls = ft__lookup_best(ctx, NULL, p, FT_LOOKUP_EXACT, &b, &exact);
  if (ls == FT_OK) ft__fill_config(best, &b, exact);
  return ls == FT_ERR_NOT_FOUND ? s : ls;
}
