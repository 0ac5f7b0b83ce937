/* harness/main.c: the trnbench program; everything lives in the library. */
#include "cli.h"

int main(int argc, char **argv)
{
    return tb_cli_main(argc, argv);
}
