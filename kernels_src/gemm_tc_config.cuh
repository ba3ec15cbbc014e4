// fusedtune Hopper tensor-core GEMM, part 1 of 3: the variant's derived constants and checks
// (parts: gemm_tc_config.cuh, wgmma_sm90.cuh, gemm_tc.cu, concatenated in this order by codegen,
// since the wgmma wrappers expand FT_WGMMA_OP defined here).

#define FT_PRODUCER_REGS 40
#define FT_CONSUMER_REGS 232
// FT_PINGPONG: 0 cooperative (the consumers split one FT_BM = 64 FT_CONSUMERS row tile); 1 or 2
// ping-pong (each of the two consumers owns whole tiles of FT_BM = 64 FT_PINGPONG rows, taking
// every other work item, so one's epilogue runs while the other's wgmma do).
#ifndef FT_PINGPONG
#define FT_PINGPONG 0
#endif
#define FT_MSUB (FT_PINGPONG ? FT_PINGPONG : 1) /* m64 accumulators per consumer */
#define FT_BM (FT_PINGPONG ? 64 * FT_PINGPONG : 64 * FT_CONSUMERS)
#define FT_THREADS (128 * (FT_CONSUMERS + 1))

#if FT_DTYPE == 0
#if !defined(FT_TF32) && !defined(FT_3XTF32)
#error "fusedtune: the tensor-core family takes fp32 storage only in tf32 and 3xtf32 modes"
#endif
#define FT_ESIZE 4
#define FT_KSTEP 8
#define FT_WGMMA_OP "k8.f32.tf32.tf32"
#define FT_WGMMA_TAIL ", 1, 1"
#else
#define FT_ESIZE 2
#define FT_KSTEP 16
#if FT_DTYPE == 1
#define FT_WGMMA_OP "k16.f32.bf16.bf16"
#else
#define FT_WGMMA_OP "k16.f32.f16.f16"
#endif
#define FT_WGMMA_TAIL ", 1, 1, 0, 0"
#endif

#define FT_BK (128 / FT_ESIZE)
#ifndef FT_EPI_W
#define FT_EPI_W 4 /* 16-column groups of a tile's epilogue whose vector loads go together */
#endif
#ifndef FT_EPI_EARLY
/* 1: the TMA-store epilogue of a tile wholly inside Y evaluates E on the whole accumulator
 * before its first store box, not box by box between the boxes' barriers, so the tile's vector
 * loads are in flight together instead of one round trip per box. Cooperative kernels only:
 * measured on the H200 (BENCHMARKS.md, session 10) biasrelu 1024x8192^2 cluster 1 0.995 ->
 * 1.006x cuBLAS in bf16, 0.986-0.991 -> 1.001-1.010x in tf32, gelu 4096^3 bf16 5 % faster; the
 * 128 x 128 ping-pong kernel 1.5 % slower with it (its epilogue already overlaps the other
 * consumer's main loop). Not with stream-K, whose grouped form already spilled at BN 256. */
#define FT_EPI_EARLY (FT_PINGPONG == 0 && FT_STREAMK == 0)
#endif
#ifndef FT_EPI_GROUPED
/* 1: the TMA-store epilogue evaluates a box's E before its stores. Measured 1-3 % faster with
 * heavy epilogues and neutral otherwise on the H200 (BENCHMARKS.md, sessions 8 and 9), output
 * checked there by gpu_test_tc in bf16, fp16 and tf32; with stream-K it spilled at BN 256. */
#define FT_EPI_GROUPED (FT_STREAMK == 0)
#endif
#ifndef FT_SPLITK
#define FT_SPLITK 1 /* k slices: > 1 writes fp32 partial sums, ft_tc_splitk_reduce applies E */
#endif

#if FT_BN % 8 != 0 || FT_BN < 64 || FT_BN > 256 || (FT_CONSUMERS != 1 && FT_CONSUMERS != 2) ||         \
    (FT_CLUSTER != 1 && FT_CLUSTER != 2) || FT_STAGES < 2 || (FT_CLUSTER == 2 && (FT_BN / 2) % 8 != 0) || \
    FT_GROUP < 1
#error "fusedtune: inconsistent tensor-core GEMM variant"
#endif
#if FT_PINGPONG && (FT_PINGPONG > 2 || FT_CONSUMERS != 2 || FT_MSUB * FT_BN > 256)
#error "fusedtune: ping-pong needs two consumers and at most 128 accumulator registers"
#endif

// FT_TSTORE: the epilogue writes E(accumulator) into shared memory, 64 rows x 128 bytes per
// warpgroup and box (two boxes each, alternating), and TMA stores them: no per-element global
// store (each held the next pack behind its register read) and no bounds check (TMA clips).
// Columns of a wave-fitted BN past its last whole box (BN 168: 40 in 16-bit storage) are
// stored directly.
#ifndef FT_TSTORE
#define FT_TSTORE 0
#endif
#define FT_C_COLS (128 / FT_ESIZE)
#define FT_C_BOX_BYTES (64 * 128)
#if FT_TSTORE
#define FT_C_BYTES (2 * FT_CONSUMERS * FT_C_BOX_BYTES)
#if FT_SPLITK > 1
#error "fusedtune: the TMA-store epilogue excludes split-K"
#endif
#else
#define FT_C_BYTES 0
#endif

