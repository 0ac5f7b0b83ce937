/*
 * harness/cli/cmd_perf.c: `trnbench perf`, the benchmark for the engine's performance
 * requirements. In one run it measures the machine's practical peaks (cblas_sgemm
 * 2048^3 GFLOP/s; STREAM triad GB/s over the OpenBLAS thread count) and the CPU
 * engine's prefill, training step and decode on one model, then prints each engine
 * figure as a ratio of its peak against a target:
 *
 *   prefill B=1 T=seq    GFLOP/s (tb_flops_prefill) / sgemm GFLOP/s   >= 0.70
 *   train   B=1 T=seq    GFLOP/s (tb_flops_train)   / sgemm GFLOP/s   >= 0.70
 *   decode  B=1 pos=seq  bytes/s (tb_bytes_decode_step, fp32 weights and cache)
 *                                                   / triad bytes/s   >= 0.60
 *
 * It prints figures; it is not a test. Exit 0 when every line passes, 1 when one
 * fails or an output fails validation, 2 on a usage or input error.
 *
 * The other benchmarks are commands of their own (perf-predictor, perf-gpu, perf-serve,
 * perf-regime); `perf --predictor`, `--gpu`, `--serve` and `--regime` stay their
 * aliases: the flag is taken out, the rest goes to the command with argv[0] "perf", so
 * the alias says "trnbench perf: ..." as it always did.
 */
#include "cli.h"
#include "cli_opt.h"
#include "tb_log.h"
#include "tb_arch.h"
#include "tb_counters.h"
#include "tb_exec.h"
#include "tb_flops.h"
#include "tb_perf.h"
#include "tb_platform.h"
#include "tb_stats.h"
#include "tb_timer.h"
#include "tb_util.h"
#include "workloads/llama/llama.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PERF_SGEMM_N      2048
#define PERF_TARGET_FLOPS 0.70 /* prefill and train: fraction of sgemm GFLOP/s */
#define PERF_TARGET_BYTES 0.60 /* decode: fraction of triad GB/s */
#define PERF_SEED         20240601ULL
#define MIB               (1024.0 * 1024.0)

struct perf_opts {
    int reps;          /* timed repetitions of every figure */
    const char *model; /* architecture name or path */
    int seq;           /* prompt / training length, decode position */
    long triad_mib;    /* MiB per triad array; 0 = from the cache size */
};

/* One line of the table. */
struct perf_line {
    char figure[96];
    const char *unit; /* "GFLOP/s" or "GB/s" */
    double scale;     /* divides the rate into the unit */
    struct tb_stats rate;
    double ratio; /* < 0: no ratio (a peak line) */
    double target;
    bool ran;   /* measured at all */
    bool valid; /* output validated */
    char note[256];
    char counters[1200];
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trnbench perf [--reps N] [--model NAME] [--seq N] [--triad-mib N]\n"
            "       trnbench perf --predictor | --gpu | --serve | --regime [OPTIONS]\n"
            "\n"
            "Measure the machine's practical peaks (cblas_sgemm %dx%dx%d GFLOP/s, STREAM\n"
            "triad GB/s on the OpenBLAS thread count) and the CPU engine's prefill\n"
            "(B=1, T=seq), training step (B=1, T=seq) and decode (B=1 at position seq),\n"
            "and print each engine figure as a ratio of its peak: prefill and train\n"
            "GFLOP/s against sgemm (target >= %.2f), decode bytes/s against the triad\n"
            "(target >= %.2f). Each figure: one warm-up, then N timed repetitions; the\n"
            "median is reported. Exit status 0 when every line passes, 1 otherwise.\n"
            "\n"
            "  --reps N        timed repetitions per figure (default 5)\n"
            "  --model NAME    model architecture (default llama-cpu-2048)\n"
            "  --seq N         prompt and training length, decode position (default 512)\n"
            "  --triad-mib N   MiB per triad array (default: 4 x the last-level cache,\n"
            "                  at least 64, the three arrays within 1/4 of memory)\n"
            "  --predictor     instead, `trnbench perf-predictor`: the performance model's\n"
            "                  speed: training layouts evaluated per second on one core\n"
            "                  (target >= 100000) and one layout search for llama-3.1-405b\n"
            "                  on 1024 Trainium2 (< 1 s)\n"
            "  --gpu           instead, `trnbench perf-gpu`: the CUDA executor on the first\n"
            "                  GPU: training MFU (target >= 0.50) and decode bandwidth\n"
            "                  against a device copy (target >= 0.70); with --peer pytorch,\n"
            "                  tokens/s against PyTorch on the same work (target >= 1.00)\n"
            "  --serve         instead, `trnbench perf-serve`: serving's own costs: the load\n"
            "                  client's chunks per CPU-second and added lag (targets >=\n"
            "                  20000, p99 < 1 ms) and continuous batching against a static\n"
            "                  batch (target >= 0.70)\n"
            "  --regime        instead, `trnbench perf-regime`: the serving regimes\n"
            "                  predicted against `trnbench serve` measured\n"
            "                  (each: `trnbench perf-gpu --help` and so on)\n"
            "  -h, --help      this text\n",
            PERF_SGEMM_N, PERF_SGEMM_N, PERF_SGEMM_N, PERF_TARGET_FLOPS, PERF_TARGET_BYTES);
}

