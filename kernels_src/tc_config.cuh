// fusedtune Hopper tensor-core GEMM (family tc, src/family/tc/family_tc.c), layer 0: the configuration.
//
// The family writes `struct FtTcCfg` for the variant: its parameters and the shared-memory
// regions it sized. FtTc<FtTcCfg> adds what follows from them and checks the combination; every
// layer (tc_ptx.cuh, tc_sched.cuh, tc_mainloop.cuh, tc_epilogue*.cuh, gemm_tc.cu) is a template
// over it and chooses with `if constexpr`. Constants are enumerators: NVRTC emits storage for a
// static constexpr data member. The sources are concatenated in that order by codegen.
//
// FtTcCfg's fields (enumerators; flags are 0 or 1):
//   dtype          storage of y: 0 fp32 (tf32 and 3xtf32 modes), 1 bf16 (and fp8), 2 fp16 (FT_DTYPE's value)
//   split3x        3xtf32: each stage split into big and small tf32 parts, three products
//   fp8            e4m3 x and W (1-byte elements, k32 wgmma), bf16 y: partial sums promoted every chunk
//   chunk, aregs   3xtf32 and fp8: k tiles per tensor-core partial sum; 3xtf32: x split in registers
//                  (BN <= 64)
//   presplit       3xtf32: x and W split before the kernel (ft_tc_presplit, the plan's workspace): a
//                  stage holds the big and the small part of each tile, loaded by TMA; no split here
//   dual           fp8: two partial sums taking turns by chunk, one added into the fp32 sums while
//                  the other's wgmma run (m64 blocks x BN <= 128: three accumulators in a consumer's
//                  232 registers; one partial sum: <= 192)
//   bn, consumers, stages, cluster, group   tile width, consumer warpgroups, ring depth, cluster
//                  size along the shared operand, tile rows per group of the persistent order
//   pingpong       0 cooperative (the consumers split a tile of 64 consumers rows); 1 or 2: each
//                  of the two consumers owns whole tiles of 64 pingpong rows, taking turns
//   split_k        k slices (1: none; > 1 writes fp32 partial sums, ft_tc_splitk_reduce applies E)
//   stream_k       the last, partial wave's tiles shared k tile by k tile by all blocks
//   tma_store      the epilogue through shared-memory boxes and TMA stores, else direct stores
//   staged         (tma_store) a box's raw sums staged in shared memory, E by a rolled loop
//   late           (cooperative tma_store) E box by box, not on the whole tile first
//   defer          (cooperative tma_store, bf16) 0, or E deferred to the next tile's k loop: the
//                  tile's raw sums kept rounded to y's type, each store box's E evaluated in `defer`
//                  parts, one after each k tile's wgmma are issued, so E runs beside the tensor core
//   gated          a gated pair: the tile's chunks 2p and 2p + 1 are x and x2 of one output column
//                  (tc_gated.cuh); N is the GEMM's, y has N / 2 columns
//   small_bytes, box_bytes, staging_bytes, colv_bytes, colstat_bytes, smem_bytes   the shared-memory
//                  regions (colv_bytes per consumer; colstat_bytes, all consumers' [4][bn] float2 of
//                  batchnorm's column partials, tc_colstats.cuh) and the launch's total, as the host
//                  sized them
// Codegen's facts about E: FT_EP_COLV_SLOT, FT_EP_MAT_MASK (below) and FT_EP_RED_KIND, E's one-value
// row reduction (ft_ep_red: 1 rowsum .. 5 logsumexp; tc_reduce.cuh), 8 its groupnorm (family tc_norm,
// FT_TC_NORM_W the columns of a group; tc_norm.cuh), or 0 for an elementwise E.

#ifndef FT_TC_NORM_W
#define FT_TC_NORM_W 0 /* family tc_norm's group width (tc_norm.cuh); 0: none */
#endif

template <class Cfg>
struct FtTc : Cfg {
  enum : int { kProducerRegs = 40, kConsumerRegs = 232 };
  enum : int { kMsub = Cfg::pingpong ? Cfg::pingpong : 1 }; /* m64 accumulators per consumer */
  enum : int { kBM = 64 * (Cfg::pingpong ? Cfg::pingpong : Cfg::consumers) };
  enum : int { kThreads = 128 * (Cfg::consumers + 1) };
  enum : int { kAcc = Cfg::bn / 2 }; /* accumulator registers of one m64 block */
  enum : int { kEsize = Cfg::dtype == 0 ? 4 : 2 }; /* y's element */
  enum : int { kIsize = Cfg::fp8 ? 1 : kEsize };     /* x's and W's */
  enum : int { kKstep = Cfg::fp8 ? 32 : kEsize == 4 ? 8 : 16 }; /* 32 bytes of k per wgmma in every mode */
  enum : int { kBK = 128 / kIsize };
  enum : int { kKsteps = kBK / kKstep };
  /* Bytes of one part of a stage's x and W tiles; pre-split, a stage holds two parts of each (big,
   * then small), so kA and kB, the stage's strides in the ring, are twice the part. */
  enum : int { kParts = Cfg::presplit ? 2 : 1, kApart = kBM * 128, kBpart = Cfg::bn * 128 };
  enum : int { kA = kParts * kApart, kB = kParts * kBpart, kStage = kA + kB }; /* bytes of a stage */

