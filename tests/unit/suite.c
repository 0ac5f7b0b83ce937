/* tests/unit/suite.c: suite files and run options, and their errors. */
#include "tb_suite.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        bail("cannot write %s", path);
}

static void expect_error(const char *text, const char *want, const char *what)
{
    struct tb_suite s;
    char err[512] = "";
    char *p = test_tmp_path("bad.suite");
    write_file(p, text);
    IS_INT(-1, tb_suite_load(&s, p, err, sizeof err), "%s is refused", what);
    OK(strstr(err, want) != NULL, "%s: message '%s' has '%s'", what, err, want);
    free(p);
}

/* The report pairs a GPU run ("cuda:" + its run id) with the model's prediction of it
 * ("model:INSTANCE/" + configuration, to which trnbench run appends "/chips1", from the
 * run's fields): both id functions must spell one configuration the same way. */
static void expect_pairing(const struct tb_run_spec *r, const char *const (*kv)[2], int n)
{
    struct tb_predict_spec ps;
    char rid[256], pid[320], want[400];
    memset(&ps, 0, sizeof ps);
    for (int i = 0; i < n; i++) {
        snprintf(ps.keys[i], sizeof ps.keys[0], "%s", kv[i][0]);
        snprintf(ps.values[i], sizeof ps.values[0], "%s", kv[i][1]);
    }
    ps.nfields = n;
    tb_run_spec_id(r, rid, sizeof rid);
    tb_predict_spec_id(&ps, pid, sizeof pid);
    snprintf(want, sizeof want, "model:p5.4xlarge/%s", rid);
    IS_STRING(want, pid, "the GPU run %s and its modeled twin name one configuration", rid);
}