/* Fills o from the options (--opt value or --opt=value). Returns TB_CLI_GO, or the exit
 * status after --help (0) or a usage error (2, said on stderr). */
static int parse_args(int argc, char **argv, struct perf_opts *o)
{
    long reps = 5, seq = 512;
    const struct tb_opt opts[] = {
        TB_OPT_LONG("reps", &reps, 1, 1000),
        TB_OPT_STR("model", &o->model),
        TB_OPT_LONG("seq", &seq, 1, 1L << 20),
        TB_OPT_LONG("triad-mib", &o->triad_mib, 1, 1L << 20),
        TB_OPT_END,
    };
    int rc;

    o->model = "llama-cpu-2048";
    o->triad_mib = 0;
    if ((rc = tb_cli_parse("perf", argc, argv, opts, usage)) != TB_CLI_GO)
        return rc;
    o->reps = (int)reps;
    o->seq = (int)seq;
    if (optind < argc) {
        fprintf(stderr, "trnbench perf: unknown argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return TB_CLI_GO;
}

/* ---- the engine figures ---- */

/* Time one phase on the shared engine through the executor (tb_exec.h: warm-up,
 * validation, counters) and turn its repetitions into rates: FLOP/s for prefill and
 * train, bytes/s for decode (one step at position seq). Returns 0, or -1 with err when
 * the engine failed. */
static int time_phase(struct tb_llama *m, enum tb_phase ph, const int *tokens, const int *targets,
                      int seq, int reps, struct perf_line *line, char *err, size_t errlen)
{
    struct tb_run_spec spec;
    struct tb_exec_result r;
    double *rates = NULL;
    int rc = -1;

    tb_run_spec_init(&spec);
    spec.phase = ph;
    spec.batch = 1;
    spec.seq_in = seq;
    spec.seq_out = 1;
    spec.reps = reps;
    spec.warmup = 1;
    if (tb_exec_time(m, &spec, tokens, targets, &r, err, errlen) != 0)
        goto out;
    rates = tb_alloc_array((size_t)reps, sizeof *rates);
    if (!rates) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    for (int k = 0; k < reps; k++)
        rates[k] = (ph == TB_PHASE_DECODE ? r.bytes : r.flops) / r.secs[k];
    if (tb_stats_compute(&line->rate, rates, (size_t)reps, err, errlen) != 0)
        goto out;
    line->valid = r.valid;
    line->ran = true;
    snprintf(line->note, sizeof line->note, "%s", r.note);
    snprintf(line->counters, sizeof line->counters, "%s", r.counters);
    rc = 0;
out:
    free(rates);
    tb_exec_result_release(&r);
    return rc;
}

/* ---- output ---- */

static void print_line(const struct perf_line *l)
{
    char ratio[16] = "-", target[16] = "-";
    const char *result;

    if (!l->ran) {
        printf("%-44s %10s %-8s %10s %10s %4s %6s %7s  %s\n", l->figure, "-", l->unit, "-", "-",
               "-", "-", "-", "FAIL (did not run)");
        return;
    }
    if (l->ratio >= 0) {
        snprintf(ratio, sizeof ratio, "%.3f", l->ratio);
        snprintf(target, sizeof target, ">=%.2f", l->target);
    }
    if (!l->valid)
        result = "FAIL (validation)";
    else if (l->ratio < 0)
        result = "peak";
    else
        result = l->ratio >= l->target ? "PASS" : "FAIL";
    printf("%-44s %10.2f %-8s %10.2f %10.2f %4zu %6s %7s  %s\n", l->figure,
           l->rate.median / l->scale, l->unit, l->rate.min / l->scale, l->rate.max / l->scale,
           l->rate.n, ratio, target, result);
}

static bool line_ok(const struct perf_line *l)
{
    return l->ran && l->valid && (l->ratio < 0 || l->ratio >= l->target);
}

static void from_kernel(struct perf_line *l, const struct tb_perf_result *r)
{
    l->rate = r->rate;
    l->valid = r->valid;
    l->ran = true;
    snprintf(l->note, sizeof l->note, "%s", r->note);
    snprintf(l->counters, sizeof l->counters, "%s", r->counters);
}

/* ---- the command ---- */

/* `perf --FLAG ...`: an alias of the command perf-FLAG. */
static const struct perf_alias {
    const char *flag;
    int (*fn)(int argc, char **argv);
} ALIASES[] = {
    {"--predictor", tb_cmd_perf_model},
    {"--gpu", tb_cmd_perf_gpu},
    {"--serve", tb_cmd_perf_serve},
    {"--regime", tb_cmd_perf_regime},
};

/* Run a's command on argv without a's flag (every copy of it), argv[0] still "perf". */
static int run_alias(const struct perf_alias *a, int argc, char **argv)
{
    char **av = tb_alloc_array((size_t)argc + 1, sizeof *av);
    int n = 0, rc;

    if (!av) {
        tb_logf("out of memory\n");
        return 1;
    }
    for (int i = 0; i < argc; i++)
        if (i == 0 || strcmp(argv[i], a->flag))
            av[n++] = argv[i];
    av[n] = NULL;
    rc = a->fn(n, av);
    free(av);
    return rc;
}

int tb_cmd_perf(int argc, char **argv)
{
    struct perf_opts o;
    struct tb_platform plat;
    struct tb_arch arch;
    struct tb_llama m;
    struct tb_perf_result kr;
    struct perf_line lines[5];
    enum { L_SGEMM, L_TRIAD, L_PREFILL, L_TRAIN, L_DECODE, NLINES };
    char err[512], host[256], note[256] = "";
    int *tokens = NULL, *targets = NULL;
    bool engine = false, all_ok = true;
    double per_array_bytes, peak_flops, peak_bytes;
    int threads, rc = 2;
    size_t triad_n;
    uint64_t seed = PERF_SEED;

    for (int i = 1; i < argc; i++)
        for (size_t k = 0; k < sizeof ALIASES / sizeof ALIASES[0]; k++)
            if (!strcmp(argv[i], ALIASES[k].flag))
                return run_alias(&ALIASES[k], argc, argv);
    memset(lines, 0, sizeof lines);
    memset(&m, 0, sizeof m);
    if ((rc = parse_args(argc, argv, &o)) != TB_CLI_GO)
        return rc;
    rc = 2;
    if (tb_arch_find(&arch, o.model, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench perf: %s\n", err);
        return 2;
    }

    tb_platform_detect(&plat, err, sizeof err);
    tb_platform_describe(&plat, host, sizeof host);
    threads = openblas_get_num_threads();
    if (threads < 1)
        threads = 1;

    /* STREAM's rule: each array at least 4 x the last-level cache; never under 64 MiB;
     * the three within a quarter of memory so the run cannot push the machine into
     * swap */
    if (o.triad_mib > 0) {
        per_array_bytes = (double)o.triad_mib * MIB;
    } else {
        per_array_bytes = fmax(64.0 * MIB, 4.0 * (double)plat.llc_bytes);
        if (plat.mem_total_bytes && 3.0 * per_array_bytes > (double)plat.mem_total_bytes / 4) {
            per_array_bytes = (double)plat.mem_total_bytes / 12;
            snprintf(note, sizeof note,
                     "triad arrays capped at 1/12 of memory each, under 4 x the %.0f MiB LLC",
                     (double)plat.llc_bytes / MIB);
        }
    }
    triad_n = (size_t)(per_array_bytes / sizeof(double));

    printf("trnbench perf: %s; target %s\n", host, tb_platform_target(&plat));
    printf("  blas:     %s\n", plat.blas);
    printf("  timer:    CLOCK_MONOTONIC, tick %llu ns\n", (unsigned long long)tb_timer_tick_ns());
    printf("  counters: %s\n", tb_counters_status());
    printf("  llc:      L%d %.1f MiB (%s)\n", plat.llc_level, (double)plat.llc_bytes / MIB,
           plat.llc_source[0] ? plat.llc_source : "unknown");
    printf("  method:   1 warm-up + %d timed repetitions per figure, median reported;\n"
           "            triad counts 3 x 8 bytes per element (STREAM; no write-allocate)\n",
           o.reps);
    if (note[0])
        printf("  note:     %s\n", note);
    fflush(stdout);

    /* ---- peaks ---- */
    snprintf(lines[L_SGEMM].figure, sizeof lines[0].figure, "sgemm %dx%dx%d fp32", PERF_SGEMM_N,
             PERF_SGEMM_N, PERF_SGEMM_N);
    lines[L_SGEMM].unit = "GFLOP/s";
    lines[L_SGEMM].scale = 1e9;
    lines[L_SGEMM].ratio = -1;
    fprintf(stderr, "trnbench perf: sgemm ...\n");
    if (tb_perf_sgemm(PERF_SGEMM_N, o.reps, &kr, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench perf: %s\n", err);
        rc = 1;
        goto out;
    }
    from_kernel(&lines[L_SGEMM], &kr);

    snprintf(lines[L_TRIAD].figure, sizeof lines[0].figure, "triad 3 x %.0f MiB fp64, %d thread%s",
             (double)triad_n * sizeof(double) / MIB, threads, threads == 1 ? "" : "s");
    lines[L_TRIAD].unit = "GB/s";
    lines[L_TRIAD].scale = 1e9;
    lines[L_TRIAD].ratio = -1;
    fprintf(stderr, "trnbench perf: triad ...\n");
    if (tb_perf_triad(triad_n, threads, o.reps, &kr, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench perf: %s\n", err);
        rc = 1;
        goto out;
    }
    from_kernel(&lines[L_TRIAD], &kr);
    peak_flops = lines[L_SGEMM].rate.median;
    peak_bytes = lines[L_TRIAD].rate.median;

    /* ---- engine ---- */
    snprintf(lines[L_PREFILL].figure, sizeof lines[0].figure, "prefill %s B=1 T=%d", arch.name,
             o.seq);
    snprintf(lines[L_TRAIN].figure, sizeof lines[0].figure, "train step %s B=1 T=%d", arch.name,
             o.seq);
    snprintf(lines[L_DECODE].figure, sizeof lines[0].figure, "decode %s B=1 pos=%d", arch.name,
             o.seq);
    lines[L_PREFILL].unit = lines[L_TRAIN].unit = "GFLOP/s";
    lines[L_DECODE].unit = "GB/s";
    lines[L_PREFILL].scale = lines[L_TRAIN].scale = lines[L_DECODE].scale = 1e9;
    lines[L_PREFILL].target = lines[L_TRAIN].target = PERF_TARGET_FLOPS;
    lines[L_DECODE].target = PERF_TARGET_BYTES;

    tokens = tb_alloc_array((size_t)o.seq, sizeof *tokens);
    targets = tb_alloc_array((size_t)o.seq, sizeof *targets);
    if (!tokens || !targets) {
        fprintf(stderr, "trnbench perf: out of memory for %d tokens\n", o.seq);
        rc = 1;
        goto out;
    }
    tb_exec_tokens(tokens, (size_t)o.seq, arch.vocab, &seed);
    for (int i = 0; i < o.seq; i++)
        targets[i] = tokens[(i + 1) % o.seq];

    /* one extra position: decode runs at position seq after a prefill of seq tokens */
    fprintf(stderr, "trnbench perf: engine %s ...\n", arch.name);
    if (tb_llama_init(&m, &arch, 1, o.seq + 1, TB_LLAMA_TRAIN, PERF_SEED, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench perf: %s\n", err);
        rc = 1;
        goto out;
    }
    engine = true;
    /* training last, since it changes the weights (decode prefills its own prompt) */
    if (time_phase(&m, TB_PHASE_PREFILL, tokens, NULL, o.seq, o.reps, &lines[L_PREFILL], err,
                   sizeof err) != 0 ||
        time_phase(&m, TB_PHASE_DECODE, tokens, NULL, o.seq, o.reps, &lines[L_DECODE], err,
                   sizeof err) != 0 ||
        time_phase(&m, TB_PHASE_TRAIN, tokens, targets, o.seq, o.reps, &lines[L_TRAIN], err,
                   sizeof err) != 0) {
        fprintf(stderr, "trnbench perf: %s\n", err);
        all_ok = false;
    }
    if (peak_flops > 0) {
        lines[L_PREFILL].ratio = lines[L_PREFILL].rate.median / peak_flops;
        lines[L_TRAIN].ratio = lines[L_TRAIN].rate.median / peak_flops;
    }
    if (peak_bytes > 0)
        lines[L_DECODE].ratio = lines[L_DECODE].rate.median / peak_bytes;

    /* ---- table ---- */
    printf("\n%-44s %10s %-8s %10s %10s %4s %6s %7s  %s\n", "figure", "median", "unit", "min",
           "max", "n", "ratio", "target", "result");
    for (int i = 0; i < NLINES; i++) {
        print_line(&lines[i]);
        if (!line_ok(&lines[i]))
            all_ok = false;
    }
    printf("\nratios: prefill and train against the sgemm median, decode (%.1f MB per step: "
           "fp32 weights + KV cache at %d positions) against the triad median\n",
           tb_bytes_decode_step(&arch, 1, o.seq, 4, 4) / 1e6, o.seq + 1);
    for (int i = 0; i < NLINES; i++)
        if (lines[i].note[0])
            printf("note: %s: %s\n", lines[i].figure, lines[i].note);
    if (tb_counters_available())
        for (int i = 0; i < NLINES; i++)
            printf("counters: %s: %s\n", lines[i].figure, lines[i].counters);
    rc = all_ok ? 0 : 1;
out:
    if (engine)
        tb_llama_release(&m);
    free(tokens);
    free(targets);
    fflush(stdout);
    return rc;
}
