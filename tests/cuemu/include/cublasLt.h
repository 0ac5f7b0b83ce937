/*
 * tests/cuemu/include/cublasLt.h: the CPU emulation build's stand-in for CUDA's
 * <cublasLt.h>. The emulator (tests/cuemu/cuemu.h) has no cuBLASLt: it supplies the
 * handle type the plugin's context holds, and tests/cuemu/gemm_ref.cc replaces
 * gemm.cu, the file that calls cuBLASLt.
 *
 * Only the emulation build has this folder on its include path (GNUmakefile,
 * TB_CXXFLAGS), so the plugin's sources include the CUDA headers by their own names in
 * both builds and never name tests/.
 */
#ifndef TB_CUEMU_INCLUDE_CUBLASLT_H
#define TB_CUEMU_INCLUDE_CUBLASLT_H

#include "../cuemu.h"

#endif
