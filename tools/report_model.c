/* The numbers a report draws, derived from the stored results only: per mode the baselines, the
 * fastest correct kernel of each family, the compulsory bytes; the groups of modes; the colours
 * of the families. */
#include <stdlib.h>
#include <string.h>

#include "report.h"

int report_timed(const ft_stored_result *res) { return res && res->median_ms > 0; }

double report_time_ratio(const ft_stored_result *a, const ft_stored_result *b) {
  if (a->gemm_ratio > 0 && b->gemm_ratio > 0) return a->gemm_ratio / b->gemm_ratio;
  return a->median_ms / b->median_ms;
}

double report_tflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0; }

const char *report_status_shape(ft_result_status st) {
  switch (st) {
    case FT_RESULT_OK: return "disc";
    case FT_RESULT_WRONG_RESULT: return "cross";
    case FT_RESULT_COMPILE_ERROR: return "square";
    case FT_RESULT_LAUNCH_ERROR: return "triangle";
    default: return "diamond";
  }
}

const char *report_result_label(const ft_stored_result *res) {
  switch (res->strategy) {
    case FT_STRATEGY_EAGER: return "eager-style chain";
    case FT_STRATEGY_CUBLAS_GEMM: return "cuBLAS GEMM alone";
    case FT_STRATEGY_CUBLASLT: return "cuBLASLt epilogue";
    case FT_STRATEGY_CUBLAS_EPILOGUE: return "cuBLAS + epilogue pass";
    default: return res->family;
  }
}

/* Eight colours a reader tells apart; baselines have their own. */
static const char *const k_palette[] = {"#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd",
                                        "#17becf", "#bcbd22", "#7f7f00", "#e377c2"};

const char *report_result_color(const report *r, const ft_stored_result *res) {
  switch (res->strategy) {
    case FT_STRATEGY_EAGER: return "#d62728";
    case FT_STRATEGY_CUBLAS_GEMM: return "#8c2d04";
    case FT_STRATEGY_CUBLASLT: return "#f781bf";
    default: return report_family_color(r, res->family);
  }
}

const char *report_family_color(const report *r, const char *family) {
  if (!family[0]) return "#d62728";
  for (int i = 0; i < r->n_families; i++)
    if (!strcmp(r->families[i], family)) return k_palette[i % (int)(sizeof k_palette / sizeof k_palette[0])];
  return "#7f7f7f";
}

void report_families(report *r) {
  r->n_families = 0;
  for (int i = 0; i < r->s->n_problems; i++)
    for (int j = 0; j < r->s->problems[i].n_results; j++) {
      const char *f = r->s->problems[i].results[j].family;
      int at = 0;
      while (at < r->n_families && strcmp(r->families[at], f) < 0) at++;
      if (!f[0] || (at < r->n_families && !strcmp(r->families[at], f)) || r->n_families == REPORT_MAX_FAMILIES)
        continue;
      memmove(r->families[at + 1], r->families[at], (size_t)(r->n_families - at) * sizeof r->families[0]);
      snprintf(r->families[at], sizeof r->families[at], "%s", f);
      r->n_families++;
    }
}

/* The later of two correct results of a baseline (timestamps sort as text). */
static const ft_stored_result *latest(const ft_stored_result *a, const ft_stored_result *b) {
  return !a || strcmp(b->created, a->created) > 0 ? b : a;
}

/* The better of two correct results by the best view's rule: the lower rank (gemm_ratio: time
 * over the cuBLAS GEMM timed beside it), a ranked one before one without, then the lower median. */
static const ft_stored_result *faster(const ft_stored_result *a, const ft_stored_result *b) {
  if (!a) return b;
  if ((a->gemm_ratio > 0) != (b->gemm_ratio > 0)) return b->gemm_ratio > 0 ? b : a;
  if (a->gemm_ratio > 0 && a->gemm_ratio != b->gemm_ratio) return b->gemm_ratio < a->gemm_ratio ? b : a;
  return b->median_ms < a->median_ms ? b : a;
}

