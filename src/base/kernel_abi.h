/* Constants and structs the host and the kernels in kernels_src/ share. Codegen writes each
 * constant into every kernel source as a #define (ft_kernel_abi_defines), so there is one
 * definition; kernels check with #error that they got them. GPU-free. */
#ifndef FT_KERNEL_ABI_H
#define FT_KERNEL_ABI_H

#define FT_EP_SLOTS 8    /* vectors and scalars an epilogue may bind (FtEpArgs) */
#define FT_AUX_BLOCK 256 /* threads per block of ft_splitk_reduce, ft_streamk_fixup, ft_eager_step */
#define FT_AUX_ELEMS 4   /* elements per thread of those kernels */

/* The NVRTC options every kernel compiles with after its --gpu-architecture (src/compile/compile.c):
 * what they change in the code, so every kernel source's hash covers them (src/family/codegen.c). */
#define FT_NVRTC_OPTIONS " --std=c++17 -default-device --fmad=true --prec-div=true --prec-sqrt=true --ftz=false"

/* Element types of the tensors as kernels see them (#define FT_DTYPE, written by codegen for
 * every variant from its math mode); FT_TF32 1 marks tf32 inputs (fp32 storage). */
#define FT_KDTYPE_F32 0
#define FT_KDTYPE_BF16 1
#define FT_KDTYPE_F16 2

/* Host mirror of the device struct FtEpArgs (kernels_src/ft_common.cuh; same layout): vectors
 * hold the mode's element type. */
typedef struct ft_ep_args_dev {
  const void *v[FT_EP_SLOTS];
  float s[FT_EP_SLOTS];
} ft_ep_args_dev;

#endif