  /* The TMA-store epilogue: per consumer two boxes of 64 rows x 128 bytes (kCols elements),
   * alternating; the staged form's fp32 staging box per consumer in 16-bit storage (fp32 stages
   * in the box buffer itself). */
  enum : int { kCols = 128 / kEsize, kBoxBytes = 64 * 128 };
  enum : int { kStagePitch = kCols * 4 }; /* bytes of a staging row: kCols fp32 sums */

  /* E on the whole tile in registers before the first store box, so the tile's vector loads are
   * in flight together: the cooperative TMA-store form (the late twin excepted) and the direct
   * stores' per-group form; not ping-pong, whose epilogue overlaps the other consumer's loop, nor
   * stream-K, whose registers it exhausts. */
  enum : int { kEarly = !Cfg::late && !Cfg::pingpong && !Cfg::stream_k };
  /* A box's E evaluated for all its outputs before its stores (independent evaluations for the
   * scheduler to interleave); not with stream-K (spills at BN 256). */
  enum : int { kGrouped = !Cfg::stream_k };
  enum : int { kEpiW = 4 }; /* 16-column groups of a direct-store tile evaluated together */

  /* The tile's slice of the epilogue's first column vector (slot FT_EP_COLV_SLOT) copied to
   * shared memory during the k loop, for the early E of the cooperative TMA-store form. */
  enum : int { kColvSlot = FT_EP_COLV_SLOT };
  /* E's matrix operands, a bit per slot (tc_matrix.cuh prefetches their tile to L2). */
  enum : unsigned { kMatMask = FT_EP_MAT_MASK };
  /* A one-value row reduction: the tile writes each row's partial statistic, no y (tc_reduce.cuh);
   * 8, groupnorm with whole groups of kNormW columns in the tile, normalized there (tc_norm.cuh). */
  enum : int { kRedKind = FT_EP_RED_KIND };
  enum : int { kNormW = FT_TC_NORM_W };
  /* Batchnorm's column partials of each m64 block into the workspace before the stores (family
   * tc_pass's GEMM; tc_colstats.cuh). */
  enum : int { kColStats = Cfg::colstat_bytes > 0 };
  enum : int {
    kColvStage = Cfg::colv_bytes > 0 && kColvSlot >= 0 && Cfg::tma_store && kEarly && !Cfg::staged && !Cfg::pingpong && !Cfg::stream_k && Cfg::split_k == 1
  };
  /* The early E's tile kept packed (16-bit storage, BN / 4 registers) and stored box by box during
   * the next tile's k loop (the cooperative plain and fp8 k loops); not where one consumer holds the
   * tile and E reads a matrix operand: with `x + bias + r` its loads beside the packed tile made
   * ptxas spill at 64 x 256 in fp16; nor beside fp8's two partial sums (the registers). */
  enum : int {
    kStoreOverlap = Cfg::tma_store && kEarly && !Cfg::staged && kEsize == 2 && Cfg::bn % kCols == 0 &&
                    !Cfg::split3x && !Cfg::pingpong && !Cfg::stream_k && Cfg::split_k == 1 &&
                    !(kMatMask != 0u && Cfg::consumers == 1) && !Cfg::dual
  };

  /* E deferred to the next tile's k loop (defer parts per store box): the store overlap's packed
   * tile holds the raw sums, rounded to y's type as cuBLAS's y is before a pass applies E. */
  enum : int { kDefer = Cfg::defer > 0 };
  static_assert(!kDefer || (kStoreOverlap && !kColvStage && (Cfg::defer & (Cfg::defer - 1)) == 0 &&
                            Cfg::defer <= kCols / 4 && !Cfg::fp8),
                "fusedtune: deferred E is a form of the store overlap (16-bit y, not fp8), in 1, 2, 4 .. kCols / 4 "
                "parts per box");

