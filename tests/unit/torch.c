/*
 * tests/unit/torch.c: training through PyTorch, trnbench's side (tb_torch.h, the pytorch
 * executor of exec_torch.c and the run keys of executor=pytorch), without torch: the
 * script's JSON lines read (a good report among lines that are not the protocol's, then
 * each way a line can be malformed, every error naming the line and the field), a
 * report checked against what was asked (world size, shapes, FLOPs as trnbench counts
 * them, every step and the end line), whether the loss fell, and tb_train_run and
 * tb_measure on real child processes: stand-in interpreters (small sh scripts written
 * here) that print good or malformed output, a NaN loss or a loss that does not fall,
 * say they cannot run (exit 3), fail, lack torch, or hang past the time limit. The
 * real script under torch: tests/cli/train-script.t and tests/cli/train.t.
 */
#include "tb_arch.h"
#include "tb_executor.h"
#include "tb_flops.h"
#include "tb_suite.h"
#include "tb_timer.h"
#include "tb_torch.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NAME "llama_train.py output"

static const struct tb_arch *tiny;

/* The run of most tests: llama-tiny, global batch 2, T 16, 1 warm-up + 3 timed steps. */
static void spec_of(struct tb_run_spec *s)
{
    char err[512];
    tb_run_spec_init(s);
    if (tb_run_spec_set(s, "model=llama-tiny", "test", err, sizeof err) ||
        tb_run_spec_set(s, "phase=train", "test", err, sizeof err) ||
        tb_run_spec_set(s, "executor=pytorch", "test", err, sizeof err) ||
        tb_run_spec_set(s, "batch=2", "test", err, sizeof err) ||
        tb_run_spec_set(s, "seq_in=16", "test", err, sizeof err) ||
        tb_run_spec_set(s, "reps=3", "test", err, sizeof err) ||
        tb_run_spec_set(s, "warmup=1", "test", err, sizeof err) ||
        tb_run_spec_set(s, "seed=7", "test", err, sizeof err) ||
        tb_run_spec_set(s, "train_timeout=60", "test", err, sizeof err))
        bail("%s", err);
}

static const double SECS[4] = {0.5, 0.1, 0.125, 0.11};
static const double FALLS[4] = {5.60, 5.58, 5.40, 5.35}; /* 2 batches cycled: 5.59 -> 5.375 */

/* The script's report of spec_of's run, with losses loss[0..3], world processes. */
static void report_text(char *buf, size_t len, const double *loss, int world)
{
    size_t k = 0;
    const double tokens = 32;
    k += (size_t)snprintf(
        buf + k, len - k,
        "WARNING:__main__: Setting OMP_NUM_THREADS environment variable for each process\n"
        "{\"event\": \"start\", \"protocol\": 1, \"model\": \"llama-tiny\", \"layers\": 2, "
        "\"world_size\": %d, \"global_batch\": 2, \"seq\": 16, \"steps\": 3, \"warmup_steps\": 1, "
        "\"precision\": \"fp32\", \"device\": \"cpu\", \"device_name\": \"Test CPU\", "
        "\"device_mem_gib\": null, \"backend\": \"gloo\", \"torch\": \"2.5.1\", \"python\": "
        "\"3.11.2\", \"tokens_per_step\": 32, \"flops_per_step\": %.17g, \"distinct_batches\": 2, "
        "\"blas\": \"torch CPU\", \"compile\": \"eager cpu: no graph compilation\"}\n"
        "\n"
        "Compiler status PASS\n",
        world, tb_flops_train(tiny, 2, 16));
    for (int i = 0; i < 4; i++)
        k += (size_t)snprintf(
            buf + k, len - k,
            "{\"event\": \"step\", \"step\": %d, \"warmup\": %s, \"loss\": %.17g, "
            "\"step_time_s\": %.17g, \"tokens\": 32, \"tokens_per_s\": %.17g, "
            "\"world_size\": %d}\n",
            i, i < 1 ? "true" : "false", loss[i], SECS[i], tokens / SECS[i], world);
    snprintf(buf + k, len - k,
             "{\"event\": \"end\", \"steps\": 4, \"compile_s\": 0.39, \"peak_mem_gib\": 0.25, "
             "\"wall_s\": 1.5}\n");
}

