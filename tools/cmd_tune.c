/* GPU-side commands: tune, devices; and the GPU-free inspection commands variants, epilogue. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "compile.h"
#include "device.h"
#include "tuner.h"

static const char *tune_help =
    "usage: fusedtune [--db PATH] tune --shape MxNxK --epilogue E [options]\n"
    "       fusedtune [--db PATH] --shape MxNxK --epilogue E [options]\n"
    "Tunes y = E(x W^T) on this GPU: runs every kernel variant on random inputs, checks it against a\n"
    "float64 reference, times the correct ones beside the cuBLAS baselines, stores every result.\n"
    "\n"
    "  --shape MxNxK        M rows of x, N output features, K input features (required)\n"
    "  --epilogue E         expression or preset (default: none); see 'fusedtune epilogue --help'\n"
    "  --math fp32          math mode (only fp32 exists: FFMA, error <= 1e-5 vs float64)\n"
    "  --strategy S         exhaustive (default), random, or halving (time all briefly, re-time best quarter)\n"
    "  --budget SECONDS     bound on the whole tune, compilation included (default 150); what finished is stored\n"
    "  --repeats N          timed repeats per candidate, >= 20 (default 30)\n"
    "  --retune             measure again candidates already measured with the same kernel source\n"
    "  --flush-l2           overwrite L2 before every timed repeat\n"
    "  --seed N             input seed (default fixed, so runs are comparable)\n"
    "  --max-candidates N   measure at most N candidates (for quick checks)\n"
    "  --quiet              no progress output\n"
    "  --json               print the final result as JSON\n";

typedef struct tune_cli {
  const char *shape, *epi;
  ft_tune_req req;
  int json, quiet;
} tune_cli;

static int parse_tune_args(int argc, char **argv, tune_cli *t) {
  opt_iter it = {argc, argv, 0, "tune"};
  const char *a;
  int pos;
  while ((a = opt_next(&it, &pos))) {
    if (pos) return usage_error("tune", "unexpected argument '%s'", a);
    size_t nl = strcspn(a, "=");
#define IS(name) (nl == strlen(name) && !strncmp(a, name, nl))
    const int flag = IS("--json") || IS("--quiet") || IS("--retune") || IS("--flush-l2");
    if (flag && a[nl] == '=') return usage_error("tune", "option %.*s takes no value", (int)nl, a);
    if (IS("--json")) t->json = 1;
    else if (IS("--quiet")) t->quiet = 1;
    else if (IS("--retune")) t->req.retune = 1;
    else if (IS("--flush-l2")) t->req.flush_l2 = 1;
    else {
      const char *v = NULL;
      if (!IS("--shape") && !IS("--epilogue") && !IS("--math") && !IS("--strategy") && !IS("--budget") &&
          !IS("--repeats") && !IS("--seed") && !IS("--max-candidates"))
        return usage_error("tune", "unknown option '%s'", a);
      if (!(v = opt_value(&it, a))) return EXIT_USAGE;
      long l;
      if (IS("--shape")) t->shape = v;
      else if (IS("--epilogue")) t->epi = v;
      else if (IS("--math")) {
        if (!parse_math(v, &t->req.math)) return usage_error("tune", "unknown --math '%s' (only fp32 exists so far)", v);
      } else if (IS("--strategy")) {
        if (strcmp(v, "exhaustive") && strcmp(v, "random") && strcmp(v, "halving"))
          return usage_error("tune", "unknown --strategy '%s' (exhaustive, random, halving)", v);
        t->req.search = v;
      } else if (IS("--budget")) {
        if (!parse_double(v, &t->req.budget_s) || t->req.budget_s <= 0)
          return usage_error("tune", "--budget '%s' is not a positive number of seconds", v);
      } else if (IS("--repeats")) {
        if (!parse_int(v, 20, 1000, &l)) return usage_error("tune", "--repeats '%s' must be an integer in 20..1000", v);
        t->req.repeats = (int)l;
      } else if (IS("--seed")) {
        if (!parse_int(v, 1, 0x7fffffffL, &l)) return usage_error("tune", "--seed '%s' must be a positive integer", v);
        t->req.seed = (uint64_t)l;
      } else if (IS("--max-candidates")) {
        if (!parse_int(v, 1, 1000000, &l)) return usage_error("tune", "--max-candidates '%s' must be a positive integer", v);
        t->req.max_candidates = (int)l;
      }
    }
#undef IS
  }
  return 0;
}

static double tflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0; }

static int cmp_entry(const void *a, const void *b) {
  const ft_tune_entry *x = a, *y = b;
  int xo = !strcmp(x->status, "ok"), yo = !strcmp(y->status, "ok");
  if (xo != yo) return yo - xo;
  return (x->median_ms > y->median_ms) - (x->median_ms < y->median_ms);
}

static int is_candidate(const ft_tune_entry *e) {
  return !strcmp(e->strategy, "fused") || !strcmp(e->strategy, "cublas+epilogue");
}

static void print_row(const ft_tune_entry *e, const ft_tune_summary *s) {
  char sp[16] = "-", tf[16] = "-", ms[16] = "-";
  if (!strcmp(e->status, "ok")) {
    snprintf(ms, sizeof ms, "%.4f", e->median_ms);
    snprintf(tf, sizeof tf, "%.1f", tflops(s->flops, e->median_ms));
    if (s->eager_ms > 0) snprintf(sp, sizeof sp, "%.3fx", s->eager_ms / e->median_ms);
  }
  printf("  %-16s %-48.48s %-12s %10s %8s %10.2e %8s\n", e->strategy, e->variant, e->status, ms, tf, e->rel_err, sp);
}

static void print_summary(const tune_cli *t, const ft_tune_summary *s) {
  printf("\n%s  %lldx%lldx%lld  epilogue %s  fp32\n", s->device_name, (long long)t->req.m, (long long)t->req.n,
         (long long)t->req.k, s->epilogue);
  printf("  %-16s %-48s %-12s %10s %8s %10s %8s\n", "strategy", "variant", "status", "median_ms", "TFLOP/s", "rel_err",
         "vs eager");
  ft_tune_entry *sorted = malloc((size_t)s->nentries * sizeof *sorted);
  if (!sorted) return;
  memcpy(sorted, s->entries, (size_t)s->nentries * sizeof *sorted);
  qsort(sorted, (size_t)s->nentries, sizeof *sorted, cmp_entry);
  for (int i = 0; i < s->nentries; i++)
    if (!is_candidate(&sorted[i])) print_row(&sorted[i], s);
  int shown = 0;
  for (int i = 0; i < s->nentries && shown < 10; i++)
    if (is_candidate(&sorted[i]) && !strcmp(sorted[i].status, "ok")) print_row(&sorted[i], s), shown++;
  free(sorted);
  printf("\n%d candidates: %d measured now (%d ok, %d wrong_result, %d compile_error, %d launch_error, %d timeout), "
         "%d measured before (--retune to repeat)%s\n",
         s->n_candidates, s->n_measured, s->n_ok, s->n_wrong, s->n_compile_error, s->n_launch_error, s->n_timeout,
         s->n_skipped_known, s->budget_exhausted ? "; budget ran out" : "");
  printf("compile: %d compiled, %d from cache, %.1f s; total %.1f s", s->n_compiled, s->n_cached, s->compile_s,
         s->total_s);
  if (s->worker_restarts) printf("; worker restarted %d time(s) after a fault or hang", s->worker_restarts);
  printf("\n");
  if (s->has_best) {
    printf("best: %s %s  %.4f ms", s->best.strategy, s->best.variant, s->best.median_ms);
    if (s->best.eager_ms > 0) printf("  (%.3fx vs eager %.4f ms)", s->best.eager_ms / s->best.median_ms, s->best.eager_ms);
    printf("\n");
  } else {
    printf("best: none (no candidate was correct)\n");
  }
}

/* A JSON number, or null where there is none (unmeasured: < 0; not finite). */
static void json_number(double v) {
  if (isfinite(v) && v >= 0) printf("%.17g", v);
  else printf("null");
}

