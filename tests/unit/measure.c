/*
 * tests/unit/measure.c: the one measurement loop (harness/measure/tb_executor.h) with a
 * recording executor of the test's own: the order of the calls (setup, warm-up and
 * timed repetitions, the timed region's edges around exactly the timed ones,
 * validation after every repetition, finish, teardown), the times it keeps (its own
 * clock's for ordinary executors, the executor's for self-timed ones), an early stop on
 * a failed validation, a refused workload; then the model executor through the same
 * loop gives exactly tb_model_predict's prediction, and a target it does not fit is a
 * failed validation with the model's reason.
 */
#include "tb_arch.h"
#include "tb_executor.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What the recording executor saw. */
struct rec {
    char log[512]; /* one letter a call: S setup, r/R warm-up/timed rep, v validate, b/e
                      timed edges, F finish, T teardown */
    int stop_at;   /* validate returns 1 at this k (INT32_MIN-like: never) */
    bool refuse;
};

static void put(struct rec *x, char c)
{
    size_t n = strlen(x->log);
    if (n + 1 < sizeof x->log)
        x->log[n] = c;
}

static bool rec_can_run(const void *self, const struct tb_workload *w, char *why, size_t whylen)
{
    const struct rec *x = self;
    (void)w;
    if (x->refuse)
        snprintf(why, whylen, "refused for the test");
    return !x->refuse;
}

static int rec_setup(void *self, const struct tb_workload *w, struct tb_exec_result *r, void **run,
                     char *err, size_t errlen)
{
    struct rec *x = self;
    memset(r, 0, sizeof *r);
    r->reps = w->spec->reps;
    r->valid = true;
    r->secs = calloc((size_t)w->spec->reps, sizeof *r->secs);
    if (!r->secs)
        return tb_err(err, errlen, "out of memory");
    put(x, 'S');
    *run = x;
    return 0;
}

static int rec_rep(void *run, int k, struct tb_exec_result *r, double *secs, char *err,
                   size_t errlen)
{
    struct rec *x = run;
    struct timespec ts = {0, 2000000}; /* 2 ms: well above any timer's tick */
    (void)r;
    (void)err;
    (void)errlen;
    put(x, k < 0 ? 'r' : 'R');
    nanosleep(&ts, NULL);
    *secs = 1000.0 + k; /* a self-timed executor's own figure */
    return 0;
}

static int rec_validate(void *run, int k, struct tb_exec_result *r, char *err, size_t errlen)
{
    struct rec *x = run;
    (void)err;
    (void)errlen;
    put(x, 'v');
    if (k == x->stop_at) {
        tb_exec_invalid(r, "stopped for the test");
        return 1;
    }
    return 0;
}

static void rec_begin(void *run)
{
    put(run, 'b');
}

static void rec_end(void *run)
{
    put(run, 'e');
}

static int rec_finish(void *run, struct tb_exec_result *r, char *err, size_t errlen)
{
    (void)r;
    (void)err;
    (void)errlen;
    put(run, 'F');
    return 0;
}

static void rec_teardown(void *run)
{
    put(run, 'T');
}

static struct tb_executor_i rec_i = {
    .name = "rec",
    .what = "test",
    .provenance = "measured",
    .id_prefix = "",
    .can_run = rec_can_run,
    .setup = rec_setup,
    .rep = rec_rep,
    .validate = rec_validate,
    .timed_begin = rec_begin,
    .timed_end = rec_end,
    .finish = rec_finish,
    .teardown = rec_teardown,
};