/* text with the first `from` replaced by `to` (static buffer). */
static const char *replaced(const char *text, const char *from, const char *to)
{
    static char out[8192];
    const char *p = strstr(text, from);
    if (!p)
        bail("'%s' is not in the fixture", from);
    snprintf(out, sizeof out, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
    return out;
}

static void refused(const char *text, const char *want, const char *what)
{
    struct tb_train_report t;
    char err[1024] = "";
    IS_INT(TB_TRAIN_FAILED, tb_train_parse(&t, NAME, text, strlen(text), err, sizeof err),
           "refused: %s", what);
    OK(strstr(err, want) != NULL, "  says '%s': %s", want, err);
    tb_train_report_release(&t);
}

static void check_refused(const char *text, const struct tb_run_spec *s, const char *want,
                          const char *what)
{
    struct tb_train_report t;
    char err[1024] = "";
    if (tb_train_parse(&t, NAME, text, strlen(text), err, sizeof err) != TB_TRAIN_OK)
        bail("%s", err);
    IS_INT(-1, tb_train_check(&t, NAME, s, tiny, err, sizeof err), "not what was asked: %s", what);
    OK(strstr(err, want) != NULL, "  says '%s': %s", want, err);
    tb_train_report_release(&t);
}

static char *stand_in(const char *name, const char *body)
{
    char *path = test_tmp_path(name);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "#!/bin/sh\n%s\n", body) < 0 || fclose(f) != 0 || chmod(path, 0755))
        bail("cannot write %s", path);
    return path;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        bail("cannot write %s", path);
}

static char *slurp(const char *path)
{
    char *data = NULL, err[256];
    size_t len;
    if (tb_read_file(path, &data, &len, err, sizeof err) != 0)
        return tb_strdup("");
    return data;
}

/* A stand-in interpreter that prints fixture (a file) and exits with status. */
static char *printer(const char *name, const char *fixture, const char *text, int status)
{
    char body[1024];
    write_file(fixture, text);
    snprintf(body, sizeof body, "cat '%s'; exit %d", fixture, status);
    return stand_in(name, body);
}

