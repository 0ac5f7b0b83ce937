/* harness/measure/exec_endpoint.c: the endpoint executor (tb_executor.h): an
 * OpenAI-compatible server (vLLM, vllm-neuron, NxD Inference, TGI, SGLang,
 * TensorRT-LLM, `trnbench serve`) measured under load by the load client
 * (endpoint/tb_loadgen.h), with one client and one set of definitions for every vendor.
 *
 * Its self is a struct tb_endpoint (where the server answers); its workload a serving
 * level (spec->serve.level_concurrency, level_rate) of a Llama of the catalogue (the
 * vocabulary the prompt ids are drawn from). One "repetition" is the whole level: the
 * warm-up requests, then the counted ones, every request streamed and timed; the
 * plan asks for one repetition and no warm-up of the loop's own. Its time is the
 * level's counted window (first send to last end). The level's requests go to the
 * recorder in r->load (tb_record_serve). Validation: at least one counted request
 * completed; failed requests are counted, with their reasons, not hidden. */
#include "tb_executor.h"

#include "tb_loadgen.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct endpoint_run {
    struct tb_load_spec ls;
    struct tb_load_result lr;
    bool have; /* lr holds a level */
};

static bool endpoint_can_run(const void *self, const struct tb_workload *w, char *why,
                             size_t whylen)
{
    if (w->spec->phase != TB_PHASE_SERVE) {
        snprintf(why, whylen, "the endpoint executor measures serving runs (phase serve) only");
        return false;
    }
    if (!self || !((const struct tb_endpoint *)self)->base_url[0]) {
        snprintf(why, whylen, "no endpoint to measure");
        return false;
    }
    if (!w->arch) {
        snprintf(why, whylen, "a serving run needs a Llama of the catalogue (its vocabulary)");
        return false;
    }
    return true;
}

/* Requests of a level: the spec's count; none with a duration; else four rounds of the
 * concurrency (at least 16), or 32 for an uncapped open loop. */
static int level_requests(const struct tb_serve_opts *o)
{
    int c = o->level_concurrency;
    if (o->requests || o->duration_s > 0)
        return o->requests;
    if (!c)
        return 32;
    return c * 4 > 16 ? c * 4 : 16;
}

/* Warm-up requests of a level: the spec's, else one round of the concurrency (at most
 * 32), or 4 for an uncapped open loop. */
static int level_warmup(const struct tb_serve_opts *o)
{
    int c = o->level_concurrency;
    if (o->warmup_requests >= 0)
        return o->warmup_requests;
    if (!c)
        return 4;
    return c < 32 ? c : 32;
}

static int endpoint_setup(void *self, const struct tb_workload *w, struct tb_exec_result *r,
                          void **run, char *err, size_t errlen)
{
    const struct tb_endpoint *ep = self;
    const struct tb_run_spec *spec = w->spec;
    const struct tb_serve_opts *o = &spec->serve;
    struct endpoint_run *x = calloc(1, sizeof *x);

    *run = x;
    if (tb_exec_result_start(r, spec, err, errlen) != 0) /* the plan asks one repetition */
        return -1;
    if (!x)
        return tb_err(err, errlen, "out of memory");
    x->ls = (struct tb_load_spec){
        .base_url = ep->base_url,
        .served_model = ep->served_model[0] ? ep->served_model : spec->model,
        .api = o->api == TB_SERVE_CHAT ? TB_API_CHAT : TB_API_COMPLETIONS,
        .seq_in = spec->seq_in,
        .seq_out = spec->seq_out,
        .vocab = w->arch->vocab,
        .seed = spec->seed,
        .concurrency = o->level_concurrency,
        .request_rate = o->level_rate,
        .requests = level_requests(o),
        .duration_s = o->duration_s,
        .warmup_requests = level_warmup(o),
        .request_timeout_s = o->request_timeout_s,
        .text_prompts = o->api == TB_SERVE_CHAT,
        .threads = o->client_threads,
    };
    r->tokens = (double)x->ls.requests * spec->seq_out;
    return 0;
}

static int endpoint_rep(void *run, int k, struct tb_exec_result *r, double *secs, char *err,
                        size_t errlen)
{
    struct endpoint_run *x = run;
    (void)k;
    if (x->have) {
        tb_load_result_release(&x->lr);
        x->have = false;
    }
    if (tb_load_run(&x->ls, &x->lr, err, errlen) != 0)
        return -1;
    x->have = true;
    r->tokens = 0;
    for (size_t i = 0; i < x->lr.nreqs; i++)
        if (x->lr.reqs[i].ok)
            r->tokens += x->lr.reqs[i].output_tokens;
    /* the level's counted window; a level where nothing completed has none */
    *secs = x->lr.window_s > 0 ? x->lr.window_s : 1e-9;
    return 0;
}

static int endpoint_validate(void *run, int k, struct tb_exec_result *r, char *err, size_t errlen)
{
    struct endpoint_run *x = run;
    (void)k;
    (void)err;
    (void)errlen;
    if (x->lr.ok == 0) {
        char what[700];
        snprintf(what, sizeof what, "none of the %zu requests completed: %s", x->lr.nreqs,
                 x->lr.failures[0] ? x->lr.failures : "no reason given");
        tb_exec_invalid(r, what);
        return 1;
    }
    return 0;
}

static int endpoint_finish(void *run, struct tb_exec_result *r, char *err, size_t errlen)
{
    struct endpoint_run *x = run;
    if (!x->have)
        return 0;
    r->load = malloc(sizeof *r->load);
    if (!r->load)
        return tb_err(err, errlen, "out of memory");
    *r->load = x->lr; /* moved */
    x->have = false;
    return 0;
}

static void endpoint_teardown(void *run)
{
    struct endpoint_run *x = run;
    if (x && x->have)
        tb_load_result_release(&x->lr);
    free(x);
}

const struct tb_executor_i tb_executor_endpoint = {
    .name = "endpoint",
    .what = "endpoint",
    .provenance = "measured",
    .id_prefix = "endpoint:",
    .flags = TB_EXEC_SELF_TIMED,
    .can_run = endpoint_can_run,
    .setup = endpoint_setup,
    .rep = endpoint_rep,
    .validate = endpoint_validate,
    .finish = endpoint_finish,
    .teardown = endpoint_teardown,
};
