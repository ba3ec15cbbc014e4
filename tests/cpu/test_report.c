/* `fusedtune report` end to end, no GPU: a database made from an import fixture with several
 * devices, problems, math modes, kernel families and every status; the report run through the
 * CLI; its HTML checked by tests/cpu/report_check.py (well-formed, nothing external, each chart's
 * marks) against what the fixture stored. Also the empty database, a problem not stored, bad
 * arguments and refused output files. `test_report --fixture FILE` only writes the fixture (the
 * Chromium test uses it). */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "ft_test.h"
#include "fusedtune_tool.h"

static char script[1024];

/* Runs the shell command fmt (with a and b for its %s) in the scratch folder, output in R. */
static int sh(const char *fmt, const char *a, const char *b) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, fmt, a ? a : "", b ? b : "");
  return capture(cmd);
}

/* ---------------------------------------------------------------------------------------------
 * The fixture: what is stored, and the marks each chart must then have. */

typedef struct fx_device {
  const char *fp, *name;
} fx_device;

/* A device whose name needs escaping: the report must never let stored text become markup. */
static const fx_device k_devices[] = {
    {"00000000000000aa", "NVIDIA H200 <b>\"&'</b>"},
    {"00000000000000bb", "NVIDIA H100"},
};

typedef struct fx_problem {
  int dev;
  int64_t m, n, k;
  const char *epilogue;
  ft_math math;
  int has_run;
  char canonical[512], hash[17];
} fx_problem;

static fx_problem k_problems[] = {
    {0, 128, 4096, 4096, "relu(x + bias)", FT_MATH_FP32, 1, "", ""},
    {0, 128, 4096, 4096, "relu(x + bias)", FT_MATH_TF32, 1, "", ""},
    {0, 128, 4096, 4096, "relu(x + bias)", FT_MATH_BF16, 1, "", ""},
    {1, 256, 1024, 512, "minsub", FT_MATH_FP32, 1, "", ""},
    {0, 64, 64, 64, "x * scale where scalar scale = 0.5", FT_MATH_FP32, 0, "", ""},
};
#define N_PROBLEMS ((int)(sizeof k_problems / sizeof k_problems[0]))

/* The marks expected per (problem, mode): candidates and dims per mode, the rest per group. */
typedef struct fx_expect {
  int candidates, dims;
  int baselines;  /* correct timed eager, cublas_gemm, cublaslt */
  int pass;       /* a correct timed cublas+epilogue */
  int fam_ok[4];  /* correct timed fused per family: rows, warp, tc, other */
  int has_best, eager_timed, gemm_timed;
  int best_err, eager_err; /* checked (rel_err stored) */
  double best_ms;
} fx_expect;
static fx_expect E[N_PROBLEMS];

static FILE *J;
static int n_results;

static int family_of(const char *name) {
  if (!strncmp(name, "tc_", 3)) return 2;
  size_t n = strlen(name);
  if (!strncmp(name, "gemm_", 5)) return n > 2 && !strcmp(name + n - 2, "_w") ? 1 : 0;
  return 3;
}

static void run_uuid(char *out, int p) { snprintf(out, 37, "11111111-0000-4000-8000-%012d", p); }

