/*
 * tests/cuemu/include/cuda_bf16.h: the CPU emulation build's stand-in for CUDA's
 * <cuda_bf16.h>. The emulator (tests/cuemu/cuemu.h) supplies __nv_bfloat16,
 * __nv_bfloat162 and their conversions and arithmetic.
 *
 * Only the emulation build has this folder on its include path (GNUmakefile,
 * TB_CXXFLAGS), so the plugin's sources include the CUDA headers by their own names in
 * both builds and never name tests/.
 */
#ifndef TB_CUEMU_INCLUDE_CUDA_BF16_H
#define TB_CUEMU_INCLUDE_CUDA_BF16_H

#include "../cuemu.h"

#endif
