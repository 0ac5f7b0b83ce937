/* harness/main.c: placeholder until the CLI lands. */
#include "cli.h"
int main(int argc, char **argv) { return tb_cli_main(argc, argv); }
