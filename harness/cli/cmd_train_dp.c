/*
 * harness/cli/cmd_train_dp.c: `trnbench train-dp`, data-parallel training of the CPU
 * Llama engine over MPI (the plugin of harness/dist/tb_comm.h). Every process is a rank
 * with the whole model drawn from the same seed; the global batch of B sequences (drawn
 * as `trnbench run` draws a training batch, tb_exec_inputs) is split: rank r trains on
 * sequences r*B/K .. (r+1)*B/K-1. Between backward and AdamW the gradient arena is
 * all-reduced (sum) in place and divided by K (tb_llama_train_step_sync), so every rank
 * takes the step a single rank takes on the global batch (the loss is a mean over
 * positions and every rank holds as many). Rank 0 prints the losses and throughput and
 * appends the rows to DIR/results.csv under the folder's lock.
 */
#include "cli.h"
#include "cli_opt.h"

#include "workloads/llama/llama.h"
#include "tb_arch.h"
#include "tb_comm.h"
#include "tb_executor.h"
#include "tb_neuron.h"
#include "tb_platform.h"
#include "tb_results.h"
#include "tb_util.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench train-dp --model M --batch B --seq S --steps N [--out DIR] [options]\n"
          "\n"
          "Data-parallel training of the CPU Llama engine over MPI. Start it under the MPI\n"
          "launcher, one process per rank:\n"
          "  mpirun -np 4 trnbench train-dp --model llama-tiny --batch 8 --seq 32 --steps 5\n"
          "Every rank holds the model (weights from --seed) and trains on its slice of the\n"
          "global batch: rank r takes sequences r*B/K .. (r+1)*B/K-1 of the B drawn from\n"
          "--seed; the gradients are all-reduced (sum / K, the mean) before each AdamW\n"
          "step, so the losses equal a one-rank run's on the same global batch up to fp32\n"
          "summation order. Rank 0 prints each step's loss (the mean over all B x S\n"
          "positions) and the throughput: B x S tokens per step over the slowest rank's\n"
          "step time, steps 2..N (step 1 pays first-touch page faults; with --steps 1,\n"
          "step 1).\n"
          "\n"
          "Options:\n"
          "  --model M          a Llama model of the catalogue (llama-tiny) or a .model file\n"
          "  --batch B          global batch in sequences, a multiple of the ranks\n"
          "  --seq S            tokens per sequence\n"
          "  --steps N          training steps (default 3)\n"
          "  --seed N           weights and tokens (default 1)\n"
          "  --baseline-tokens-per-s F\n"
          "                     one rank's throughput on the same global batch (the figure\n"
          "                     `mpirun -np 1 trnbench train-dp ...` prints): adds the\n"
          "                     scaling efficiency F_K / (K x F)\n"
          "  --out DIR          append rows to DIR/results.csv (phase train; metrics\n"
          "                     train_tokens_per_s, loss, scaling_efficiency)\n"
          "  -h, --help         this text\n"
          "\n"
          "Exit status: 0 ok, 1 a failed run, 2 usage or no MPI plugin (the reason said).\n",
          f);
}

struct dp_sync {
    const struct tb_comm_api *c;
    int nranks;
    float *scratch; /* TRNBENCH_TEST_DP_BREAK: this rank keeps its own gradient */
    double comm_s;  /* this step's seconds in the all-reduce and the division */
};

/* tb_llama_grad_sync_fn: the mean of the ranks' gradients, in place. */
static int dp_all_reduce(void *ctx, float *g, size_t n, char *err, size_t errlen)
{
    struct dp_sync *s = ctx;
    const float inv = 1.0f / (float)s->nranks;
    const double t0 = s->c->wtime();
    int rc;
    if (s->scratch) /* the broken test run: reduce a copy, keep the local gradient */
        rc = s->c->all_reduce(g, s->scratch, n, TB_COMM_F32, TB_COMM_SUM, err, errlen);
    else
        rc = s->c->all_reduce(NULL, g, n, TB_COMM_F32, TB_COMM_SUM, err, errlen);
    for (size_t i = 0; rc == 0 && !s->scratch && i < n; i++)
        g[i] *= inv;
    s->comm_s = s->c->wtime() - t0;
    return rc;
}

struct dp_args {
    const char *model, *out;
    long batch, seq, steps, seed;
    double baseline;
};

