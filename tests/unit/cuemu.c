/*
 * tests/unit/cuemu.c: the CPU emulation of the CUDA plugin (tests/cuemu/, built into
 * $TB_BUILDDIR/lib/libtrnbench-cuemu.so) checks itself: each of its self-tests
 * (tests/cuemu/selftest.cc, listed by cuemu_selftest_names) is one TAP test: the
 * order shaking exposes a missing __syncthreads, a barrier in divergent code and a
 * shuffle with lanes missing are reported, shuffle reductions and votes are right,
 * graph capture replays, shared memory limits hold, copies outside an allocation fail,
 * bf16 and fp8 e4m3 round to nearest even, wmma products are right. The tests that
 * run the plugin's kernels and engine on it are in tests/unit/gpu.c.
 */
#include "tests/tap/basic.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*selftest_fn)(const char *name, char *err, size_t errlen);
typedef const char *(*names_fn)(void);

int main(void)
{
    char *path = test_tmp_path("../../lib/libtrnbench-cuemu.so");
    char names[512], err[1024];
    void *dl, *sym_run, *sym_names;
    selftest_fn run;
    names_fn list;

    if (access(path, R_OK) != 0)
        skip_all("the CUDA emulator was not built (%s)", path);
    plan_lazy();
    dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        bail("cannot load '%s': %s", path, dlerror());
    sym_run = dlsym(dl, "cuemu_selftest");
    sym_names = dlsym(dl, "cuemu_selftest_names");
    if (!sym_run || !sym_names)
        bail("'%s' has no cuemu_selftest or cuemu_selftest_names", path);
    /* POSIX: a data pointer from dlsym converts to a function pointer */
    memcpy(&run, &sym_run, sizeof run);
    memcpy(&list, &sym_names, sizeof list);
    snprintf(names, sizeof names, "%s", list());
    for (char *save = NULL, *n = strtok_r(names, " ", &save); n; n = strtok_r(NULL, " ", &save)) {
        int rc = run(n, err, sizeof err);
        if (rc == 1) {
            ok(true, "cuemu self-test %s (%s)", n, err);
            continue;
        }
        if (rc != 0)
            diag("%s: %s", n, err);
        ok(rc == 0, "cuemu self-test %s", n);
    }
    free(path);
    /* the library stays loaded: its fiber stacks are released at exit */
    return 0;
}
