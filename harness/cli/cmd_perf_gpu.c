/*
 * harness/cli/cmd_perf_gpu.c: `trnbench perf-gpu` (also `trnbench perf --gpu`), the GPU
 * executor's performance requirements on one CUDA device (tb_gpu.h):
 *
 *   copy        device-to-device cudaMemcpy of 1 GiB, bytes read + written per second:
 *               the practical memory bandwidth of this run
 *   train       one training step of MODEL (default llama-3.2-1b) at B x T (default
 *               2 x 2048) in bf16 mixed precision: MFU = tb_flops_train / (median step
 *               time x the chip's dense bf16 peak from pricing/chips.csv)  >= 0.50
 *   decode      one step at position T, batch 1: tb_bytes_decode_step with bf16
 *               weights and KV cache / median step time / copy bandwidth  >= 0.70
 *
 * With --peer pytorch, the same work against plain PyTorch on the same device
 * (tb_peer.h, workloads/peers/pytorch_llama.py): trnbench's prefill (B=1, T), decode
 * at B=1 and B=64 (position T) and the training step above, in tokens per second,
 * against the peer's best mode (eager or torch.compile); each ratio >= 1.0. A peer that
 * cannot run here (no python3, torch or CUDA for it) is skipped with the reason. With
 * --out DIR, the GPU figures' runs and the peer's go to DIR/results.csv (tb_record.h).
 *
 * Without a GPU it prints why and exits 0 (make perf runs it everywhere). Exit 1 when
 * a figure misses its target, a run fails validation or the peer fails, 2 on a usage
 * error.
 */
#include "cli.h"
#include "cli_opt.h"
#include "tb_log.h"
#include "tb_arch.h"
#include "tb_flops.h"
#include "tb_gpu.h"
#include "tb_peer.h"
#include "tb_platform.h"
#include "tb_pricing.h"
#include "tb_record.h"
#include "tb_results.h"
#include "tb_stats.h"
#include "tb_util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PG_TARGET_MFU     0.50
#define PG_TARGET_DECODE  0.70
#define PG_TARGET_PEER    1.00 /* trnbench tokens/s over the peer's best */
#define PG_COPY_BYTES     ((size_t)1 << 30)
#define PG_SEQ_OUT        32  /* decode steps per repetition */
#define PG_DECODE_BATCH   64  /* the large decode batch against the peer */
#define PG_PEER_WARMUP    3   /* torch.compile's first calls compile and record graphs */
#define PG_PEER_TIMEOUT_S 900 /* per peer process */

struct pg_opts {
    const char *model, *peer, *python, *out, *peer_mode;
    long seq, batch, reps, peer_timeout;
};

/* The name it was called by, for its usage and headings: "perf-gpu", or "perf --gpu" when the
 * alias `trnbench perf --gpu` called it (argv[0] "perf"). */
static const char *self = "perf-gpu";

static void usage(FILE *f)
{
    int w = 16 + (int)strlen(self) + 1; /* the continuation lines under the options */
    fprintf(f,
            "usage: trnbench %s [--model NAME] [--seq T] [--batch B] [--reps N]\n"
            "%*s[--peer pytorch [--python PATH] [--peer-mode M]\n"
            "%*s[--peer-timeout S]] [--out DIR]\n"
            "\n"
            "On the first CUDA device: the device-to-device copy bandwidth (1 GiB, read +\n"
            "written bytes), a bf16 training step of NAME at B x T against the chip's dense\n"
            "bf16 peak (MFU target >= %.2f), and a batch-1 decode step at position T in\n"
            "bytes per second against the copy bandwidth (target >= %.2f). One warm-up,\n"
            "then N timed repetitions (CUDA events); medians. Without a GPU: prints why,\n"
            "exit 0.\n"
            "\n"
            "  --model NAME      default llama-3.2-1b\n"
            "  --seq T           training and prompt length, decode position (default 2048)\n"
            "  --batch B         training sequences (default 2)\n"
            "  --reps N          timed repetitions (default 5)\n"
            "  --peer pytorch    also time trnbench's prefill (B=1, T), decode (B=1 and\n"
            "                    B=%d at position T, %d steps) and the training step, run\n"
            "                    workloads/peers/pytorch_llama.py on the same work (eager and\n"
            "                    torch.compile, %d warm-up + N timed) and print tokens/s side\n"
            "                    by side: trnbench / PyTorch's best mode, target >= %.2f. No\n"
            "                    python3, torch or CUDA for it: 'peer pytorch: skipped: why'\n"
            "  --python PATH     the interpreter for the peer (default python3)\n"
            "  --peer-mode M     eager, compile or both (default both)\n"
            "  --peer-timeout S  seconds per peer process (default %d)\n"
            "  --out DIR         append the figures' runs (executor cuda) and the peer's\n"
            "                    (executor pytorch) to DIR/results.csv; runs already there\n"
            "                    are not appended again\n"
            "`trnbench perf-gpu` and `trnbench perf --gpu` are the same command.\n",
            self, w, "", w, "", PG_TARGET_MFU, PG_TARGET_DECODE, PG_DECODE_BATCH, PG_SEQ_OUT,
            PG_PEER_WARMUP, PG_TARGET_PEER, PG_PEER_TIMEOUT_S);
}

