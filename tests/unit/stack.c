/* tests/unit/stack.c: the software stacks of pricing/stacks.csv in the performance
 * model: a stack of speed s scales a prediction by s where the chip's figures bound it
 * (a batch-1 decode on one GPU: TPOT exactly over s), the reference stack and no stack
 * alike, a version taken as its nearest listed release, unknown and misplaced stacks
 * refused with what the table has, and malformed tables refused with file, line and
 * field. */
#include "tb_arch.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_scenario.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct tb_pricing pr;
static struct tb_model model;

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        bail("cannot write %s", path);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = malloc(1 << 20);
    size_t n;
    if (!f || !buf)
        bail("cannot read %s", path);
    n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* A batch-1 decode of a on one chip of target, under software (NULL: none). */
static int decode(const struct tb_arch *a, const char *target, const char *prec,
                  const char *software, struct tb_prediction *p, char *err, size_t errlen)
{
    struct tb_scenario s;
    memset(&s, 0, sizeof s);
    s.inst = tb_pricing_instance(&pr, target);
    if (!s.inst)
        bail("no instance %s", target);
    s.arch = a;
    s.phase = TB_PHASE_DECODE;
    s.precision = prec;
    s.chips = 1;
    s.tp = 1;
    s.batch = 1;
    s.seq_in = 1024;
    s.seq_out = 128;
    s.software = software;
    return tb_model_predict(&model, &s, p, err, errlen);
}

/* tb_model_load on a folder holding our efficiency.csv and stacks.csv text: -1 with a
 * message naming want. */
static void expect_bad(const char *stacks, const char *want, const char *what)
{
    static int n;
    char name[64], *dir, path[4096], err[1024] = "";
    char *src = test_src_path("pricing/efficiency.csv"), *eff = read_file(src);
    struct tb_model m;
    snprintf(name, sizeof name, "stacks%d", n++);
    dir = test_tmp_path(name);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/efficiency.csv", dir);
    write_file(path, eff);
    snprintf(path, sizeof path, "%s/stacks.csv", dir);
    write_file(path, stacks);
    IS_INT(-1, tb_model_load(&m, &pr, dir, err, sizeof err), "%s is refused", what);
    OK(strstr(err, want) != NULL && strstr(err, "stacks.csv: line ") != NULL,
       "%s: the message names file, line and '%s': %s", what, want, err);
    free(eff);
    free(src);
    free(dir);
}

/* A scenario row as name=value pairs, for tb_scenario_predict_one. */
static const char *kv_get(const void *ctx, const char *name)
{
    const char *const *kv = ctx;
    for (int i = 0; kv[i]; i += 2)
        if (!strcmp(kv[i], name))
            return kv[i + 1];
    return NULL;
}

#define HEAD  "software,family,phases,speed,status,rows,source,notes\n"
#define HEADC "software,family,phases,chips,speed,status,rows,source,notes\n"

