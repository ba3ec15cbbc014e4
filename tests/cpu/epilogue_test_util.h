/* What the epilogue tests share: a parse that must succeed, and one that must fail at a column
 * with a one-line message (test_epilogue, test_epilogue_reduce). */
#ifndef FT_TEST_EPILOGUE_UTIL_H
#define FT_TEST_EPILOGUE_UTIL_H

#include "epilogue.h"
#include "ft_test.h"

/* Parses text, which must succeed; NULL (and a recorded failure) otherwise. */
static inline ft_epilogue *parse_ok_at(const char *text, int line) {
  ft_epilogue *ep = NULL;
  ft_err err;
  ft__err_clear(&err);
  ft_status s = ft_ep_parse(text, &ep, &err);
  if (s != FT_OK) {
    fprintf(stderr, "%s:%d: parse of \"%s\" failed: %s\n", __FILE__, line, text, err.msg);
    ft_test_failures++;
  }
  return ep;
}
#define parse_ok(text) parse_ok_at((text), __LINE__)

/* text parses to the canonical text want, a fixed point (want parses to itself, same hash); the
 * parsed epilogue (the caller frees it), NULL after a failure. */
static inline ft_epilogue *canon_fixed_at(const char *text, const char *want, int line) {
  ft_epilogue *ep = parse_ok_at(text, line), *again = NULL;
  if (!ep) return NULL;
  if (strcmp(ft_ep_canonical(ep), want) != 0) {
    fprintf(stderr, "%s:%d: canon(\"%s\") = \"%s\", want \"%s\"\n", __FILE__, line, text, ft_ep_canonical(ep), want);
    ft_test_failures++;
  }
  again = parse_ok_at(ft_ep_canonical(ep), line);
  if (again) ASSERT_EQ_STR(ft_ep_canonical(again), ft_ep_canonical(ep));
  if (again) ASSERT_EQ_STR(ft_ep_hash(again), ft_ep_hash(ep));
  ft_ep_free(again);
  return ep;
}

/* The float64 reference of text over an m x n matrix (params by slot) against want[0, count),
 * within relative tol; nothing is written past count (at most 64 outputs). */
static inline void reference_is_at(const char *text, int64_t m, int64_t n, const double *x,
                                   const double *const *params, const double *want, int64_t count, double tol,
                                   int line) {
  ft_epilogue *ep = parse_ok_at(text, line);
  if (!ep) return;
  double y[64];
  for (int i = 0; i < 64; i++) y[i] = NAN;
  ft_err err;
  ft__err_clear(&err);
  ft_status s = ft_ep_eval_matrix(ep, m, n, x, params, y, &err);
  if (s != FT_OK) {
    fprintf(stderr, "%s:%d: reference of \"%s\": %s\n", __FILE__, line, text, err.msg);
    ft_test_failures++;
  }
  for (int64_t i = 0; s == FT_OK && i < count; i++) {
    const int same = (isnan(want[i]) && isnan(y[i])) || y[i] == want[i] || fabs(y[i] - want[i]) <= tol * (1 + fabs(want[i]));
    if (!same) {
      fprintf(stderr, "%s:%d: \"%s\"[%lld] = %.17g, want %.17g\n", __FILE__, line, text, (long long)i, y[i], want[i]);
      ft_test_failures++;
    }
  }
  for (int64_t i = count; i < 64; i++) ASSERT_TRUE(isnan(y[i])); /* nothing written past the shape */
  ft_ep_free(ep);
}

/* The canonical text of text is want (a fixed point), the reduction's CUDA texts (ft_ep_cuda_reduce)
 * are inner and post, and a kernel serves it (ft_ep_check_kernels). */
static inline void reduce_parts_at(const char *text, const char *want, const char *inner, const char *post, int line) {
  ft_epilogue *ep = canon_fixed_at(text, want, line);
  if (!ep) return;
  const char *in = NULL, *po = NULL;
  ft_ep_cuda_reduce(ep, &in, &po);
  if (!in || !po || strcmp(in, inner) != 0 || strcmp(po, post) != 0) {
    fprintf(stderr, "%s:%d: \"%s\": inner \"%s\", post \"%s\"; want \"%s\", \"%s\"\n", __FILE__, line, text,
            in ? in : "(null)", po ? po : "(null)", inner, post);
    ft_test_failures++;
  }
  ft_err err;
  ASSERT_OK(ft_ep_check_kernels(ep, &err));
  ft_ep_free(ep);
}

