/*
 * tests/unit/peer.c: the PyTorch peer's side of trnbench (tb_peer.h): its CSV output read
 * and checked field by field (good output, then each way it can be malformed, every
 * error naming the line and the field), a row checked against what was asked (shape,
 * model, FLOPs as trnbench counts them), and tb_peer_run on real child processes:
 * stand-in interpreters (small sh scripts written here) that print good or malformed
 * output, say they cannot measure (exit 3), fail, or run past the time limit, and the
 * real script under python3 when there is one (no torch or no GPU: exit 3; on a GPU
 * machine with torch it measures llama-tiny).
 */
#include "tb_arch.h"
#include "tb_flops.h"
#include "tb_peer.h"
#include "tb_suite.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NAME "pytorch peer output"

static char header[1024];

/* The fields of one output line for arch, the unit's seconds med (samples 0.9, 1 and
 * 1.1 x med). */
static void row_fields(char (*f)[128], const struct tb_arch *a, const char *mode, enum tb_phase ph,
                       int B, int T, int n, double med)
{
    double units = ph == TB_PHASE_DECODE ? B : (double)B * T;
    double flops = ph == TB_PHASE_PREFILL  ? tb_flops_prefill(a, B, T)
                   : ph == TB_PHASE_DECODE ? tb_flops_decode(a, B, T, n) / n
                                           : tb_flops_train(a, B, T);
    const double x[] = {med, 0.9 * med, 1.1 * med, med, 0.1 * med, units / med, flops};
    int k = 0;
    snprintf(f[k++], 128, "pytorch");
    snprintf(f[k++], 128, "2.5.1+cu124");
    snprintf(f[k++], 128, "%s", mode);
    snprintf(f[k++], 128, "NVIDIA H100 80GB HBM3");
    snprintf(f[k++], 128, "%s", a->name);
    snprintf(f[k++], 128, "%d", a->layers);
    snprintf(f[k++], 128, "%s", tb_phase_to_string(ph));
    snprintf(f[k++], 128, "%d", B);
    snprintf(f[k++], 128, "%d", T);
    snprintf(f[k++], 128, "%d", ph == TB_PHASE_DECODE ? n : 0);
    snprintf(f[k++], 128, "3");
    snprintf(f[k++], 128, "3");
    for (int i = 0; i < 7; i++)
        snprintf(f[k++], 128, "%.17g", x[i]);
    snprintf(f[k++], 128, "%.17g;%.17g;%.17g", 0.9 * med, med, 1.1 * med);
    snprintf(f[k++], 128, "\"%s; attention SDPA, folded\"", mode);
}

static int col(const char *name)
{
    for (int i = 0; i < TB_PEER_NCOLS; i++)
        if (!strcmp(TB_PEER_COLUMNS[i], name))
            return i;
    bail("no column %s", name);
}

/* The line of fields f, with column name (when not NULL) set to value. */
static void join(char *buf, size_t len, char (*f)[128], const char *name, const char *value)
{
    size_t k = 0;
    int c = name ? col(name) : -1;
    for (int i = 0; i < TB_PEER_NCOLS; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%c", i == c ? value : f[i],
                              i + 1 < TB_PEER_NCOLS ? ',' : '\n');
}

/* Parse header + the given lines; expect failure with want in the message. */
static void refused(const char *lines, const char *want, const char *what)
{
    struct tb_peer_output o;
    char text[4096], err[512] = "";
    snprintf(text, sizeof text, "%s%s", header, lines);
    IS_INT(-1, tb_peer_parse(&o, NAME, text, strlen(text), err, sizeof err), "refused: %s", what);
    OK(strstr(err, want) != NULL, "  says '%s': %s", want, err);
    IS_INT(0, (long long)o.nrows, "  and holds no rows");
}

static char *stand_in(const char *name, const char *body)
{
    char *path = test_tmp_path(name);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "#!/bin/sh\n%s\n", body) < 0 || fclose(f) != 0 || chmod(path, 0755))
        bail("cannot write %s", path);
    return path;
}

static char *slurp(const char *path)
{
    char *data = NULL, err[256];
    size_t len;
    if (tb_read_file(path, &data, &len, err, sizeof err) != 0)
        return tb_strdup("");
    return data;
}

