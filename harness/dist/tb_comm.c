/* harness/dist/tb_comm.c: finding and loading the MPI plugin (tb_comm.h). */
#include "tb_comm.h"

#include "tb_util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct tb_comm_api *tb_comm_open(char *why, size_t len)
{
    const char *env = getenv("TRNBENCH_MPI_PLUGIN");
    char exe[3000], beside[3200] = "", installed[3200], *path = NULL, *slash;
    const struct tb_comm_api *api;
    tb_comm_plugin_fn entry;
    void *dl, *sym;

    snprintf(installed, sizeof installed, "%.2900s/%s", tb_version_installed_libdir(),
             TB_COMM_MPI_PLUGIN_NAME);
    if (tb_self_exe(exe, sizeof exe, NULL, 0) == 0 && (slash = strrchr(exe, '/'))) {
        *slash = '\0';
        snprintf(beside, sizeof beside, "%s/../lib/%s", exe, TB_COMM_MPI_PLUGIN_NAME);
    }
    if (env && *env) {
        if (!tb_file_exists(env)) {
            snprintf(why, len, "MPI plugin '%.900s' (TRNBENCH_MPI_PLUGIN) not found", env);
            return NULL;
        }
        path = (char *)env;
    } else if (beside[0] && tb_file_exists(beside)) {
        path = beside;
    } else if (tb_file_exists(installed)) {
        path = installed;
    } else {
        snprintf(why, len,
                 "MPI plugin not found (looked at '%.450s' and '%.450s'): it is built with "
                 "mpicc where mpicc is found at build time (apt-get install openmpi-bin "
                 "libopenmpi-dev, then make)",
                 beside[0] ? beside : "<no /proc/self/exe>", installed);
        return NULL;
    }
    /* RTLD_GLOBAL: Open MPI's components (mca_*.so, loaded by libmpi) look up libmpi's
     * symbols in the global namespace */
    dl = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!dl) {
        const char *e = dlerror();
        snprintf(why, len, "cannot load '%.500s': %.400s", path, e ? e : "unknown error");
        return NULL;
    }
    sym = dlsym(dl, TB_COMM_PLUGIN_SYMBOL);
    if (!sym) {
        snprintf(why, len, "'%.900s' has no symbol '%s'", path, TB_COMM_PLUGIN_SYMBOL);
        return NULL;
    }
    memcpy(&entry, &sym, sizeof entry); /* POSIX: a dlsym pointer converts to a function */
    api = entry(TB_COMM_ABI_VERSION);
    if (!api || api->abi_version != TB_COMM_ABI_VERSION) {
        snprintf(why, len,
                 "'%.800s' was built for another plugin interface (this binary needs version "
                 "%d): rebuild both",
                 path, TB_COMM_ABI_VERSION);
        return NULL;
    }
    /* the library stays loaded: MPI must not be unloaded after MPI_Init */
    return api;
}

const struct tb_comm_api *tb_comm_start(const char *prefix, int *argc, char ***argv, int *rc)
{
    char why[1200] = "";
    const struct tb_comm_api *c = tb_comm_open(why, sizeof why);
    if (!c) {
        fprintf(stderr, "%s needs MPI: %s\n", prefix, why);
        *rc = 2;
        return NULL;
    }
    if (c->init(argc, argv, why, sizeof why) != 0) {
        fprintf(stderr, "%s %s\n", prefix, why);
        *rc = 1;
        return NULL;
    }
    return c;
}
