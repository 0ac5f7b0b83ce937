/* harness/cli.h: the trnbench command line (subcommands run, report, detect, perf, ...). */
#ifndef TB_CLI_H
#define TB_CLI_H
/* Returns the process exit status: 0 ok, 1 a run or validation failed, 2 usage or input error. */
int tb_cli_main(int argc, char **argv);
#endif
