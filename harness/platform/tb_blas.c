/* harness/platform/tb_blas.c: see tb_blas.h. */
#include "tb_blas.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Set in the environment of the re-executed program: the core it asked for and what
 * OpenBLAS had detected. */
#define TB_BLAS_MARK "TRNBENCH_BLAS_FIXED"

const char *tb_blas_better_core(const char *detected, const struct tb_cpu_features *f)
{
    static const char *const fallback[] = {"Prescott", "Core2",  "Katmai",     "Nehalem",
                                           "Atom",     "Penryn", "Dunnington", "Barcelona",
                                           "Opteron",  "Banias", NULL};
    bool is_fallback = false;

    if (!detected)
        return NULL;
    for (int i = 0; fallback[i]; i++)
        if (!strcasecmp(detected, fallback[i]))
            is_fallback = true;
    if (!is_fallback)
        return NULL;
    if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq)
        return "SkylakeX";
    if (f->avx2 && f->fma)
        return "Haswell";
    if (f->avx)
        return "Sandybridge";
    return NULL;
}

static char note[160];

const char *tb_blas_note(void)
{
    const char *mark = getenv(TB_BLAS_MARK), *user = getenv("OPENBLAS_CORETYPE");
    if (!note[0] && mark && *mark)
        snprintf(note, sizeof note, "%s set by trnbench", mark);
    else if (!note[0] && user && *user)
        snprintf(note, sizeof note, "OPENBLAS_CORETYPE=%s from the environment", user);
    return note;
}

void tb_blas_fix_coretype(char **argv)
{
#if defined(__x86_64__) && defined(__GNUC__)
    struct tb_cpu_features f;
    const char *detected, *want;
    char mark[128];

    if (getenv("OPENBLAS_CORETYPE") || getenv(TB_BLAS_MARK))
        return;
    __builtin_cpu_init();
    f.avx = __builtin_cpu_supports("avx");
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512dq = __builtin_cpu_supports("avx512dq");
    detected = openblas_get_corename();
    want = tb_blas_better_core(detected, &f);
    if (!want)
        return;
    snprintf(mark, sizeof mark, "OPENBLAS_CORETYPE=%s (OpenBLAS detected %s)", want, detected);
    if (setenv("OPENBLAS_CORETYPE", want, 1) != 0 || setenv(TB_BLAS_MARK, mark, 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    /* still here: go on with OpenBLAS's choice, and say so */
    snprintf(note, sizeof note, "OpenBLAS detected %s; re-running with %s failed", detected, want);
    unsetenv("OPENBLAS_CORETYPE");
#else
    (void)argv;
#endif
}
