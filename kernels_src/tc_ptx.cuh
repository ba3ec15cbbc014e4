// fusedtune tensor-core GEMM, layer 1: PTX wrappers (shared-memory addresses, mbarriers, TMA
// loads and stores, clusters, named barriers, wgmma descriptors, number conversions). No policy:
// the layers above decide what to wait for and when.

FT_DEFINE_APPLY_EPILOGUE()

// A CUtensorMap, opaque here (the kernel text includes no CUDA header).
struct alignas(64) FtTmaDesc {
  char b[128];
};

__device__ __forceinline__ unsigned ft_smem(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void ft_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}

__device__ __forceinline__ void ft_mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void ft_mbar_wait(unsigned bar, unsigned parity) {
  unsigned ok;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(ok)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!ok);
}

// Releases a stage: one arrival on the empty barrier of every block of the cluster, since with
// multicast each block's producer writes into both blocks' stage.
template <int kCluster>
__device__ __forceinline__ void ft_mbar_release(unsigned bar) {
  if constexpr (kCluster == 1) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
  } else {
#pragma unroll
    for (unsigned cta = 0; cta < kCluster; cta++) {
      unsigned remote;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(cta));
      /* Default (.release.cta) semantics: the wgmma reads of the stage are complete by wait_group
       * already; a .release.cluster here is a cluster-scope fence per k tile (BENCHMARKS.md). */
      asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
    }
  }
}

__device__ __forceinline__ void ft_tma_load(unsigned dst, const FtTmaDesc *map, int c0, int c1, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
               "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar)
               : "memory");
}

// The same box into the same offset of every block in mask, each block's barrier told.
__device__ __forceinline__ void ft_tma_load_mc(unsigned dst, const FtTmaDesc *map, int c0, int c1, unsigned bar,
                                               unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
               "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
               : "memory");
}

__device__ __forceinline__ void ft_tma_prefetch(const FtTmaDesc *map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"((unsigned long long)map) : "memory");
}

// A box of shared memory at src stored by TMA at (c0, c1) of map's tensor, in a bulk group.
__device__ __forceinline__ void ft_tma_store(const FtTmaDesc *map, int c0, int c1, unsigned src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   (unsigned long long)map),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until at most kPending bulk stores still read shared memory.
template <int kPending>
__device__ __forceinline__ void ft_tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void ft_tma_store_wait_all() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Generic-proxy writes of shared memory made visible to the async proxy (wgmma, TMA stores).
__device__ __forceinline__ void ft_fence_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

template <int kCluster>
__device__ __forceinline__ void ft_cluster_sync() {
  if constexpr (kCluster > 1)
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}

// Programmatic dependent launch: launched with programmatic stream serialization, the kernel may
// start while the kernel before it still runs (once that one's blocks have all triggered, as the
// x quantizer does); this waits until it has finished and its writes are visible. Nothing of global
// memory is read or written before it. A no-op in a launch without that attribute.
__device__ __forceinline__ void ft_grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

template <int kCluster>
__device__ __forceinline__ unsigned ft_cluster_rank() {
  unsigned rank = 0;
  if constexpr (kCluster > 1) asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

// Named barriers: 1 every consumer thread (3xtf32's split stage), 2 + wg consumer wg's 128
// threads, 4 + wg ping-pong's "consumer wg's k loop is done" (both consumers, 256).
template <int kThreads>
__device__ __forceinline__ void ft_bar_sync(int id) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(kThreads) : "memory");
}
template <int kThreads>
__device__ __forceinline__ void ft_bar_arrive(int id) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(kThreads) : "memory");
}
template <int kThreads>
__device__ __forceinline__ void ft_bar_sync_consumers() {
  asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory");
}

__device__ __forceinline__ void ft_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void ft_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void ft_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// Keeps the compiler from moving reads of v across this point (after wgmma.wait_group, the
// accumulator registers hold the sums only from here on).
template <int N>
__device__ __forceinline__ void ft_reg_fence(float (&v)[N]) {
#pragma unroll
  for (int i = 0; i < N; i++) asm volatile("" : "+f"(v[i])::"memory");
}

// K-major operand in 128-byte-swizzled rows of 128 bytes: 8-row atoms 1024 bytes apart (SBO),
// LBO unused for this swizzle (1 by convention), swizzle mode 1 = 128B.
__device__ __forceinline__ unsigned long long ft_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

__device__ __forceinline__ float ft_tf32_rn(float v) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return __uint_as_float(r);
}

// Two outputs rounded to the 16-bit storage type, lo in the low half.
template <int kDtype>
__device__ __forceinline__ unsigned ft_pack(float lo, float hi) {
  unsigned r;
  if constexpr (kDtype == 1)
    asm("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(lo), "f"(hi));
  else
    asm("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(lo), "f"(hi));
  return r;
}

// The two outputs of a word ft_pack wrote, widened back to fp32 (exactly: every 16-bit value is one).
template <int kDtype>
__device__ __forceinline__ void ft_unpack(unsigned w, float &lo, float &hi) {
  if constexpr (kDtype == 1) {
    lo = __uint_as_float(w << 16), hi = __uint_as_float(w & 0xffff0000u);
  } else {
    asm("{.reg .f16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;}"
        : "=f"(lo), "=f"(hi)
        : "r"(w));
  }
}

// Byte `byte` of row rr of a buffer of 128-byte rows in the 128-byte swizzle (16-byte chunks
// XORed with the row), as TMA reads and writes it; it also spreads a warp's accesses over banks.
__device__ __forceinline__ unsigned ft_swz128(unsigned buf, unsigned rr, unsigned byte) {
  return buf + rr * 128u + (((byte >> 4) ^ (rr & 7u)) << 4) + (byte & 15u);
}