int main(void)
{
    struct tb_suite s;
    char err[512], id[256];
    const char *names[] = {"default", "smoke"};
    plan_lazy();
    setenv("TRNBENCH_DATADIR", getenv("TB_SRCDIR") ? getenv("TB_SRCDIR") : ".", 1);

    for (int i = 0; i < 2; i++) {
        int phases = 0;
        if (tb_suite_load(&s, names[i], err, sizeof err) != 0) {
            ok(0, "load %s: %s", names[i], err);
            continue;
        }
        IS_STRING(names[i], s.name, "suite %s names itself", names[i]);
        for (size_t r = 0; r < s.nruns; r++)
            phases |= 1 << s.runs[r].phase;
        /* the default suite serves too (a serve line); smoke has the engine phases */
        IS_INT(i == 0 ? 31 : 15, phases, "%s covers prefill, decode, train and denoise%s", names[i],
               i == 0 ? " and serve" : "");
        tb_suite_release(&s);
    }

    {
        char *p = test_tmp_path("ok.suite");
        write_file(
            p, "# a comment\nsuite mine\ndescription two runs\n"
               "run model=llama-tiny phase=decode batch=2 seq_in=8 seq_out=4 reps=3 # trailing\n"
               "\nrun model=llama-3.2-1b layers=2 phase=train seq=16\n");
        IS_INT(0, tb_suite_load(&s, p, err, sizeof err), "hand-written suite loads");
        IS_INT(2, (long long)s.nruns, "two runs");
        IS_INT(2, s.runs[0].batch, "batch");
        IS_INT(4, s.runs[0].seq_out, "seq_out");
        IS_INT(3, s.runs[0].reps, "reps");
        IS_INT(1, s.runs[0].warmup, "warmup default");
        IS_INT(4, s.runs[0].line, "line recorded");
        tb_run_spec_id(&s.runs[0], id, sizeof id);
        IS_STRING("llama-tiny/decode/b2/in8/out4/fp32", id, "decode run id");
        tb_run_spec_id(&s.runs[1], id, sizeof id);
        IS_STRING("llama-3.2-1b@L2/train/b1/in16/fp32", id, "truncated train run id");
        tb_suite_release(&s);
        free(p);
    }
    {
        /* a batch sweep: one modeled run per target x model x batch, in that order */
        char *p = test_tmp_path("sweep.suite");
        write_file(p, "predict target=trn2.48xlarge,p5.48xlarge model=llama-3.1-8b phase=serve "
                      "seq_in=128 seq_out=64 batch=1,16,max\n");
        IS_INT(0, tb_suite_load(&s, p, err, sizeof err), "batch sweep loads: %s", err);
        IS_INT(6, (long long)s.npredicts, "2 targets x 3 batches");
        IS_STRING("16", tb_predict_spec_get(&s.predicts[1], "batch"), "second batch of the list");
        IS_STRING("p5.48xlarge", tb_predict_spec_get(&s.predicts[5], "target"), "target order");
        tb_predict_spec_id(&s.predicts[2], id, sizeof id);
        IS_STRING("model:trn2.48xlarge/llama-3.1-8b/serve/bmax/in128/out64/bf16", id,
                  "each batch its own run id");
        tb_suite_release(&s);
        free(p);
    }
    {
        /* a precision list: one run per precision, fp8 for inference only */
        char *p = test_tmp_path("prec.suite");
        write_file(p, "run model=llama-tiny phase=decode seq_in=8 precision=fp32,fp8 reps=2\n"
                      "run model=llama-tiny phase=prefill seq_in=8 precision=fp8\n");
        IS_INT(0, tb_suite_load(&s, p, err, sizeof err), "precision list loads: %s", err);
        IS_INT(3, (long long)s.nruns, "fp32,fp8 makes two runs, plus one");
        IS_STRING("fp32", s.runs[0].precision, "first of the list");
        IS_STRING("fp8", s.runs[1].precision, "second of the list");
        IS_INT(2, s.runs[1].reps, "the list's runs share the other fields");
        tb_run_spec_id(&s.runs[1], id, sizeof id);
        IS_STRING("llama-tiny/decode/b1/in8/out32/fp8", id, "fp8 run id");
        tb_suite_release(&s);
        free(p);
    }
    expect_error("run model=x phase=train seq_in=8 precision=fp32,fp8\n",
                 "line 1: field 'precision': fp8 is for Llama inference (phase prefill or decode), "
                 "not train",
                 "fp8 training");
    expect_error("run model=x phase=denoise precision=fp8\n", "fp8 is for Llama inference",
                 "fp8 denoise");
    expect_error("run model=x phase=prefill seq_in=8 precision=fp32,,fp8\n",
                 "field 'precision': empty item", "empty precision item");
    expect_error("run model=x phase=prefill seq_in=8 precision=fp8,fp8\n",
                 "run 'x/prefill/b1/in8/fp8' repeats line 1", "repeated precision");
    expect_error("predict target=p5.48xlarge model=m phase=serve seq_in=8 batch=1,,4\n",
                 "field 'batch': empty item", "empty batch item");
    expect_error(
        "predict target=p5.48xlarge model=m phase=serve seq_in=8 batch=1,x\n",
        "field 'batch': expected an integer in [1, 16777216] (sequences or requests, or max), "
        "got 'x'",
        "bad batch item");
    expect_error("predict target=p5.48xlarge model=m phase=serve seq_in=8 batch=4,4\n",
                 "repeats line 1", "repeated batch");
    expect_error("run model=x phase=prefill seq_in=8 reps=0\n", "line 1: field 'reps'",
                 "zero reps");
    expect_error("run model=x phase=serve endpoint=self concurrency=1,70000\n",
                 "line 1: field 'concurrency': expected an integer in [1, 65536] (requests in "
                 "flight (a list)), got '70000'",
                 "a concurrency out of its range, from the run lines' table");
    expect_error("run model=x phase=prefill seq=1e9\n",
                 "line 1: field 'seq_in': expected an integer in [1, 16777216] (tokens (also "
                 "`seq`)), got '1e9'",
                 "seq, seq_in's other name, through seq_in's range");
    expect_error("run model=x phase=infer seq_in=8\n", "field 'phase': unknown phase 'infer'",
                 "bad phase");
    expect_error("suite x\n\nrun model=x phase=prefill\n", "line 3: field 'seq_in': missing",
                 "no seq_in");
    expect_error("run model=x phase=prefill seq_in=8 color=red\n", "unknown field 'color'",
                 "unknown key");
    expect_error("run model=x phase=prefill seq_in=8 precision=bf16\n", "field 'precision'",
                 "bf16 on CPU");
    expect_error("run model=x phase=prefill seq_in=8\nrun model=x phase=prefill seq_in=8\n",
                 "line 2: run 'x/prefill/b1/in8/fp32' repeats line 1", "duplicate run");
    expect_error("runn model=x\n", "unknown directive 'runn'", "misspelt directive");
    expect_error("suite x\n", "no 'run' or 'predict' lines", "empty suite");
    expect_error("run model=x phase=train seq_in=1\n", "at least 2 tokens", "train on one token");
    IS_INT(-1, tb_suite_load(&s, "no-such-suite", err, sizeof err), "unknown suite name");
    OK(strstr(err, "unknown suite 'no-such-suite'") != NULL, "message: %s", err);
    {
        struct tb_run_spec r;
        static const char *const dec[][2] = {{"target", "p5.4xlarge"}, {"model", "llama-3.2-1b"},
                                             {"phase", "decode"},      {"batch", "4"},
                                             {"seq_in", "512"},        {"seq_out", "64"},
                                             {"precision", "fp8"}};
        static const char *const den[][2] = {
            {"target", "p5.4xlarge"}, {"model", "sdxl-small"}, {"phase", "denoise"}, {"batch", "1"},
            {"steps", "8"},           {"resolution", "256"},   {"precision", "bf16"}};
        tb_run_spec_init(&r);
        snprintf(r.model, sizeof r.model, "llama-3.2-1b");
        r.phase = TB_PHASE_DECODE;
        r.batch = 4;
        r.seq_in = 512;
        r.seq_out = 64;
        snprintf(r.precision, sizeof r.precision, "fp8");
        expect_pairing(&r, dec, 7);
        tb_run_spec_init(&r);
        snprintf(r.model, sizeof r.model, "sdxl-small");
        r.phase = TB_PHASE_DENOISE;
        r.batch = 1;
        r.steps = 8;
        r.resolution = 256;
        snprintf(r.precision, sizeof r.precision, "bf16");
        expect_pairing(&r, den, 7);
    }

    /* serving lines: levels, quoted words, defaults, the id and workload, refusals */
    {
        char *p = test_tmp_path("serve.suite");
        char wl[192], cf[192];
        const struct tb_serve_opts *o;
        write_file(p, "serve model=llama-3.1-8b endpoint=http://10.0.0.5:8000/v1 seq_in=2048 "
                      "seq_out=512 concurrency=1,16 request_rate=2.5,inf max_concurrency=64 "
                      "server_cmd='vllm serve \"meta-llama/Llama 3\" --port 8000' "
                      "server_label='vLLM tp=8' chips=8 ttft_ms=2000 tpot_ms=50 api=chat\n"
                      "serve model=llama-tiny endpoint=self seq_in=8 seq_out=4\n");
        IS_INT(0, tb_suite_load(&s, p, err, sizeof err), "serve lines load: %s", err);
        IS_INT(2, (long long)s.nruns, "one run per serve line (levels are the plan's)");
        o = &s.runs[0].serve;
        IS_INT(TB_PHASE_SERVE, s.runs[0].phase, "a serve line is phase serve");
        IS_INT(2, o->nconcurrency, "two closed-loop levels");
        IS_INT(16, o->concurrency[1], "concurrency 16");
        IS_INT(2, o->nrate, "two open-loop levels");
        IS_DOUBLE(2.5, o->request_rate[0], 0, "rate 2.5");
        OK(isinf(o->request_rate[1]), "rate inf");
        IS_STRING("vllm serve \"meta-llama/Llama 3\" --port 8000", o->server_cmd,
                  "server_cmd: the quotes grouped the words, inner quotes kept for the split");
        IS_STRING("vLLM tp=8", o->server_label, "a label with a space");
        IS_STRING("bf16", s.runs[0].precision, "an endpoint's default precision is bf16");
        IS_INT(TB_SERVE_CHAT, o->api, "api chat");
        IS_STRING("fp32", s.runs[1].precision, "trnbench serve's precision is fp32");
        IS_INT(1, s.runs[1].serve.nconcurrency, "default: one level");
        IS_INT(1, s.runs[1].serve.concurrency[0], "  at concurrency 1");
        s.runs[0].serve.level_concurrency = 16;
        tb_run_spec_id(&s.runs[0], id, sizeof id);
        IS_STRING("llama-3.1-8b/serve/c16/in2048/out512/bf16/chat@vLLM_tp=8", id, "level id");
        tb_serve_workload(&s.runs[0], wl, sizeof wl, cf, sizeof cf);
        IS_STRING("llama-3.1-8b/serve/in2048/out512/bf16/chips8", wl, "workload as the model's");
        IS_STRING("llama-3.1-8b/serve/b16/in2048/out512/bf16/chips8", cf, "config with /b<C>");
        s.runs[0].serve.level_concurrency = 64;
        s.runs[0].serve.level_rate = INFINITY;
        tb_run_spec_id(&s.runs[0], id, sizeof id);
        IS_STRING("llama-3.1-8b/serve/rinfc64/in2048/out512/bf16/chat@vLLM_tp=8", id,
                  "a capped open-loop level");
        s.runs[1].serve.level_concurrency = 1;
        tb_run_spec_id(&s.runs[1], id, sizeof id);
        IS_STRING("llama-tiny/serve/c1/in8/out4/fp32@self", id, "self's id");
        tb_suite_release(&s);
        free(p);
    }
    expect_error("serve model=llama-tiny seq_in=8\n", "field 'endpoint': missing",
                 "a serve line without an endpoint");
    expect_error("serve model=llama-tiny endpoint=ftp://x seq_in=8\n", "field 'endpoint'",
                 "an endpoint that is not http");
    expect_error("serve model=llama-tiny endpoint=self seq_in=8 batch=4\n", "field 'batch'",
                 "a batch on a serve line");
    expect_error("serve model=llama-tiny endpoint=self seq_in=8 requests=4 duration=2\n",
                 "field 'duration'", "requests and duration together");
    expect_error("serve model=llama-tiny endpoint=self seq_in=8 concurrency=1,,4\n",
                 "field 'concurrency'", "an empty level");
    expect_error("serve model=llama-tiny endpoint=self seq_in=8 request_rate=1e18\n",
                 "field 'request_rate'", "1e18 requests per second");
    expect_error("serve model=llama-tiny endpoint=self seq_in=8 server_cmd='x\n", "line 1",
                 "an unterminated quote");
    expect_error("run model=llama-tiny phase=prefill seq_in=8 concurrency=4\n",
                 "for a serving run (phase serve) only", "a load on an engine run");
    expect_error("serve model=llama-tiny endpoint=self seq_in=8 precision=bf16\n",
                 "trnbench serve runs the CPU engine in fp32", "bf16 on trnbench serve");
    return 0;
}
