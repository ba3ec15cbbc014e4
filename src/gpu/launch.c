/* The one launch path; see launch.h. */
#include "launch.h"

#include <cublas_v2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "tensormap.h"

/* The workspace of an epilogue pass's cuBLASLt GEMM (one per plan: plans may run on different
 * streams at once). */
#define FT_LAUNCH_LT_WORKSPACE (4u << 20)

/* allowed: what k may already use; above 48 KiB the kernel must opt in, once, not per launch
 * (a host call inside the timed loop would bias small kernels). NULL: no record kept. */
static ft_status allow_smem(cudaKernel_t k, size_t smem, size_t *allowed, ft_err *err) {
  if (smem > 48 * 1024 && (!allowed || smem > *allowed)) {
    FT_CUDA_TRY(err, cudaFuncSetAttribute((const void *)k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    if (allowed) *allowed = smem;
  }
  return FT_OK;
}

/* The extended launch configuration: a thread-block cluster, programmatic stream serialization
 * (pdl), either or both (attrs: room for two, what cfg points to). */
static void ext_config(const unsigned grid[3], const unsigned block[3], const unsigned cluster[3], int pdl, size_t smem,
                       cudaStream_t stream, cudaLaunchConfig_t *cfg, cudaLaunchAttribute attrs[2]) {
  memset(attrs, 0, 2 * sizeof *attrs);
  memset(cfg, 0, sizeof *cfg);
  cfg->gridDim = (dim3){grid[0], grid[1], grid[2]};
  cfg->blockDim = (dim3){block[0], block[1], block[2]};
  cfg->dynamicSmemBytes = smem, cfg->stream = stream;
  cfg->attrs = attrs;
  if (cluster) {
    cudaLaunchAttribute *a = &attrs[cfg->numAttrs++];
    a->id = cudaLaunchAttributeClusterDimension;
    a->val.clusterDim.x = cluster[0], a->val.clusterDim.y = cluster[1], a->val.clusterDim.z = cluster[2];
  }
  if (pdl) {
    cudaLaunchAttribute *a = &attrs[cfg->numAttrs++];
    a->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a->val.programmaticStreamSerializationAllowed = 1;
  }
}

static int clustered(const unsigned cluster[3]) { return cluster && cluster[0] * cluster[1] * cluster[2] > 1; }

/* pdl: only for a kernel that waits (griddepcontrol.wait) before touching global memory. */
static ft_status launch(cudaKernel_t k, const unsigned grid[3], const unsigned block[3], const unsigned cluster[3],
                        int pdl, size_t smem, size_t *allowed, void **args, cudaStream_t stream, ft_err *err) {
  FT_TRY(allow_smem(k, smem, allowed, err));
  if (clustered(cluster) || pdl) {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attrs[2];
    ext_config(grid, block, clustered(cluster) ? cluster : NULL, pdl, smem, stream, &cfg, attrs);
    FT_CUDA_TRY(err, cudaLaunchKernelExC(&cfg, (const void *)k, args));
    return FT_OK;
  }
  const dim3 g = {grid[0], grid[1], grid[2]}, b = {block[0], block[1], block[2]};
  FT_CUDA_TRY(err, cudaLaunchKernel((const void *)k, g, b, args, smem, stream));
  return FT_OK;
}

/* A kernel whose blocks wait for one another (the tc family's stream-K: a block adds partial
 * sums other blocks publish) hangs unless its whole grid is resident at once: checked here, once,
 * from the device's occupancy for this kernel, its block, shared memory and cluster. */
static ft_status check_coresident(ft_launchable *t, ft_err *err) {
  const ft_launch_geom *g = &t->geom;
  const long long blocks = (long long)g->grid[0] * g->grid[1] * g->grid[2];
  FT_TRY(allow_smem(t->loaded.main, g->smem, &t->loaded.smem_allowed, err));
  long long resident = 0;
  if (clustered(g->cluster)) {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attrs[2];
    ext_config(g->grid, g->block, g->cluster, 0, g->smem, 0, &cfg, attrs);
    int clusters = 0;
    FT_CUDA_TRY(err, cudaOccupancyMaxActiveClusters(&clusters, (const void *)t->loaded.main, &cfg));
    resident = (long long)clusters * g->cluster[0] * g->cluster[1] * g->cluster[2];
  } else {
    int per_sm = 0;
    FT_CUDA_TRY(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)t->loaded.main,
                                                                   (int)(g->block[0] * g->block[1] * g->block[2]), g->smem));
    resident = (long long)per_sm * ft_gpu_limits(t->g)->sm_count;
  }
  if (resident < blocks)
    return ft__fail(err, FT_ERR_UNSUPPORTED,
                    "stream-K: the grid of %lld blocks does not fit on the device at once (%lld do), and its blocks "
                    "wait for each other", blocks, resident);
  return FT_OK;
}