static void add_family_best(report_mode *m, const ft_stored_result *res) {
  int at = 0;
  while (at < m->n_fam && strcmp(m->fam_best[at]->family, res->family) < 0) at++;
  if (at < m->n_fam && !strcmp(m->fam_best[at]->family, res->family)) {
    m->fam_best[at] = faster(m->fam_best[at], res);
    return;
  }
  if (m->n_fam == REPORT_MAX_FAMILIES) return;
  memmove(&m->fam_best[at + 1], &m->fam_best[at], (size_t)(m->n_fam - at) * sizeof m->fam_best[0]);
  m->fam_best[at] = res;
  m->n_fam++;
}

/* x [m, k], W [n, k] (a gated pair's [2n, k]) and each vector (matrix) read once, y [m, n] written
 * once, in the mode's element types: the least any strategy moves. *gemm_n gets W's rows. */
static double compulsory_bytes(const ft_stored_problem *p, double *gemm_n) {
  const ft_dtype in = ft_math_dtype(p->math);
  const double elem = ft_math_out_dtype(p->math) == FT_DTYPE_F32 ? 4 : 2;
  const double in_elem = in == FT_DTYPE_E4M3 ? 1 : elem;
  ft_epilogue_info *info = NULL;
  const int parsed = ft_epilogue_inspect(p->epilogue, &info, NULL, 0) == FT_OK;
  *gemm_n = (double)p->n * (parsed && info->uses_x2 ? 2 : 1);
  double elems = (double)p->m * p->n + ((double)p->m * p->k + *gemm_n * p->k) * in_elem / elem;
  if (parsed) {
    for (int i = 0; i < info->n_params; i++)
      elems += info->params[i].type == FT_PARAM_TYPE_COLVEC ? (double)p->n
               : info->params[i].type == FT_PARAM_TYPE_ROWVEC ? (double)p->m
               : info->params[i].type == FT_PARAM_TYPE_MATRIX ? (double)p->m * p->n : 0;
  }
  ft_epilogue_info_free(info);
  return elems * elem;
}

static void derive_mode(report_mode *m, const ft_stored_problem *p) {
  memset(m, 0, sizeof *m);
  m->p = p;
  double gemm_n = (double)p->n;
  m->bytes = compulsory_bytes(p, &gemm_n);
  m->flops = 2.0 * (double)p->m * gemm_n * (double)p->k;
  for (int i = 0; i < p->n_results; i++) {
    const ft_stored_result *res = &p->results[i];
    if (res->is_best) m->best = res;
    const int good = res->status == FT_RESULT_OK && report_timed(res);
    switch (res->strategy) {
      case FT_STRATEGY_EAGER: if (good) m->eager = latest(m->eager, res); break;
      case FT_STRATEGY_CUBLAS_GEMM: if (good) m->gemm = faster(m->gemm, res); break;
      case FT_STRATEGY_CUBLASLT: if (good) m->lt = faster(m->lt, res); break;
      default:
        m->n_candidates++;
        m->n_status[res->status]++;
        if (good && res->strategy == FT_STRATEGY_CUBLAS_EPILOGUE) m->pass = faster(m->pass, res);
        if (good && res->strategy == FT_STRATEGY_FUSED) add_family_best(m, res);
        break;
    }
  }
}

static int same_group(const ft_stored_problem *a, const ft_stored_problem *b) {
  return a->device == b->device && a->m == b->m && a->n == b->n && a->k == b->k &&
         !strcmp(a->epilogue_hash, b->epilogue_hash);
}

int report_groups(const ft_stored *s, report_group **out, int *n) {
  *out = NULL;
  *n = 0;
  if (!s->n_problems) return 0;
  report_group *g = calloc((size_t)s->n_problems, sizeof *g);
  if (!g) return -1;
  for (int i = 0; i < s->n_problems; i++) {
    /* Problems are sorted by device, shape, epilogue, then mode: a group is a run of them. */
    if (!*n || !same_group(&s->problems[g[*n - 1].first], &s->problems[i]) || g[*n - 1].n == FT_MATH_COUNT)
      g[(*n)++].first = i;
    report_group *cur = &g[*n - 1];
    derive_mode(&cur->modes[cur->n++], &s->problems[i]);
  }
  *out = g;
  return 0;
}
