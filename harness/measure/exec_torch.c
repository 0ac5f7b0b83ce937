/* harness/measure/exec_torch.c: the pytorch executor (tb_executor.h): a training run
 * (phase train, executor=pytorch) by PyTorch, the training script
 * (workloads/train/llama_train.py) launched by torchrun in nproc_per_node processes on
 * the CPU (gloo), GPUs (NCCL) or NeuronCores (torch-xla), as tb_torch.h describes.
 *
 * Its work is another process's: setup launches the whole training (the warm-up steps
 * and the timed ones) and reads and checks the script's report; each "repetition" of
 * the loop is then one step of that report, its time the script's (from zeroing the
 * gradients to the loss on the host, the device synchronised), so the recorder derives
 * step_time_s, train_tokens_per_s (all processes together) and gflop_per_s with their
 * spread over the timed steps as for every executor. Validation: every loss finite, the
 * first within 1 nat of ln V (random weights, std 0.02), and the loss fallen over the
 * batches the script cycles (tb_train_loss_fell) when the run has enough steps to
 * compare. A script that cannot run here (no torch, no device) makes the run
 * unavailable (r->unavailable): skipped with the reason, not failed. The report goes
 * to the plan in r->train (the environment, compile_s) for the rows' provenance. */
#include "tb_executor.h"

#include "tb_torch.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct torch_run {
    const struct tb_run_spec *spec; /* borrowed */
    const struct tb_arch *arch;     /* borrowed */
    struct tb_train_report t;
    bool have; /* t holds a report */
};

static bool torch_can_run(const void *self, const struct tb_workload *w, char *why, size_t whylen)
{
    (void)self;
    if (w->spec->phase != TB_PHASE_TRAIN || !w->arch) {
        snprintf(why, whylen, "the pytorch executor trains a Llama (phase train) only");
        return false;
    }
    return true;
}

static int torch_setup(void *self, const struct tb_workload *w, struct tb_exec_result *r,
                       void **run, char *err, size_t errlen)
{
    struct torch_run *x = calloc(1, sizeof *x);
    int st;

    (void)self;
    *run = x;
    /* tokens and FLOPs of a step of the global batch, as trnbench counts them */
    if (tb_exec_result_init(r, w->spec, w->arch, 4, 4, err, errlen) != 0)
        return -1;
    if (!x)
        return tb_err(err, errlen, "out of memory");
    x->spec = w->spec;
    x->arch = w->arch;
    st = tb_train_run(w->spec, w->arch, stderr, &x->t, err, errlen);
    if (st == TB_TRAIN_UNAVAILABLE)
        r->unavailable = true;
    r->elsewhere = st == TB_TRAIN_ELSEWHERE;
    if (st != TB_TRAIN_OK)
        return -1;
    x->have = true;
    snprintf(r->counters, sizeof r->counters,
             "unavailable: the training ran in %d torch process%s (PAPI counters are read in "
             "trnbench's own process only)",
             x->t.world_size, x->t.world_size == 1 ? "" : "es");
    return 0;
}

static int torch_rep(void *run, int k, struct tb_exec_result *r, double *secs, char *err,
                     size_t errlen)
{
    struct torch_run *x = run;
    const int s = k + x->spec->warmup; /* the step of the report */
    (void)err;
    (void)errlen;
    *secs = x->t.secs[s];
    if (!isfinite(x->t.loss[s])) {
        char what[96];
        snprintf(what, sizeof what, "step %d: training loss not finite (%s)", s,
                 s == x->t.bad_step ? x->t.bad_loss : "nan");
        tb_exec_invalid(r, what);
        return 1;
    }
    tb_exec_loss(r, x->spec, k, x->t.loss[s]);
    return 0;
}

static int torch_finish(void *run, struct tb_exec_result *r, char *err, size_t errlen)
{
    struct torch_run *x = run;
    double before, after;
    int fell;

    if (!x->have)
        return 0;
    tb_exec_check_first_loss(r, x->arch->vocab);
    fell = tb_train_loss_fell(&x->t, &before, &after);
    if (fell == 0 && r->valid) {
        char what[200];
        snprintf(what, sizeof what,
                 "the loss did not fall: mean %.4f over the first %d steps, %.4f over the last "
                 "%d (the same batches)",
                 before, x->t.distinct_batches, after, x->t.distinct_batches);
        tb_exec_invalid(r, what);
    }
    r->train = malloc(sizeof *r->train);
    if (!r->train)
        return tb_err(err, errlen, "out of memory");
    *r->train = x->t; /* moved */
    memset(&x->t, 0, sizeof x->t);
    x->have = false;
    return 0;
}

static void torch_teardown(void *run)
{
    struct torch_run *x = run;
    if (x && x->have)
        tb_train_report_release(&x->t);
    free(x);
}

const struct tb_executor_i tb_executor_torch = {
    .name = "pytorch",
    .what = "PyTorch",
    .provenance = "measured",
    .id_prefix = "pytorch:",
    .flags = TB_EXEC_SELF_TIMED,
    .can_run = torch_can_run,
    .setup = torch_setup,
    .rep = torch_rep,
    .finish = torch_finish,
    .teardown = torch_teardown,
};