/* The columns of the GEMM before a pass: a gated pair's is the interleaved [2n, k] weight's. */
static int gemm_cols(const ft_launchable *t) { return t->geom.gated ? 2 * t->n : t->n; }

/* The plain GEMM before a pass (16-bit modes, fp8) as cuBLASLt's with its algorithm chosen here,
 * once: cublasGemmEx chooses on every call, host time a decode step pays. In 16-bit modes launches
 * whose x, W and y are 16-byte aligned take it, others cublasGemmEx, and where cuBLASLt has no
 * algorithm (or memory is short) it is simply not offered. fp8's GEMM is cuBLASLt's alone (its
 * codes with scales 1, bf16 y; the pass applies E's scales): there a failure is the plan's. */
static ft_status plain_lt_init(ft_launchable *t, ft_err *err) {
  const ft_math math = (ft_math)t->v.math;
  if (math != FT_MATH_BF16 && math != FT_MATH_FP16 && math != FT_MATH_FP8) return FT_OK;
  ft_err mine;
  ft_err *e = math == FT_MATH_FP8 ? err : &mine;
  void *h = NULL;
  ft_status s = ft_gpu_cublaslt(t->g, &h, e);
  if (s == FT_OK)
    s = ft_lt_gemm_init(&t->lt, (cublasLtHandle_t)h, math, t->m, gemm_cols(t), t->k, CUBLASLT_EPILOGUE_DEFAULT, NULL,
                        FT_LAUNCH_LT_WORKSPACE, 16, e);
  if (s == FT_OK) {
    const cudaError_t ce = cudaMalloc(&t->lt_ws, FT_LAUNCH_LT_WORKSPACE);
    if (ce != cudaSuccess) {
      (void)cudaGetLastError();
      s = ft_cuda_fail(e, ce, "cudaMalloc (cuBLASLt workspace)");
      t->lt_ws = NULL;
      ft_lt_gemm_free(&t->lt);
    }
  }
  if (s != FT_OK) return math == FT_MATH_FP8 ? s : FT_OK;
  t->lt_handle = (cublasLtHandle_t)h, t->lt_plain = 1;
  return FT_OK;
}

/* cuBLASLt's epilogue adding a bias (has_bias) and applying act. */
static cublasLtEpilogue_t lt_epilogue(int has_bias, ft_ep_lt_act act) {
  switch (act) {
    case FT_EP_LT_RELU: return has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case FT_EP_LT_GELU_TANH: return has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    default: return has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  }
}

/* E's eager plan as t's chain (a family with eager_plan): its steps and the workspace their
 * buffers take. */
static ft_status chain_init(ft_launchable *t, const ft_epilogue *ep, ft_err *err) {
  if (!ep)
    return ft__fail(err, FT_ERR_INVALID_ARG, "launch: the %s configuration needs the problem's epilogue to run its "
                    "steps", t->fam->name);
  ft_ep_eager *plan = malloc(sizeof *plan);
  t->chain = malloc(sizeof *t->chain);
  t->chain_k = calloc(FT_EP_MAX_STEPS, sizeof *t->chain_k);
  ft_status s = plan && t->chain && t->chain_k ? FT_OK : ft__fail(err, FT_ERR_NOMEM, "out of memory");
  if (s == FT_OK) s = t->fam->eager_plan(&t->v, ep, plan, err);
  if (s == FT_OK) s = ft_chain_of_plan(plan, ep, (ft_math)t->v.math, t->m, t->n, t->v.chain.rblock, t->chain, err);
  free(plan);
  if (s == FT_OK) t->geom.workspace_bytes = t->chain->workspace_bytes;
  return s;
}

/* Every step's entry point in the loaded program. */
static ft_status chain_kernels(ft_launchable *t, ft_err *err) {
  for (int j = 0; j < t->chain->nsteps; j++) FT_TRY(ft_loaded_kernel(&t->loaded, t->chain->steps[j].kernel, &t->chain_k[j], err));
  return FT_OK;
}

ft_status ft_launchable_init(ft_launchable *L, ft_gpu *g, const ft_variant *v, int m, int n, int k,
                             const void *cubin, size_t size, const char *kernel, const char *reduce, ft_err *err) {
  return ft_launchable_init_ep(L, g, v, NULL, m, n, k, cubin, size, kernel, reduce, err);
}