static void parsing(void)
{
    struct tb_train_report t;
    struct tb_run_spec s;
    char text[8192], err[1024] = "", want[64];
    double before, after;

    spec_of(&s);
    report_text(text, sizeof text, FALLS, 1);
    IS_INT(TB_TRAIN_OK, tb_train_parse(&t, NAME, text, strlen(text), err, sizeof err),
           "a good report among other lines: read (%s)", err);
    OK(t.have_start && t.have_end && t.nsteps == 4 && t.world_size == 1 && t.steps == 3 &&
           t.warmup_steps == 1 && t.distinct_batches == 2 && t.global_batch == 2 && t.seq == 16,
       "  its start, 4 steps and end");
    OK(!strcmp(t.device, "cpu") && !strcmp(t.torch, "2.5.1") && !strcmp(t.python, "3.11.2") &&
           !strcmp(t.backend, "gloo") && !strcmp(t.blas, "torch CPU") && !t.cuda[0] &&
           isnan(t.device_mem_gib),
       "  its environment (device, versions, backend; null and absent fields empty)");
    IS_DOUBLE(0.125, t.secs[2], 0, "  step 2's time");
    IS_DOUBLE(5.35, t.loss[3], 0, "  step 3's loss");
    IS_DOUBLE(0.39, t.compile_s, 0, "  the end line's compile_s");
    IS_INT(-1, t.bad_step, "  no loss that is not finite");
    IS_INT(0, tb_train_check(&t, NAME, &s, tiny, err, sizeof err), "  it answers the run (%s)",
           err);
    IS_INT(1, tb_train_loss_fell(&t, &before, &after), "  the loss fell");
    IS_DOUBLE(5.59, before, 1e-12, "  mean of the first 2 steps (the 2 batches cycled)");
    IS_DOUBLE(5.375, after, 1e-12, "  and of the last 2");
    t.loss[2] = 5.62;
    t.loss[3] = 5.58;
    IS_INT(0, tb_train_loss_fell(&t, &before, &after), "losses that stay: not fallen");
    t.distinct_batches = 4;
    IS_INT(-1, tb_train_loss_fell(&t, &before, &after), "4 batches in 4 steps: cannot tell");
    tb_train_report_release(&t);

    /* ---- malformed lines ---- */
    refused(replaced(text, "\"step\": 1, \"warmup\": false,", "\"step\": 1, \"warmup\": false"),
            NAME ": line 6: malformed JSON", "a line that does not parse");
    refused(replaced(text, "\"loss\": 5.5800000000000001", "\"loss\": NaN"), "malformed JSON",
            "NaN, which JSON has no word for");
    refused(replaced(text, "\"torch\": \"2.5.1\", ", ""), "line 2: field 'torch': missing",
            "a start line without torch's version");
    refused(replaced(text, "\"step_time_s\": 0.125", "\"step_time_s\": \"fast\""),
            "line 7: field 'step_time_s': expected a number", "a time that is text");
    refused(replaced(text, "\"step_time_s\": 0.125", "\"step_time_s\": 0"),
            "field 'step_time_s': expected a number in [1e-09", "a step of no time");
    refused(replaced(text, "\"step\": 1,", "\"step\": 2,"), "field 'step': 2, but step 1 was next",
            "a step out of order");
    refused(replaced(text, "\"tokens_per_s\": 256,", "\"tokens_per_s\": 300,"),
            "field 'tokens_per_s': 300, but tokens / step_time_s is 256",
            "tokens_per_s that is not tokens / step_time_s");
    refused(replaced(text, "\"tokens\": 32, \"tokens_per_s\": 256,",
                     "\"tokens\": 64, \"tokens_per_s\": 512,"),
            "field 'tokens': 64, but the start line said 32", "tokens other than announced");
    refused(replaced(text, "\"step\": 1, \"warmup\": false", "\"step\": 1, \"warmup\": true"),
            "line 6: field 'warmup': expected false", "a timed step called a warm-up");
    refused(replaced(text, "\"step\": 1, \"warmup\": false, \"loss\": 5.5800000000000001",
                     "\"step\": 1, \"warmup\": false, \"loss\": \"nan\""),
            "field 'loss': expected a number, or null", "a loss that is text");
    refused(replaced(text, "\"world_size\": 1}\n{\"event\": \"step\", \"step\": 2",
                     "\"world_size\": 2}\n{\"event\": \"step\", \"step\": 2"),
            "field 'world_size': 2, but the start line said 1", "another world size mid-run");
    refused(replaced(text, "\"protocol\": 1", "\"protocol\": 2"),
            "field 'protocol': 2, but trnbench reads protocol 1", "a later protocol");
    refused(replaced(text, "\"device\": \"cpu\"", "\"device\": \"tpu\""),
            "field 'device': not cpu, cuda, neuron or xla", "an unknown device");
    refused(replaced(text, "{\"event\": \"end\"", "{\"event\": \"finish\""),
            "field 'event': not start, step, end, unavailable or error", "an unknown event");
    refused(replaced(text, "{\"event\": \"end\"",
                     "{\"event\": \"step\", \"step\": 4, \"warmup\": false, \"loss\": 5, "
                     "\"step_time_s\": 1, \"tokens\": 32, \"tokens_per_s\": 32, \"world_size\": "
                     "1}\n{\"event\": \"end\""),
            "field 'step': 4, more than the 4 steps announced", "a step too many");
    refused(strstr(text, "{\"event\": \"step\""), "line 1: a step line before the start line",
            "steps without a start line");
    refused(replaced(text, "Compiler status PASS",
                     "{\"event\": \"error\", \"reason\": \"rank 1: "
                     "RuntimeError: boom\"}"),
            "the script failed: rank 1: RuntimeError: boom", "an error line");

    /* ---- a loss that is not finite: read, and said which step ---- */
    {
        const char *nan = replaced(text, "\"loss\": 5.5800000000000001",
                                   "\"loss\": null, \"loss_text\": \"nan\"");
        IS_INT(TB_TRAIN_OK, tb_train_parse(&t, NAME, nan, strlen(nan), err, sizeof err),
               "a null loss (not finite) is read (%s)", err);
        OK(t.bad_step == 1 && !strcmp(t.bad_loss, "nan") && isnan(t.loss[1]),
           "  step 1, 'nan', kept as NAN");
        tb_train_report_release(&t);
    }
    {
        const char *u = "{\"event\": \"unavailable\", \"reason\": \"no CUDA device\"}\n";
        IS_INT(TB_TRAIN_UNAVAILABLE, tb_train_parse(&t, NAME, u, strlen(u), err, sizeof err),
               "an unavailable line");
    }
    IS_STRING("no CUDA device", err, "  its reason");
    tb_train_report_release(&t);

    /* ---- not what was asked ---- */
    {
        struct tb_run_spec s2 = s;
        char two[8192];
        report_text(two, sizeof two, FALLS, 2);
        check_refused(two, &s, "field 'world_size': 2, but 1 processes (nproc_per_node) were asked",
                      "another world size");
        snprintf(want, sizeof want, "\"flops_per_step\": %.17g", tb_flops_train(tiny, 2, 16));
        check_refused(replaced(text, want, "\"flops_per_step\": 12345"), &s,
                      "field 'flops_per_step': 12345, but trnbench counts", "other FLOPs");
        check_refused(replaced(text, "\"model\": \"llama-tiny\"", "\"model\": \"llama-small\""), &s,
                      "field 'model': 'llama-small', but 'llama-tiny' was asked", "another model");
        snprintf(s2.torch.device, sizeof s2.torch.device, "cuda");
        check_refused(text, &s2, "field 'device': cpu, but cuda was asked", "another device");
        s2 = s;
        s2.reps = 5;
        check_refused(text, &s2, "field 'steps': 3, but 5 timed steps were asked",
                      "other step counts");
    }
    {
        /* a report cut short: the start, one step, no end */
        char cut[8192];
        const char *two = strstr(text, "{\"event\": \"step\", \"step\": 1");
        snprintf(cut, sizeof cut, "%.*s", (int)(two - text), text);
        check_refused(cut, &s, NAME ": 1 of the 4 steps reported", "a report cut short");
    }
}

