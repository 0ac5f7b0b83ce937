/* harness/base/tb_version.c: build facts from the generated tb_build.h. */
#include "tb_util.h"

#include "tb_build.h"

const char *tb_version_commit(void)
{
    return TB_GIT_COMMIT;
}
const char *tb_version_compiler(void)
{
    return TB_BUILD_CC;
}
const char *tb_version_cflags(void)
{
    return TB_BUILD_CFLAGS;
}
const char *tb_version_installed_datadir(void)
{
    return TB_DATADIR;
}
const char *tb_version_installed_libdir(void)
{
    return TB_LIBDIR;
}
int tb_version_cuda_built(void)
{
    return TB_CUDA_BUILT;
}
