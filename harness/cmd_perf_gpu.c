/*
 * harness/cmd_perf_gpu.c: `trnbench perf --gpu`, the GPU executor's performance
 * requirements on one CUDA device (tb_gpu.h):
 *
 *   copy        device-to-device cudaMemcpy of 1 GiB, bytes read + written per second:
 *               the practical memory bandwidth of this run
 *   train       one training step of MODEL (default llama-3.2-1b) at B x T (default
 *               2 x 2048) in bf16 mixed precision: MFU = tb_flops_train / (median step
 *               time x the chip's dense bf16 peak from pricing/chips.csv)  >= 0.50
 *   decode      one step at position T, batch 1: tb_bytes_decode_step with bf16
 *               weights and KV cache / median step time / copy bandwidth  >= 0.70
 *
 * Without a GPU it prints why and exits 0 (make perf runs it everywhere). Exit 1 when
 * a figure misses its target or a run fails validation, 2 on a usage error.
 */
#include "cli.h"
#include "tb_arch.h"
#include "tb_flops.h"
#include "tb_gpu.h"
#include "tb_pricing.h"
#include "tb_stats.h"
#include "tb_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PG_TARGET_MFU    0.50
#define PG_TARGET_DECODE 0.70
#define PG_COPY_BYTES    ((size_t)1 << 30)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trnbench perf --gpu [--model NAME] [--seq T] [--batch B] [--reps N]\n"
            "\n"
            "On the first CUDA device: the device-to-device copy bandwidth (1 GiB, read +\n"
            "written bytes), a bf16 training step of NAME at B x T against the chip's dense\n"
            "bf16 peak (MFU target >= %.2f), and a batch-1 decode step at position T in\n"
            "bytes per second against the copy bandwidth (target >= %.2f). One warm-up,\n"
            "then N timed repetitions (CUDA events); medians. Without a GPU: prints why,\n"
            "exit 0.\n"
            "\n"
            "  --model NAME   default llama-3.2-1b\n"
            "  --seq T        training length and decode position (default 2048)\n"
            "  --batch B      training sequences (default 2)\n"
            "  --reps N       timed repetitions (default 5)\n",
            PG_TARGET_MFU, PG_TARGET_DECODE);
}

static double median_of(const double *x, int n)
{
    struct tb_stats s;
    return tb_stats_compute(&s, x, (size_t)n, NULL, 0) == 0 ? s.median : 0;
}