ft_status ft_launchable_init_ep(ft_launchable *L, ft_gpu *g, const ft_variant *v, const ft_epilogue *ep, int m, int n,
                                int k, const void *cubin, size_t size, const char *kernel, const char *reduce,
                                ft_err *err) {
  memset(L, 0, sizeof *L);
  const ft_family *fam = ft_family_of(v);
  if (!fam) return ft__fail(err, FT_ERR_INTERNAL, "launch: variant of no known kernel family");
  ft_launchable t;
  memset(&t, 0, sizeof t);
  t.v = *v, t.fam = fam, t.g = g, t.m = m, t.n = n, t.k = k;
  ft_variant_geometry(v, m, n, k, &t.geom);
  /* On unless FUSEDTUNE_PDL=0 (docs/MODES.md, fp8; gpu_test_fp8 ran it on an H100, 2026-12-07 (o)). */
  if (!ft__env_default_on("FUSEDTUNE_PDL")) t.geom.pdl = t.geom.gpdl = 0;
  if (fam->eager_plan) {
    const ft_status s = chain_init(&t, ep, err);
    if (s != FT_OK) {
      ft_launchable_free(&t);
      return s;
    }
  }
  t.before = ft_variant_gemm_before(v, &t.lt_steps);
  ft_status bad = FT_OK;
  if ((t.before == FT_GEMM_OWN) != (t.geom.own_gemm != 0))
    bad = ft__fail(err, FT_ERR_INTERNAL, "launch: family %s's geometry and its GEMM before the kernel disagree", fam->name);
  else if (t.geom.has_reduce && !(reduce && reduce[0]))
    bad = ft__fail(err, FT_ERR_INTERNAL, "launch: a split-K or stream-K variant without its second kernel");
  if (bad != FT_OK) {
    ft_launchable_free(&t); /* an eager chain's description, made above */
    return bad;
  }
  ft_status ls = FT_OK;
  if (kernel && kernel[0]) ls = ft_loaded_init(&t.loaded, cubin, size, kernel, reduce, err);
  else if (t.before == FT_GEMM_IN_KERNEL || t.chain) /* only the identity pass after a GEMM has no kernel (codegen) */
    ls = ft__fail(err, FT_ERR_INTERNAL, "launch: no kernel to load");
  if (ls == FT_OK && t.chain) ls = chain_kernels(&t, err);
  if (ls != FT_OK) {
    ft_launchable_free(&t);
    return ls;
  }
  if (t.geom.workspace_bytes) {
    const cudaError_t e = cudaMalloc(&t.ws, t.geom.workspace_bytes);
    if (e != cudaSuccess) {
      t.ws = NULL;
      ft_launchable_free(&t);
      return ft_cuda_fail(err, e, "cudaMalloc (the variant's workspace: split-K, stream-K, pre-split operands or an eager "
                          "chain's buffers)");
    }
  }
  if (t.geom.flag_bytes) {
    cudaError_t e = cudaMalloc((void **)&t.flags, t.geom.flag_bytes);
    /* cudaMemset runs on the default stream, which a non-blocking stream does not wait for:
     * finished here, before any launch on any stream can read the flags. */
    if (e == cudaSuccess) e = cudaMemset(t.flags, 0, t.geom.flag_bytes);
    if (e == cudaSuccess) e = cudaStreamSynchronize(0);
    if (e != cudaSuccess) {
      ft_launchable_free(&t);
      return ft_cuda_fail(err, e, "stream-K flags (allocating and zeroing them)");
    }
    /* Blocks wait for others' partial sums: all must be resident at once. */
    ft_status s = t.geom.flags_count_only ? FT_OK : check_coresident(&t, err);
    if (s != FT_OK) {
      ft_launchable_free(&t);
      return s;
    }
  }
  if (t.geom.presplit_kp) { /* x and W split into the workspace before the kernel */
    ft_status s = t.loaded.lib && t.ws ? ft_loaded_kernel(&t.loaded, FT_PRESPLIT_KERNEL, &t.presplit, err)
                                      : ft__fail(err, FT_ERR_INTERNAL, "launch: a pre-split variant without its workspace");
    if (s != FT_OK) {
      ft_launchable_free(&t);
      return s;
    }
  }
  if (t.before == FT_GEMM_OWN) { /* the family's GEMM, in the pass's program, instead of cuBLAS's */
    ft_status s = fam->gemm_kernel && fam->gemm_args && t.loaded.lib
                      ? ft_loaded_kernel(&t.loaded, fam->gemm_kernel, &t.gemm, err)
                      : ft__fail(err, FT_ERR_INTERNAL, "launch: a pass after its family's GEMM without that GEMM");
    if (s != FT_OK) {
      ft_launchable_free(&t);
      return s;
    }
  } else if (t.before == FT_GEMM_CUBLAS || t.before == FT_GEMM_CUBLASLT) {
    void *h;
    ft_status s = ft_gpu_cublas(g, &h, err);
    /* cuBLASLt's GEMM with its bias and/or activation epilogue (the family's ft_lt_prefix); the
     * bias pointer comes with each launch. */
    const int after_lt = t.before == FT_GEMM_CUBLASLT;
    if (s == FT_OK && after_lt) s = ft_gpu_cublaslt(g, &h, err);
    if (s == FT_OK && after_lt) t.lt_handle = (cublasLtHandle_t)h;
    if (s == FT_OK && after_lt)
      s = ft_lt_gemm_init(&t.lt, t.lt_handle, (ft_math)v->math, m, n, k,
                          lt_epilogue(t.lt_steps.bias_slot >= 0, t.lt_steps.act), NULL,
                          FT_LAUNCH_LT_WORKSPACE, 16, err); /* x, W, y and the bias: 16-byte aligned (alignment) */
    if (s == FT_OK && after_lt) {
      const cudaError_t e = cudaMalloc(&t.lt_ws, FT_LAUNCH_LT_WORKSPACE);
      if (e != cudaSuccess) s = ft_cuda_fail(err, e, "cudaMalloc (cuBLASLt workspace)");
    }
    if (s != FT_OK) {
      ft_launchable_free(&t);
      return s;
    }
    if (!after_lt && t.geom.chunk_cols == 0) {
      s = plain_lt_init(&t, err);
      if (s != FT_OK) {
        ft_launchable_free(&t);
        return s;
      }
    }
  }
  *L = t;
  return FT_OK;
}

