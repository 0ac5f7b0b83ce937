/* harness/cli/cmd_detect.c: `trnbench detect`, what this machine is (tb_platform.h) and
 * whether hardware counters work (tb_counters.h). */
#include "cli.h"
#include "tb_counters.h"
#include "tb_csv.h"
#include "tb_platform.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench detect [--format text|csv] [--root DIR]\n"
          "\n"
          "Print what this machine is: CPU model and cores, memory, last-level cache,\n"
          "host name and kernel, the EC2 instance type (from DMI, on Nitro instances),\n"
          "NVIDIA GPUs, Neuron devices, the BLAS library and whether PAPI hardware\n"
          "counters work. Reads /proc, /sys and /dev only: no network, no instance\n"
          "metadata service.\n"
          "\n"
          "  --format text   aligned \"key  value\" lines (default)\n"
          "  --format csv    a key,value table with a header\n"
          "  --root DIR      read DIR/proc, DIR/sys and DIR/dev instead (a fake tree)\n"
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
    struct emit_ctx ctx = {false, 0};
    const char *root = NULL;
    char err[512];

    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"root", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, state = 0;

    while ((c = tb_cli_getopt("detect", argc, argv, opts, &state)) != -1) {
        switch (c) {
        case 'h':
            usage(stdout);
            return 0;
        case 'r':
            root = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "csv") != 0 && strcmp(optarg, "text") != 0) {
                fprintf(stderr, "trnbench detect: unknown format '%s' (text or csv)\n", optarg);
                return 2;
            }
            ctx.csv = strcmp(optarg, "csv") == 0;
            break;
        default: /* tb_cli_getopt said what is wrong */
            usage(stderr);
            return 2;
        }
    }
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
    if (ctx.csv && (tb_csv_put(stdout, "key", ',') != 0 || tb_csv_put(stdout, "value", '\n') != 0))
        ctx.failed = 1;
    tb_platform_each(&p, emit, &ctx);
    emit("counters", tb_counters_status(), &ctx);
    if (fflush(stdout) != 0 || ctx.failed) {
        fprintf(stderr, "trnbench detect: cannot write to standard output\n");
        return 1;
    }
    return 0;
}