static void keys(void)
{
    struct tb_run_spec s;
    char err[1024], id[256];

    spec_of(&s);
    IS_INT(0, tb_run_spec_set(&s, "nproc_per_node=2", "x.suite: line 3", err, sizeof err),
           "nproc_per_node=2");
    IS_INT(0, tb_run_spec_set(&s, "torch_device=cpu", "x.suite: line 3", err, sizeof err),
           "torch_device=cpu");
    IS_INT(0, tb_run_spec_set(&s, "batch=4", "x.suite: line 3", err, sizeof err), "batch=4");
    IS_INT(0, tb_run_spec_check(&s, "x.suite: line 3", err, sizeof err), "  checks");
    tb_run_spec_id(&s, id, sizeof id);
    IS_STRING("llama-tiny/train/b4/in16/fp32/np2/cpu", id, "  its id names processes and device");
    s.batch = 3;
    IS_INT(-1, tb_run_spec_check(&s, "x.suite: line 3", err, sizeof err), "batch 3 over 2");
    IS_STRING("x.suite: line 3: field 'batch': 3 sequences do not split evenly over "
              "nproc_per_node=2 processes (batch is the global batch)",
              err, "  said");
    spec_of(&s);
    s.warmup = 0;
    IS_INT(-1, tb_run_spec_check(&s, "cmd", err, sizeof err), "no warm-up step");
    OK(strstr(err, "field 'warmup': executor=pytorch needs at least one warm-up step") != NULL,
       "  said: %s", err);
    spec_of(&s);
    IS_INT(0, tb_run_spec_set(&s, "precision=bf16", "cmd", err, sizeof err), "precision=bf16");
    IS_INT(0, tb_run_spec_check(&s, "cmd", err, sizeof err), "  is the script's (%s)", err);
    tb_run_spec_set(&s, "precision=fp8", "cmd", err, sizeof err);
    IS_INT(-1, tb_run_spec_check(&s, "cmd", err, sizeof err), "precision=fp8 refused");
    spec_of(&s);
    tb_run_spec_set(&s, "phase=prefill", "cmd", err, sizeof err);
    IS_INT(-1, tb_run_spec_check(&s, "cmd", err, sizeof err), "executor=pytorch for prefill");
    IS_STRING("cmd: field 'executor': pytorch runs the training script (phase train), not prefill",
              err, "  refused");
    IS_INT(-1, tb_run_spec_set(&s, "executor=jax", "cmd", err, sizeof err), "executor=jax");
    OK(strstr(err, "field 'executor': 'jax' (pytorch") != NULL, "  refused: %s", err);
    IS_INT(-1, tb_run_spec_set(&s, "torch_device=tpu", "cmd", err, sizeof err), "torch_device=tpu");
    tb_run_spec_init(&s);
    tb_run_spec_set(&s, "model=llama-tiny", "cmd", err, sizeof err);
    tb_run_spec_set(&s, "phase=train", "cmd", err, sizeof err);
    tb_run_spec_set(&s, "seq_in=16", "cmd", err, sizeof err);
    tb_run_spec_set(&s, "nproc_per_node=2", "cmd", err, sizeof err);
    IS_INT(-1, tb_run_spec_check(&s, "cmd", err, sizeof err), "nproc_per_node without it");
    OK(strstr(err, "are for executor=pytorch only") != NULL, "  refused: %s", err);
}

