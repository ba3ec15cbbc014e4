/* The tune's timing rule (src/tune/timing_rule.c): decode-sized layers are timed as CUDA-graph
 * replays, everything larger back to back on the stream, nothing as graphs under an L2 flush. */
#include <stdlib.h>

#include "ft_test.h"
#include "timing_rule.h"

int main(void) {
  unsetenv("FUSEDTUNE_GRAPH_TIMING"); /* on by default */
  ASSERT_EQ_INT(ft_timing_graph_calls(16, 14336, 4096, FT_MATH_BF16, NULL, 0), FT_TIMING_GRAPH_CALLS);
  setenv("FUSEDTUNE_GRAPH_TIMING", "", 1);
  ASSERT_EQ_INT(ft_timing_graph_calls(16, 14336, 4096, FT_MATH_BF16, NULL, 0), FT_TIMING_GRAPH_CALLS);
  setenv("FUSEDTUNE_GRAPH_TIMING", "1", 1);
  /* Llama-3-8B-like decode layers: the weight read bounds them (16×4096×14336 bf16: 35 µs). */
  const double decode = ft_timing_gemm_floor_us(16, 14336, 4096, FT_MATH_BF16);
  ASSERT_TRUE(decode > 34 && decode < 36);
  ASSERT_EQ_INT(ft_timing_graph_calls(16, 14336, 4096, FT_MATH_BF16, NULL, 0), FT_TIMING_GRAPH_CALLS);
  ASSERT_EQ_INT(ft_timing_graph_calls(1, 6144, 4096, FT_MATH_FP8, NULL, 0), FT_TIMING_GRAPH_CALLS);
  ASSERT_EQ_INT(ft_timing_graph_calls(16, 14336, 4096, FT_MATH_BF16, NULL, 1), 0); /* --flush-l2 */
  /* A gated pair's GEMM is 2n wide: 64×2·14336×4096 bf16 is 70 µs, the plain layer 35. */
  ft_epilogue *pair = NULL;
  ft_err e;
  ASSERT_OK(ft_ep_parse("silu(x) * x2", &pair, &e));
  ASSERT_EQ_INT(ft_timing_graph_calls(64, 14336, 4096, FT_MATH_BF16, pair, 0), 0);
  ASSERT_EQ_INT(ft_timing_graph_calls(64, 14336, 4096, FT_MATH_BF16, NULL, 0), FT_TIMING_GRAPH_CALLS);
  ft_ep_free(pair);
  /* Prefill and the README's job: the tensor cores' rate or W's bytes bound them far above. */
  ASSERT_TRUE(ft_timing_gemm_floor_us(4096, 14336, 4096, FT_MATH_BF16) > 400);
  ASSERT_EQ_INT(ft_timing_graph_calls(4096, 14336, 4096, FT_MATH_BF16, NULL, 0), 0);
  ASSERT_EQ_INT(ft_timing_graph_calls(128, 16384, 16384, FT_MATH_3XTF32, NULL, 0), 0);
  ASSERT_EQ_INT(ft_timing_graph_calls(128, 16384, 16384, FT_MATH_FP32, NULL, 0), 0);
  /* The same shape in a slower mode can leave the graphs: FFMA's rate bounds 256×1024×1024 fp32
   * (8.0 µs of FLOPs), its bytes bound it in bf16 (2.6 µs). */
  const double f32 = ft_timing_gemm_floor_us(256, 1024, 1024, FT_MATH_FP32);
  ASSERT_TRUE(f32 > 7.9 && f32 < 8.1);
  ASSERT_TRUE(ft_timing_gemm_floor_us(256, 1024, 1024, FT_MATH_BF16) < 3);
  ASSERT_EQ_INT(ft_timing_graph_calls(1024, 4096, 4096, FT_MATH_FP32, NULL, 0), 0); /* 513 µs of FFMA */
  ASSERT_EQ_INT(ft_timing_graph_calls(1024, 4096, 4096, FT_MATH_FP16, NULL, 0), FT_TIMING_GRAPH_CALLS); /* 35 µs of FLOPs */
  ASSERT_EQ_INT(ft_timing_graph_calls(2048, 4096, 4096, FT_MATH_FP16, NULL, 0), 0);                     /* 69 µs */
  setenv("FUSEDTUNE_GRAPH_TIMING", "0", 1);
  ASSERT_EQ_INT(ft_timing_graph_calls(16, 14336, 4096, FT_MATH_BF16, NULL, 0), 0);
  setenv("FUSEDTUNE_GRAPH_TIMING", "1", 1);
  ASSERT_EQ_INT(ft_timing_graph_calls(16, 14336, 4096, FT_MATH_BF16, NULL, 0), FT_TIMING_GRAPH_CALLS);
  return FT_TEST_DONE();
}