static void result(int pi, const char *strategy, const char *variant, const char *config, const char *status,
                   double ms, double rel, const char *msg) {
  const fx_problem *p = &k_problems[pi];
  fx_expect *e = &E[pi];
  char run[37];
  run_uuid(run, pi);
  fprintf(J, "%s\n{\"uuid\":\"22222222-0000-4000-8000-%012d\",\"run\":", n_results ? "," : "", n_results);
  if (p->has_run) fprintf(J, "\"%s\"", run);
  else fputs("null", J);
  fprintf(J, ",\"device\":\"%s\",\"problem\":{\"m\":%lld,\"n\":%lld,\"k\":%lld,\"layout\":\"xrow_wrow\",\"math\":\"%s\","
             "\"epilogue_hash\":\"%s\"},\"strategy\":\"%s\",\"variant\":",
          k_devices[p->dev].fp, (long long)p->m, (long long)p->n, (long long)p->k, ft_math_name(p->math), p->hash,
          strategy);
  ft_write_json_string(J, variant);
  fputs(",\"config\":", J);
  ft_write_json_string(J, config);
  fprintf(J, ",\"status\":\"%s\",", status);
  if (ms > 0) fprintf(J, "\"median_ms\":%.17g,\"min_ms\":%.17g,\"iqr_ms\":%.17g,\"repeats\":30,", ms, ms * 0.98, ms * 0.01);
  else fputs("\"median_ms\":null,\"min_ms\":null,\"iqr_ms\":null,\"repeats\":0,", J);
  if (rel >= 0) fprintf(J, "\"rel_err\":%.17g,\"max_abs_err\":%.17g,", rel, rel * 3);
  else fputs("\"rel_err\":null,\"max_abs_err\":null,", J);
  fprintf(J, "\"source_hash\":\"%s\",\"fusedtune_version\":\"0.9.0\",\"message\":",
          strcmp(strategy, "fused") && strcmp(strategy, "cublas+epilogue") ? "" : "0123456789abcdef");
  ft_write_json_string(J, msg);
  fprintf(J, ",\"created\":\"2026-11-29T08:%02d:%02d.000Z\"}", n_results / 60 % 60, n_results % 60);
  n_results++;

  const int ok = !strcmp(status, "ok") && ms > 0;
  const int cand = !strcmp(strategy, "fused") || !strcmp(strategy, "cublas+epilogue");
  if (cand) e->candidates++;
  if (!strcmp(strategy, "eager") || !strcmp(strategy, "cublas_gemm") || !strcmp(strategy, "cublaslt")) {
    e->baselines += ok;
    if (!strcmp(strategy, "eager") && ok) e->eager_timed = 1, e->eager_err = rel >= 0;
    if (!strcmp(strategy, "cublas_gemm") && ok) e->gemm_timed = 1;
  }
  if (!strcmp(strategy, "cublas+epilogue") && ok) e->pass = 1;
  if (!strcmp(strategy, "fused") && ok) {
    e->fam_ok[family_of(variant)] = 1;
    /* tile and stages for every GEMM family; split where the variant has the key (always in
     * the fp32 families, the tc family's split-K ones). */
    e->dims += 2 + (strstr(config, "\"split_k\"") != NULL);
  }
  if (cand && ok && (!e->has_best || ms < e->best_ms)) e->has_best = 1, e->best_ms = ms, e->best_err = rel >= 0;
}


/* The candidates of problem pi: per family, the first few enumerated variants with statuses
 * cycling as given, ok ones timed. */
static void candidates(int pi, const int *per_family, const char *const *status_cycle, int n_cycle) {
  const fx_problem *p = &k_problems[pi];
  ft_problem pr = {p->m, p->n, p->k, p->epilogue, p->math};
  ft_variant_list *list = NULL;
  char msg[512];
  ft_status s = ft_variants(&pr, "sm_90", 0, &list, msg, sizeof msg);
  if (s != FT_OK) {
    FT_FAIL_AT_("ft_variants: %s", msg);
    return;
  }
  int taken[4] = {0, 0, 0, 0}, k = 0;
  for (int i = 0; i < list->count; i++) {
    const ft_variant_info *v = &list->items[i];
    const int fam = v->strategy == FT_STRATEGY_CUBLAS_EPILOGUE ? 3 : family_of(v->name);
    if (taken[fam] >= per_family[fam]) continue;
    taken[fam]++;
    const char *st = status_cycle[k++ % n_cycle];
    const int ok = !strcmp(st, "ok");
    const char *m = !strcmp(st, "compile_error") ? "error: <script>alert(1)</script> & \"quotes\" \xff bad byte"
                    : !strcmp(st, "wrong_result") ? "rel_err 0.5 > 1e-05"
                                                  : "";
    result(pi, ft_strategy_name(v->strategy), v->name, v->config, st, ok ? 0.05 + 0.01 * k : -1,
           ok || !strcmp(st, "wrong_result") ? 1e-7 * k : -1, m);
  }
  ft_variant_list_free(list);
}

static void baselines(int pi, int lt, double eager_ms) {
  result(pi, "eager", "cuBLAS GEMM+BIAS + 1 elementwise kernel(s)", "{}", "ok", eager_ms, 2e-7, "");
  result(pi, "cublas_gemm", "cuBLAS GEMM alone (no epilogue)", "{}", "ok", eager_ms * 0.8, 1e-7, "");
  if (lt) result(pi, "cublaslt", "cuBLASLt RELU_BIAS", "{}", "ok", eager_ms * 0.85, 2e-7, "");
}