/* TorchNeuron, the native device: the key, a report from it, and which device
 * torch_device=auto takes from the torch-neuronx installed. */
static void neuron(void)
{
    static const struct {
        const char *torch_neuronx, *neuronx_cc, *want;
    } V[] = {
        {"2.14.3.0", "2.28.7631.0", "neuron"},         /* Neuron 2.33's TorchNeuron */
        {"2.10.0.0", NULL, "neuron"},                  /* PyTorch 2.10: TorchNeuron */
        {"3.0.1", "", "neuron"},                       /* a later major */
        {"2.9.0.2.15.32035", "2.27.5334.0", "neuron"}, /* Neuron 2.32 (its compiler), the
                                                          XLA package left from 2.31 */
        {NULL, "2.25.3371.0", "neuron"},               /* Neuron 2.30, no torch-neuronx */
        {"2.9.0.2.13.26312", "2.24.8799.0", "xla"},    /* Neuron 2.29.1 */
        {"2.9.0.2.15.32035", NULL, "xla"},             /* no compiler to date the SDK */
        {"1.13.1.1.13.1", "2.12.54.0", "xla"},         /* PyTorch 1.13's */
        {"", "", NULL},                                /* nothing installed */
        {"torch", "cc", NULL},                         /* not versions */
        {"2.x", "2.", NULL},                           /* no minor */
    };
    struct tb_run_spec s;
    struct tb_train_report t;
    char text[8192], err[1024], id[256], why[400];

    spec_of(&s);
    IS_INT(0, tb_run_spec_set(&s, "torch_device=neuron", "x.suite: line 2", err, sizeof err),
           "torch_device=neuron accepted (%s)", err);
    IS_INT(0, tb_run_spec_check(&s, "x.suite: line 2", err, sizeof err), "  checks (%s)", err);
    tb_run_spec_id(&s, id, sizeof id);
    IS_STRING("llama-tiny/train/b2/in16/fp32/np1/neuron", id, "  its id names the device");
    IS_INT(-1, tb_run_spec_set(&s, "torch_device=trainium", "x.suite: line 2", err, sizeof err),
           "torch_device=trainium refused");
    OK(strstr(err, "field 'torch_device': 'trainium' (auto, cpu, cuda, neuron") != NULL,
       "  names the devices: %s", err);

    report_text(text, sizeof text, FALLS, 1);
    snprintf(text, sizeof text, "%s",
             replaced(text, "\"device\": \"cpu\", \"device_name\": \"Test CPU\"",
                      "\"device\": \"neuron\", \"device_name\": \"trn2 (neuron:0)\""));
    IS_INT(TB_TRAIN_OK, tb_train_parse(&t, NAME, text, strlen(text), err, sizeof err),
           "a report from device neuron: read (%s)", err);
    IS_STRING("neuron", t.device, "  its device");
    IS_INT(0, tb_train_check(&t, NAME, &s, tiny, err, sizeof err),
           "  answers torch_device=neuron (%s)", err);
    tb_train_report_release(&t);
    refused(replaced(text, "\"device\": \"neuron\"", "\"device\": \"tpu\""),
            "field 'device': not cpu, cuda, neuron or xla", "a device of no known kind");

    for (size_t i = 0; i < sizeof V / sizeof V[0]; i++) {
        const char *got =
            tb_torch_neuron_device(V[i].torch_neuronx, V[i].neuronx_cc, why, sizeof why);
        OK(got == V[i].want || (got && V[i].want && !strcmp(got, V[i].want)),
           "torch-neuronx %s, neuronx-cc %s: %s (%s)",
           V[i].torch_neuronx ? V[i].torch_neuronx : "-", V[i].neuronx_cc ? V[i].neuronx_cc : "-",
           V[i].want ? V[i].want : "the script's choice", why);
    }
    tb_torch_neuron_device("2.14.3.0", NULL, why, sizeof why);
    OK(strstr(why, "torch-neuronx 2.14.3.0 is TorchNeuron (PyTorch 2.14)") != NULL, "  said: %s",
       why);
    tb_torch_neuron_device("2.9.0.2.15.32035", "2.27.5334.0", why, sizeof why);
    OK(strstr(why, "neuronx-cc 2.27.5334.0 is Neuron 2.30 or later") != NULL &&
           strstr(why, "torch-neuronx 2.9.0.2.15.32035 is PyTorch/XLA, no longer supported for "
                       "training there (torch_device=xla runs it anyway)") != NULL,
       "  said: %s", why);
    tb_torch_neuron_device("2.9.0.2.13.26312", "2.24.8799.0", why, sizeof why);
    OK(strstr(why, "with neuronx-cc 2.24.8799.0, Neuron 2.29 or before: the XLA path") != NULL,
       "  said: %s", why);
}