void ft_launchable_free(ft_launchable *L) {
  if (!L) return;
  ft_loaded_free(&L->loaded);
  ft_lt_gemm_free(&L->lt);
  if (L->lt_ws) cudaFree(L->lt_ws);
  if (L->ws) cudaFree(L->ws);
  if (L->flags) cudaFree(L->flags);
  free(L->chain);
  free(L->chain_k);
  memset(L, 0, sizeof *L);
}

ft_status ft_launchable_check(const ft_launchable *L, const void *x, const void *w, const void *y, const char *name,
                              ft_err *err) {
  size_t need[3] = {1, 1, 1};
  L->fam->alignment(&L->v, L->m, L->n, L->k, need);
  const void *ptrs[3] = {x, w, y};
  static const char *const names[3] = {"x", "w", "y"};
  for (int i = 0; i < 3; i++)
    if ((uintptr_t)ptrs[i] % need[i])
      return ft__fail(err, FT_ERR_INVALID_ARG, "%s is not %zu-byte aligned, as configuration %s needs", names[i],
                      need[i], name ? name : "this configuration");
  return FT_OK;
}

typedef ft_status (*args_fn)(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err);

/* A family's arguments for io into st, with the tensor maps it described encoded: the families
 * stay GPU-free, the driver is asked here. */
static ft_status build_args(args_fn fill, const ft_variant *v, const ft_launch_io *io, ft_arg_store *st,
                            ft_err *err) {
  ft_arg_clear(st);
  FT_TRY(fill(v, io, st, err));
  for (int i = 0; i < st->ntmaps; i++) {
    const ft_tmap_desc *d = &st->tmaps[i];
    ft_tensormap map;
    FT_TRY(ft_tensormap_2d(&map, d->base, d->kind, d->rows, d->cols, d->box_rows, d->box_cols, err));
    memcpy(st->ptrs[st->tmap_arg[i]], map.bytes, sizeof map.bytes);
  }
  return FT_OK;
}

static ft_status enqueue_kernels(ft_launchable *L, const void *x, const void *w, void *y, const ft_ep_args_dev *ep,
                                 cudaStream_t stream, ft_err *err);
static ft_status presplit_operands(ft_launchable *L, const void **x, const void **w, cudaStream_t stream,
                                   ft_err *err);

/* The GEMM before a pass, x W^T of nc columns (W's rows from w) into out: cuBLAS's of the mode, or
 * the family's own kernel (geometry's own_gemm), which computes all of x W^T only; its argument
 * list (two tensor maps) kept while the pointers stay. */