static void write_fixture(const char *path) {
  memset(E, 0, sizeof E);
  n_results = 0;
  for (int i = 0; i < N_PROBLEMS; i++) {
    ft_epilogue_info *info = NULL;
    if (ft_epilogue_inspect(k_problems[i].epilogue, &info, NULL, 0) != FT_OK) {
      FT_FAIL_AT_("epilogue %s does not parse", k_problems[i].epilogue);
      return;
    }
    snprintf(k_problems[i].canonical, sizeof k_problems[i].canonical, "%s", info->canonical);
    snprintf(k_problems[i].hash, sizeof k_problems[i].hash, "%s", info->hash);
    ft_epilogue_info_free(info);
  }
  J = fopen(path, "w");
  if (!J) {
    FT_FAIL_AT_("cannot write %s", path);
    return;
  }
  fputs("{\"format\":\"fusedtune-export\",\"version\":1,\n\"devices\":[", J);
  for (int d = 0; d < 2; d++) {
    fprintf(J, "%s\n{\"fingerprint\":\"%s\",\"name\":", d ? "," : "", k_devices[d].fp);
    ft_write_json_string(J, k_devices[d].name);
    fputs(",\"cc_major\":9,\"cc_minor\":0,\"sm_count\":132,\"mem_bytes\":150011101184,\"driver_version\":13000,"
          "\"runtime_version\":13000,\"nvrtc_version\":13000,\"cublas_version\":130001,"
          "\"first_seen\":\"2026-11-29T08:00:00.000Z\",\"last_seen\":\"2026-11-29T09:00:00.000Z\"}",
          J);
  }
  fputs("],\n\"problems\":[", J);
  for (int i = 0; i < N_PROBLEMS; i++) {
    const fx_problem *p = &k_problems[i];
    fprintf(J, "%s\n{\"m\":%lld,\"n\":%lld,\"k\":%lld,\"layout\":\"xrow_wrow\",\"math\":\"%s\",\"epilogue\":",
            i ? "," : "", (long long)p->m, (long long)p->n, (long long)p->k, ft_math_name(p->math));
    ft_write_json_string(J, p->canonical);
    fprintf(J, ",\"epilogue_hash\":\"%s\"}", p->hash);
  }
  fputs("],\n\"runs\":[", J);
  for (int i = 0, n = 0; i < N_PROBLEMS; i++) {
    if (!k_problems[i].has_run) continue;
    char uuid[37];
    run_uuid(uuid, i);
    fprintf(J, "%s\n{\"uuid\":\"%s\",\"device\":\"%s\",\"started\":\"2026-11-29T08:00:00.000Z\",\"ended\":%s,"
               "\"tool_version\":\"0.9.0\",\"options\":",
            n++ ? "," : "", uuid, k_devices[k_problems[i].dev].fp, i == 2 ? "null" : "\"2026-11-29T08:30:00.000Z\"");
    ft_write_json_string(J, "{\"search\":\"exhaustive\",\"budget_s\":170,\"repeats\":30,\"note\":\"<i>\"}");
    fprintf(J, ",\"budget_s\":170,\"outcome\":%s}", i == 2 ? "null" : "\"finished\"");
  }
  fputs("],\n\"results\":[", J);
  /* 128x4096x4096 relu(x + bias): fp32 with both fp32 families and the pass, every status; tf32
   * and bf16 with the tensor-core family. */
  static const char *const all[] = {"ok", "ok", "wrong_result", "ok", "compile_error", "ok", "launch_error", "timeout"};
  static const char *const mostly_ok[] = {"ok", "ok", "ok", "wrong_result"};
  static const char *const fails[] = {"compile_error", "launch_error", "timeout"};
  static const char *const ok_only[] = {"ok"};
  baselines(0, 1, 1.0);
  candidates(0, (const int[]){6, 6, 0, 3}, all, 8);
  baselines(1, 1, 0.5);
  candidates(1, (const int[]){0, 0, 5, 2}, mostly_ok, 4);
  baselines(2, 0, 0.4);
  candidates(2, (const int[]){0, 0, 4, 1}, (const char *const[]){"ok", "ok", "timeout"}, 3);
  /* 256x1024x512 minsub on the other device: baselines, and candidates that all failed. */
  baselines(3, 0, 0.2);
  candidates(3, (const int[]){2, 1, 0, 0}, fails, 3);
  /* 64x64x64: one fused kernel recorded outside a run, no baseline at all. */
  candidates(4, (const int[]){1, 0, 0, 0}, ok_only, 1);
  fputs("],\n\"best\":[]\n}\n", J);
  fclose(J);
}