static int write_rows(const struct dp_args *a, const struct tb_arch *arch, const char *ver,
                      int nodes, int nranks, const float *loss, double tps, double tmin,
                      double tmax, int ntimed, bool broken)
{
    enum { NROW = 3 };
    struct tb_result_row rows[NROW];
    struct tb_platform plat;
    struct tb_lock lock = {0};
    char err[1024] = "", host[512], device[512], path[4200], run_id[NROW][200], val[NROW][64];
    char mn[64], mx[64], now[32], b[24], s[24], st[24], nd[16], rpn[16], nr[16], n[16];
    char losses[1200] = "", notes[NROW][1800], workload[96], sw[600];
    const int rank_pn = nranks % nodes == 0 ? nranks / nodes : 0;
    size_t nrows = 0, len = 0;

    if (tb_platform_detect(&plat, err, sizeof err) != 0)
        memset(&plat, 0, sizeof plat);
    tb_platform_describe(&plat, host, sizeof host);
    snprintf(sw, sizeof sw, "%.300s; %.250s", plat.blas[0] ? plat.blas : "BLAS", ver);
    snprintf(device, sizeof device, "%.200s x%d ranks",
             plat.cpu_model[0] ? plat.cpu_model : "host CPU", nranks);
    for (long i = 0; i < a->steps && len < sizeof losses - 32; i++)
        len += (size_t)snprintf(losses + len, sizeof losses - len, "%s%.7g", i ? " " : "",
                                (double)loss[i]);
    tb_utc_now(now, sizeof now);
    snprintf(b, sizeof b, "%ld", a->batch);
    snprintf(s, sizeof s, "%ld", a->seq);
    snprintf(st, sizeof st, "%ld", a->steps);
    snprintf(nd, sizeof nd, "%d", nodes);
    snprintf(rpn, sizeof rpn, "%d", rank_pn);
    snprintf(nr, sizeof nr, "%d", nranks);
    snprintf(n, sizeof n, "%d", ntimed);
    snprintf(mn, sizeof mn, "%.6g", tmin);
    snprintf(mx, sizeof mx, "%.6g", tmax);
    snprintf(workload, sizeof workload, "train-dp/%.60s", arch->name);
    for (int k = 0; k < NROW; k++) {
        const char *metric = k == 0 ? "train_tokens_per_s" : k == 1 ? "loss" : "scaling_efficiency";
        struct tb_result_row *r = &rows[nrows];
        double v = k == 0   ? tps
                   : k == 1 ? (double)loss[a->steps - 1]
                            : tps / (nranks * a->baseline);
        if (k == 2 && !(a->baseline > 0))
            continue;
        memset(r, 0, sizeof *r);
        snprintf(run_id[k], sizeof run_id[k], "%s/b%ld/s%ld/%s/mpi/n%dx%d", workload, a->batch,
                 a->seq, metric, nodes, rank_pn > 0 ? rank_pn : nranks);
        snprintf(val[k], sizeof val[k], "%.7g", v);
        snprintf(notes[k], sizeof notes[k],
                 "data parallel over %d MPI ranks: each rank %ld of the %ld sequences, gradients "
                 "all-reduced (sum / ranks) before each AdamW step; %s%s%s",
                 nranks, a->batch / nranks, a->batch,
                 k == 0   ? "tokens/s: B x S per step over the slowest rank's step time, "
                            "steps 2..N (min/max: the slowest and fastest step)"
                 : k == 1 ? "loss after the last step, mean over B x S positions; every step's: "
                          : "scaling efficiency: this throughput / (ranks x the one-rank figure "
                            "given, --baseline-tokens-per-s)",
                 k == 1 ? losses : "",
                 broken ? "; TRNBENCH_TEST_DP_BREAK: rank 1 kept its own gradient on purpose" : "");
        r->col[TB_COL_RUN_ID] = run_id[k];
        r->col[TB_COL_PROVENANCE] = "measured";
        r->col[TB_COL_TARGET] = tb_platform_target(&plat);
        r->col[TB_COL_INSTANCES] = nd;
        r->col[TB_COL_HOST] = host;
        r->col[TB_COL_EXECUTOR] = "cpu";
        r->col[TB_COL_MODEL] = arch->name;
        r->col[TB_COL_PHASE] = "train";
        r->col[TB_COL_PRECISION] = "fp32";
        r->col[TB_COL_BATCH] = b;
        r->col[TB_COL_SEQ_IN] = s;
        r->col[TB_COL_STEPS] = st;
        r->col[TB_COL_METRIC] = metric;
        r->col[TB_COL_VALUE] = val[k];
        r->col[TB_COL_UNIT] = k == 0 ? "tokens/s" : k == 1 ? "nats" : "ratio";
        r->col[TB_COL_N] = k == 0 ? n : NULL;
        r->col[TB_COL_MIN] = k == 0 ? mn : NULL;
        r->col[TB_COL_MAX] = k == 0 ? mx : NULL;
        r->col[TB_COL_TIMESTAMP] = now;
        r->col[TB_COL_COMMIT] = tb_version_commit();
        r->col[TB_COL_COMPILER] = tb_version_compiler();
        r->col[TB_COL_CFLAGS] = tb_version_cflags();
        r->col[TB_COL_BLAS] = sw;
        r->col[TB_COL_COUNTERS] = "unavailable: train-dp records no counters";
        r->col[TB_COL_SOURCE] = "trnbench";
        r->col[TB_COL_NOTES] = notes[k];
        r->col[TB_COL_WORKLOAD] = workload;
        r->col[TB_COL_CONFIG] = metric;
        r->col[TB_COL_DEVICE] = device;
        r->col[TB_COL_NODES] = nd;
        r->col[TB_COL_RANKS] = nr;
        r->col[TB_COL_RANKS_PER_NODE] = rank_pn > 0 ? rpn : NULL;
        nrows++;
    }
    if (strlen(a->out) > 4000) {
        fprintf(stderr, "trnbench train-dp: --out too long\n");
        return 2;
    }
    snprintf(path, sizeof path, "%s/results.csv", a->out);
    if (tb_mkdir_p(a->out, err, sizeof err) != 0 ||
        tb_results_lock(&lock, a->out, "trnbench train-dp", true, err, sizeof err) != 0 ||
        tb_results_append(path, rows, nrows, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench train-dp: %s\n", err);
        tb_lock_release(&lock);
        return 1;
    }
    tb_lock_release(&lock);
    fprintf(stderr, "trnbench train-dp: %zu rows in '%s'\n", nrows, path);
    return 0;
}

static int train(const struct dp_args *a, const struct tb_comm_api *c, const struct tb_arch *arch,
                 bool broken, long fail_at, long kill_at)
{
    const int rank = c->rank(), K = c->size(), nodes = c->nodes();
    const int Bl = (int)(a->batch / K), T = (int)a->seq;
    struct tb_run_spec spec;
    struct tb_llama m;
    struct tb_adamw opt = tb_adamw_default();
    struct dp_sync sync = {c, K, NULL, 0.0};
    char err[1024] = "", ver[256] = "";
    int *tokens = NULL, *targets = NULL, rc = 1, ntimed = 0;
    float *loss = tb_alloc_array((size_t)a->steps, sizeof *loss);
    double sum = 0, comm_sum = 0, tmin = INFINITY, tmax = 0;
    bool have_m = false;

    memset(&spec, 0, sizeof spec);
    spec.phase = TB_PHASE_TRAIN;
    spec.batch = (int)a->batch;
    spec.seq_in = T;
    spec.seed = (uint64_t)a->seed;
    if (!loss || tb_exec_inputs(&spec, arch->vocab, &tokens, &targets, err, sizeof err) != 0 ||
        tb_llama_init(&m, arch, Bl, T, TB_LLAMA_TRAIN, (uint64_t)a->seed, err, sizeof err) != 0)
        goto out;
    have_m = true;
    if (broken && rank == 1 && !(sync.scratch = tb_alloc_array(m.n_params, sizeof(float)))) {
        snprintf(err, sizeof err, "out of memory for the gradients' copy");
        goto out;
    }
    for (long i = 0; i < a->steps; i++) {
        const size_t off = (size_t)rank * (size_t)Bl * (size_t)T;
        double t0, dt, l, comm;
        float lf = 0.0f;
        if (c->barrier(err, sizeof err) != 0)
            goto out;
        if (kill_at == i + 1 && rank == 1) {
            fprintf(stderr,
                    "trnbench train-dp: rank 1: step %ld: TRNBENCH_TEST_RANK_KILL: "
                    "SIGKILL, as a test asked\n",
                    i + 1);
            raise(SIGKILL); /* a rank killed: its launcher must end the job */
        }
        if (fail_at == i + 1 && rank == 1) {
            snprintf(err, sizeof err,
                     "step %ld: TRNBENCH_TEST_RANK_FAIL: rank 1 fails on its own, as a test asked",
                     i + 1);
            goto out;
        }
        t0 = c->wtime();
        if (tb_llama_train_step_sync(&m, tokens + off, targets + off, Bl, T, &opt, dp_all_reduce,
                                     &sync, &lf, err, sizeof err) != 0)
            goto out;
        dt = c->wtime() - t0;
        l = lf;
        comm = sync.comm_s;
        /* the slowest rank's time, the global mean loss */
        if (c->all_reduce(NULL, &dt, 1, TB_COMM_F64, TB_COMM_MAX, err, sizeof err) != 0 ||
            c->all_reduce(NULL, &l, 1, TB_COMM_F64, TB_COMM_SUM, err, sizeof err) != 0 ||
            c->all_reduce(NULL, &comm, 1, TB_COMM_F64, TB_COMM_MAX, err, sizeof err) != 0)
            goto out;
        loss[i] = (float)(l / K);
        if (rank == 0)
            printf("step %ld loss %.7f time_s %.4f tokens_per_s %.1f allreduce_s %.4f\n", i + 1,
                   (double)loss[i], dt, (double)a->batch * T / dt, comm);
        if (i > 0 || a->steps == 1) {
            sum += dt;
            comm_sum += comm;
            ntimed++;
            tmin = fmin(tmin, (double)a->batch * T / dt);
            tmax = fmax(tmax, (double)a->batch * T / dt);
        }
        if (!isfinite(loss[i])) {
            snprintf(err, sizeof err, "step %ld: loss not finite", i + 1);
            goto out;
        }
    }
    rc = 0;
    if (rank == 0) {
        const double tps = (double)a->batch * T * ntimed / sum;
        printf("ranks %d nodes %d global_batch %ld seq %ld train_tokens_per_s %.1f", K, nodes,
               a->batch, a->seq, tps);
        if (a->baseline > 0)
            printf(" scaling_efficiency %.4f", tps / (K * a->baseline));
        printf(" params %zu allreduce_share %.4f", m.n_params, comm_sum / sum);
        printf("\n");
        fflush(stdout);
        c->library_version(ver, sizeof ver);
        if (a->out)
            rc = write_rows(a, arch, ver, nodes, K, loss, tps, tmin, tmax, ntimed, broken);
    }
out:
    if (rc == 1 && err[0])
        fprintf(stderr, "trnbench train-dp: rank %d: %s\n", rank, err);
    if (rc == 1 && err[0] && K > 1) {
        /* this rank's own failure (its inputs, its memory, its step): the others wait in
         * the step's all-reduce, which it never joins, and MPI_Finalize would wait for
         * them. End the job; rank 0 writes rows only after the last step, so --out is
         * left as it was. */
        fprintf(stderr, "trnbench train-dp: rank %d ends the job (MPI_Abort)\n", rank);
        c->abort(1);
    }
    if (have_m)
        tb_llama_release(&m);
    free(sync.scratch);
    free(tokens);
    free(targets);
    free(loss);
    return rc;
}

int tb_cmd_train_dp(int argc, char **argv)
{
    struct dp_args a = {.model = NULL, .out = NULL, .batch = 0, .seq = 0, .steps = 3, .seed = 1};
    const struct tb_opt opts[] = {
        TB_OPT_STR("model", &a.model),
        TB_OPT_LONG("batch", &a.batch, 1, 100000),
        TB_OPT_LONG("seq", &a.seq, 1, 100000),
        TB_OPT_LONG("steps", &a.steps, 1, 100000),
        TB_OPT_LONG("seed", &a.seed, 0, 2147483647),
        TB_OPT_DOUBLE("baseline-tokens-per-s", &a.baseline, 1e-9, 1e15),
        TB_OPT_STR("out", &a.out),
        TB_OPT_END,
    };
    struct tb_arch arch;
    const struct tb_comm_api *c;
    char err[1024] = "";
    int rc;
    long fail_at = 0, kill_at = 0;
    bool broken = false;

    if ((rc = tb_cli_parse("train-dp", argc, argv, opts, usage)) != TB_CLI_GO)
        return rc;
    if (optind < argc) {
        fprintf(stderr, "trnbench train-dp: unknown argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!a.model || !a.batch || !a.seq) {
        fprintf(stderr, "trnbench train-dp: --model, --batch and --seq are required\n");
        return 2;
    }
    if (tb_arch_find(&arch, a.model, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench train-dp: --model: %s\n", err);
        return 2;
    }
    if (!(c = tb_comm_start("trnbench train-dp:", &argc, &argv, &rc)))
        return rc;
    broken = tb_cli_test_switch("train-dp", "TRNBENCH_TEST_DP_BREAK", c->rank() == 0);
    fail_at = tb_cli_test_step("train-dp", "TRNBENCH_TEST_RANK_FAIL", c->rank() == 0);
    kill_at = tb_cli_test_step("train-dp", "TRNBENCH_TEST_RANK_KILL", c->rank() == 0);
    if (a.batch % c->size() != 0) {
        if (c->rank() == 0)
            fprintf(stderr,
                    "trnbench train-dp: --batch %ld is not a multiple of the %d ranks (each rank "
                    "takes batch / ranks sequences)\n",
                    a.batch, c->size());
        rc = 2;
    } else {
        rc = train(&a, c, &arch, broken, fail_at, kill_at);
    }
    c->finalize(err, sizeof err);
    return rc;
}
