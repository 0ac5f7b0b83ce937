/*
 * tests/unit/exec.c: the CPU executor (harness/tb_exec.h) on llama-tiny: the work it
 * declares per repetition equals the FLOP and byte counts of tb_flops.h for the shape,
 * every timed repetition has a positive time, validation passes on a sound engine and
 * fails on one whose weights hold a NaN, training starts near ln V and learns, the
 * decode repetitions are identical, and an engine refusal is an error, not a result.
 */
#include "tb_arch.h"
#include "tb_exec.h"
#include "tb_flops.h"
#include "tb_suite.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct tb_run_spec spec_of(enum tb_phase ph, int B, int T, int n, int reps, int warmup)
{
    struct tb_run_spec s;
    tb_run_spec_init(&s);
    snprintf(s.model, sizeof s.model, "llama-tiny");
    s.phase = ph;
    s.batch = B;
    s.seq_in = T;
    s.seq_out = n;
    s.reps = reps;
    s.warmup = warmup;
    s.seed = 7;
    return s;
}

static bool all_positive(const double *x, int n)
{
    for (int i = 0; i < n; i++)
        if (!(x[i] > 0))
            return false;
    return true;
}

int main(void)
{
    struct tb_arch a;
    struct tb_exec_result r;
    struct tb_run_spec s;
    char err[512];
    char *model = test_src_path("workloads/llama/llama-tiny.model");

    plan(32);
    if (tb_arch_load(&a, model, err, sizeof err) != 0)
        bail("%s", err);

    /* ---- prefill ---- */
    s = spec_of(TB_PHASE_PREFILL, 2, 24, 0, 4, 1);
    OK(tb_exec_run(&s, &a, &r, err, sizeof err) == 0, "prefill runs: %s", err);
    IS_INT(4, r.reps, "prefill: reps timed");
    OK(all_positive(r.secs, r.reps), "prefill: every repetition took time");
    IS_DOUBLE(48, r.tokens, 0, "prefill: B*T tokens per repetition");
    IS_DOUBLE(tb_flops_prefill(&a, 2, 24), r.flops, 0, "prefill: FLOPs from tb_flops_prefill");
    OK(r.valid, "prefill: validated (%s)", r.note);
    OK(strlen(r.counters) > 0, "prefill: counters or their reason recorded: %s", r.counters);
    tb_exec_result_release(&r);

    /* ---- decode ---- */
    s = spec_of(TB_PHASE_DECODE, 3, 16, 5, 3, 1);
    OK(tb_exec_run(&s, &a, &r, err, sizeof err) == 0, "decode runs: %s", err);
    IS_DOUBLE(15, r.tokens, 0, "decode: B*n tokens per repetition");
    IS_DOUBLE(5, r.steps, 0, "decode: n steps per repetition");
    IS_DOUBLE(tb_flops_decode(&a, 3, 16, 5), r.flops, 0, "decode: FLOPs from tb_flops_decode");
    {
        double bytes = 0;
        for (int p = 16; p < 21; p++)
            bytes += tb_bytes_decode_step(&a, 3, p, 4, 4);
        IS_DOUBLE(bytes, r.bytes, 0, "decode: bytes = steps at positions 16..20, fp32");
        OK(bytes > 4.0 * tb_arch_params_matmul(&a) * 5, "decode: bytes exceed the weights read");
    }
    OK(r.valid && all_positive(r.secs, r.reps), "decode: validated and timed (%s)", r.note);
    tb_exec_result_release(&r);

    /* ---- train ---- */
    s = spec_of(TB_PHASE_TRAIN, 2, 16, 0, 6, 1);
    OK(tb_exec_run(&s, &a, &r, err, sizeof err) == 0, "train runs: %s", err);
    IS_DOUBLE(tb_flops_train(&a, 2, 16), r.flops, 0, "train: FLOPs from tb_flops_train");
    IS_DOUBLE(log(256.0), r.loss_first, 0.3, "train: first loss near ln V");
    OK(r.loss_last < r.loss_first - 0.01,
       "train: loss falls over 7 steps on one batch (%.4f -> %.4f)", r.loss_first, r.loss_last);
    OK(r.valid, "train: validated (%s)", r.note);
    tb_exec_result_release(&r);

    /* ---- validation can fail: a NaN weight poisons the logits ---- */
    {
        struct tb_llama m;
        int tokens[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        s = spec_of(TB_PHASE_PREFILL, 1, 8, 0, 2, 0);
        if (tb_llama_init(&m, &a, 1, 8, 0, 3, err, sizeof err) != 0)
            bail("%s", err);
        m.final_norm[0] = NAN;
        OK(tb_exec_time(&m, &s, tokens, NULL, &r, err, sizeof err) == 0, "poisoned prefill ran");
        OK(!r.valid, "poisoned prefill fails validation");
        IS_STRING("validation failed: logits not finite", r.note, "and says why");
        tb_exec_result_release(&r);

        /* an engine that refuses (batch above its capacity) is an error */
        s = spec_of(TB_PHASE_PREFILL, 2, 8, 0, 1, 0);
        err[0] = '\0';
        OK(tb_exec_time(&m, &s, tokens, NULL, &r, err, sizeof err) == -1,
           "a batch above the engine's capacity is an error");
        OK(err[0] != '\0', "with a message: %s", err);
        tb_exec_result_release(&r);
        tb_llama_release(&m);
    }

    /* ---- precision fp8 is the GPU's: the CPU says so and runs nothing ---- */
    s = spec_of(TB_PHASE_PREFILL, 1, 8, 0, 1, 0);
    OK(tb_exec_can_run(&s, err, sizeof err), "fp32 runs on the CPU");
    snprintf(s.precision, sizeof s.precision, "fp8");
    OK(!tb_exec_can_run(&s, err, sizeof err), "fp8 does not");
    IS_STRING("precision fp8: the CPU engine computes in fp32 only (fp8 runs on the GPU executor)",
              err, "and says why");
    err[0] = '\0';
    IS_INT(-1, tb_exec_run(&s, &a, &r, err, sizeof err), "tb_exec_run refuses fp8");
    OK(strstr(err, "fp32 only") != NULL, "with the reason: %s", err);
    tb_exec_result_release(&r);

    /* ---- tokens come from the seed ---- */
    {
        int x[16], y[16];
        uint64_t s1 = 42, s2 = 42;
        bool in_range = true;
        tb_exec_tokens(x, 16, 256, &s1);
        tb_exec_tokens(y, 16, 256, &s2);
        for (int i = 0; i < 16; i++)
            in_range = in_range && x[i] >= 0 && x[i] < 256;
        OK(!memcmp(x, y, sizeof x), "the same seed draws the same tokens");
        OK(in_range, "tokens lie in [0, V)");
        OK(s1 != 42, "the seed advances");
    }
    free(model);
    return 0;
}
