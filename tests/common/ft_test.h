/* A tiny test harness: assertions that print both sides, and a skip that is a skip (exit 77,
 * mapped to CTest's SKIP_RETURN_CODE), never a pass. */
#ifndef FT_TEST_H
#define FT_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define FT_TEST_SKIP_CODE 77

static int ft_test_failures = 0;

#define FT_FAIL_AT_(...)                                       \
  do {                                                          \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);             \
    fprintf(stderr, __VA_ARGS__);                               \
    fprintf(stderr, "\n");                                      \
    ft_test_failures++;                                         \
  } while (0)

#define ASSERT_TRUE(c)                                          \
  do {                                                          \
    if (!(c)) FT_FAIL_AT_("ASSERT_TRUE(%s) failed", #c);        \
  } while (0)

#define ASSERT_EQ_INT(a, b)                                                              \
  do {                                                                                    \
    long long a_ = (long long)(a), b_ = (long long)(b);                                   \
    if (a_ != b_) FT_FAIL_AT_("ASSERT_EQ_INT(%s, %s): %lld != %lld", #a, #b, a_, b_);     \
  } while (0)

#define ASSERT_EQ_STR(a, b)                                                                    \
  do {                                                                                          \
    const char *a_ = (a), *b_ = (b);                                                            \
    if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                      \
      FT_FAIL_AT_("ASSERT_EQ_STR(%s, %s): \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)",        \
                  b_ ? b_ : "(null)");                                                          \
  } while (0)

#define ASSERT_CONTAINS(hay, needle)                                                           \
  do {                                                                                          \
    const char *h_ = (hay), *n_ = (needle);                                                     \
    if (!h_ || !strstr(h_, n_))                                                                 \
      FT_FAIL_AT_("ASSERT_CONTAINS(%s, %s): \"%s\" lacks \"%s\"", #hay, #needle,                \
                  h_ ? h_ : "(null)", n_);                                                      \
  } while (0)

#define ASSERT_NEAR(a, b, tol)                                                                 \
  do {                                                                                          \
    double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol);                              \
    if (!(fabs(a_ - b_) <= t_))                                                                 \
      FT_FAIL_AT_("ASSERT_NEAR(%s, %s): %.17g vs %.17g (tol %g)", #a, #b, a_, b_, t_);          \
  } while (0)

#define ASSERT_OK(expr)                                                                        \
  do {                                                                                          \
    int s_ = (int)(expr);                                                                       \
    if (s_ != 0) FT_FAIL_AT_("ASSERT_OK(%s): status %d", #expr, s_);                            \
  } while (0)

#define RETURN_SKIP(why)                                        \
  do {                                                          \
    fprintf(stderr, "SKIP: %s\n", why);                         \
    return FT_TEST_SKIP_CODE;                                   \
  } while (0)

/* From main(), when the test cannot run at all: a failure, never a pass (a skip is only for a
 * GPU test without a GPU). */
#define RETURN_FAIL(...)                                        \
  do {                                                          \
    FT_FAIL_AT_(__VA_ARGS__);                                   \
    return FT_TEST_DONE();                                      \
  } while (0)

/* From main() of a GPU test: device 0 opened into g (an ft_gpu *); no GPU skips the test, any
 * other failure to open it fails it. */
#define FT_TEST_OPEN_GPU(g)                                     \
  do {                                                          \
    ft_err e_;                                                  \
    const ft_status s_ = ft_gpu_open(0, &(g), &e_);            \
    if (s_ == FT_ERR_NO_DEVICE) RETURN_SKIP(e_.msg);            \
    if (s_ != FT_OK) RETURN_FAIL("ft_gpu_open: %s", e_.msg);    \
  } while (0)

/* From main() of a test of the tensor-core kernels: FT_TEST_OPEN_GPU, and a device other than
 * compute capability 9.0 (wgmma, TMA) skips the test. */
#define FT_TEST_OPEN_HOPPER(g)                                                  \
  do {                                                                          \
    if (!ft_test_have_gpu()) RETURN_SKIP("no CUDA device");                     \
    FT_TEST_OPEN_GPU(g);                                                        \
    if (ft_gpu_limits(g)->cc_major != 9 || ft_gpu_limits(g)->cc_minor != 0) {   \
      ft_gpu_close(g);                                                          \
      RETURN_SKIP("the tensor-core family needs compute capability 9.0");       \
    }                                                                           \
  } while (0)

/* Whether a CUDA device is usable here (CI machines have no driver). */
static inline int ft_test_have_gpu(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n > 0;
}

/* End of main(): prints a summary line and returns the exit code. */
#define FT_TEST_DONE()                                                              \
  (ft_test_failures ? (fprintf(stderr, "%d assertion(s) failed\n", ft_test_failures), 1) \
                    : (fprintf(stderr, "all assertions passed\n"), 0))

#endif