/* --peer-mode M: the option's dst (const char *) = the modes the peer runs, "eager,compile" for
 * both. */
static int take_peer_mode(const struct tb_opt *o, const char *v, char *err, size_t errlen)
{
    static const char *const modes[][2] = {
        {"both", "eager,compile"},
        {"eager,compile", "eager,compile"},
        {"eager", "eager"},
        {"compile", "compile"},
    };
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++)
        if (!strcmp(v, modes[k][0])) {
            *(const char **)o->dst = modes[k][1];
            return 0;
        }
    return tb_err(err, errlen, "'%s' is not eager, compile or both", v);
}

/* --peer NAME: a peer whose script exists (tb_peer_script). */
static int take_peer(const struct tb_opt *o, const char *v, char *err, size_t errlen)
{
    char path[PATH_MAX];
    if (tb_peer_script(v, path, sizeof path, err, errlen) != 0)
        return -1;
    *(const char **)o->dst = v;
    return 0;
}

/* Returns TB_CLI_GO to run, else the exit status: 0 after --help, 2 on a usage error
 * (said). Options take "--opt value" or "--opt=value" (cli_opt.h). */
static int parse_opts(int argc, char **argv, struct pg_opts *o)
{
    const struct tb_opt opts[] = {
        TB_OPT_STR("model", &o->model),
        TB_OPT_STR("python", &o->python),
        TB_OPT_STR("out", &o->out),
        TB_OPT_FN("peer", take_peer, &o->peer),
        TB_OPT_FN("peer-mode", take_peer_mode, &o->peer_mode),
        TB_OPT_LONG("seq", &o->seq, 1, 1L << 20),
        TB_OPT_LONG("batch", &o->batch, 1, 1L << 20),
        TB_OPT_LONG("reps", &o->reps, 1, 1L << 20),
        TB_OPT_LONG("peer-timeout", &o->peer_timeout, 1, 1L << 20),
        TB_OPT_END,
    };
    int rc;

    *o = (struct pg_opts){.model = "llama-3.2-1b",
                          .python = "python3",
                          .peer_mode = "eager,compile",
                          .seq = 2048,
                          .batch = 2,
                          .reps = 5,
                          .peer_timeout = PG_PEER_TIMEOUT_S};
    if ((rc = tb_cli_parse(argv[0], argc, argv, opts, usage)) != TB_CLI_GO)
        return rc;
    if (optind < argc) {
        tb_logf("unknown argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return TB_CLI_GO;
}

/* ---- trnbench's figures ---- */

/* One run of the GPU executor and what came of it. */
struct pg_fig {
    struct tb_run_spec spec;
    struct tb_exec_result r; /* owned once run */
    struct tb_energy e;
    bool ran; /* tb_gpu_run returned 0: r filled (see r.valid) */
    double t; /* median seconds of one repetition */
};

static double median_of(const double *x, int n)
{
    struct tb_stats s;
    return tb_stats_compute(&s, x, (size_t)n, NULL, 0) == 0 ? s.median : 0;
}

static void fig_init(struct pg_fig *f, const struct tb_arch *a, enum tb_phase phase, long batch,
                     long seq, long reps)
{
    memset(f, 0, sizeof *f);
    tb_run_spec_init(&f->spec);
    snprintf(f->spec.model, sizeof f->spec.model, "%s", a->name);
    snprintf(f->spec.precision, sizeof f->spec.precision, "bf16");
    f->spec.phase = phase;
    f->spec.batch = (int)batch;
    f->spec.seq_in = (int)seq;
    f->spec.seq_out = PG_SEQ_OUT;
    f->spec.reps = (int)reps;
    f->spec.warmup = 1;
}

/* Run f on the GPU; a failure is said on stderr. Returns whether it ran and validated. */
static bool fig_run(struct tb_gpu *g, const struct tb_arch *a, struct pg_fig *f)
{
    char err[2048];
    tb_logf("%s %s B=%d %s%d ...\n", tb_phase_to_string(f->spec.phase), a->name, f->spec.batch,
            f->spec.phase == TB_PHASE_DECODE ? "from position " : "T=", f->spec.seq_in);
    if (tb_gpu_run(g, &f->spec, a, &f->r, &f->e, err, sizeof err) != 0) {
        tb_logf("%s: %s\n", tb_phase_to_string(f->spec.phase), err);
        tb_exec_result_release(&f->r);
        return false;
    }
    f->ran = true;
    f->t = median_of(f->r.secs, f->r.reps);
    if (!f->r.valid)
        tb_logf("%s: %s\n", tb_phase_to_string(f->spec.phase), f->r.note);
    return f->r.valid && f->t > 0;
}

static double fig_tokens_per_s(const struct pg_fig *f)
{
    return f->ran && f->r.valid && f->t > 0 ? f->r.tokens / f->t : 0;
}

/* ---- results.csv ---- */

/* Append one run's rows unless its id is there already. Returns 0 or -1 (said). */
static int record_one(const struct tb_record_ctx *c, const struct tb_run_spec *spec,
                      const struct tb_arch *a, const struct tb_exec_result *r, const char *id,
                      const struct tb_record_extra *x, int nx, const char *note)
{
    char err[2048], summary[512];
    int has = tb_results_has_run(c->results, id, err, sizeof err);
    if (has == 0 && tb_record_run(c, spec, a, NULL, r, id, x, nx, note, summary, sizeof summary,
                                  err, sizeof err) != 0)
        has = -1;
    if (has < 0) {
        tb_logf("%s\n", err);
        return -1;
    }
    tb_logf("%s: %s\n", id, has ? "already in results, not appended" : summary);
    return 0;
}

static int record_figs(const struct tb_record_ctx *c, const struct tb_chip *chip,
                       const struct tb_arch *a, const struct pg_fig *figs, int n)
{
    for (int i = 0; i < n; i++) {
        const struct pg_fig *f = &figs[i];
        struct tb_record_extra x[TB_RECORD_MAX_EXTRA];
        char id[256] = "cuda:";
        if (!f->ran || !f->r.valid)
            continue;
        tb_run_spec_id(&f->spec, id + 5, sizeof id - 5);
        if (record_one(c, &f->spec, a, &f->r, id, x,
                       tb_record_gpu_extras(chip, &f->spec, &f->r, &f->e, x),
                       f->e.ok ? NULL : f->e.note) != 0)
            return -1;
    }
    return 0;
}

/* A peer's row as a run of the GPU executor would be recorded: its spec, and its
 * samples as seconds per repetition (decode: the steps of one repetition). */
static int record_peer(const struct tb_record_ctx *gpu_ctx, const struct tb_chip *chip,
                       const struct tb_arch *a, const struct tb_peer_row *x)
{
    struct tb_record_ctx c = *gpu_ctx;
    struct tb_run_spec spec;
    struct tb_exec_result r;
    struct tb_record_extra ex[TB_RECORD_MAX_EXTRA];
    char id[256], compiler[128], cflags[64], source[128], err[512];
    int n, rc;

    tb_run_spec_init(&spec);
    snprintf(spec.model, sizeof spec.model, "%s", a->name);
    snprintf(spec.precision, sizeof spec.precision, "bf16");
    spec.phase = x->phase;
    spec.batch = x->batch;
    spec.seq_in = x->seq_in;
    spec.seq_out = x->phase == TB_PHASE_DECODE ? x->seq_out : spec.seq_out;
    spec.reps = x->reps;
    spec.warmup = x->warmup;
    if (tb_exec_result_init(&r, &spec, a, 2, 2, err, sizeof err) != 0) {
        tb_logf("%s\n", err);
        return -1;
    }
    for (int k = 0; k < r.reps; k++)
        r.secs[k] = x->samples_s[k] * r.steps;
    snprintf(r.note, sizeof r.note, "%.255s", x->notes);
    snprintf(r.counters, sizeof r.counters, "unavailable: measured by the %s peer", x->peer);
    /* the peer's software where trnbench's build goes: torch's version for the
     * compiler, its mode for the flags, its script for the source */
    snprintf(compiler, sizeof compiler, "%s %s", !strcmp(x->peer, "pytorch") ? "torch" : x->peer,
             x->version);
    snprintf(cflags, sizeof cflags, "mode=%s", x->mode);
    snprintf(source, sizeof source, "workloads/peers/%s_llama.py", x->peer);
    snprintf(c.blas, sizeof c.blas, "the CUDA libraries of %s", compiler);
    c.executor = x->peer;
    c.compiler = compiler;
    c.cflags = cflags;
    c.source = source;
    snprintf(id, sizeof id, "%s-%s:", x->peer, x->mode);
    n = (int)strlen(id);
    tb_run_spec_id(&spec, id + n, sizeof id - (size_t)n);
    rc =
        record_one(&c, &spec, a, &r, id, ex, tb_record_gpu_extras(chip, &spec, &r, NULL, ex), NULL);
    tb_exec_result_release(&r);
    return rc;
}

/* ---- the peer ---- */

enum { C_PREFILL, C_DECODE1, C_DECODE64, C_TRAIN, NCMP };

/* Run the peer on each comparison's work, then print the table. Returns 0 when every
 * ratio meets its target or the peer is unavailable here, 1 otherwise; outs[] filled. */
static int compare_peer(const struct pg_opts *o, const struct tb_arch *a, struct pg_fig *const *cmp,
                        struct tb_peer_output *outs)
{
    char script[PATH_MAX], msg[2048], theirs_col[48];
    const char *version = "", *device = "";
    bool failed = false;
    int rc = 0;

    if (tb_peer_script(o->peer, script, sizeof script, msg, sizeof msg) != 0)
        return 1; /* checked with the options */
    for (int i = 0; i < NCMP; i++) {
        const struct tb_run_spec *s = &cmp[i]->spec;
        struct tb_peer_request q = {.peer = o->peer,
                                    .python = o->python,
                                    .script = script,
                                    .arch = a,
                                    .phase = s->phase,
                                    .batch = s->batch,
                                    .seq_in = s->seq_in,
                                    .seq_out = s->seq_out,
                                    .reps = s->reps,
                                    .warmup = PG_PEER_WARMUP,
                                    .seed = s->seed,
                                    .modes = o->peer_mode,
                                    .timeout_s = (double)o->peer_timeout,
                                    .echo = stderr};
        int st;
        tb_logf("peer %s: %s B=%d T=%d (%s) ...\n", o->peer, tb_phase_to_string(s->phase), s->batch,
                s->seq_in, o->peer_mode);
        st = tb_peer_run(&q, &outs[i], msg, sizeof msg);
        if (st == TB_PEER_UNAVAILABLE) {
            printf("\npeer %s: skipped: %s\n", o->peer, msg);
            return 0;
        }
        if (st != TB_PEER_OK) {
            tb_logf("peer %s: %s\n", o->peer, msg);
            failed = true;
            continue;
        }
        version = outs[i].rows[0].version;
        device = outs[i].rows[0].device;
    }
    if (*version)
        printf("\npeer %s %s on %s (%s %s)\n", o->peer, version, device, o->python, script);
    else
        printf("\npeer %s: no measurement (%s %s failed; messages above)\n", o->peer, o->python,
               script);
    snprintf(theirs_col, sizeof theirs_col, "%s tokens/s", o->peer);
    printf("%-8s %5s %18s %18s  %-9s %6s  %s\n", "phase", "batch", "trnbench tokens/s", theirs_col,
           "best mode", "ratio", "target");
    for (int i = 0; i < NCMP; i++) {
        const struct pg_fig *f = cmp[i];
        const struct tb_peer_row *best = tb_peer_best(&outs[i], f->spec.phase, f->spec.batch);
        double ours = fig_tokens_per_s(f), theirs = best ? best->tokens_per_s : 0;
        bool pass = ours > 0 && theirs > 0 && ours / theirs >= PG_TARGET_PEER;
        char a_txt[32] = "n/a", b_txt[32] = "n/a", r_txt[32] = "n/a";
        if (ours > 0)
            snprintf(a_txt, sizeof a_txt, "%.1f", ours);
        if (theirs > 0)
            snprintf(b_txt, sizeof b_txt, "%.1f", theirs);
        if (ours > 0 && theirs > 0)
            snprintf(r_txt, sizeof r_txt, "%.2f", ours / theirs);
        printf("%-8s %5d %18s %18s  %-9s %6s  >= %.2f  %s\n", tb_phase_to_string(f->spec.phase),
               f->spec.batch, a_txt, b_txt, best ? best->mode : "-", r_txt, PG_TARGET_PEER,
               pass            ? "PASS"
               : !(ours > 0)   ? "FAIL (trnbench run failed)"
               : !(theirs > 0) ? "FAIL (no peer figure)"
                               : "FAIL");
        if (!pass)
            rc = 1;
    }
    return failed ? 1 : rc;
}

int tb_cmd_perf_gpu(int argc, char **argv)
{
    struct pg_opts o;
    struct tb_gpu g;
    struct tb_arch a;
    struct tb_pricing pr;
    struct tb_gpu_share share;
    struct tb_platform plat;
    struct tb_record_ctx ctx;
    const struct tb_chip *chip = NULL;
    const struct tb_instance *inst = NULL;
    struct pg_fig figs[4];
    enum { F_TRAIN, F_DECODE, F_PREFILL, F_DECODE64 };
    struct tb_peer_output outs[NCMP];
    char err[2048], host[512], prov[1200], why[256], results[PATH_MAX];
    double copy_s = 0, copy_bw, mfu = -1, dec_bw = 0, t;
    bool ok = true, have_pr = false;
    int nfigs = 2, prc;
    struct tb_lock lock = {0};

    memset(figs, 0, sizeof figs);
    memset(outs, 0, sizeof outs);
    self = strcmp(argv[0], "perf") ? "perf-gpu" : "perf --gpu";
    if ((prc = parse_opts(argc, argv, &o)) != TB_CLI_GO)
        return prc;
    if (tb_arch_find(&a, o.model, err, sizeof err) != 0) {
        tb_logf("%s\n", err);
        return 2;
    }
    if (o.out) {
        /* an existing results file must be readable as one before anything runs */
        if ((size_t)snprintf(results, sizeof results, "%s/results.csv", o.out) >= sizeof results)
            snprintf(err, sizeof err, "folder name too long");
        else if (tb_results_has_run(results, "", err, sizeof err) >= 0)
            err[0] = '\0';
        if (err[0]) {
            tb_logf("--out: %s\n", err);
            return 2;
        }
    }
    if (tb_gpu_open(&g, 0, 0) != 0) {
        printf("trnbench %s: skipped: no GPU: %s\n", self, g.why);
        tb_gpu_close(&g);
        return 0;
    }
    tb_gpu_describe(&g.info, host, sizeof host);
    tb_gpu_provenance(&g.info, prov, sizeof prov);
    printf("trnbench %s: %s\n  %s\n", self, host, prov);
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
    if (g.api->copy_bench(PG_COPY_BYTES, (int)o.reps, &copy_s, err, sizeof err) != 0) {
        tb_logf("%s\n", err);
        ok = false;
        goto out;
    }
    copy_bw = 2.0 * (double)PG_COPY_BYTES / copy_s;
    printf("\n%-44s %10.1f GB/s  (1 GiB read + 1 GiB written per copy)\n", "device-to-device copy",
           copy_bw / 1e9);
    fflush(stdout);

    /* ---- training step ---- */
    fig_init(&figs[F_TRAIN], &a, TB_PHASE_TRAIN, o.batch, o.seq, o.reps);
    if (!fig_run(&g, &a, &figs[F_TRAIN]) && !figs[F_TRAIN].ran) {
        ok = false;
    } else {
        const struct tb_exec_result *r = &figs[F_TRAIN].r;
        t = figs[F_TRAIN].t;
        if (chip && t > 0)
            mfu = r->flops / t / (chip->bf16_dense_tflops * 1e12);
        printf("%-44s %10.1f TFLOP/s  step %.2f ms, MFU %s%.3f (target >= %.2f, peak %.1f "
               "TFLOP/s)  %s\n",
               "train step bf16", r->flops / t / 1e12, t * 1e3, mfu < 0 ? "n/a " : "",
               mfu < 0 ? 0 : mfu, PG_TARGET_MFU, chip ? chip->bf16_dense_tflops : 0,
               !r->valid              ? "FAIL (validation)"
               : mfu >= PG_TARGET_MFU ? "PASS"
                                      : "FAIL");
        if (!r->valid)
            printf("  %s\n", r->note);
        if (figs[F_TRAIN].e.ok)
            printf("  energy: %.3g J per token, %.0f W average\n", figs[F_TRAIN].e.j_per_unit,
                   figs[F_TRAIN].e.avg_power_w);
        ok = ok && r->valid && mfu >= PG_TARGET_MFU;
    }
    fflush(stdout);

    /* ---- decode ---- */
    fig_init(&figs[F_DECODE], &a, TB_PHASE_DECODE, 1, o.seq, o.reps);
    if (!fig_run(&g, &a, &figs[F_DECODE]) && !figs[F_DECODE].ran) {
        ok = false;
    } else {
        const struct tb_exec_result *r = &figs[F_DECODE].r;
        t = figs[F_DECODE].t;
        dec_bw = r->bytes / t;
        printf("%-44s %10.1f GB/s  %.3f ms per token, %.3f of the copy (target >= %.2f)  %s\n",
               "decode B=1 bf16 weights + KV", dec_bw / 1e9, t / r->steps * 1e3, dec_bw / copy_bw,
               PG_TARGET_DECODE,
               !r->valid                              ? "FAIL (validation)"
               : dec_bw / copy_bw >= PG_TARGET_DECODE ? "PASS"
                                                      : "FAIL");
        if (figs[F_DECODE].e.ok)
            printf("  energy: %.3g J per token, %.0f W average\n", figs[F_DECODE].e.j_per_unit,
                   figs[F_DECODE].e.avg_power_w);
        ok = ok && r->valid && dec_bw / copy_bw >= PG_TARGET_DECODE;
    }
    fflush(stdout);

    /* ---- what the peer comparison adds ---- */
    if (o.peer) {
        fig_init(&figs[F_PREFILL], &a, TB_PHASE_PREFILL, 1, o.seq, o.reps);
        fig_init(&figs[F_DECODE64], &a, TB_PHASE_DECODE, PG_DECODE_BATCH, o.seq, o.reps);
        nfigs = 4;
        fig_run(&g, &a, &figs[F_PREFILL]);
        fig_run(&g, &a, &figs[F_DECODE64]);
    }

    /* ---- results.csv: the figures' runs ---- */
    if (o.out) {
        tb_platform_detect(&plat, err, sizeof err);
        memset(&ctx, 0, sizeof ctx);
        ctx.results = results;
        ctx.executor = "cuda";
        snprintf(ctx.target, sizeof ctx.target, "%s", tb_platform_target(&plat));
        snprintf(ctx.host, sizeof ctx.host, "%s", host);
        /* one GPU of the machine, trnbench's and the peer's alike: rows charged its share */
        tb_gpu_share(&g, have_pr ? &pr : NULL, ctx.target, chip, &share);
        ctx.chips_used = share.chips_used;
        snprintf(ctx.device, sizeof ctx.device, "%s x%d", g.info.name, share.used);
        snprintf(ctx.blas, sizeof ctx.blas, "cuBLASLt (CUDA runtime %d.%d)",
                 g.info.runtime_version / 1000, g.info.runtime_version % 1000 / 10);
        /* the folder's one writer until the peer's rows too are in (tb_results_lock) */
        if (tb_mkdir_p(o.out, err, sizeof err) != 0 ||
            tb_results_lock(&lock, o.out, tb_log_name(), true, err, sizeof err) != 0) {
            tb_logf("%s\n", err);
            ok = false;
            goto out;
        }
        if (record_figs(&ctx, chip, &a, figs, nfigs) != 0) {
            ok = false;
            goto out;
        }
    }

    /* ---- the peer ---- */
    if (o.peer) {
        struct pg_fig *cmp[NCMP];
        cmp[C_PREFILL] = &figs[F_PREFILL];
        cmp[C_DECODE1] = &figs[F_DECODE];
        cmp[C_DECODE64] = &figs[F_DECODE64];
        cmp[C_TRAIN] = &figs[F_TRAIN];
        if (compare_peer(&o, &a, cmp, outs) != 0)
            ok = false;
        fflush(stdout);
        for (int i = 0; o.out && i < NCMP; i++)
            for (size_t k = 0; k < outs[i].nrows; k++)
                if (record_peer(&ctx, chip, &a, &outs[i].rows[k]) != 0) {
                    ok = false;
                    goto out;
                }
    }
out:
    tb_lock_release(&lock);
    for (int i = 0; i < 4; i++)
        tb_exec_result_release(&figs[i].r);
    for (int i = 0; i < NCMP; i++)
        tb_peer_output_release(&outs[i]);
    if (have_pr)
        tb_pricing_release(&pr);
    tb_gpu_close(&g);
    fflush(stdout);
    return ok ? 0 : 1;
}