  static_assert(Cfg::dtype == FT_DTYPE, "fusedtune: configuration and math mode disagree on the storage type");
  static_assert(Cfg::bn % 8 == 0 && Cfg::bn >= 64 && Cfg::bn <= 256, "fusedtune: BN a multiple of 8 in 64..256");
  static_assert(Cfg::consumers == 1 || Cfg::consumers == 2, "fusedtune: one or two consumers");
  static_assert(Cfg::cluster == 1 || (Cfg::cluster == 2 && (Cfg::bn / 2) % 8 == 0), "fusedtune: cluster 1 or 2");
  static_assert(Cfg::stages >= 2 && Cfg::group >= 1 && Cfg::split_k >= 1, "fusedtune: stages, group, split_k");
  static_assert(!Cfg::pingpong || (Cfg::pingpong <= 2 && Cfg::consumers == 2 && kMsub * Cfg::bn <= 256),
                "fusedtune: ping-pong needs two consumers and at most 128 accumulator registers");
  static_assert(!Cfg::pingpong || (Cfg::split_k == 1 && !Cfg::split3x && !Cfg::stream_k),
                "fusedtune: ping-pong excludes split-K, stream-K and 3xtf32 (every work item whole)");
  static_assert(!Cfg::stream_k || (Cfg::split_k == 1 && !Cfg::split3x), "fusedtune: stream-K excludes split-K and 3xtf32");
  static_assert(!Cfg::tma_store || Cfg::split_k == 1, "fusedtune: the TMA-store epilogue excludes split-K");
  static_assert(!Cfg::staged || (Cfg::tma_store && !Cfg::stream_k), "fusedtune: the staged epilogue needs TMA stores");
  static_assert(((kRedKind >= 0 && kRedKind <= 5) || kRedKind == 8) &&
                    (!kRedKind || (!Cfg::tma_store && Cfg::split_k == 1 && !Cfg::stream_k && !Cfg::gated)),
                "fusedtune: a fused row reduction (rowsum .. logsumexp) or groupnorm: no TMA stores, split-K, "
                "stream-K or gated pair");
  static_assert((kRedKind == 8) == (kNormW > 0) &&
                    (kNormW == 0 || ((kNormW == 2 || kNormW == 4 || kNormW % 8 == 0) && Cfg::bn % kNormW == 0)),
                "fusedtune: groupnorm in the tile: groups of 2, 4 or a multiple of 8 columns, whole in BN");
  static_assert(!Cfg::aregs || (Cfg::split3x && Cfg::bn <= 64), "fusedtune: x in registers is 3xtf32's, BN <= 64");
  static_assert(!Cfg::gated || (Cfg::bn % 16 == 0 && !Cfg::tma_store && Cfg::split_k == 1 && !Cfg::stream_k),
                "fusedtune: a gated pair pairs 16-column groups with direct stores (no split-K, stream-K)");
  static_assert(!Cfg::split3x || Cfg::chunk >= 1, "fusedtune: 3xtf32 needs chunk >= 1");
  static_assert(!Cfg::fp8 || (Cfg::chunk >= 1 && Cfg::dtype == 1 && !Cfg::split3x && !Cfg::aregs && !Cfg::stream_k &&
                              kMsub * Cfg::bn <= (Cfg::dual ? 128 : 192)),
                "fusedtune: fp8 promotes every chunk >= 1 k tiles, bf16 y, no stream-K, m64 blocks x BN <= 192 "
                "(two partial sums: 128)");
  static_assert(!Cfg::dual || Cfg::fp8, "fusedtune: two partial sums are fp8's");
  static_assert(!Cfg::presplit || (Cfg::split3x && !Cfg::aregs && Cfg::split_k == 1 && kBK == 32),
                "fusedtune: pre-split operands are 3xtf32's (32-column blocks), without aregs or split-K");

  /* The host's regions, checked against what each use needs. */
  static_assert(Cfg::small_bytes == (!Cfg::split3x || Cfg::presplit ? 0 : 3 * (Cfg::aregs ? kB : kStage)),
                "fusedtune: 3xtf32's three small buffers");
  static_assert(Cfg::box_bytes == (Cfg::tma_store ? 2 * Cfg::consumers * kBoxBytes : 0), "fusedtune: store boxes");
  static_assert(Cfg::staging_bytes == (Cfg::staged && kEsize == 2 ? Cfg::consumers * 64 * kStagePitch : 0),
                "fusedtune: staging boxes");
  static_assert(Cfg::colv_bytes == 0 || (Cfg::colv_bytes == Cfg::bn * kEsize && Cfg::colv_bytes % 16 == 0 &&
                                         kColvSlot < FT_EP_SLOTS),
                "fusedtune: column-vector staging");
  /* The ring, the small buffers, the boxes, the staging boxes, two mbarriers per stage, stream-K's
   * 32-byte schedule, 1024 bytes to align the ring (128-byte swizzle), the column-vector slices. */
  static_assert(Cfg::colstat_bytes == 0 ||
                    (Cfg::colstat_bytes == Cfg::consumers * 4 * Cfg::bn * 8 && Cfg::bn % 32 == 0 && !kRedKind &&
                     Cfg::split_k == 1 &&
                     !Cfg::stream_k && !Cfg::pingpong && !Cfg::gated),
                "fusedtune: column partials: [4][bn] float2 per consumer, a cooperative tile stored whole");
  static_assert(Cfg::smem_bytes == Cfg::stages * kStage + Cfg::small_bytes + Cfg::box_bytes + Cfg::staging_bytes +
                                       16 * Cfg::stages + 32 * Cfg::stream_k + 1024 + Cfg::consumers * Cfg::colv_bytes +
                                       Cfg::colstat_bytes,
                "fusedtune: shared memory size");
};