int main(void)
{
    struct tb_arch a;
    struct tb_peer_output o;
    struct tb_peer_request q;
    char err[1024], eager[1024], compiled[1024], text[12288], line[1024], script[4096];
    char fe[TB_PEER_NCOLS][128], fc[TB_PEER_NCOLS][128];
    char *fixture = test_tmp_path("peer-good.csv"), *args = test_tmp_path("peer-args.txt");
    char *cmd, *got;
    size_t k = 0;
    int rc;
    plan_lazy();

    for (int i = 0; i < TB_PEER_NCOLS; i++)
        k += (size_t)snprintf(header + k, sizeof header - k, "%s%c", TB_PEER_COLUMNS[i],
                              i + 1 < TB_PEER_NCOLS ? ',' : '\n');
    if (tb_arch_find(&a, "llama-tiny", err, sizeof err) != 0)
        bail("%s", err);

    /* ---- good output ---- */
    row_fields(fe, &a, "eager", TB_PHASE_DECODE, 64, 32, 8, 4e-3);
    row_fields(fc, &a, "compile", TB_PHASE_DECODE, 64, 32, 8, 1e-3);
    join(eager, sizeof eager, fe, NULL, NULL);
    join(compiled, sizeof compiled, fc, NULL, NULL);
    snprintf(text, sizeof text, "%s%s%s", header, eager, compiled);
    IS_INT(0, tb_peer_parse(&o, NAME, text, strlen(text), err, sizeof err), "good output read");
    IS_INT(2, (long long)o.nrows, "two rows");
    IS_STRING("compile", o.rows[1].mode, "mode");
    IS_STRING("2.5.1+cu124", o.rows[1].version, "peer version");
    IS_INT(TB_PHASE_DECODE, o.rows[1].phase, "phase");
    IS_INT(64, o.rows[1].batch, "batch");
    IS_INT(8, o.rows[1].seq_out, "seq_out");
    IS_INT(3, o.rows[1].line, "the line it came from");
    IS_DOUBLE(1e-3, o.rows[1].median_s, 1e-15, "median_s");
    IS_DOUBLE(64e3, o.rows[1].tokens_per_s, 1e-6, "tokens_per_s");
    IS_DOUBLE(1.1e-3, o.rows[1].samples_s[2], 1e-15, "samples_s, each");
    IS_STRING("compile; attention SDPA, folded", o.rows[1].notes, "notes with a comma");
    OK(tb_peer_best(&o, TB_PHASE_DECODE, 64) == &o.rows[1], "best: the faster mode");
    OK(tb_peer_best(&o, TB_PHASE_DECODE, 1) == NULL, "no row for another batch");

    /* ---- checked against the request ---- */
    memset(&q, 0, sizeof q);
    q.peer = "pytorch";
    q.arch = &a;
    q.phase = TB_PHASE_DECODE;
    q.batch = 64;
    q.seq_in = 32;
    q.seq_out = 8;
    q.reps = 3;
    IS_INT(0, tb_peer_check(&o.rows[0], NAME, &q, err, sizeof err), "row answers the request");
    q.batch = 1;
    IS_INT(-1, tb_peer_check(&o.rows[0], NAME, &q, err, sizeof err), "another batch refused");
    IS_STRING(NAME ": line 2: field 'batch': 64, but 1 was asked", err, "  named");
    q.batch = 64;
    q.phase = TB_PHASE_PREFILL;
    IS_INT(-1, tb_peer_check(&o.rows[0], NAME, &q, err, sizeof err), "another phase refused");
    IS_STRING(NAME ": line 2: field 'phase': decode, but prefill was asked", err, "  named");
    q.phase = TB_PHASE_DECODE;
    o.rows[0].flops *= 1.01;
    IS_INT(-1, tb_peer_check(&o.rows[0], NAME, &q, err, sizeof err), "other FLOPs refused");
    OK(strstr(err, "line 2: field 'flops'") && strstr(err, "read the model differently"),
       "  named: %s", err);
    snprintf(o.rows[0].model, sizeof o.rows[0].model, "llama-3.2-1b");
    IS_INT(-1, tb_peer_check(&o.rows[0], NAME, &q, err, sizeof err), "another model refused");
    tb_peer_output_release(&o);

    /* ---- malformed output ---- */
    refused("", "no measurements", "a header only");
    {
        /* one field of the eager row changed, and what the reader must say */
        static const struct {
            const char *col, *value, *want, *what;
        } bad[] = {
            {"median_s", "fast", NAME ": line 2: field 'median_s': not a positive number: 'fast'",
             "a word for a time"},
            {"min_s", "-1", "line 2: field 'min_s': not a positive number: '-1'",
             "a negative time"},
            {"max_s", "0.0039", "line 2: field 'median_s': not between min_s and max_s",
             "median above max"},
            {"mode", "jit", "line 2: field 'mode': not eager or compile: 'jit'", "an unknown mode"},
            {"phase", "denoise", "line 2: field 'phase': not prefill, decode or train",
             "phase denoise"},
            {"batch", "0", "line 2: field 'batch': not a positive integer: '0'", "batch 0"},
            {"peer", "", "line 2: field 'peer': empty", "no peer name"},
            {"reps", "4", "line 2: field 'samples_s': 3 samples where reps is 4", "samples short"},
            {"reps", "2", "line 2: field 'samples_s': more than 2 samples where reps is 2",
             "samples long"},
            {"samples_s", "0.004;x;0.004", "line 2: field 'samples_s': not a list of numbers",
             "a bad sample"},
            {"samples_s", "0.004;0.5;0.004",
             "line 2: field 'samples_s': a sample outside [min_s, max_s]", "a sample beyond max"},
            {"tokens_per_s", "17000",
             "line 2: field 'tokens_per_s': 17000, but batch / median_s is 16000",
             "throughput not from the median"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            join(line, sizeof line, fe, bad[i].col, bad[i].value);
            refused(line, bad[i].want, bad[i].what);
        }
    }
    snprintf(text, sizeof text, "%spytorch,2.5\n", compiled);
    refused(text, "line 3: 2 fields where the header has 21", "a short row");
    {
        char text2[4096];
        snprintf(text2, sizeof text2, "peer,mode\npytorch,eager\n");
        IS_INT(-1, tb_peer_parse(&o, NAME, text2, strlen(text2), err, sizeof err),
               "missing columns refused");
        IS_STRING(NAME ": line 1: missing column 'peer_version'", err, "  the first one named");
        IS_INT(-1, tb_peer_parse(&o, NAME, "", 0, err, sizeof err), "no output refused");
        IS_STRING(NAME ": line 1: no header row", err, "  said");
        snprintf(text2, sizeof text2, "%s\"%s", header, eager);
        IS_INT(-1, tb_peer_parse(&o, NAME, text2, strlen(text2), err, sizeof err),
               "an unterminated quote refused");
        OK(strstr(err, NAME ": line") != NULL, "  with the line: %s", err);
    }

    /* ---- running it: stand-in interpreters ---- */
    if (tb_peer_script("pytorch", script, sizeof script, err, sizeof err) != 0)
        bail("%s", err);
    OK(strstr(script, "/workloads/peers/pytorch_llama.py") && tb_file_exists(script),
       "the pytorch script is in the data folder: %s", script);
    IS_INT(-1, tb_peer_script("jax", line, sizeof line, err, sizeof err), "an unknown peer");
    IS_STRING("unknown peer 'jax' (known: pytorch)", err, "  said");
    {
        FILE *f = fopen(fixture, "w");
        if (!f || fprintf(f, "%s%s%s", header, eager, compiled) < 0 || fclose(f) != 0)
            bail("cannot write %s", fixture);
    }
    q.python = "python3";
    q.script = script;
    q.modes = "eager,compile";
    q.warmup = 3;
    q.seed = 7;
    q.timeout_s = 60;

    snprintf(text, sizeof text, "printf '%%s\\n' \"$@\" > '%s'; cat '%s'", args, fixture);
    cmd = stand_in("peer-good.sh", text);
    q.python = cmd;
    rc = tb_peer_run(&q, &o, err, sizeof err);
    IS_INT(TB_PEER_OK, rc, "good output: measured (%s)", rc ? err : "");
    IS_INT(2, (long long)o.nrows, "  its two rows");
    tb_peer_output_release(&o);
    got = slurp(args);
    snprintf(text, sizeof text,
             "%s\n--model\n%s\n--phase\ndecode\n--batch\n64\n--seq\n32\n--seq-out\n8\n--reps\n3\n"
             "--warmup\n3\n--seed\n7\n--mode\neager,compile\n",
             script, a.path);
    IS_STRING(text, got, "  the argv it was given");
    free(got);
    /* the same output for a shortened model: its rows would pass for the full one */
    if (tb_arch_truncate(&a, 1, err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(TB_PEER_FAILED, tb_peer_run(&q, &o, err, sizeof err), "rows of another model");
    IS_STRING(NAME ": line 2: field 'model': 'llama-tiny', but 'llama-tiny@L1' was asked", err,
              "  refused");
    got = slurp(args);
    OK(strstr(got, "\n--layers\n1\n") != NULL, "  --layers 1 was passed");
    free(got);
    free(cmd);
    if (tb_arch_find(&a, "llama-tiny", err, sizeof err) != 0)
        bail("%s", err);

    cmd = stand_in("peer-3.sh", "echo 'pytorch_llama: loading' >&2\n"
                                "echo \"pytorch_llama: torch not importable: No module named "
                                "'torch'\" >&2\nexit 3");
    q.python = cmd;
    IS_INT(TB_PEER_UNAVAILABLE, tb_peer_run(&q, &o, err, sizeof err), "exit 3: unavailable");
    IS_STRING("torch not importable: No module named 'torch'", err, "  its reason, one line");
    free(cmd);

    cmd = stand_in("peer-1.sh", "echo 'pytorch_llama: decode compile: OutOfMemoryError: CUDA "
                                "out of memory' >&2\nexit 1");
    q.python = cmd;
    IS_INT(TB_PEER_FAILED, tb_peer_run(&q, &o, err, sizeof err), "exit 1: failed");
    OK(strstr(err, "exited with status 1: decode compile: OutOfMemoryError") != NULL,
       "  with the status and its message: %s", err);
    free(cmd);

    snprintf(text, sizeof text, "printf '%s%s'", header, "pytorch,2.5,eager\\n");
    cmd = stand_in("peer-garbage.sh", text);
    q.python = cmd;
    IS_INT(TB_PEER_FAILED, tb_peer_run(&q, &o, err, sizeof err), "malformed output: failed");
    IS_STRING(NAME ": line 2: 3 fields where the header has 21", err, "  names the line");
    free(cmd);

    cmd = stand_in("peer-slow.sh", "echo 'pytorch_llama: compiling' >&2; sleep 30");
    q.python = cmd;
    q.timeout_s = 0.5;
    IS_INT(TB_PEER_FAILED, tb_peer_run(&q, &o, err, sizeof err), "past the time limit: failed");
    OK(strstr(err, "timed out after 0.5 s: compiling") != NULL, "  said: %s", err);
    q.timeout_s = 60;
    free(cmd);

    q.python = "/nonexistent/python3";
    IS_INT(TB_PEER_UNAVAILABLE, tb_peer_run(&q, &o, err, sizeof err), "no interpreter");
    IS_STRING("cannot run '/nonexistent/python3': No such file or directory", err, "  said");
    q.python = "python3";
    q.script = "/nonexistent/pytorch_llama.py";
    IS_INT(TB_PEER_FAILED, tb_peer_run(&q, &o, err, sizeof err), "no script: failed");
    IS_STRING("no peer script '/nonexistent/pytorch_llama.py'", err, "  said");
    q.script = script;

    /* ---- the real script, where python3 is ---- */
    q.phase = TB_PHASE_PREFILL;
    q.batch = 1;
    q.seq_in = 8;
    q.reps = 1;
    q.warmup = 0;
    q.modes = "eager";
    q.timeout_s = 300;
    rc = tb_peer_run(&q, &o, err, sizeof err);
    if (rc == TB_PEER_OK) {
        IS_INT(1, (long long)o.nrows, "the real script measured llama-tiny (one row)");
        diag("pytorch peer: %s on %s", o.rows[0].version, o.rows[0].device);
    } else {
        IS_INT(TB_PEER_UNAVAILABLE, rc, "the real script: unavailable here, not failed");
        OK(*err && !strchr(err, '\n'), "  with a one-line reason: %s", err);
    }
    tb_peer_output_release(&o);
    free(fixture);
    free(args);
    return 0;
}
