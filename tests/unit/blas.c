/*
 * tests/unit/blas.c: the choice of OpenBLAS kernels (harness/tb_blas.h): a fallback
 * core on a CPU with better features gets the best kernel set the features allow, a
 * core OpenBLAS chose itself is kept, and the note names what was done.
 */
#include "tb_blas.h"

#include "tests/tap/basic.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    const struct tb_cpu_features none = {0};
    const struct tb_cpu_features avx = {.avx = true};
    const struct tb_cpu_features avx2 = {.avx = true, .avx2 = true, .fma = true};
    const struct tb_cpu_features avx512 = {.avx = true,
                                           .avx2 = true,
                                           .fma = true,
                                           .avx512f = true,
                                           .avx512bw = true,
                                           .avx512vl = true,
                                           .avx512dq = true};
    const struct tb_cpu_features knl = {.avx = true, .avx2 = true, .fma = true, .avx512f = true};
    const char *c;

    plan(10);
    IS_STRING("SkylakeX", tb_blas_better_core("Prescott", &avx512), "Prescott on AVX-512");
    IS_STRING("Haswell", tb_blas_better_core("Prescott", &avx2), "Prescott on AVX2+FMA");
    IS_STRING("Sandybridge", tb_blas_better_core("Nehalem", &avx), "Nehalem on AVX");
    IS_STRING("Haswell", tb_blas_better_core("prescott", &knl),
              "AVX-512F without BW/VL/DQ is not SkylakeX (case ignored)");
    OK(tb_blas_better_core("Prescott", &none) == NULL, "an SSE-only CPU keeps Prescott");
    OK(tb_blas_better_core("Haswell", &avx512) == NULL, "a core OpenBLAS knew is kept");
    OK(tb_blas_better_core("Zen", &avx2) == NULL, "Zen is kept");
    OK(tb_blas_better_core(NULL, &avx512) == NULL, "no core name: nothing to do");

    /* the note reads the environment the re-executed program was given */
    unsetenv("OPENBLAS_CORETYPE");
    setenv("TRNBENCH_BLAS_FIXED", "OPENBLAS_CORETYPE=SkylakeX (OpenBLAS detected Prescott)", 1);
    c = tb_blas_note();
    IS_STRING("OPENBLAS_CORETYPE=SkylakeX (OpenBLAS detected Prescott) set by trnbench", c,
              "the note names the core, what was detected and who set it");
    /* fix_coretype does nothing once marked (no loop of re-executions) */
    {
        char *argv[] = {(char *)"blas.t", NULL};
        tb_blas_fix_coretype(argv);
        OK(getenv("OPENBLAS_CORETYPE") == NULL, "a marked process is not re-executed");
    }
    return 0;
}