static ft_status run_gemm_before(ft_launchable *L, const void *x, const void *w, void *out, int nc,
                                 const ft_ep_args_dev *ep, cudaStream_t stream, ft_err *err) {
  if (L->before != FT_GEMM_OWN) return ft_cublas_gemm(L->g, (ft_math)L->v.math, x, w, out, L->m, nc, L->k, stream, err);
  if (!L->gemm || nc != gemm_cols(L))
    return ft__fail(err, FT_ERR_INTERNAL, "launch: the family's own GEMM computes all %d columns of x W^T, not %d",
                    gemm_cols(L), nc);
  if (L->geom.presplit_kp) FT_TRY(presplit_operands(L, &x, &w, stream, err)); /* tc_pass's pre-split GEMM */
  /* Its epilogue is the identity and reads no argument, unless it writes batchnorm's column
   * partials of E's argument (the pass's gemm): then E's arguments and the workspace. */
  static const ft_ep_args_dev identity;
  const int partials = L->v.red.gemm != 0;
  const ft_ep_args_dev *gep = partials ? ep : &identity;
  if (partials && (!ep || !L->ws))
    return ft__fail(err, FT_ERR_INTERNAL, "launch: the GEMM's column partials need E's arguments and the workspace");
  if (!L->have_gemm_args || L->gemm_x != x || L->gemm_w != w || L->gemm_y != out ||
      (partials && memcmp(&L->gemm_ep, gep, sizeof *gep) != 0)) {
    const ft_launch_io io = {x, w, out, partials ? L->ws : NULL, NULL, L->m, L->n, L->k, gep, 0, L->n};
    L->have_gemm_args = 0;
    FT_TRY(build_args(L->fam->gemm_args, &L->v, &io, &L->gemm_args, err));
    L->gemm_x = x, L->gemm_w = w, L->gemm_y = out, L->gemm_ep = *gep;
    L->have_gemm_args = 1;
  }
  return launch(L->gemm, L->geom.ggrid, L->geom.gblock, L->geom.gcluster, L->geom.gpdl, L->geom.gsmem, &L->gemm_smem_allowed,
                L->gemm_args.ptrs, stream, err);
}

/* After cuBLAS in column chunks (geometry's chunk_cols, the reduction pass): cuBLAS's GEMM of each
 * chunk into the workspace, the kernel after it; chunks in order on one stream. */
static ft_status enqueue_chunks(ft_launchable *L, const void *x, const void *w, void *y, const ft_ep_args_dev *ep,
                                cudaStream_t stream, ft_err *err) {
  const size_t elem = ft_math_dtype((ft_math)L->v.math) == FT_DTYPE_F32 ? sizeof(float) : 2;
  if (!L->loaded.main || !L->ws) return ft__fail(err, FT_ERR_INTERNAL, "launch: chunks without a kernel or workspace");
  for (int c0 = 0; c0 < L->n; c0 += L->geom.chunk_cols) {
    const int nc = L->n - c0 < L->geom.chunk_cols ? L->n - c0 : L->geom.chunk_cols;
    const char *wc = (const char *)w + (size_t)c0 * (size_t)L->k * elem; /* W's rows c0 .. c0 + nc */
    FT_TRY(run_gemm_before(L, x, wc, L->ws, nc, ep, stream, err));
    const ft_launch_io io = {x, w, y, L->ws, L->flags, L->m, L->n, L->k, ep, c0, nc};
    ft_arg_store st;
    FT_TRY(build_args(L->fam->kernel_args, &L->v, &io, &st, err));
    FT_TRY(launch(L->loaded.main, L->geom.grid, L->geom.block, NULL, 0, 0, NULL, st.ptrs, stream, err));
  }
  return FT_OK;
}