static void print_summary_json(const ft_tune_summary *s) {
  printf("{\"device\":");
  ft_json_write_string(stdout, s->device_name);
  printf(",\"epilogue\":");
  ft_json_write_string(stdout, s->epilogue);
  printf(",\"eager_ms\":%.17g,\"candidates\":%d,\"measured\":%d,\"ok\":%d,\"wrong_result\":%d,"
         "\"compile_error\":%d,\"launch_error\":%d,\"timeout\":%d,\"known\":%d,\"compiled\":%d,\"cached\":%d,"
         "\"compile_s\":%.3f,\"total_s\":%.3f,\"budget_exhausted\":%s,\"best\":",
         s->eager_ms, s->n_candidates, s->n_measured, s->n_ok, s->n_wrong, s->n_compile_error, s->n_launch_error,
         s->n_timeout, s->n_skipped_known, s->n_compiled, s->n_cached, s->compile_s, s->total_s,
         s->budget_exhausted ? "true" : "false");
  if (!s->has_best) {
    printf("null");
  } else {
    printf("{\"strategy\":");
    ft_json_write_string(stdout, s->best.strategy);
    printf(",\"variant\":");
    ft_json_write_string(stdout, s->best.variant);
    printf(",\"config\":%s,\"median_ms\":%.17g,\"eager_ms\":%.17g}", s->best.config_json, s->best.median_ms,
           s->best.eager_ms);
  }
  printf(",\"results\":[");
  for (int i = 0; i < s->nentries; i++) {
    const ft_tune_entry *e = &s->entries[i];
    printf("%s{\"strategy\":", i ? "," : "");
    ft_json_write_string(stdout, e->strategy);
    printf(",\"variant\":");
    ft_json_write_string(stdout, e->variant);
    printf(",\"status\":");
    ft_json_write_string(stdout, e->status);
    printf(",\"median_ms\":");
    json_number(e->median_ms);
    printf(",\"rel_err\":");
    json_number(e->rel_err);
    printf("}");
  }
  printf("]}\n");
}

