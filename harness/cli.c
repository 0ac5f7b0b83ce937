/* harness/cli.c: placeholder while the subcommands land. */
#include "cli.h"
#include <stdio.h>
int tb_cli_main(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "trnbench: not yet\n"); return 2; }