ft_status ft_launchable_enqueue(ft_launchable *L, const void *x, const void *w, void *y, const ft_ep_args_dev *ep,
                                cudaStream_t stream, ft_err *err) {
  if (!L->fam) return ft__fail(err, FT_ERR_INTERNAL, "launch: nothing loaded");
  const int after_gemm = L->before != FT_GEMM_IN_KERNEL;
  if (after_gemm && L->geom.chunk_cols > 0) return enqueue_chunks(L, x, w, y, ep, stream, err);
  /* A gated pair's GEMM writes the interleaved [m, 2n] product into the workspace, the pass y; an
   * eager chain's GEMM its buffer 0 there, its steps the rest. */
  if ((L->geom.gated || L->chain) && !L->ws)
    return ft__fail(err, FT_ERR_INTERNAL, "launch: a gated pass or an eager chain without its workspace");
  void *gemm_y = L->geom.gated || L->chain ? (char *)L->ws + (L->chain ? L->chain->offset[0] : 0) : y;
  const int lt_aligned =
      !L->lt_plain || ((uintptr_t)x % 16 == 0 && (uintptr_t)w % 16 == 0 && (uintptr_t)gemm_y % 16 == 0);
  if (after_gemm && L->v.math == FT_MATH_FP8 && !(L->lt_plain && lt_aligned))
    return ft__fail(err, FT_ERR_INVALID_ARG, "fp8: x, W and y must be 16-byte aligned for cuBLASLt's FP8 GEMM");
  if (after_gemm && L->lt_handle && lt_aligned) {
    /* cuBLASLt's bias GEMM: its algorithms read the bias in 16-byte units. */
    const void *bias = L->lt_steps.bias_slot >= 0 ? ep->v[L->lt_steps.bias_slot] : NULL;
    if (L->lt_steps.bias_slot >= 0 && (!bias || (uintptr_t)bias % 16))
      return ft__fail(err, FT_ERR_INVALID_ARG, "the epilogue's bias (vector slot %d) must be bound and 16-byte aligned: "
                      "this configuration (\"lt\") adds it in cuBLASLt's GEMM", L->lt_steps.bias_slot);
    const void *c = L->lt_steps.c_slot >= 0 ? ep->v[L->lt_steps.c_slot] : NULL;
    if (L->lt_steps.c_slot >= 0 && (!c || (uintptr_t)c % 16))
      return ft__fail(err, FT_ERR_INVALID_ARG, "the epilogue's matrix (slot %d) must be bound and 16-byte aligned: "
                      "this configuration (\"ltc\") adds it in cuBLASLt's GEMM", L->lt_steps.c_slot);
    int pitch = 0; /* the matrix's row pitch, int bits in its scalar word: cuBLASLt's C is laid out as y */
    if (L->lt_steps.c_slot >= 0) memcpy(&pitch, &ep->s[L->lt_steps.c_slot], sizeof pitch);
    if (L->lt_steps.c_slot >= 0 && pitch != L->n)
      return ft__fail(err, FT_ERR_INVALID_ARG, "the epilogue's matrix (slot %d) has rows %d elements apart, not %d: "
                      "this configuration (\"ltc\") reads it as cuBLASLt's C, laid out as y", L->lt_steps.c_slot, pitch, L->n);
    FT_TRY(ft_lt_gemm_run(&L->lt, L->lt_handle, x, w, gemm_y, bias, c, L->lt_ws, stream, err));
  } else if (after_gemm) {
    FT_TRY(run_gemm_before(L, x, w, gemm_y, gemm_cols(L), ep, stream, err));
  }
  return enqueue_kernels(L, x, w, y, ep, stream, err);
}

ft_status ft_launchable_enqueue_pass(ft_launchable *L, void *y, const ft_ep_args_dev *ep, cudaStream_t stream,
                                     ft_err *err) {
  if (!L->fam || !(L->before == FT_GEMM_CUBLAS || L->before == FT_GEMM_OWN) || L->geom.chunk_cols > 0 || L->geom.gated ||
      L->chain || L->v.red.gemm)
    return ft__fail(err, FT_ERR_INVALID_ARG, "launch: only a pass in place on y after cuBLAS's plain GEMM runs alone "
                    "(not one that merges the GEMM's column partials)");
  return enqueue_kernels(L, NULL, NULL, y, ep, stream, err);
}

void ft_launchable_weight_changed(ft_launchable *L) {
  if (L) L->wsplit_ok = 0;
}

/* src [rows, k] split into dst's rows of 2 Kp floats (ft_tc_presplit). */
static ft_status presplit_rows(ft_launchable *L, const void *src, float *dst, int rows, cudaStream_t stream,
                               ft_err *err) {
  int kp = L->geom.presplit_kp, k = L->k;
  const long long quads = (long long)rows * (kp / 4), cap = 16LL * ft_gpu_limits(L->g)->sm_count;
  long long blocks = (quads + FT_PRESPLIT_BLOCK - 1) / FT_PRESPLIT_BLOCK;
  if (blocks > cap) blocks = cap;
  if (blocks < 1) return FT_OK;
  void *args[] = {(void *)&src, (void *)&dst, (void *)&rows, (void *)&k, (void *)&kp};
  const unsigned grid[3] = {(unsigned)blocks, 1, 1}, block[3] = {FT_PRESPLIT_BLOCK, 1, 1};
  return launch(L->presplit, grid, block, NULL, 0, 0, NULL, args, stream, err);
}