#include "space.h"

/* The variants of kind for text's epilogue on (m, n, 64) in math on sm_90, of scope (FT_SPACE_PRUNED
 * or FT_SPACE_FULL); a kind no family serves for it is FT_ERR_UNSUPPORTED with none. *count is
 * how many; the array is malloc'd (free it), NULL when there are none. */
static inline ft_variant *enumerate_scope(const char *text, ft_variant_kind kind, int64_t m, int64_t n, ft_math math,
                                          int scope, int *count) {
  ft_epilogue *ep = parse_ok(text);
  ft_device_limits lim;
  ft_variant *v = NULL;
  *count = 0;
  ft_err e;
  if (ep && ft_limits_for_arch("sm_90", &lim, &e) == FT_OK) {
    const ft_status s = ft_space_enumerate_ep(kind, m, n, 64, math, (ft_space_scope)scope, ep, &lim, &v, NULL, count, &e);
    ASSERT_TRUE(s == FT_OK || (s == FT_ERR_UNSUPPORTED && *count == 0));
  }
  ft_ep_free(ep);
  return v;
}

/* v[0..*count) without the eager chain's variant (family eager_chain, tests/cpu/test_chain.c), for a
 * test about the other families of its kind. */
static inline ft_variant *drop_chain(ft_variant *v, int *count) {
  int kept = 0;
  for (int i = 0; i < *count; i++)
    if (!(v[i].kind == FT_VK_EPILOGUE && v[i].family == FT_FAMILY_EAGER_CHAIN)) v[kept++] = v[i];
  *count = kept;
  return v;
}

/* v's JSON reads back to v. */
static inline void round_trips(const ft_variant *v) {
  char json[512];
  ft_variant back;
  ft_err e;
  ft_variant_json(v, json, sizeof json);
  ASSERT_OK(ft_variant_from_json(json, &back, &e));
  ASSERT_TRUE(memcmp(&back, v, sizeof back) == 0);
}

#include "codegen.h"
#include "compile.h"

/* src[0..n) through NVRTC for sm_90 (sm_90a where a source asks), two threads: each one must
 * compile without spilling (ft_compile_many rejects that); then frees them and says how many
 * `what` sources compiled. */
static inline void compile_sources(ft_kernel_src *src, int n, const char *what) {
  ft_compile_job *jobs = calloc((size_t)n + 1, sizeof *jobs);
  ft_err e;
  ASSERT_TRUE(jobs != NULL);
  if (!jobs) return;
  for (int i = 0; i < n; i++) jobs[i] = (ft_compile_job){.src = src[i].text, .hash = src[i].hash, .arch_suffix = src[i].arch_suffix};
  ASSERT_OK(ft_compile_many(NULL, "sm_90", jobs, n, 2, &e));
  for (int i = 0; i < n; i++) {
    if (jobs[i].status != FT_OK)
      FT_FAIL_AT_("%s source %d does not compile: %.2000s", what, i, jobs[i].log ? jobs[i].log : "");
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
  free(jobs);
  printf("%d %s sources compiled\n", n, what);
}

/* The parse must fail with FT_ERR_PARSE at column col, the message (one line) containing what. */
static inline void expect_reject_at(const char *text, int col, const char *what, int line) {
  ft_epilogue *ep = NULL;
  ft_err err;
  ft__err_clear(&err);
  ft_status s = ft_ep_parse(text, &ep, &err);
  char want[32];
  snprintf(want, sizeof want, "epilogue: col %d: ", col);
  if (s != FT_ERR_PARSE || ep || strncmp(err.msg, want, strlen(want)) != 0 || !strstr(err.msg, what) ||
      strchr(err.msg, '\n')) {
    fprintf(stderr, "%s:%d: \"%.60s\": status %d, message \"%s\"; want \"%s...%s\"\n", __FILE__, line, text,
            (int)s, err.msg, want, what);
    ft_test_failures++;
  }
  ft_ep_free(ep);
}
#define REJECT(text, col, what) expect_reject_at((text), (col), (what), __LINE__)

#endif
