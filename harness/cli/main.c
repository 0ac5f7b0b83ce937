/* harness/cli/main.c: the trnbench program; everything lives in the library. */
#include "cli.h"
#include "tb_blas.h"

int main(int argc, char **argv)
{
    tb_blas_fix_coretype(argv); /* may re-execute the program once (tb_blas.h) */
    return tb_cli_main(argc, argv);
}