/* ---------------------------------------------------------------------------------------------
 * The checks */

static void shape_of(const fx_problem *p, char *out, size_t cap) {
  snprintf(out, cap, "%s|%lldx%lldx%lld", k_devices[p->dev].fp, (long long)p->m, (long long)p->n, (long long)p->k);
}

/* Expected "chart ..." lines in report_check.py's form, for problems [from, to). */
static int expected_lines(char lines_out[][256], int cap, int from, int to) {
  int n = 0;
  for (int i = from; i < to; i++) {
    char key[128];
    shape_of(&k_problems[i], key, sizeof key);
    const fx_expect *e = &E[i];
    /* The group: this problem and the modes after it of the same device, shape and epilogue. */
    const int first = i == from || strcmp(k_problems[i].epilogue, k_problems[i - 1].epilogue) ||
                      k_problems[i].m != k_problems[i - 1].m || k_problems[i].dev != k_problems[i - 1].dev;
    if (first) {
      int j = i, bars = 0, roof = 0, errs = 0;
      do {
        const fx_expect *x = &E[j];
        bars += x->baselines + x->pass + x->fam_ok[0] + x->fam_ok[1] + x->fam_ok[2];
        roof += x->has_best + x->eager_timed + x->gemm_timed;
        errs += x->best_err + x->eager_err;
        j++;
      } while (j < to && !strcmp(k_problems[j].epilogue, k_problems[i].epilogue) && k_problems[j].m == k_problems[i].m &&
               k_problems[j].dev == k_problems[i].dev);
      if (bars) snprintf(lines_out[n++], 256, "chart %s|-|strategies %d", key, bars);
      if (roof) snprintf(lines_out[n++], 256, "chart %s|-|roofline %d", key, roof);
      if (j - i > 1 && errs) snprintf(lines_out[n++], 256, "chart %s|-|errors %d", key, errs);
    }
    const char *mode = ft_math_name(k_problems[i].math);
    if (e->candidates) snprintf(lines_out[n++], 256, "chart %s|%s|candidates %d", key, mode, e->candidates);
    if (e->dims) snprintf(lines_out[n++], 256, "chart %s|%s|dims %d", key, mode, e->dims);
    if (n + 8 > cap) break;
  }
  return n;
}

static int cmp_line(const void *a, const void *b) { return strcmp(a, b); }

/* Runs report_check.py on FILE and compares its chart lines with the fixture's [from, to). */
static void check_html(const char *file, int from, int to, int sections) {
  if (sh("python3 '%s' '%s'", script, file) != 0) {
    FT_FAIL_AT_("report_check.py %s failed:\n%s", file, R.out);
    return;
  }
  static char got[256][256], want[256][256];
  int ng = 0, ns = 0;
  for (char *line = strtok(R.out, "\n"); line && ng < 256; line = strtok(NULL, "\n")) {
    if (!strncmp(line, "chart ", 6)) snprintf(got[ng++], 256, "%s", line);
    else if (!strncmp(line, "section ", 8)) ns++;
  }
  const int nw = expected_lines(want, 256, from, to);
  ASSERT_EQ_INT(ns, sections);
  qsort(got, (size_t)ng, sizeof got[0], cmp_line);
  qsort(want, (size_t)nw, sizeof want[0], cmp_line);
  ASSERT_EQ_INT(ng, nw);
  for (int i = 0; i < ng && i < nw; i++) ASSERT_EQ_STR(got[i], want[i]);
}

static char *slurp(const char *name, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[1 << 22];
  *len = fread(buf, 1, sizeof buf - 1, f);
  buf[*len] = 0;
  fclose(f);
  return buf;
}

