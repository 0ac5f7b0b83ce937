/*
 * tests/cuemu/include/cuda_runtime.h: the CPU emulation build's stand-in for CUDA's
 * <cuda_runtime.h>. The emulator (tests/cuemu/cuemu.h) supplies the runtime API the
 * plugin calls: memory, streams, events, graphs, launches and errors.
 *
 * Only the emulation build has this folder on its include path (GNUmakefile,
 * TB_CXXFLAGS), so the plugin's sources include the CUDA headers by their own names in
 * both builds and never name tests/.
 */
#ifndef TB_CUEMU_INCLUDE_CUDA_RUNTIME_H
#define TB_CUEMU_INCLUDE_CUDA_RUNTIME_H

#include "../cuemu.h"

#endif