/* Pre-split 3xtf32: x split into the workspace's first M rows (from geometry's presplit_off) on
 * every launch; W into the next presplit_wrows rows (N; 2N for a gated pair) when it is not the W
 * split last (another pointer, or ft_launchable_weight_changed), in stream order before the kernel
 * (a plan's launches do not overlap: ft_plan_launch). Inside a CUDA-graph capture W's split is
 * left out of the graph where the workspace already holds it (a launch before the capture, as a
 * warm-up makes): each replay then reads the workspace as it is, which a later launch outside the
 * graph keeps current (after ft_launchable_weight_changed) or overwrites (another W pointer).
 * Otherwise the graph splits W at every replay: a split recorded in a graph has not run yet, so
 * the workspace is not current for later launches. *x
 * and *w then name the split rows. */
static ft_status presplit_operands(ft_launchable *L, const void **x, const void **w, cudaStream_t stream,
                                   ft_err *err) {
  float *xs = (float *)((char *)L->ws + L->geom.presplit_off);
  float *ws = xs + (size_t)L->m * 2 * (size_t)L->geom.presplit_kp;
  enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  FT_CUDA_TRY(err, cudaStreamIsCapturing(stream, &cap));
  if (!L->wsplit_ok || L->wsplit_of != *w) {
    L->wsplit_ok = 0;
    FT_TRY(presplit_rows(L, *w, ws, L->geom.presplit_wrows, stream, err)); /* 2n for a gated pair */
    if (cap == cudaStreamCaptureStatusNone) L->wsplit_of = *w, L->wsplit_ok = 1;
  }
  FT_TRY(presplit_rows(L, *x, xs, L->m, stream, err));
  *x = xs, *w = ws;
  return FT_OK;
}

/* The variant's kernels (the main one, then its second if any) once the GEMM before them ran. */
static ft_status enqueue_kernels(ft_launchable *L, const void *x, const void *w, void *y, const ft_ep_args_dev *ep,
                                 cudaStream_t stream, ft_err *err) {
  if (L->chain) { /* its buffers in the workspace, the last step's y */
    void *bufs[FT_CHAIN_BUFS] = {NULL};
    for (int j = 0; j < L->chain->nsteps; j++) bufs[j] = (char *)L->ws + L->chain->offset[j];
    bufs[L->chain->nsteps] = y;
    return ft_chain_enqueue(L->chain, L->chain_k, bufs, L->m, ep, stream, err);
  }
  if (!L->loaded.main) return FT_OK; /* the identity after cuBLAS: y is done */
  /* Family tc's fused kernel splits here; a pass after its own GEMM had it split before that GEMM. */
  if (L->geom.presplit_kp && L->before == FT_GEMM_IN_KERNEL) FT_TRY(presplit_operands(L, &x, &w, stream, err));
  const ft_launch_io io = {x, w, y, L->ws, L->flags, L->m, L->n, L->k, ep, 0, L->n};
  if (!L->have_args || L->args_x != x || L->args_w != w || L->args_y != y ||
      memcmp(&L->args_ep, ep, sizeof *ep) != 0) {
    L->have_args = 0;
    FT_TRY(build_args(L->fam->kernel_args, &L->v, &io, &L->args, err));
    L->args_x = x, L->args_w = w, L->args_y = y, L->args_ep = *ep;
    L->have_args = 1;
  }
  FT_TRY(launch(L->loaded.main, L->geom.grid, L->geom.block, L->geom.cluster, L->geom.pdl, L->geom.smem, &L->loaded.smem_allowed,
                L->args.ptrs, stream, err));
  if (!L->geom.has_reduce) return FT_OK;
  ft_arg_store st;
  if (!L->loaded.reduce || !L->fam->reduce_args)
    return ft__fail(err, FT_ERR_INTERNAL, "launch: a variant with a second kernel (split-K, stream-K, batchnorm's apply) without it");
  FT_TRY(build_args(L->fam->reduce_args, &L->v, &io, &st, err));
  return launch(L->loaded.reduce, L->geom.rgrid, L->geom.rblock, NULL, 0, 0, NULL, st.ptrs, stream, err);
}

ft_status ft_cublas_sgemm(ft_gpu *g, const float *X, const float *W, float *Y, int m, int n, int k,
                          cudaStream_t stream, ft_err *err) {
  void *hv;
  FT_TRY(ft_gpu_cublas(g, &hv, err));
  cublasHandle_t h = hv;
  const float one = 1.0f, zero = 0.0f;
  FT_CUBLAS_TRY(err, cublasSetStream(h, stream));
  /* Column-major view: y^T [n x m] = (W as [k x n])^T * (x as [k x m]). */
  FT_CUBLAS_TRY(err, cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, W, k, X, k, &zero, Y, n));
  return FT_OK;
}