static void test_full_report(void) {
  ASSERT_EQ_INT(run("--db r.db import fixture.json"), 0);
  ASSERT_EQ_INT(run("--db r.db report -o all.html"), 0);
  ASSERT_CONTAINS(R.out, "wrote all.html: 5 problems");
  check_html("all.html", 0, N_PROBLEMS, 3);
  size_t len = 0;
  const char *html = slurp("all.html", &len);
  ASSERT_TRUE(html != NULL);
  if (!html) return;
  /* Stored text is escaped, never markup. */
  ASSERT_CONTAINS(html, "NVIDIA H200 &lt;b&gt;&quot;&amp;&#39;&lt;/b&gt;");
  ASSERT_TRUE(!strstr(html, "<b>\"&'"));
  ASSERT_CONTAINS(html, "&lt;script&gt;alert(1)&lt;/script&gt;");
  ASSERT_CONTAINS(html, "\xEF\xBF\xBD bad byte"); /* the invalid byte as U+FFFD */
  ASSERT_CONTAINS(html, "&quot;note&quot;:&quot;&lt;i&gt;&quot;");
  /* Every problem and mode has its anchor in the index. */
  ASSERT_CONTAINS(html, "href=\"#g0\"");
  ASSERT_CONTAINS(html, "href=\"#g1-tf32\"");
  ASSERT_CONTAINS(html, "id=\"g1-bf16\"");
  ASSERT_CONTAINS(html, "id=\"g2\"");
  /* What cannot be known is said, not drawn: no device peak, an unfinished run, no candidate. */
  ASSERT_CONTAINS(html, "no measured device peaks");
  ASSERT_CONTAINS(html, "(did not finish)");
  ASSERT_CONTAINS(html, "no correct candidate");
  ASSERT_CONTAINS(html, "recorded outside a run");
  ASSERT_CONTAINS(html, "13.0.1 (130001)");

  /* The same database, read-only on disk, reports the same (the open never writes). */
  ASSERT_EQ_INT(sh("chmod a-w r.db && cp all.html all0.html", NULL, NULL), 0);
  ASSERT_EQ_INT(run("--db r.db report --out=all2.html"), 0);
  sh("chmod u+w r.db", NULL, NULL);
}

static void test_one_problem(void) {
  ASSERT_EQ_INT(run("--db r.db report --shape 128x4096x4096 --epilogue 'relu(x+bias)' -o one.html"), 0);
  ASSERT_CONTAINS(R.out, "wrote one.html: 3 problems");
  check_html("one.html", 0, 3, 1);
  ASSERT_EQ_INT(run("--db r.db report --shape 128x4096x4096 --epilogue 'relu(x+bias)' --math tf32 -o tf32.html"), 0);
  ASSERT_CONTAINS(R.out, "wrote tf32.html: 1 problem ");
  check_html("tf32.html", 1, 2, 1);
  ASSERT_EQ_INT(run("--db r.db report --shape 256x1024x512 --epilogue minsub -o failed.html"), 0);
  check_html("failed.html", 3, 4, 1);
  /* Not stored: exit 3, a page that says so. */
  ASSERT_EQ_INT(run("--db r.db report --shape 8x8x8 --epilogue minsub -o none.html"), 3);
  ASSERT_CONTAINS(R.out, "nothing is stored for 8x8x8 minsub");
  size_t len;
  const char *html = slurp("none.html", &len);
  ASSERT_TRUE(html && strstr(html, "Nothing is stored for 8x8x8 minsub") && !strstr(html, "<svg"));
}

static void test_empty(void) {
  ASSERT_EQ_INT(run("--db empty.db init"), 0);
  ASSERT_EQ_INT(run("--db empty.db report -o empty.html"), 3);
  ASSERT_EQ_INT(lines(R.out), 1);
  ASSERT_CONTAINS(R.out, "fusedtune: report: nothing is stored in empty.db");
  size_t len;
  const char *html = slurp("empty.html", &len);
  ASSERT_TRUE(html != NULL);
  if (!html) return;
  ASSERT_CONTAINS(html, "holds no results yet");
  ASSERT_TRUE(!strstr(html, "<svg"));
  check_html("empty.html", 0, 0, 0);
}

