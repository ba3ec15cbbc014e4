/* The one launch path: a variant loaded on the device with its workspace, checked against the
 * pointers it is given and enqueued. The C API's plans, the worker's candidates and `bench`
 * all launch through it, so "cuBLAS then the epilogue pass, or the fused kernel" is written
 * once. The eager-style baseline's step kernels and cuBLAS SGEMM are launched here too. */
#ifndef FT_LAUNCH_H
#define FT_LAUNCH_H

#include "chain.h"
#include "device.h"
#include "family.h"
#include "lt_gemm.h"

typedef struct ft_launchable {
  ft_variant v;
  const ft_family *fam;
  ft_launch_geom geom;
  ft_loaded loaded;
  void *ws; /* geom.workspace_bytes of device memory, owned */
  unsigned *flags; /* geom.flag_bytes of device memory, zeroed at init, owned */
  ft_gpu *g; /* for the cuBLAS GEMM a family that runs after cuBLAS needs (not owned) */
  ft_gemm_before before; /* what writes x W^T before the family's kernel (ft_variant_gemm_before) */
  ft_lt_gemm lt; /* with FT_GEMM_CUBLASLT: cuBLASLt's GEMM with a bias, an activation or a residual */
  cublasLtHandle_t lt_handle; /* the device's (ft_gpu_cublaslt), not owned */
  ft_lt_prefix lt_steps;      /* with FT_GEMM_CUBLASLT: the E steps its GEMM applies (bias, activation, C) */
  int lt_plain;               /* with lt_handle: cuBLAS's plain GEMM as cuBLASLt's, for aligned operands */
  void *lt_ws;   /* its workspace, owned */
  int m, n, k;
  /* The main kernel's argument list of the last launch and what it was built from: a launch
   * with the same pointers and epilogue arguments reuses it (the tensor-core family encodes two
   * TMA descriptors per list, host work a hot loop need not repeat). args.ptrs point into the
   * struct itself: a launchable stays where it was initialised (never copied after a launch). */
  int have_args;
  const void *args_x, *args_w;
  void *args_y;
  ft_ep_args_dev args_ep;
  ft_arg_store args;
  /* The family's own GEMM before its pass (geom.own_gemm): the kernel, the shared memory it is
   * allowed, and its argument list of the last launch with what it was built from (as above). */
  cudaKernel_t gemm;
  size_t gemm_smem_allowed;
  int have_gemm_args;
  const void *gemm_x, *gemm_w;
  void *gemm_y;
  ft_ep_args_dev gemm_ep; /* E's arguments where the GEMM reads them (batchnorm's partials, red.gemm) */
  ft_arg_store gemm_args;
  /* Pre-split 3xtf32 (geom.presplit_kp): the split kernel, and which W the workspace holds split
   * (wsplit_of, valid while wsplit_ok: ft_launchable_weight_changed clears it). */
  cudaKernel_t presplit;
  const void *wsplit_of;
  int wsplit_ok;
  /* A family that runs E's eager plan as a chain (ft_family.eager_plan): its steps, their buffers in
   * the workspace (buffer 0 the GEMM's output) and their kernels in the program; owned, NULL else. */
  ft_chain *chain;
  cudaKernel_t *chain_k;
} ft_launchable;

/* Loads cubin (compiled from src, the variant's kernel text) on the current device for
 * (m, n, k) and allocates its workspace. v must be applicable to the shape. On failure *L is
 * left zeroed (ft_launchable_free is still safe). */
ft_status ft_launchable_init(ft_launchable *L, ft_gpu *g, const ft_variant *v, int m, int n, int k,
                             const void *cubin, size_t size, const char *kernel, const char *reduce, ft_err *err);
/* The same for the problem's epilogue ep, which a family running E's eager plan (ft_family.eager_plan)
 * needs to know its chain (FT_ERR_INVALID_ARG without it); the others ignore ep. The chain's buffers
 * are allocated here, none at a launch. */
ft_status ft_launchable_init_ep(ft_launchable *L, ft_gpu *g, const ft_variant *v, const ft_epilogue *ep, int m, int n,
                                int k, const void *cubin, size_t size, const char *kernel, const char *reduce,
                                ft_err *err);
void ft_launchable_free(ft_launchable *L); /* safe on a zeroed struct */

/* FT_ERR_INVALID_ARG naming the pointer when x, w or y lacks the alignment v needs. */
ft_status ft_launchable_check(const ft_launchable *L, const void *x, const void *w, const void *y, const char *name,
                              ft_err *err);

/* Enqueues y = E(x W^T) on stream: the fused kernel (and its second kernel), or cuBLAS's GEMM
 * (or the family's own, ft_family.gemm_kernel) of the variant's mode then the epilogue pass (none for the identity: kernel "" at init); for a
 * gated pair (geometry's gated) w is the interleaved [2n, k] weight and the GEMM writes [m, 2n]
 * into the workspace. x, w, y hold the mode's element type. Checks
 * launch errors but does not synchronize. */
ft_status ft_launchable_enqueue(ft_launchable *L, const void *x, const void *w, void *y, const ft_ep_args_dev *ep,
                                cudaStream_t stream, ft_err *err);
/* W's contents changed where the launchable last read it: a pre-split plan (geometry's
 * presplit_kp) splits W again at its next launch. Nothing else keeps W between launches. */
void ft_launchable_weight_changed(ft_launchable *L);

/* The kernels a pass variant runs after cuBLAS's plain GEMM, alone, on y as that GEMM left it (a
 * pass in place: not chunked, gated or after cuBLASLt's epilogues): what a benchmark times beside
 * another library's kernel for the same step. */
ft_status ft_launchable_enqueue_pass(ft_launchable *L, void *y, const ft_ep_args_dev *ep, cudaStream_t stream,
                                     ft_err *err);

/* y = x W^T with cuBLAS SGEMM (pedantic fp32, no TF32) on stream. */
ft_status ft_cublas_sgemm(ft_gpu *g, const float *X, const float *W, float *Y, int m, int n, int k,
                          cudaStream_t stream, ft_err *err);

/* y = x W^T with cuBLAS in mode math: fp32 = ft_cublas_sgemm; tf32 = fp32 tensors with
 * CUBLAS_COMPUTE_32F_FAST_TF32; bf16 / fp16 = tensors of that type, fp32 accumulate
 * (CUBLAS_COMPUTE_32F), y rounded once; fp8 = cuBLASLt's e4m3 GEMM, bf16 y, per-tensor scale
 * pointers at 1.0 (ft_gpu_fp8_gemm). */
ft_status ft_cublas_gemm(ft_gpu *g, ft_math math, const void *X, const void *W, void *Y, int m, int n, int k,
                         cudaStream_t stream, ft_err *err);

/* Enqueues the steps of chain c on an m-row problem, step j's kernel k[j] (its program's "ft_chain_<j>")
 * reading and writing bufs (FT_CHAIN_BUFS of them, chain.h: bufs[0] the GEMM's output, bufs[j] step
 * j-1's, bufs[c->nsteps] y), in stream order, with no host synchronization or allocation: the eager
 * baseline's chain and family eager_chain's plans, CUDA-graph captures included. */
ft_status ft_chain_enqueue(const ft_chain *c, const cudaKernel_t *k, void *const *bufs, int m, const ft_ep_args_dev *ep,
                           cudaStream_t stream, ft_err *err);

#endif
