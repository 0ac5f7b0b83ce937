/* harness/measure/exec_model.c: the model executor (tb_executor.h): the performance
 * model (tb_model.h) as an executor, so predicted rows take the same path as measured
 * ones (plan -> tb_measure -> recorder). Its self is a const struct tb_model; its
 * workload a typed question (w->scenario, a struct tb_scenario). One repetition is one
 * prediction (the plan asks for no warm-up and one repetition); validation is the
 * prediction fitting the target (r->note says why not). r->predicted gets a copy of
 * the prediction. */
#include "tb_executor.h"

#include "tb_model.h"
#include "tb_util.h"

#include <stdlib.h>
#include <string.h>

struct model_run {
    const struct tb_model *m;     /* borrowed */
    const struct tb_scenario *sc; /* borrowed */
    struct tb_prediction p;
};

static bool model_can_run(const void *self, const struct tb_workload *w, char *why, size_t whylen)
{
    if (!self) {
        snprintf(why, whylen, "performance model not loaded");
        return false;
    }
    if (!w->scenario) {
        snprintf(why, whylen, "no scenario to predict");
        return false;
    }
    return true;
}

static int model_setup(void *self, const struct tb_workload *w, struct tb_exec_result *r,
                       void **run, char *err, size_t errlen)
{
    struct model_run *x = calloc(1, sizeof *x);
    *run = x;
    if (!x)
        return tb_err(err, errlen, "out of memory");
    x->m = self;
    x->sc = w->scenario;
    return tb_exec_result_start(r, w->spec, err, errlen); /* one repetition: a prediction */
}

static int model_rep(void *run, int k, struct tb_exec_result *r, double *secs, char *err,
                     size_t errlen)
{
    struct model_run *x = run;
    (void)k;
    (void)r;
    (void)secs;
    return tb_model_predict(x->m, x->sc, &x->p, err, errlen) != 0 ? -1 : 0;
}

static int model_validate(void *run, int k, struct tb_exec_result *r, char *err, size_t errlen)
{
    struct model_run *x = run;
    (void)k;
    (void)err;
    (void)errlen;
    if (x->p.fits)
        return 0;
    /* not a failed validation of a measurement: the workload does not fit the target */
    r->valid = false;
    snprintf(r->note, sizeof r->note, "%.255s", x->p.why); /* whole in r->predicted */
    return 1;
}

static int model_finish(void *run, struct tb_exec_result *r, char *err, size_t errlen)
{
    struct model_run *x = run;
    r->predicted = malloc(sizeof *r->predicted);
    if (!r->predicted)
        return tb_err(err, errlen, "out of memory");
    *r->predicted = x->p;
    return 0;
}

static void model_teardown(void *run)
{
    free(run);
}

const struct tb_executor_i tb_executor_model = {
    .name = "model",
    .what = "model",
    .provenance = "modeled",
    .id_prefix = "model:",
    .flags = 0,
    .can_run = model_can_run,
    .setup = model_setup,
    .rep = model_rep,
    .validate = model_validate,
    .finish = model_finish,
    .teardown = model_teardown,
};
