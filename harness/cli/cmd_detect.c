/* harness/cli/cmd_detect.c: `trnbench detect`, what this machine is (tb_platform.h),
 * its Neuron devices as neuron-ls lists them (tb_neuron.h) and the Neuron SDK installed
 * (tb_neuron_sdk.h), and whether hardware counters work (tb_counters.h). */
#include "cli.h"
#include "cli_opt.h"
#include "tb_counters.h"
#include "tb_csv.h"
#include "tb_neuron.h"
#include "tb_neuron_sdk.h"
#include "tb_platform.h"
#include "tb_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench detect [--format text|csv] [--root DIR] [--timeout S]\n"
          "\n"
          "Print what this machine is: CPU model and cores, memory, last-level cache,\n"
          "host name and kernel, the EC2 instance type (from DMI, on Nitro instances),\n"
          "NVIDIA GPUs, Neuron devices, the BLAS library and whether PAPI hardware\n"
          "counters work. Reads /proc, /sys and /dev: no network, no instance\n"
          "metadata service. Neuron devices come from `neuron-ls --json-output` where\n"
          "it runs (else from sysfs, and the reason is printed), and the Neuron SDK's\n"
          "versions from its packages' metadata (Python dist-info, dpkg's status).\n"
          "\n"
          "  --format text   aligned \"key  value\" lines (default)\n"
          "  --format csv    a key,value table with a header\n"
          "  --root DIR      read DIR/proc, DIR/sys, DIR/dev and the SDK's files under\n"
          "                  DIR instead (a fake tree; neuron-ls is not run)\n"
          "  --timeout S     how long neuron-ls may run (default 10 s)\n"
          "  -h, --help      this text\n",
          f);
}

struct emit_ctx {
    bool csv;
    int failed; /* a write failed */
};

static void emit(const char *key, const char *value, void *vctx)
{
    struct emit_ctx *ctx = vctx;

    if (ctx->csv) {
        if (tb_csv_put(stdout, key, ',') != 0 || tb_csv_put(stdout, value, '\n') != 0)
            ctx->failed = 1;
    } else if (printf("%-20s %s\n", key, value) < 0) {
        ctx->failed = 1;
    }
}

int tb_cmd_detect(int argc, char **argv)
{
    struct tb_platform p;
    struct tb_neuron neuron;
    struct tb_neuron_sdk sdk;
    struct emit_ctx ctx = {false, 0};
    const char *root = NULL;
    double timeout_s = TB_NEURON_LS_TIMEOUT_S;
    char err[800];

    static const char *const FORMATS[] = {"text", "csv", NULL};
    int format = 0;
    const struct tb_opt opts[] = {
        TB_OPT_CHOICE("format", &format, FORMATS),
        TB_OPT_STR("root", &root),
        TB_OPT_DOUBLE("timeout", &timeout_s, 0.001, 3600),
        TB_OPT_END,
    };
    int rc = tb_cli_parse("detect", argc, argv, opts, usage);

    if (rc != TB_CLI_GO)
        return rc;
    ctx.csv = format == 1;
    if (optind < argc) {
        fprintf(stderr, "trnbench detect: unknown argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }

    if ((root ? tb_platform_detect_root(&p, root, err, sizeof err)
              : tb_platform_detect(&p, err, sizeof err)) != 0) {
        fprintf(stderr, "trnbench detect: %s\n", err);
        return 2;
    }
    if (tb_neuron_detect(&neuron, &p, timeout_s, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench detect: %s\n", err);
        return 2;
    }
    tb_neuron_sdk_detect(&sdk, p.root, getenv("VIRTUAL_ENV"), getenv("PATH"));
    if (ctx.csv && (tb_csv_put(stdout, "key", ',') != 0 || tb_csv_put(stdout, "value", '\n') != 0))
        ctx.failed = 1;
    tb_platform_each(&p, emit, &ctx);
    tb_neuron_each(&neuron, emit, &ctx);
    if (p.neuron_devices > 0 || neuron.ndevices > 0) {
        /* the LNC, and whether neuron-ls stated it or it is guessed */
        struct tb_neuron_lnc lnc;
        char v[16];
        tb_neuron_lnc_resolve(&neuron, &p, &lnc);
        if (strcmp(lnc.source, "neuron-ls") != 0 && lnc.lnc > 0) {
            snprintf(v, sizeof v, "%d", lnc.lnc);
            emit("neuron_lnc_config", v, &ctx);
        }
        emit("neuron_lnc_source", lnc.how, &ctx);
    }
    tb_neuron_sdk_each(&sdk, emit, &ctx);
    emit("counters", tb_counters_status(), &ctx);
    if (fflush(stdout) != 0 || ctx.failed) {
        fprintf(stderr, "trnbench detect: cannot write to standard output\n");
        return 1;
    }
    return 0;
}
