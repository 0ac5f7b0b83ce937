/*
 * harness/cli/cli.h: the trnbench command line. Each subcommand is a function taking the
 * arguments after its name (argv[0] is the subcommand) and returning the exit status:
 * 0 ok, 1 a run or validation failed, 2 usage or input error. Each prints its own
 * --help, and declares its options as a table (cli_opt.h).
 */
#ifndef TB_CLI_H
#define TB_CLI_H

#include <stdbool.h>
#include <stddef.h>

int tb_cli_main(int argc, char **argv);

/* The exit status for a module's status (enum tb_status, tb_util.h): 0 for TB_OK, 2 for
 * TB_EINPUT (bad input, the file, line and field named), 1 for any other failure. */
int tb_cli_exit_status(int rc);

/* A TB_OPT_FN (cli_opt.h) for --discount MODEL=FRACTION: the option's dst is the
 * command's struct tb_pricing_discounts (tb_pricing_discount_add); 0, or -1 with why in
 * err. */
struct tb_opt;
int tb_cli_take_discount(const struct tb_opt *o, const char *value, char *err, size_t errlen);
/* A test-only switch: whether the environment variable var is set and the tests'
 * TRNBENCH_TEST=1 lets it act; set without it, "trnbench CMD: VAR ignored (only with
 * TRNBENCH_TEST=1)" on stderr when say. */
bool tb_cli_test_switch(const char *cmd, const char *var, bool say);
/* A test-only switch whose value is a step (a whole number in [1, 1000000]): the value
 * when tb_cli_test_switch lets var act, else 0; a value that is not such a number is
 * refused (said, 0). TRNBENCH_TEST_RANK_FAIL=N: rank 1 fails on its own at its N-th
 * step (train-dp) or size (collectives). */
long tb_cli_test_step(const char *cmd, const char *var, bool say);

int tb_cmd_run(int argc, char **argv);    /* harness/cmd_run.c */
int tb_cmd_report(int argc, char **argv); /* harness/cmd_report.c */
int tb_cmd_detect(int argc, char **argv); /* harness/cmd_detect.c */
int tb_cmd_perf(int argc, char **argv);   /* harness/cmd_perf.c */
/* perf-predictor, perf-gpu, perf-serve and perf-regime; argv[0] "perf" when the alias
 * `perf --predictor` (--gpu, --serve, --regime) calls them, the flag taken out */
int tb_cmd_perf_model(int argc, char **argv);  /* cli/cmd_perf_model.c */
int tb_cmd_perf_gpu(int argc, char **argv);    /* cli/cmd_perf_gpu.c */
int tb_cmd_perf_serve(int argc, char **argv);  /* cli/cmd_perf_serve.c */
int tb_cmd_perf_regime(int argc, char **argv); /* cli/cmd_perf_regime.c */
int tb_cmd_predict(int argc, char **argv);     /* harness/cmd_predict.c */
int tb_cmd_assess(int argc, char **argv);      /* harness/cmd_assess.c */
int tb_cmd_validate(int argc, char **argv);    /* harness/cmd_predict.c */
int tb_cmd_serve(int argc, char **argv);       /* harness/cmd_serve.c */
int tb_cmd_import(int argc, char **argv);      /* cli/cmd_import.c */
int tb_cmd_prices(int argc, char **argv);      /* cli/cmd_prices.c */
int tb_cmd_compare(int argc, char **argv);     /* cli/cmd_compare.c */
int tb_cmd_collectives(int argc, char **argv); /* cli/cmd_collectives.c */
int tb_cmd_train_dp(int argc, char **argv);    /* cli/cmd_train_dp.c */
/* cli/cmd_calibrate.c: `calibrate`, and `collectives --calibrate` (argv[0] "collectives") */
int tb_cmd_calibrate(int argc, char **argv);

#endif