static volatile int interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

int cmd_tune(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv, tune_help)) return 0;
  tune_cli t;
  memset(&t, 0, sizeof t);
  t.req.search = "exhaustive";
  t.req.budget_s = FT_TUNE_DEFAULT_BUDGET_S;
  t.req.repeats = FT_TUNE_DEFAULT_REPEATS;
  t.epi = "none";
  int rc = parse_tune_args(argc, argv, &t);
  if (rc) return rc;
  if (!t.shape) return usage_error("tune", "--shape MxNxK is required");
  char why[256];
  if (!parse_shape(t.shape, &t.req.m, &t.req.n, &t.req.k, why, sizeof why)) return usage_error("tune", "%s", why);
  t.req.epilogue = t.epi;
  ft_err err;
  ft__err_clear(&err);
  ft_epilogue *ep = NULL;
  if (ft_ep_parse(t.epi, &ep, &err) != FT_OK) return fail_err(&err); /* before any device or database */
  ft_ep_free(ep);
  t.req.progress = t.quiet ? 0 : (isatty(2) ? 2 : 1);
  ft_gpu *g = NULL;
  ft_db *db = NULL;
  /* No GPU: say so before the database is created. */
  if (ft_gpu_open(0, &g, &err) != FT_OK) return fail_err(&err);
  ft_gpu_close(g);
  if (cli_open_db(c, 1, &db, &err) != FT_OK) return fail_err(&err);
  /* Ctrl-C ends the tune after the candidate in flight; everything measured is already stored. */
  t.req.stop = &interrupted;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the process at once */
  sigaction(SIGINT, &sa, NULL);
  /* Candidates run in worker processes of this same executable: a fault or a hang costs one
   * candidate and a restart. */
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len > 0) {
    exe[len] = '\0';
    t.req.worker_exe = exe;
  }
  ft_tune_summary s;
  ft_status st = ft_tune_run(db, &t.req, &s, &err);
  if (st == FT_OK) {
    if (t.json) print_summary_json(&s);
    else print_summary(&t, &s);
  }
  ft_tune_summary_free(&s);
  ft_db_close(db);
  return st == FT_OK ? 0 : fail_err(&err);
}

