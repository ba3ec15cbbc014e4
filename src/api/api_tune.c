/* ft_tune_ex (a tune with its full report) and the worker entry point (fusedtune_tool.h). */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "fusedtune_tool.h"
#include "runner.h"

static ft_status make_report(const ft_tune_summary *s, ft_tune_report **out, ft_err *err) {
  ft_tune_report *r = calloc(1, sizeof *r);
  ft_result_info *res = calloc((size_t)s->nentries + 1, sizeof *res);
  if (!r || !res) {
    free(r);
    free(res);
    return ft__fail(err, FT_ERR_NOMEM, "out of memory for the tune report");
  }
  snprintf(r->device_name, sizeof r->device_name, "%s", s->device_name);
  snprintf(r->epilogue, sizeof r->epilogue, "%s", s->epilogue);
  r->flops = s->flops;
  r->eager_ms = s->eager_ms;
  r->n_candidates = s->n_candidates;
  r->n_measured = s->n_measured;
  r->n_ok = s->n_ok;
  r->n_wrong = s->n_wrong;
  r->n_compile_error = s->n_compile_error;
  r->n_launch_error = s->n_launch_error;
  r->n_timeout = s->n_timeout;
  r->n_known = s->n_skipped_known;
  r->n_compiled = s->n_compiled;
  r->n_cached = s->n_cached;
  r->compile_s = s->compile_s;
  r->total_s = s->total_s;
  r->phases = s->phases;
  r->budget_exhausted = s->budget_exhausted;
  r->n_early_stopped = s->n_early_stopped;
  r->n_error_pruned = s->n_error_pruned;
  r->worker_restarts = s->worker_restarts;
  r->has_best = s->has_best;
  if (s->has_best) ft__fill_config(&r->best, &s->best, 1);
  for (int i = 0; i < s->nentries; i++) res[i] = s->entries[i];
  r->n_results = s->nentries;
  r->results = res;
  *out = r;
  return FT_OK;
}

ft_status ft_tune_ex(ft_ctx *ctx, const ft_problem *p, const ft_tune_options *opt, ft_tune_report **report) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  if (!report) return ft__fail(ft__ctx_err(ctx), FT_ERR_INVALID_ARG, "ft_tune_ex: report is NULL");
  *report = NULL;
  ft_tune_summary sum;
  ft_status s = ft__tune_summary(ctx, p, opt, &sum);
  if (s == FT_OK) s = make_report(&sum, report, ft__ctx_err(ctx));
  ft_tune_summary_free(&sum);
  return s;
}

void ft_tune_report_free(ft_tune_report *report) {
  if (!report) return;
  free(report->results);
  free(report);
}

int ft_worker_serve(int fd) { return ft_worker_main(fd); }