int main(void)
{
    struct rec x;
    struct tb_executor ex = {&rec_i, &x};
    struct tb_run_spec spec;
    struct tb_workload w = {.spec = &spec};
    struct tb_exec_result r;
    struct tb_pricing pr;
    struct tb_model model;
    struct tb_arch a8;
    struct tb_scenario sc;
    struct tb_prediction p;
    char err[512];
    char *dir = test_src_path("pricing");
    int rc;

    plan(16);
    tb_run_spec_init(&spec);
    spec.warmup = 2;
    spec.reps = 3;

    /* ---- the order of the calls ---- */
    memset(&x, 0, sizeof x);
    x.stop_at = -100;
    rc = tb_measure(&ex, &w, &r, err, sizeof err);
    is_int(0, rc, "a run of the recording executor succeeds");
    is_string("SrvrvbRvRvRevFT", x.log,
              "setup, 2 warm-ups, timed edges around exactly the 3 timed reps, validation "
              "after each, finish, teardown");
    OK(r.valid && r.reps == 3, "valid, 3 timed repetitions");
    /* not self-timed: the loop's clock (2 ms sleeps), not the executor's 1000 + k */
    OK(r.secs[0] >= 0.002 && r.secs[0] < 1.0 && r.secs[2] >= 0.002 && r.secs[2] < 1.0,
       "the loop times an ordinary executor itself (%.4f s, %.4f s for 2 ms repetitions)",
       r.secs[0], r.secs[2]);
    tb_exec_result_release(&r);

    rec_i.flags = TB_EXEC_SELF_TIMED;
    memset(&x, 0, sizeof x);
    x.stop_at = -100;
    tb_measure(&ex, &w, &r, err, sizeof err);
    OK(r.secs[0] == 1000.0 && r.secs[1] == 1001.0 && r.secs[2] == 1002.0,
       "a self-timed executor's own times are kept (%.0f, %.0f, %.0f)", r.secs[0], r.secs[1],
       r.secs[2]);
    tb_exec_result_release(&r);

    /* ---- a failed validation stops the loop; the run still finishes and tears down ---- */
    memset(&x, 0, sizeof x);
    x.stop_at = 0;
    rc = tb_measure(&ex, &w, &r, err, sizeof err);
    is_int(0, rc, "a failed validation is not an error return");
    is_string("SrvrvbRvFT", x.log, "it stops after the first timed repetition's validation");
    OK(!r.valid && strstr(r.note, "stopped for the test"), "r invalid with the reason: %s", r.note);
    tb_exec_result_release(&r);

    /* ---- a refused workload never sets up ---- */
    memset(&x, 0, sizeof x);
    x.refuse = true;
    rc = tb_measure(&ex, &w, &r, err, sizeof err);
    OK(rc == -1 && !strcmp(err, "refused for the test") && x.log[0] == '\0',
       "can_run's refusal is an error with its reason, and nothing else is called");
    tb_exec_result_release(&r);

    /* ---- the model executor through the same loop ---- */
    if (tb_pricing_load(&pr, dir, err, sizeof err) != 0 ||
        tb_model_load(&model, &pr, dir, err, sizeof err) != 0)
        bail("%s", err);
    if (tb_arch_find(&a8, "llama-3.1-8b", err, sizeof err) != 0)
        bail("%s", err);
    memset(&sc, 0, sizeof sc);
    sc.arch = &a8;
    sc.inst = tb_pricing_instance(&pr, "p5.48xlarge");
    sc.phase = TB_PHASE_DECODE;
    sc.precision = "bf16";
    sc.chips = 1;
    sc.batch = 8;
    sc.seq_in = 1024;
    sc.seq_out = 128;
    if (!sc.inst || tb_model_predict(&model, &sc, &p, err, sizeof err) != 0)
        bail("direct prediction: %s", err);
    {
        static const struct tb_run_spec once = {.reps = 1};
        const struct tb_executor mx = {&tb_executor_model, &model};
        const struct tb_workload mw = {.spec = &once, .scenario = &sc};
        rc = tb_measure(&mx, &mw, &r, err, sizeof err);
        is_int(0, rc, "the model executor runs (%s)", rc ? err : "ok");
        OK(r.valid && r.predicted != NULL, "its result is valid and carries the prediction");
        OK(r.predicted && p.fits && r.predicted->tpot_ms == p.tpot_ms &&
               r.predicted->ttft_ms == p.ttft_ms &&
               r.predicted->output_tokens_per_s == p.output_tokens_per_s && p.tpot_ms > 0,
           "exactly tb_model_predict's figures (TPOT %.4g ms, TTFT %.4g ms)", p.tpot_ms, p.ttft_ms);
        is_string("modeled", tb_executor_model.provenance, "its rows are modeled");
        tb_exec_result_release(&r);

        /* 405B in bf16 on one 80 GB GPU does not fit: a failed validation, with the
         * model's reason */
        {
            struct tb_arch a405;
            if (tb_arch_find(&a405, "llama-3.1-405b", err, sizeof err) != 0)
                bail("%s", err);
            sc.arch = &a405;
            rc = tb_measure(&mx, &mw, &r, err, sizeof err);
            is_int(0, rc, "a workload that does not fit is not an error");
            OK(!r.valid && r.predicted && !r.predicted->fits && r.note[0],
               "but a failed validation: %s", r.note);
            OK(r.predicted && !strncmp(r.note, r.predicted->why, 40),
               "whose reason is the model's");
            tb_exec_result_release(&r);
        }
    }
    tb_model_release(&model);
    tb_pricing_release(&pr);
    free(dir);
    return 0;
}