int main(void)
{
    char err[1024], *dir;
    struct tb_arch a;
    struct tb_prediction p0, p1, p2;
    const struct tb_model_stack *st;
    bool by_name;

    plan_lazy();
    setenv("TRNBENCH_DATADIR", getenv("TB_SRCDIR") ? getenv("TB_SRCDIR") : ".", 1);
    dir = test_src_path("pricing");
    if (tb_pricing_load(&pr, dir, err, sizeof err) != 0 ||
        tb_model_load(&model, &pr, dir, err, sizeof err) != 0)
        bail("%s", err);
    if (tb_arch_find(&a, "llama-3.1-8b", err, sizeof err) != 0)
        bail("%s", err);

    /* ---- the table as shipped ---- */
    OK(model.nstacks >= 8, "stacks.csv read: %zu stacks", model.nstacks);
    st = tb_model_stack_reference(&model, "nvidia", TB_PHASE_SERVE);
    OK(st && !strcmp(st->software, "tensorrt-llm") && st->speed == 1,
       "nvidia serving's reference is tensorrt-llm at speed 1");
    st = tb_model_stack_reference(&model, "nvidia", TB_PHASE_TRAIN);
    OK(st && !strcmp(st->software, "nemo"), "nvidia training's reference is nemo");
    IS_INT(0,
           tb_model_stack_find(&model, "vllm", "nvidia", NULL, TB_PHASE_DECODE, &st, &by_name, err,
                               sizeof err),
           "vllm on nvidia decode: found (serve covers prefill, decode and serve)");
    OK(st && st->speed > 0.3 && st->speed < 1 && !by_name,
       "vllm's nvidia speed is below the reference: %g", st ? st->speed : NAN);

    /* ---- a prediction under a stack: one H100, batch 1, bf16: memory bound, no
     * collective, every figure it uses scaled by the speed ---- */
    if (decode(&a, "p5.48xlarge", "bf16", NULL, &p0, err, sizeof err) != 0 || !p0.fits)
        bail("%s %s", err, p0.why);
    if (decode(&a, "p5.48xlarge", "bf16", "vllm", &p1, err, sizeof err) != 0 || !p1.fits)
        bail("%s %s", err, p1.why);
    tb_model_stack_find(&model, "vllm", "nvidia", NULL, TB_PHASE_DECODE, &st, &by_name, err,
                        sizeof err);
    IS_REL(p0.tpot_ms / st->speed, p1.tpot_ms, 1e-9, "TPOT under vllm is the reference's / %g",
           st->speed);
    OK(strncmp(p1.assumptions, "assumes software vllm: ", 23) == 0,
       "the assumptions say the stack first: %.80s", p1.assumptions);
    OK(strstr(p1.assumptions, "tensorrt-llm") && strstr(p1.assumptions, "P2032"),
       "... against which reference, on which rows: %.200s", p1.assumptions);
    if (decode(&a, "p5.48xlarge", "bf16", "tensorrt-llm", &p2, err, sizeof err) != 0)
        bail("%s", err);
    IS_DOUBLE(p0.tpot_ms, p2.tpot_ms, 0, "the reference stack named: as no stack");
    OK(!strstr(p2.assumptions, "assumes software"), "... and not said as an assumption");

    /* a version: its own row, else the nearest listed release it is one of */
    if (decode(&a, "p5.48xlarge", "bf16", "tensorrt-llm@1.2.3", &p2, err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(0,
           tb_model_stack_find(&model, "tensorrt-llm@1.2.3", "nvidia", "h100-sxm", TB_PHASE_SERVE,
                               &st, &by_name, err, sizeof err),
           "tensorrt-llm@1.2.3 found");
    OK(st && !strcmp(st->software, "tensorrt-llm@1") && by_name,
       "... as tensorrt-llm@1, its nearest listed release");
    IS_REL(p0.tpot_ms / st->speed, p2.tpot_ms, 1e-9, "... at that row's speed");
    OK(strstr(p2.assumptions, "no row of its own, taken as tensorrt-llm@1") != NULL,
       "... and the assumptions say so: %.120s", p2.assumptions);
    tb_model_stack_find(&model, "tensorrt-llm@0.14", "nvidia", NULL, TB_PHASE_SERVE, &st, &by_name,
                        err, sizeof err);
    OK(st && !strcmp(st->software, "tensorrt-llm") && by_name,
       "tensorrt-llm@0.14 (no 0.x row): the name's own row");

    /* a speed holds for the chips its rows ran on: tensorrt-llm@1's Hopper rows say
     * nothing of a B200, where the version falls back to the name's row */
    IS_INT(0,
           tb_model_stack_find(&model, "tensorrt-llm@1", "nvidia", "b200", TB_PHASE_SERVE, &st,
                               &by_name, err, sizeof err),
           "tensorrt-llm@1 on a B200: found");
    OK(st && !strcmp(st->software, "tensorrt-llm") && by_name,
       "... as the reference tensorrt-llm (its @1 row holds for h100-sxm h200-sxm only)");
    IS_INT(-1,
           tb_model_stack_find(&model, "vllm", "nvidia", "b200", TB_PHASE_SERVE, &st, &by_name, err,
                               sizeof err),
           "vllm on a B200 (its rows ran on an H100) is refused");
    OK(strstr(err, "software 'vllm' has no figure for nvidia serving work") &&
           !strstr(err, " vllm"),
       "... listing what a B200 has, without vllm: %s", err);

    /* refused: unknown, and a stack the family has no figure for */
    IS_INT(-1, decode(&a, "p5.48xlarge", "bf16", "fastllm", &p2, err, sizeof err),
           "an unknown stack is refused");
    OK(strstr(err, "unknown software 'fastllm'") && strstr(err, "tensorrt-llm (the reference)") &&
           strstr(err, "vllm"),
       "... naming what the family has: %s", err);
    IS_INT(-1, decode(&a, "inf2.48xlarge", "bf16", "torchtitan", &p2, err, sizeof err),
           "a stack without a row for the family and phase is refused");
    OK(strstr(err, "software 'torchtitan' has no figure for neuron-v2 serving work") != NULL,
       "... saying so: %s", err);

    /* a scenario row's field: refused at parse with the field's name */
    {
        const char *kv[] = {"target", "p5.48xlarge", "model",    "llama-3.1-8b",
                            "phase",  "decode",      "metric",   "tpot_ms",
                            "seq_in", "1024",        "seq_out",  "128",
                            "batch",  "1",           "chips",    "1",
                            "tp",     "1",           "software", "vlm",
                            NULL};
        static struct tb_scenario_result res;
        tb_scenario_predict_one(kv_get, kv, &model, &res);
        OK(isnan(res.predicted) && strstr(res.why, "field 'software': unknown software 'vlm'"),
           "a scenario row's unknown stack: not predicted, the field named: %s", res.why);
        kv[sizeof kv / sizeof kv[0] - 2] = "vllm";
        tb_scenario_predict_one(kv_get, kv, &model, &res);
        IS_REL(p1.tpot_ms, res.predicted, 1e-9, "a scenario row's software=vllm: as above");
    }

    /* ---- malformed tables ---- */
    expect_bad(HEAD "tensorrt-llm,nvidia,serve,0.9,reference,,s,n\n", "field 'speed'",
               "a reference stack at a speed other than 1");
    expect_bad(HEAD "vllm,tpu,serve,0.8,fitted,,s,n\n", "field 'family'", "an unknown family");
    expect_bad(HEAD "vllm,nvidia,chat,0.8,fitted,,s,n\n", "field 'phases'", "an unknown phase");
    expect_bad(HEAD "vllm,nvidia,serve,0,fitted,,s,n\n", "field 'speed'", "a speed of 0");
    expect_bad(HEAD "vllm,nvidia,serve,0.8,guessed,,s,n\n", "field 'status'", "a status unknown");
    expect_bad(HEAD "vllm,nvidia,serve,0.8,fitted,,s,n\nvllm,nvidia,serve,0.7,fitted,,s,n\n",
               "'vllm' for nvidia serve again (line 2)", "a stack twice");
    expect_bad(HEADC "vllm,nvidia,serve,h100-sxm trainium2,0.8,fitted,,s,n\n", "field 'chips'",
               "a chip of another family");
    expect_bad(HEAD "VLLM,nvidia,serve,0.8,fitted,,s,n\n", "field 'software'",
               "a key outside a-z, 0-9, '-' and @version");
    tb_model_release(&model);
    tb_pricing_release(&pr);
    free(dir);
    return 0;
}