static void running(void)
{
    struct tb_run_spec s;
    struct tb_train_report t;
    char text[8192], err[2048], body[1024], script[2048], launcher[2048], *cmd = NULL, *got;
    char *fixture = test_tmp_path("torch-report.txt"), *args = test_tmp_path("torch-args.txt");
    uint64_t t0;

    spec_of(&s);
    report_text(text, sizeof text, FALLS, 1);
    if (tb_train_script(&s, script, sizeof script, err, sizeof err) != 0)
        bail("%s", err);
    OK(strstr(script, "/workloads/train/llama_train.py") && tb_file_exists(script),
       "the training script is in the data folder: %s", script);
    snprintf(launcher, sizeof launcher, "%.*s/torchrun_compat.py",
             (int)(strrchr(script, '/') - script), script);
    write_file(fixture, text);
    snprintf(body, sizeof body, "printf '%%s\\n' \"$@\" > '%s'; cat '%s'", args, fixture);
    free(cmd);
    cmd = stand_in("torch-good.sh", body);
    snprintf(s.torch.python, sizeof s.torch.python, "%s", cmd);
    IS_INT(TB_TRAIN_OK, tb_train_run(&s, tiny, NULL, &t, err, sizeof err),
           "good output: read and checked (%s)", err);
    IS_INT(4, t.nsteps, "  4 steps");
    tb_train_report_release(&t);
    got = slurp(args);
    snprintf(text, sizeof text,
             "%s\n--standalone\n--nproc_per_node\n1\n%s\n--model\n%s\n--batch\n2\n--seq\n16\n"
             "--steps\n3\n--warmup-steps\n1\n--precision\nfp32\n--device\nauto\n--seed\n7\n",
             launcher, script, tiny->path);
    IS_STRING(text, got, "  the argv: torchrun (the launcher), its processes, the script's");
    free(got);
    s.torch.nproc_per_node = 2;
    s.batch = 4;
    IS_INT(TB_TRAIN_FAILED, tb_train_run(&s, tiny, NULL, &t, err, sizeof err),
           "2 processes asked, a report of 1");
    OK(strstr(err, "field 'world_size': 1, but 2 processes") != NULL, "  said: %s", err);
    got = slurp(args);
    OK(strstr(got, "--nproc_per_node\n2\n") && strstr(got, "--batch\n2\n"),
       "  torchrun got 2 processes, the script 2 sequences each of the global 4");
    free(got);
    spec_of(&s);

    free(cmd);
    cmd = printer("torch-3.sh", fixture,
                  "{\"event\": \"unavailable\", \"reason\": \"--device cuda: torch 2.5.1 sees no "
                  "CUDA device\"}\n",
                  3);
    snprintf(s.torch.python, sizeof s.torch.python, "%s", cmd);
    IS_INT(TB_TRAIN_UNAVAILABLE, tb_train_run(&s, tiny, NULL, &t, err, sizeof err),
           "exit 3 with its line: unavailable");
    IS_STRING("--device cuda: torch 2.5.1 sees no CUDA device", err, "  its reason");

    free(cmd);
    cmd = stand_in("torch-notorch.sh",
                   "echo \"/usr/bin/python3: Error while finding module specification for "
                   "'torch.distributed.run' (ModuleNotFoundError: No module named 'torch')\" >&2; "
                   "exit 1");
    snprintf(s.torch.python, sizeof s.torch.python, "%s", cmd);
    IS_INT(TB_TRAIN_UNAVAILABLE, tb_train_run(&s, tiny, NULL, &t, err, sizeof err),
           "no torch for the launcher: unavailable");
    OK(strstr(err, "torch does not import in") != NULL, "  said: %s", err);

    snprintf(s.torch.python, sizeof s.torch.python, "%s", "/nonexistent/python3");
    IS_INT(TB_TRAIN_UNAVAILABLE, tb_train_run(&s, tiny, NULL, &t, err, sizeof err),
           "no interpreter: unavailable");
    IS_STRING("cannot run '/nonexistent/python3': No such file or directory", err, "  said");

    free(cmd);
    cmd = stand_in("torch-1.sh", "echo 'llama_train: rank 1: RuntimeError: boom' >&2\n"
                                 "echo '  exitcode  : 1 (pid: 42)' >&2\n"
                                 "echo '=============' >&2\nexit 1");
    snprintf(s.torch.python, sizeof s.torch.python, "%s", cmd);
    IS_INT(TB_TRAIN_FAILED, tb_train_run(&s, tiny, NULL, &t, err, sizeof err),
           "a rank that failed, no line of rank 0's");
    OK(strstr(err, "exited with status 1: rank 1: RuntimeError: boom") != NULL,
       "  says the script's reason, not torchrun's table: %s", err);

    report_text(text, sizeof text, FALLS, 1);
    free(cmd);
    cmd = printer("torch-garbage.sh", fixture, replaced(text, "\"seq\": 16,", "\"seq\": 16"), 0);
    snprintf(s.torch.python, sizeof s.torch.python, "%s", cmd);
    IS_INT(TB_TRAIN_FAILED, tb_train_run(&s, tiny, NULL, &t, err, sizeof err),
           "malformed JSON, exit 0: failed");
    OK(strstr(err, NAME ": line 2: malformed JSON") != NULL, "  said: %s", err);

    snprintf(body, sizeof body, "head -n 5 '%s'; exec sleep 30", fixture);
    write_file(fixture, text);
    free(cmd);
    cmd = stand_in("torch-hang.sh", body);
    snprintf(s.torch.python, sizeof s.torch.python, "%s", cmd);
    s.torch.timeout_s = 1;
    t0 = tb_timer_now_ns();
    IS_INT(TB_TRAIN_FAILED, tb_train_run(&s, tiny, NULL, &t, err, sizeof err),
           "a script that hangs: failed");
    OK(strstr(err, "timed out after 1 s, 1 of 4 steps reported (train_timeout)") != NULL,
       "  said: %s", err);
    OK(tb_timer_seconds(t0, tb_timer_now_ns()) < 10, "  within the limit and a grace");
    spec_of(&s);
    snprintf(s.torch.script, sizeof s.torch.script, "/nonexistent/train.py");
    IS_INT(TB_TRAIN_FAILED, tb_train_run(&s, tiny, NULL, &t, err, sizeof err), "no script");
    IS_STRING("no training script '/nonexistent/train.py'", err, "  said");
    free(cmd);
    free(fixture);
    free(args);
}

