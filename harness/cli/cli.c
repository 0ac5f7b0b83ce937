/* harness/cli/cli.c: `trnbench COMMAND ...`, dispatch to the subcommands (cli.h). */
#include "cli.h"

#include "cli_opt.h"
#include "tb_log.h"
#include "tb_neuron.h"
#include "tb_pricing.h"
#include "tb_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command COMMANDS[] = {
    {"run", tb_cmd_run, "run a suite or one workload on this machine into results.csv"},
    {"predict", tb_cmd_predict, "predict scenarios (any workload on any target) with the model"},
    {"validate", tb_cmd_validate, "the model's error against published measurements"},
    {"assess", tb_cmd_assess, "migration assessment: fleet, monthly cost, saving, break-even"},
    {"import", tb_cmd_import, "import vLLM, NxD Inference or LLMPerf results a team measured"},
    {"prices", tb_cmd_prices,
     "import AWS price readings (aws pricing, ec2 CLI JSON) into prices.csv"},
    {"report", tb_cmd_report, "price results and write report.md, report.html and charts"},
    {"compare", tb_cmd_compare, "one workload modeled and priced on named targets: the report"},
    {"calibrate", tb_cmd_calibrate,
     "fit the link efficiencies measured collectives imply into an efficiency file"},
    {"detect", tb_cmd_detect, "what this machine is: CPU, memory, EC2 type, GPUs, Neuron"},
    {"perf", tb_cmd_perf, "the CPU engine's FLOP/s and bandwidth against sgemm and STREAM"},
    {"perf-predictor", tb_cmd_perf_model,
     "the performance model's speed: layouts per second, a 405B layout search"},
    {"perf-gpu", tb_cmd_perf_gpu, "the CUDA executor's MFU and decode bandwidth; against PyTorch"},
    {"perf-serve", tb_cmd_perf_serve, "serving's own costs: the load client, continuous batching"},
    {"perf-regime", tb_cmd_perf_regime, "the serving regimes predicted against trnbench serve"},
    {"collectives", tb_cmd_collectives,
     "collective bandwidth (MPI, NCCL, Neuron) with nccl-tests' conventions"},
    {"train-dp", tb_cmd_train_dp, "data-parallel training of the CPU Llama engine over MPI"},
    {"serve", tb_cmd_serve, "serve a model through the OpenAI API with continuous batching"},
};

static void usage(FILE *f)
{
    fputs("usage: trnbench COMMAND [OPTIONS]\n"
          "\n"
          "What does it cost to train and serve Llama models on this machine, and on\n"
          "AWS Trainium, Inferentia and NVIDIA GPU instances?\n"
          "\n"
          "Commands:\n",
          f);
    int width = 0; /* the summaries in one column, after the longest name */
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if ((int)strlen(COMMANDS[i].name) > width)
            width = (int)strlen(COMMANDS[i].name);
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        fprintf(f, "  %-*s  %s\n", width, COMMANDS[i].name, COMMANDS[i].summary);
    fputs("\n"
          "`trnbench COMMAND --help` describes each. `trnbench --version` prints the build.\n"
          "Exit status: 0 ok, 1 a run or validation failed, 2 usage or input error.\n"
          "Data (models, suites, prices, chart scripts) come from $TRNBENCH_DATADIR, else\n"
          "the source tree the program was built in, else the installed share folder.\n",
          f);
}

int tb_cli_main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;

    if (!cmd) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("trnbench %s (%s; %s)\ndata: %s\n", tb_version_commit(), tb_version_compiler(),
               tb_version_cflags(), tb_datadir());
        return 0;
    }
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (!strcmp(cmd, COMMANDS[i].name)) {
            tb_log_prefix(cmd); /* the library's lines: "trnbench compare: ..." */
            return COMMANDS[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "trnbench: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}

int tb_cli_exit_status(int rc)
{
    return rc == TB_OK ? 0 : rc == TB_EINPUT ? 2 : 1;
}

int tb_cli_take_discount(const struct tb_opt *o, const char *value, char *err, size_t errlen)
{
    static const char own[] = "--discount: "; /* the option is named where it is said */
    if (tb_pricing_discount_add(o->dst, value, err, errlen) == 0)
        return 0;
    if (!strncmp(err, own, sizeof own - 1))
        memmove(err, err + sizeof own - 1, strlen(err + sizeof own - 1) + 1);
    return -1;
}

bool tb_cli_test_switch(const char *cmd, const char *var, bool say)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return false;
    if (tb_neuron_stand_in_allowed())
        return true;
    if (say)
        fprintf(stderr, "trnbench %s: %s ignored (only with TRNBENCH_TEST=1)\n", cmd, var);
    return false;
}

long tb_cli_test_step(const char *cmd, const char *var, bool say)
{
    long v = 0;
    if (!tb_cli_test_switch(cmd, var, say))
        return 0;
    if (tb_parse_long(getenv(var), 1, 1000000, &v) != 0) {
        if (say)
            fprintf(stderr, "trnbench %s: %s: not a step in [1, 1000000]: '%s' (ignored)\n", cmd,
                    var, getenv(var));
        return 0;
    }
    return v;
}