static void test_bad_args(void) {
  const char *bad[] = {
      "report",
      "report --shape 8x8x8 -o x.html",
      "report --epilogue minsub -o x.html",
      "report --math bf16 -o x.html",
      "report --shape 8x8x8 --epilogue minsub --math fp64 -o x.html",
      "report --shape 0x8x8 --epilogue minsub -o x.html",
      "report --shape 8x8x8 --epilogue 'sigmod(x)' -o x.html",
      "report -o a.html -o b.html",
      "report -o a.html --out b.html",
      "report --out",
      "report -o ''",
      "report --frobnicate -o x.html",
      "report extra -o x.html",
      "report --db r.db -o x.html",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char a[512];
    snprintf(a, sizeof a, "--db r.db %s", bad[i]);
    int code = run(a);
    if (code != 2 || lines(R.out) != 1)
      FT_FAIL_AT_("'%s' gave exit %d with %d line(s): %s", bad[i], code, lines(R.out), R.out);
  }
  ASSERT_TRUE(access("x.html", F_OK) != 0);
  ASSERT_EQ_INT(run("report --help"), 0);
  ASSERT_CONTAINS(R.out, "usage: fusedtune [--db PATH] report");
  ASSERT_EQ_INT(run("--help"), 0);
  ASSERT_CONTAINS(R.out, "report ");
  /* A missing database is not created. */
  ASSERT_EQ_INT(run("--db missing.db report -o m.html"), 1);
  ASSERT_TRUE(sh("test ! -e missing.db && test ! -e m.html", NULL, NULL) == 0);
}

/* The output is never the database, a link, a FIFO or a folder; a failure leaves nothing. */
static void test_refused_outputs(void) {
  ASSERT_EQ_INT(run("--db r.db report -o r.db"), 1);
  ASSERT_CONTAINS(R.out, "is the database being read");
  ASSERT_EQ_INT(sh("ln -f r.db hard.db && ln -sf all.html link.html && rm -f fifo && mkfifo fifo && mkdir -p d",
                   NULL, NULL), 0);
  ASSERT_EQ_INT(run("--db r.db report -o hard.db"), 1);
  ASSERT_EQ_INT(run("--db r.db report -o link.html"), 1);
  ASSERT_CONTAINS(R.out, "symbolic link");
  ASSERT_EQ_INT(run("--db r.db report -o fifo"), 1);
  ASSERT_CONTAINS(R.out, "not a regular file");
  ASSERT_EQ_INT(run("--db r.db report -o d"), 1);
  ASSERT_EQ_INT(run("--db r.db report -o no/such/dir/x.html"), 1);
  ASSERT_EQ_INT(run("--db r.db report -o d/"), 1);
  ASSERT_EQ_INT(sh("cmp -s r.db hard.db && test -L link.html && test -p fifo && ! ls -A d | grep -q . "
                   "&& ! ls -a | grep -q '^.fusedtune-'", NULL, NULL), 0);
  /* An existing report keeps its mode when replaced. */
  ASSERT_EQ_INT(sh("chmod 640 all.html", NULL, NULL), 0);
  ASSERT_EQ_INT(run("--db r.db report -o all.html"), 0);
  ASSERT_EQ_INT(sh("test \"$(stat -c %%a all.html)\" = 640", NULL, NULL), 0);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--fixture")) {
    write_fixture(argv[2]);
    return FT_TEST_DONE();
  }
  cli = getenv("FT_CLI");
  const char *tmp = getenv("FT_TEST_TMP");
  if (!cli) RETURN_FAIL("FT_CLI is not set (run through ctest)");
  const char *src = getenv("FT_TEST_SRC");
  snprintf(script, sizeof script, "%s/report_check.py", src ? src : ".");
  snprintf(dir, sizeof dir, "%s/test_report_%ld", tmp && tmp[0] ? tmp : "/tmp", (long)getpid());
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
  if (system(cmd) != 0) RETURN_FAIL("cannot make %s", dir);
  if (sh("command -v python3 >/dev/null", NULL, NULL) != 0) {
    if (getenv("CI")) RETURN_FAIL("python3 is missing: CI must have it (the HTML checker is a Python script)");
    RETURN_SKIP("python3 is missing: the HTML checker (tests/cpu/report_check.py) needs it");
  }
  char fixture[1024];
  snprintf(fixture, sizeof fixture, "%s/fixture.json", dir);
  write_fixture(fixture);
  test_full_report();
  test_one_problem();
  test_empty();
  test_bad_args();
  test_refused_outputs();
  if (!ft_test_failures) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  return FT_TEST_DONE();
}