// FT_EPI_STAGED (with FT_TSTORE): a box's raw sums go to shared memory first, then a rolled loop
// applies E four outputs at a time on its way to the box buffer. The unrolled form emits E once
// per output of a thread's tile (128 copies for BN 128 ping-pong): a heavy E (gelu's erfc) then
// makes a kernel of ~250 KB whose epilogue runs from instruction fetch. fp32 storage stages in
// the box buffer itself (same 128-byte rows); 16-bit storage has a 64 x FT_C_COLS fp32 staging box
// per consumer (16 KiB).
#ifndef FT_EPI_STAGED
#define FT_EPI_STAGED 0
#endif
#if FT_EPI_STAGED && (!FT_TSTORE || FT_STREAMK)
#error "fusedtune: the staged epilogue needs TMA stores and excludes stream-K"
#endif
#define FT_S_PITCH (FT_C_COLS * 4) /* bytes of a staging row: FT_C_COLS fp32 sums */
#define FT_S_BYTES (FT_EPI_STAGED && FT_ESIZE == 2 ? FT_CONSUMERS * 64 * FT_S_PITCH : 0)

#define FT_A_BYTES (FT_BM * 128)
#define FT_B_BYTES (FT_BN * 128)
#define FT_STAGE_BYTES (FT_A_BYTES + FT_B_BYTES)

// 3xtf32: the raw fp32 tile of a stage becomes its big part in place and its small part goes to
// one of three small buffers (gemm_tc.cu says why three); FT_CHUNK k tiles per tensor-core
// partial sum.
#if defined(FT_3XTF32)
#define FT_SPLIT 1
#define FT_SMALL_BUFS 3
// FT_AREGS: x's fragments split in registers (wgmma with A from registers); the small buffers
// then hold W's small part only.
#if defined(FT_AREGS)
#define FT_SMALL_BYTES (FT_SMALL_BUFS * FT_B_BYTES)
#if FT_BN > 64
#error "fusedtune: x in registers needs BN <= 64 (two fragment sets and two accumulators)"
#endif
#else
#define FT_SMALL_BYTES (FT_SMALL_BUFS * FT_STAGE_BYTES)
#endif
#if !defined(FT_CHUNK) || FT_CHUNK < 1
#error "fusedtune: 3xtf32 needs FT_CHUNK >= 1"
#endif
#else
#define FT_SPLIT 0
#define FT_SMALL_BUFS 0
#define FT_SMALL_BYTES 0
#if defined(FT_AREGS)
#error "fusedtune: x in registers is a 3xtf32 option"
#endif
#endif

// Stages, the small buffers, the store boxes, the staging boxes, then 2 FT_STAGES mbarriers (and stream-K's 32-byte
// schedule); 1024 bytes of slack to
// align the ring (128B swizzle). The host sizes the launch with the same sum (src/family_tc.c).
#ifndef FT_STREAMK
#define FT_STREAMK 0
#endif
#if FT_STREAMK && (FT_SPLITK > 1 || FT_SPLIT)
#error "fusedtune: stream-K excludes split-K and 3xtf32"
#endif
#if FT_PINGPONG && (FT_SPLITK > 1 || FT_SPLIT || FT_STREAMK)
#error "fusedtune: ping-pong excludes split-K, stream-K and 3xtf32 (every work item whole)"
#endif
// FT_COLV_STAGE: the tile's slice of the epilogue's first column vector (slot FT_EP_COLV_SLOT, from
// codegen) is copied to shared memory (FT_COLV_BYTES per consumer, from the host) by cp.async when
// the tile's k loop starts, and the early E reads it there: its L2 round trips leave the path
// from the last wgmma to the stores. Where the host found no room, FT_COLV_BYTES is 0.
#ifndef FT_EP_COLV_SLOT
#define FT_EP_COLV_SLOT -1
#endif
#ifndef FT_COLV_BYTES
#define FT_COLV_BYTES 0
#endif
#define FT_COLV_STAGE                                                                                        \
  (FT_COLV_BYTES > 0 && FT_EP_COLV_SLOT >= 0 && FT_TSTORE && FT_EPI_EARLY && !FT_EPI_STAGED && !FT_PINGPONG && \
   !FT_STREAMK && FT_SPLITK == 1)
#if FT_COLV_BYTES && (FT_COLV_BYTES != FT_BN * FT_ESIZE || FT_COLV_BYTES % 16 || FT_EP_COLV_SLOT >= FT_EP_SLOTS)
#error "fusedtune: inconsistent column-vector staging"
#endif
// FT_STORE_OVERLAP (gemm_tc.cu, FtPending): the early E's tile kept packed and stored box by box
// during the next tile's k loop. 16-bit storage (BN / 4 registers beside the accumulator), whole
// store boxes, the cooperative plain k loop. On the H200 (BENCHMARKS.md, sessions 15 and 16)
// biasrelu 1024x8192^2 bf16 0.978-0.981 -> 0.984-0.985x cuBLAS, fp16 0.979 -> 0.984x, minsub
// 128x16384^2 bf16 within 0.1 %; racecheck clean with the barrier after E that orders its reads
// of the staged bias before the next tile's copy. FT_STORE_OVERLAP_ON 0 turns it off.
#ifndef FT_STORE_OVERLAP_ON
#define FT_STORE_OVERLAP_ON 1
#endif
#define FT_STORE_OVERLAP                                                                                       \
  (FT_STORE_OVERLAP_ON && FT_TSTORE && FT_EPI_EARLY && !FT_EPI_STAGED && FT_ESIZE == 2 && FT_BN % FT_C_COLS == 0 && \
   !FT_SPLIT && !FT_PINGPONG && !FT_STREAMK && FT_SPLITK == 1)
static_assert(FT_SMEM_BYTES == FT_STAGES * FT_STAGE_BYTES + FT_SMALL_BYTES + FT_C_BYTES + FT_S_BYTES + 16 * FT_STAGES +
                                   32 * FT_STREAMK + 1024 + FT_CONSUMERS * FT_COLV_BYTES,
              "fusedtune: shared memory size");