/* The executor through the loop, on a stand-in printing text. */
static int measure(const char *name, const char *text, struct tb_exec_result *r, char *err,
                   size_t errlen)
{
    const struct tb_executor ex = {&tb_executor_torch, NULL};
    static struct tb_run_spec s;
    struct tb_workload w = {.spec = &s, .arch = tiny};
    char *fixture = test_tmp_path("torch-measure.txt");
    char *cmd = printer(name, fixture, text, 0);
    int rc;
    spec_of(&s);
    snprintf(s.torch.python, sizeof s.torch.python, "%s", cmd);
    rc = tb_measure(&ex, &w, r, err, errlen);
    free(fixture);
    free(cmd);
    return rc;
}

static void executor(void)
{
    struct tb_exec_result r;
    char text[8192], err[2048] = "";
    static const double FLAT[4] = {5.60, 5.58, 5.60, 5.58};
    static const double FAR[4] = {9.0, 8.0, 7.0, 6.0};

    report_text(text, sizeof text, FALLS, 1);
    IS_INT(0, measure("torch-m-good.sh", text, &r, err, sizeof err), "tb_measure: ran (%s)", err);
    OK(r.valid, "  valid (%s)", r.note);
    IS_INT(3, r.reps, "  3 timed steps");
    OK(r.secs[0] == 0.1 && r.secs[1] == 0.125 && r.secs[2] == 0.11,
       "  their times are the script's timed steps");
    IS_DOUBLE(32, r.tokens, 0, "  32 tokens a step (global batch x seq)");
    IS_DOUBLE(tb_flops_train(tiny, 2, 16), r.flops, 0, "  trnbench's FLOPs of a step");
    OK(r.loss_first == 5.60 && r.loss_last == 5.35, "  first (warm-up) and last loss");
    OK(r.train && r.train->nsteps == 4 && !strcmp(r.train->device, "cpu"),
       "  the report handed over for the rows' provenance");
    tb_exec_result_release(&r);

    IS_INT(0,
           measure("torch-m-nan.sh",
                   replaced(text, "\"loss\": 5.4000000000000004",
                            "\"loss\": null, \"loss_text\": \"inf\""),
                   &r, err, sizeof err),
           "a loss that is not finite: ran");
    OK(!r.valid, "  invalid");
    IS_STRING("validation failed: step 2: training loss not finite (inf)", r.note, "  said");
    tb_exec_result_release(&r);

    report_text(text, sizeof text, FLAT, 1);
    IS_INT(0, measure("torch-m-flat.sh", text, &r, err, sizeof err), "a loss that stays: ran");
    OK(!r.valid, "  invalid");
    IS_STRING("validation failed: the loss did not fall: mean 5.5900 over the first 2 steps, "
              "5.5900 over the last 2 (the same batches)",
              r.note, "  said");
    tb_exec_result_release(&r);

    report_text(text, sizeof text, FAR, 1);
    IS_INT(0, measure("torch-m-far.sh", text, &r, err, sizeof err), "a first loss far from ln V");
    OK(!r.valid && strstr(r.note, "first loss 9.0000, expected about ln V = 5.5452"),
       "  invalid: %s", r.note);
    tb_exec_result_release(&r);

    IS_INT(-1,
           measure("torch-m-3.sh", "{\"event\": \"unavailable\", \"reason\": \"no torch\"}\n", &r,
                   err, sizeof err),
           "unavailable: tb_measure fails");
    OK(r.unavailable && !strcmp(err, "no torch"), "  r.unavailable, the reason: %s", err);
    tb_exec_result_release(&r);
}

int main(void)
{
    static struct tb_arch a;
    char err[1024];

    plan_lazy();
    if (tb_arch_find(&a, "llama-tiny", err, sizeof err) != 0)
        bail("%s", err);
    tiny = &a;
    parsing();
    keys();
    neuron();
    running();
    executor();
    return 0;
}