int tb_cmd_perf_gpu(int argc, char **argv)
{
    const char *model = "llama-3.2-1b";
    long seq = 2048, batch = 2, reps = 5;
    struct tb_gpu g;
    struct tb_arch a;
    struct tb_pricing pr;
    const struct tb_chip *chip = NULL;
    const struct tb_instance *inst = NULL;
    struct tb_run_spec spec;
    struct tb_exec_result r;
    struct tb_gpu_energy e;
    char err[2048], host[512], prov[1200], why[256];
    double copy_s = 0, copy_bw, mfu = -1, dec_bw = 0, t;
    bool ok = true, have_pr = false;

    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long *dst = NULL;
        if (!strcmp(o, "--gpu"))
            continue;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "trnbench perf: option '%s' needs a value\n", o);
            return 2;
        }
        i++;
        if (!strcmp(o, "--model")) {
            model = v;
            continue;
        }
        dst = !strcmp(o, "--seq")     ? &seq
              : !strcmp(o, "--batch") ? &batch
              : !strcmp(o, "--reps")  ? &reps
                                      : NULL;
        if (!dst) {
            fprintf(stderr, "trnbench perf: unknown argument '%s'\n", o);
            usage(stderr);
            return 2;
        }
        if (tb_parse_long(v, 1, 1L << 20, dst) != 0) {
            fprintf(stderr, "trnbench perf: option '%s': not a positive integer: '%s'\n", o, v);
            return 2;
        }
    }
    if (tb_arch_find(&a, model, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench perf: %s\n", err);
        return 2;
    }
    if (tb_gpu_open(&g, 0, 0) != 0) {
        printf("trnbench perf --gpu: skipped: no GPU: %s\n", g.why);
        tb_gpu_close(&g);
        return 0;
    }
    tb_gpu_describe(&g.info, host, sizeof host);
    tb_gpu_provenance(&g.info, prov, sizeof prov);
    printf("trnbench perf --gpu: %s\n  %s\n", host, prov);
    if (tb_pricing_load(&pr, NULL, err, sizeof err) == 0) {
        have_pr = true;
        chip = tb_gpu_chip(&pr, &g.info, &inst, why, sizeof why);
    } else {
        snprintf(why, sizeof why, "%.250s", err);
    }
    if (!chip)
        printf("  no catalogue peak for this GPU (%s): MFU not computed\n", why);
    fflush(stdout);

    /* ---- copy bandwidth ---- */
    if (g.api->copy_bench(PG_COPY_BYTES, (int)reps, &copy_s, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench perf: %s\n", err);
        ok = false;
        goto out;
    }
    copy_bw = 2.0 * (double)PG_COPY_BYTES / copy_s;
    printf("\n%-44s %10.1f GB/s  (1 GiB read + 1 GiB written per copy)\n", "device-to-device copy",
           copy_bw / 1e9);

    /* ---- training step ---- */
    tb_run_spec_init(&spec);
    snprintf(spec.model, sizeof spec.model, "%s", a.name);
    spec.phase = TB_PHASE_TRAIN;
    spec.batch = (int)batch;
    spec.seq_in = (int)seq;
    spec.reps = (int)reps;
    spec.warmup = 1;
    fprintf(stderr, "trnbench perf: train step %s B=%ld T=%ld ...\n", a.name, batch, seq);
    if (tb_gpu_run(&g, &spec, &a, &r, &e, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench perf: train: %s\n", err);
        ok = false;
    } else {
        t = median_of(r.secs, r.reps);
        if (chip && t > 0)
            mfu = r.flops / t / (chip->bf16_dense_tflops * 1e12);
        printf("%-44s %10.1f TFLOP/s  step %.2f ms, MFU %s%.3f (target >= %.2f, peak %.1f "
               "TFLOP/s)  %s\n",
               "train step bf16", r.flops / t / 1e12, t * 1e3, mfu < 0 ? "n/a " : "",
               mfu < 0 ? 0 : mfu, PG_TARGET_MFU, chip ? chip->bf16_dense_tflops : 0,
               !r.valid               ? "FAIL (validation)"
               : mfu >= PG_TARGET_MFU ? "PASS"
                                      : "FAIL");
        if (!r.valid)
            printf("  %s\n", r.note);
        if (e.ok)
            printf("  energy: %.3g J per token, %.0f W average\n", e.j_per_unit, e.avg_power_w);
        ok = ok && r.valid && mfu >= PG_TARGET_MFU;
    }
    tb_exec_result_release(&r);

    /* ---- decode ---- */
    spec.phase = TB_PHASE_DECODE;
    spec.batch = 1;
    spec.seq_out = 32;
    fprintf(stderr, "trnbench perf: decode %s B=1 from position %ld ...\n", a.name, seq);
    if (tb_gpu_run(&g, &spec, &a, &r, &e, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench perf: decode: %s\n", err);
        ok = false;
    } else {
        t = median_of(r.secs, r.reps);
        dec_bw = r.bytes / t;
        printf("%-44s %10.1f GB/s  %.3f ms per token, %.3f of the copy (target >= %.2f)  %s\n",
               "decode B=1 bf16 weights + KV", dec_bw / 1e9, t / r.steps * 1e3, dec_bw / copy_bw,
               PG_TARGET_DECODE,
               !r.valid                               ? "FAIL (validation)"
               : dec_bw / copy_bw >= PG_TARGET_DECODE ? "PASS"
                                                      : "FAIL");
        if (e.ok)
            printf("  energy: %.3g J per token, %.0f W average\n", e.j_per_unit, e.avg_power_w);
        ok = ok && r.valid && dec_bw / copy_bw >= PG_TARGET_DECODE;
    }
    tb_exec_result_release(&r);
out:
    if (have_pr)
        tb_pricing_release(&pr);
    tb_gpu_close(&g);
    fflush(stdout);
    return ok ? 0 : 1;
}