ft_status ft_cublas_gemm(ft_gpu *g, ft_math math, const void *X, const void *W, void *Y, int m, int n, int k,
                         cudaStream_t stream, ft_err *err) {
  /* 3xtf32's cuBLAS counterpart is SGEMM, the fp32-accurate GEMM (cuBLAS has no 3xTF32 on Hopper). */
  if (math == FT_MATH_FP32 || math == FT_MATH_3XTF32) return ft_cublas_sgemm(g, X, W, Y, m, n, k, stream, err);
  if (math == FT_MATH_FP8) { /* cuBLAS's fp8 GEMM is cuBLASLt's */
    ft_lt_gemm *l = NULL;
    void *ws = NULL, *lt = NULL;
    FT_TRY(ft_gpu_fp8_gemm(g, m, n, k, &l, &ws, err));
    FT_TRY(ft_gpu_cublaslt(g, &lt, err));
    return ft_lt_gemm_run(l, lt, X, W, Y, NULL, NULL, ws, stream, err);
  }
  void *hv;
  FT_TRY(ft_gpu_cublas(g, &hv, err));
  cublasHandle_t h = hv;
  const float one = 1.0f, zero = 0.0f;
  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (math == FT_MATH_TF32)
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  else if (math == FT_MATH_BF16)
    type = CUDA_R_16BF;
  else if (math == FT_MATH_FP16)
    type = CUDA_R_16F;
  else
    return ft__fail(err, FT_ERR_UNSUPPORTED, "cuBLAS GEMM: math mode %d", (int)math); /* as ft_check_problem says it */
  FT_CUBLAS_TRY(err, cublasSetStream(h, stream));
  /* Column-major view as in ft_cublas_sgemm. */
  FT_CUBLAS_TRY(err, cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, W, type, k, X, type, k, &zero, Y, type, n,
                                  compute, CUBLAS_GEMM_DEFAULT));
  return FT_OK;
}

/* Reduction step s: a block per row of in [m, s->cols] (a batchnorm's per strip of 32 columns;
 * reduce_entry.cu's ft_reduce_pass reading it whole), out [m] or [m, s->cols]. */
static ft_status reduce_step(cudaKernel_t k, const void *in, void *out, int m, const ft_chain_step *s,
                             const ft_ep_args_dev *ep, cudaStream_t stream, ft_err *err) {
  ft_ep_args_dev epv = *ep;
  int n = s->cols;
  const unsigned grid[3] = {(unsigned)(s->col_blocks ? s->col_blocks : m), 1, 1}, block[3] = {(unsigned)s->block, 1, 1};
  void *stats = NULL, *flags = NULL;
  int ld = n, col0 = 0;
  void *args[] = {(void *)&in, &ld, &out, &stats, &m, &n, &col0, &n, &epv, &flags};
  return launch(k, grid, block, NULL, 0, 0, NULL, args, stream, err);
}

/* An elementwise step: OUT = f(IN0, IN1, IN2) over [m, n] (eager_step.cu). */
static ft_status elementwise_step(cudaKernel_t k, const void *in0, const void *in1, const void *in2, void *out, int m,
                                  int n, const ft_ep_args_dev *ep, cudaStream_t stream, ft_err *err) {
  ft_ep_args_dev epv = *ep;
  ft_launch_geom g;
  ft_eager_step_geometry(m, n, &g);
  void *args[] = {(void *)&in0, (void *)&in1, (void *)&in2, &out, &m, &n, &epv};
  return launch(k, g.grid, g.block, NULL, 0, 0, NULL, args, stream, err);
}

ft_status ft_chain_enqueue(const ft_chain *c, const cudaKernel_t *k, void *const *bufs, int m, const ft_ep_args_dev *ep,
                           cudaStream_t stream, ft_err *err) {
  for (int j = 0; j < c->nsteps; j++) {
    const ft_chain_step *s = &c->steps[j];
    const void *in[3] = {NULL, NULL, NULL};
    for (int i = 0; i < s->nin && i < 3; i++)
      in[i] = s->in[i] >= 0 && s->in[i] < FT_CHAIN_BUFS ? bufs[s->in[i]] : NULL;
    if (!k[j] || !bufs[j + 1] || (s->reduce && !in[0]))
      return ft__fail(err, FT_ERR_INTERNAL, "launch: step %d of an eager chain without its kernel or buffers", j);
    if (s->reduce) FT_TRY(reduce_step(k[j], in[0], bufs[j + 1], m, s, ep, stream, err));
    else FT_TRY(elementwise_step(k[j], in[0], in[1], in[2], bufs[j + 1], m, s->cols, ep, stream, err));
  }
  return FT_OK;
}
