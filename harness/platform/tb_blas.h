/*
 * harness/platform/tb_blas.h: make OpenBLAS use the kernels this CPU can run.
 *
 * OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels from the CPUID family
 * and model when the library loads. Virtual machines that report a generic model
 * ("Intel Xeon Processor", model numbers the library does not know) make it fall back
 * to "Prescott", an SSE3 kernel set: on an AVX-512 machine sgemm then runs about 6
 * times below what it can (measured on this project's CI kind: 34 against 227
 * GFLOP/s on 2 cores). Every measured number would carry that error.
 *
 * The library reads OPENBLAS_CORETYPE only when it loads, so the fix is to set it and
 * execute the program again, once, before anything else happens. A user's own
 * OPENBLAS_CORETYPE is always respected. The choice goes into the results through the
 * BLAS description (openblas_get_config names the core) and tb_blas_note().
 */
#ifndef TB_BLAS_H
#define TB_BLAS_H

#include <stdbool.h>

/* CPU features that decide the kernel set (x86-64). */
struct tb_cpu_features {
    bool avx, avx2, fma, avx512f, avx512bw, avx512vl, avx512dq;
};

/* The OpenBLAS core to ask for when OpenBLAS chose `detected` on a CPU with features
 * f, or NULL when its choice is fine: a fallback core ("Prescott", "Core2", "Katmai",
 * "Nehalem", "Atom", "Penryn", "Dunnington", "Barcelona", "Opteron", "Banias") on a
 * CPU with AVX-512 (F, BW, VL, DQ) gets "SkylakeX", with AVX2 and FMA "Haswell", with
 * AVX "Sandybridge". Pure; for tests. */
const char *tb_blas_better_core(const char *detected, const struct tb_cpu_features *f);

/* When OPENBLAS_CORETYPE is unset and tb_blas_better_core finds a better core for
 * this CPU, set OPENBLAS_CORETYPE and re-execute /proc/self/exe with argv (marked so
 * it happens at most once). Returns only when no re-execution was needed or it
 * failed (then the run goes on with OpenBLAS's own choice and the note says so). */
void tb_blas_fix_coretype(char **argv);

/* What tb_blas_fix_coretype did, for provenance: "" when nothing, else e.g.
 * "OPENBLAS_CORETYPE=SkylakeX set by trnbench (OpenBLAS detected Prescott)". */
const char *tb_blas_note(void);

#endif