int cmd_devices(cli *c, int argc, char **argv) {
  (void)c;
  int json = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
      return fputs("usage: fusedtune devices [--json]\nLists the visible CUDA devices with the fingerprint results "
                   "are stored under.\n", stdout), 0;
    if (!strcmp(argv[i], "--json")) json = 1;
    else return usage_error("devices", "unexpected argument '%s'", argv[i]);
  }
  ft_err err;
  ft__err_clear(&err);
  ft_gpu *g = NULL;
  if (ft_gpu_open(0, &g, &err) != FT_OK) return fail_err(&err);
  int count = 0;
  cudaGetDeviceCount(&count);
  ft_gpu_close(g);
  if (json) printf("[");
  for (int d = 0; d < count; d++) {
    if (ft_gpu_open(d, &g, &err) != FT_OK) return fail_err(&err);
    const ft_device_info *i = ft_gpu_info(g);
    if (json) {
      printf("%s{\"index\":%d,\"name\":", d ? "," : "", d);
      ft_json_write_string(stdout, i->name);
      printf(",\"fingerprint\":\"%s\",\"arch\":\"%s\",\"sm_count\":%d,\"mem_bytes\":%lld,\"driver\":%d,"
             "\"runtime\":%d,\"nvrtc\":%d,\"cublas\":%d}",
             i->fingerprint, ft_gpu_arch(g), i->sm_count, (long long)i->mem_bytes, i->driver_version,
             i->runtime_version, i->nvrtc_version, i->cublas_version);
    } else {
      printf("#%d %s  %s  %d SMs  %.1f GiB  fingerprint %s  driver %d runtime %d nvrtc %d cublas %d\n", d, i->name,
             ft_gpu_arch(g), i->sm_count, (double)i->mem_bytes / (1 << 30), i->fingerprint, i->driver_version,
             i->runtime_version, i->nvrtc_version, i->cublas_version);
    }
    ft_gpu_close(g);
  }
  if (json) printf("]\n");
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compile_all(ft_variant *vs, int n, const ft_epilogue *ep, const char *arch, int json) {
  ft_kernel_src *src = calloc((size_t)n, sizeof *src);
  ft_compile_job *jobs = calloc((size_t)n, sizeof *jobs);
  ft_err err;
  ft__err_clear(&err);
  if (!src || !jobs) {
    free(src);
    free(jobs);
    return fail_msg("out of memory");
  }
  ft_status st = FT_OK;
  for (int i = 0; i < n && st == FT_OK; i++) {
    st = ft_codegen_variant(&vs[i], ep, &src[i], &err);
    jobs[i].src = src[i].text;
    jobs[i].hash = src[i].hash;
  }
  double t0 = now_s();
  if (st == FT_OK) st = ft_compile_many(NULL, arch, jobs, n, 0, &err);
  double dt = now_s() - t0;
  int ok = 0;
  for (int i = 0; i < n; i++) {
    ok += jobs[i].status == FT_OK;
    if (st == FT_OK && jobs[i].status != FT_OK && !json) {
      char name[128];
      ft_variant_name(&vs[i], name, sizeof name);
      fprintf(stderr, "compile failed: %s: %.300s\n", name, jobs[i].log ? jobs[i].log : "");
    }
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
  free(src);
  free(jobs);
  if (st != FT_OK) return fail_err(&err);
  if (json) printf("{\"compiled_ok\":%d,\"failed\":%d,\"wall_s\":%.3f}\n", ok, n - ok, dt);
  else printf("compiled %d variant(s) for %s: %d ok, %d failed, %.1f s wall\n", n, arch, ok, n - ok, dt);
  return ok == n ? 0 : 1;
}

int cmd_variants(cli *c, int argc, char **argv) {
  (void)c;
  const char *shape = NULL, *epi = "none", *arch = NULL;
  int json = 0, compile = 0;
  opt_iter it = {argc, argv, 0, "variants"};
  const char *a;
  int pos;
  while ((a = opt_next(&it, &pos))) {
    if (pos) return usage_error("variants", "unexpected argument '%s'", a);
    size_t nl = strcspn(a, "=");
    if (!strcmp(a, "-h") || !strcmp(a, "--help"))
      return fputs("usage: fusedtune variants --shape MxNxK [--epilogue E] [--arch sm_90] [--compile] [--json]\n"
                   "Lists the kernel variants (fused GEMM and standalone epilogue) applicable to the problem on\n"
                   "the architecture (default: this GPU's, else sm_90). --compile compiles them all with NVRTC\n"
                   "(no GPU needed) and reports ok/failed counts and wall time.\n", stdout), 0;
    if (!strcmp(a, "--json")) json = 1;
    else if (!strcmp(a, "--compile")) compile = 1;
    else if (nl == 7 && !strncmp(a, "--shape", 7)) { if (!(shape = opt_value(&it, a))) return EXIT_USAGE; }
    else if (nl == 10 && !strncmp(a, "--epilogue", 10)) { if (!(epi = opt_value(&it, a))) return EXIT_USAGE; }
    else if (nl == 6 && !strncmp(a, "--arch", 6)) { if (!(arch = opt_value(&it, a))) return EXIT_USAGE; }
    else return usage_error("variants", "unknown option '%s'", a);
  }
  if (!shape) return usage_error("variants", "--shape MxNxK is required");
  int64_t m, n, k;
  char why[256];
  if (!parse_shape(shape, &m, &n, &k, why, sizeof why)) return usage_error("variants", "%s", why);
  ft_err err;
  ft__err_clear(&err);
  ft_epilogue *ep = NULL;
  if (ft_ep_parse(epi, &ep, &err) != FT_OK) return fail_err(&err);
  ft_device_limits lim;
  char archbuf[16];
  ft_gpu *g = NULL;
  if (!arch && ft_gpu_open(0, &g, &err) == FT_OK) {
    lim = *ft_gpu_limits(g);
    snprintf(archbuf, sizeof archbuf, "%s", ft_gpu_arch(g));
    arch = archbuf;
    ft_gpu_close(g);
  } else {
    if (!arch) arch = "sm_90";
    if (ft_limits_for_arch(arch, &lim, &err) != FT_OK) {
      ft_ep_free(ep);
      return usage_error("variants", "%s", err.msg);
    }
  }
  ft_variant *all = NULL;
  int total = 0, rc = 0;
  for (int kind = 0; kind < 2 && rc == 0; kind++) {
    ft_variant *vs = NULL;
    int nv = 0;
    if (ft_space_enumerate((ft_variant_kind)kind, m, n, k, &lim, &vs, &nv, &err) != FT_OK) {
      rc = fail_err(&err);
      break;
    }
    ft_variant *na = realloc(all, (size_t)(total + nv + 1) * sizeof *na);
    if (!na) {
      free(vs);
      rc = fail_msg("out of memory");
      break;
    }
    all = na;
    memcpy(all + total, vs, (size_t)nv * sizeof *vs);
    total += nv;
    free(vs);
  }
  if (rc == 0 && !compile) {
    if (json) printf("[");
    for (int i = 0; i < total; i++) {
      char name[128], js[512];
      ft_variant_name(&all[i], name, sizeof name);
      ft_variant_json(&all[i], js, sizeof js);
      if (json) printf("%s\n  {\"name\":\"%s\",\"config\":%s}", i ? "," : "", name, js);
      else printf("%-52s %s\n", name, js);
    }
    if (json) printf("\n]\n");
    else printf("%d variant(s) for %s, epilogue '%s', %s\n", total, shape, ft_ep_canonical(ep), arch);
  } else if (rc == 0) {
    rc = compile_all(all, total, ep, arch, json);
  }
  free(all);
  ft_ep_free(ep);
  return rc;
}

int cmd_epilogue(cli *c, int argc, char **argv) {
  (void)c;
  const char *text = NULL;
  int json = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      const char *const *names = NULL, *const *texts = NULL;
      int np = ft_ep_presets(&names, &texts);
      printf("usage: fusedtune epilogue EXPR_OR_PRESET [--json]\n"
             "Parses an epilogue and prints its canonical form, parameters and generated CUDA expression.\n"
             "x is the GEMM accumulator; bias is a per-column vector. See docs/EPILOGUE.md.\npresets:\n");
      for (int p = 0; p < np; p++) printf("  %-10s %s\n", names[p], texts[p]);
      return 0;
    }
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!text) text = argv[i];
    else return usage_error("epilogue", "unexpected argument '%s' (quote the expression)", argv[i]);
  }
  if (!text) return usage_error("epilogue", "EXPR_OR_PRESET is required");
  ft_err err;
  ft__err_clear(&err);
  ft_epilogue *ep = NULL;
  if (ft_ep_parse(text, &ep, &err) != FT_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return EXIT_USAGE;
  }
  static const char *kinds[] = {"scalar", "column vector", "row vector"};
  static const char *kinds_json[] = {"scalar", "colvec", "rowvec"};
  if (json) {
    printf("{\"canonical\":");
    ft_json_write_string(stdout, ft_ep_canonical(ep));
    printf(",\"hash\":\"%s\",\"params\":[", ft_ep_hash(ep));
    for (int s = 0; s < ft_ep_param_count(ep); s++) {
      const ft_ep_param *p = ft_ep_param_at(ep, s);
      printf("%s{\"slot\":%d,\"name\":", s ? "," : "", s);
      ft_json_write_string(stdout, p->name);
      printf(",\"kind\":\"%s\",\"default\":", kinds_json[p->kind]);
      if (p->has_default) printf("%.17g}", p->def);
      else printf("null}");
    }
    printf("],\"cuda\":");
    ft_json_write_string(stdout, ft_ep_cuda(ep));
    printf("}\n");
  } else {
    printf("canonical  %s\nhash       %s\n", ft_ep_canonical(ep), ft_ep_hash(ep));
    for (int s = 0; s < ft_ep_param_count(ep); s++) {
      const ft_ep_param *p = ft_ep_param_at(ep, s);
      printf("param %d    %s: %s", s, p->name, kinds[p->kind]);
      if (p->has_default) printf(", default %.17g", p->def);
      printf("\n");
    }
    printf("cuda       %s\n", ft_ep_cuda(ep));
  }
  ft_ep_free(ep);
  return 0;
}
