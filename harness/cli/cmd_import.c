/*
 * harness/cli/cmd_import.c: `trnbench import --format F FILE... --model M --out DIR`: a
 * team's own measurements, made with vLLM's, NxD Inference's or LLMPerf's benchmark or
 * logged by TorchTitan's training,
 * appended to DIR/results.csv as measured rows of executor "import" (tb_import.h). Every
 * file is read and checked before anything is written; on an input error (exit 2) the
 * results are left as they were. A file already imported (its runs, keyed by its
 * content, are in the results) is skipped, so importing twice adds nothing.
 */
#include "cli.h"
#include "cli_opt.h"
#include "tb_arch.h"
#include "tb_import.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_results.h"
#include "tb_util.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench import --format vllm|nxdi|llmperf|llmperf-upstream|torchtitan|auto\n"
          "                       FILE... --model MODEL --out DIR [--target TYPE] [--chips N]\n"
          "                       [--precision P] [--measured-by WHO] [--measured-on DATE]\n"
          "                       [--batch B --seq-in T --seq-out N] [--devices N]\n"
          "                       [--prices DIR]\n"
          "\n"
          "Import a team's own measurements, made with a vendor's benchmark, into\n"
          "DIR/results.csv as measured rows (executor import), under trnbench's metric\n"
          "definitions: what the tool measures the same way is imported as it is, what it\n"
          "defines differently is converted where the file allows it exactly (the row's\n"
          "notes say \"converted: ...\"), anything else is left out with the reason. Each\n"
          "row says who measured, when, with which tool and file, and that trnbench did\n"
          "not run it. Importing the same file again adds nothing.\n"
          "\n"
          "  --format F         vllm: `vllm bench serve --save-result` JSON\n"
          "                     nxdi: NxD Inference's benchmark_report.json\n"
          "                     llmperf: an LLMPerf *_summary.json made with Neuron's\n"
          "                       neuron_perf.patch (inter-token latency without TTFT)\n"
          "                     llmperf-upstream: the same from ray-project/llmperf as\n"
          "                       published (its inter-token latency includes TTFT)\n"
          "                     torchtitan: TorchTitan's training log (its metrics lines:\n"
          "                       step, loss, tps, mfu), with --batch, --seq-in, --devices\n"
          "                     auto: torchtitan from its lines, vllm or nxdi from the keys\n"
          "                       (LLMPerf must be named)\n"
          "  --model MODEL      the catalogue model the file measured (trnbench run --list)\n"
          "  --out DIR          folder of results.csv\n"
          "  --target TYPE      the instance type it ran on (pricing/instances.csv); without\n"
          "                     it the rows' target is \"unknown\" and they are not priced\n"
          "  --chips N          chips (GPUs, Trainium chips) the server or training used,\n"
          "                     when fewer than the instance's: the report charges that share\n"
          "  --precision P      fp32, bf16, fp16, fp8 (cfp8, mxfp8), fp4 (nvfp4, mxfp4) or\n"
          "                     int8 (default bf16, said in notes)\n"
          "  --measured-by WHO  who measured (a team, a person): the rows' provenance\n"
          "  --measured-on DATE YYYY-MM-DD, when the file does not say or says it wrong\n"
          "  --batch B --seq-in T --seq-out N\n"
          "                     nxdi only: the batch size, context length and new tokens\n"
          "                     the model was compiled and benchmarked with (the report\n"
          "                     does not carry them; its throughput is checked against them)\n"
          "                     torchtitan: --batch the global batch in sequences and\n"
          "                     --seq-in the seq_len it trained with (no --seq-out)\n"
          "  --devices N        torchtitan only: the devices it trained on, its world size\n"
          "                     (GPUs; logical NeuronCores on Trainium: NGPU x nodes); its\n"
          "                     tps is per device\n"
          "  --prices DIR       chips, instances and prices tables (default: pricing/)\n"
          "Exit status: 0 ok (or nothing new), 1 the results could not be written,\n"
          "2 usage or input error (file, field and why; nothing written).\n",
          f);
}

/* An input error: "trnbench import: MESSAGE" on stderr; returns exit status 2. */
static int bad(const char *fmt, ...) TB_PRINTF(1, 2);
static int bad(const char *fmt, ...)
{
    va_list ap;
    fputs("trnbench import: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

/* One chip's dense peak at precision p (NULL: bf16), TFLOP/s; 0 when chips.csv has none. */
static double chip_peak(const struct tb_chip *c, const char *p)
{
    if (!p || !strcmp(p, "bf16") || !strcmp(p, "fp16"))
        return c->bf16_dense_tflops;
    if (!strcmp(p, "fp32"))
        return c->fp32_tflops;
    if (!strcmp(p, "fp8") || !strcmp(p, "cfp8") || !strcmp(p, "mxfp8"))
        return c->fp8_dense_tflops;
    if (!strcmp(p, "fp4") || !strcmp(p, "nvfp4") || !strcmp(p, "mxfp4"))
        return c->fp4_dense_tflops;
    return 0;
}

/* The checks on the options that need the catalogues: the model, the target, the
 * chips; and, for mfu, the target's chips and one chip's peak at o's precision into o
 * (chip_name: a copy, chip_len bytes). Returns 0 or 2 (said). */
static int check_catalogue(const char *model, const char *target, long chips, const char *prices,
                           struct tb_arch *a, struct tb_import_opts *o, char *chip_name,
                           size_t chip_len)
{
    struct tb_pricing pr;
    char err[1024];
    int rc = 0;
    if (strchr(model, '/') || strstr(model, ".model"))
        return bad("--model: '%s' is a path; give a catalogue model (trnbench run --list)", model);
    if (tb_arch_find(a, model, err, sizeof err) != 0)
        return bad("--model: %s (trnbench run --list; the formats imported here measure "
                   "Llama-family LLM serving)",
                   err);
    if (tb_pricing_load(&pr, prices, err, sizeof err) != 0)
        return bad("%s", err);
    if (target) {
        const struct tb_instance *in = tb_pricing_instance(&pr, target);
        if (!in) {
            rc = bad("--target: '%s' is not an instance type in %s", target, pr.instances_name);
        } else if (chips > in->accel_count) {
            rc = bad("--chips: %ld, more than the %ld chips of a %s", chips, in->accel_count,
                     target);
        } else {
            const struct tb_chip *c = tb_pricing_chip(&pr, in->chip);
            o->target_chips = (int)in->accel_count;
            if (c) {
                o->chip_peak_tflops = chip_peak(c, o->precision);
                snprintf(chip_name, chip_len, "%s", c->name);
                o->chip_name = chip_name;
            }
        }
    }
    tb_pricing_release(&pr);
    return rc;
}

int tb_cmd_import(int argc, char **argv)
{
    const char *format = NULL, *model = NULL, *out = NULL, *prices = NULL;
    struct tb_import_opts o;
    struct tb_arch arch;
    struct tb_import *ims = NULL;
    struct tb_result_row *rows = NULL;
    char results[PATH_MAX], err[2048], now[32], chip_name[64] = "";
    long chips = 0, batch = 0, seq_in = 0, seq_out = 0, devices = 0;
    int nfiles, rc;
    size_t nrows = 0, total = 0, fresh_files = 0;
    struct tb_lock lock = {0};

    const struct tb_opt opts[] = {
        TB_OPT_STR("format", &format),
        TB_OPT_STR("model", &model),
        TB_OPT_STR("out", &out),
        TB_OPT_STR("target", &o.target),
        TB_OPT_LONG("chips", &chips, 1, 10000000),
        TB_OPT_STR("precision", &o.precision),
        TB_OPT_STR("measured-by", &o.measured_by),
        TB_OPT_STR("measured-on", &o.measured_on),
        TB_OPT_LONG("batch", &batch, 1, 10000000),
        TB_OPT_LONG("seq-in", &seq_in, 1, 10000000),
        TB_OPT_LONG("seq-out", &seq_out, 1, 10000000),
        TB_OPT_LONG("devices", &devices, 1, 10000000),
        TB_OPT_STR("prices", &prices),
        TB_OPT_END,
    };

    memset(&o, 0, sizeof o);
    if ((rc = tb_cli_parse("import", argc, argv, opts, usage)) != TB_CLI_GO)
        return rc;
    rc = 2;
    nfiles = argc - optind;
    if (!format || !model || !out || nfiles < 1) {
        fprintf(stderr, "trnbench import: %s\n",
                !format  ? "--format is required (vllm, nxdi, llmperf, llmperf-upstream, "
                           "torchtitan, auto)"
                : !model ? "--model is required: the catalogue model the file measured"
                : !out   ? "--out DIR is required"
                         : "no file to import");
        usage(stderr);
        return 2;
    }
    if (strcmp(format, "auto") != 0) {
        enum tb_import_format f;
        if (tb_import_format_from_string(format, &f) != 0)
            return bad("--format: '%s': not vllm, nxdi, llmperf, llmperf-upstream, torchtitan or "
                       "auto",
                       format);
    }
    if (o.precision && !tb_model_precision_known(o.precision))
        return bad("--precision: '%s': not one of %s", o.precision, TB_MODEL_PRECISIONS);
    if (o.measured_on && !tb_import_check_date(o.measured_on))
        return bad("--measured-on: '%s': not a date YYYY-MM-DD", o.measured_on);
    if (o.measured_by && !*o.measured_by)
        return bad("--measured-by: empty");
    if (check_catalogue(model, o.target, chips, prices, &arch, &o, chip_name, sizeof chip_name) !=
        0)
        return 2;
    if ((size_t)snprintf(results, sizeof results, "%s/results.csv", out) >= sizeof results)
        return bad("--out: folder name too long: '%s'", out);
    tb_utc_now(now, sizeof now);
    o.arch = &arch;
    o.chips = (int)chips;
    o.batch = (int)batch;
    o.seq_in = (int)seq_in;
    o.seq_out = (int)seq_out;
    o.devices = (int)devices;
    o.now = now;

    /* read and check every file before anything is written */
    ims = tb_alloc_array((size_t)nfiles, sizeof *ims);
    if (!ims) {
        fprintf(stderr, "trnbench import: out of memory\n");
        return 1;
    }
    memset(ims, 0, (size_t)nfiles * sizeof *ims); /* released whole, read or not */
    for (int i = 0; i < nfiles; i++) {
        const char *path = argv[optind + i];
        enum tb_import_format f = TB_IMPORT_VLLM;
        if (!strcmp(format, "auto")) {
            if (tb_import_sniff(path, &f, err, sizeof err) != 0)
                goto input_error;
        } else {
            tb_import_format_from_string(format, &f);
        }
        if (f == TB_IMPORT_TORCHTITAN) {
            if (!(batch > 0 && seq_in > 0 && devices > 0) || seq_out > 0) {
                snprintf(err, sizeof err,
                         "%s: a TorchTitan log does not say its shape: give --batch (the global "
                         "batch in sequences), --seq-in (seq_len) and --devices (its world "
                         "size)%s",
                         path, seq_out > 0 ? ", and no --seq-out (training has none)" : "");
                goto input_error;
            }
        } else if (devices > 0) {
            snprintf(err, sizeof err, "%s: --devices is for torchtitan only", path);
            goto input_error;
        } else if ((f == TB_IMPORT_NXDI) != (batch > 0 || seq_in > 0 || seq_out > 0) ||
                   (f == TB_IMPORT_NXDI && !(batch > 0 && seq_in > 0 && seq_out > 0))) {
            if (f == TB_IMPORT_NXDI)
                snprintf(err, sizeof err,
                         "%s: an NxD Inference report does not say its shape: give --batch, "
                         "--seq-in and --seq-out (NeuronConfig batch_size, max_context_length, "
                         "max_new_tokens)",
                         path);
            else
                snprintf(err, sizeof err,
                         "%s: --batch, --seq-in and --seq-out are for nxdi (and --batch and "
                         "--seq-in for torchtitan) only: this file carries its own shape",
                         path);
            goto input_error;
        }
        if (tb_import_file(&ims[i], path, f, &o, err, sizeof err) != 0)
            goto input_error;
        total += ims[i].nrows;
    }

    /* the rows of the files not imported before (nor given twice) */
    rows = tb_alloc_array(total + 1, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "trnbench import: out of memory\n");
        rc = 1;
        goto out;
    }
    for (int i = 0; i < nfiles; i++) {
        const char *path = argv[optind + i];
        struct tb_import *im = &ims[i];
        int has = 0;
        bool twice = false;
        for (int k = 0; k < i && !twice; k++)
            twice = ims[k].nrows && !strcmp(ims[k].hash, im->hash);
        if (!twice && (has = tb_results_has_run(results, im->runs[0], err, sizeof err)) < 0) {
            fprintf(stderr, "trnbench import: %s\n", err);
            goto out; /* a results file that cannot be read: an input error */
        }
        if (twice || has) {
            fprintf(stderr, "trnbench import: %s: %s, skipped\n", path,
                    twice ? "the same content as a file before it"
                          : "already imported (its runs are in the results)");
            continue;
        }
        for (const char *s = im->skipped; *s;) {
            size_t n = strcspn(s, "\n");
            fprintf(stderr, "trnbench import: %s: not imported: %.*s\n", path, (int)n, s);
            s += n + (s[n] == '\n');
        }
        memcpy(rows + nrows, im->rows, im->nrows * sizeof *rows);
        nrows += im->nrows;
        fresh_files++;
        fprintf(stderr, "trnbench import: %s (%s): %zu rows, %d run%s: %s%s\n", path,
                tb_import_format_tool(im->format), im->nrows, im->nruns, im->nruns == 1 ? "" : "s",
                im->runs[0], im->nruns > 1 ? ", ..." : "");
    }
    if (!nrows) {
        printf("trnbench import: nothing new for %s\n", results);
        rc = 0;
        goto out;
    }
    /* the folder's one writer while it appends (tb_results_lock): a run writing there
     * meanwhile loses no row to it */
    if (tb_mkdir_p(out, err, sizeof err) != 0 ||
        tb_results_lock(&lock, out, "trnbench import", true, err, sizeof err) != 0 ||
        tb_results_append(results, rows, nrows, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench import: %s\n", err);
        rc = 1;
        goto out;
    }
    printf("trnbench import: %zu rows from %zu file%s appended to %s\n", nrows, fresh_files,
           fresh_files == 1 ? "" : "s", results);
    rc = 0;
    goto out;
input_error:
    fprintf(stderr, "trnbench import: %s; nothing written\n", err);
    rc = 2;
out:
    tb_lock_release(&lock);
    for (int i = 0; ims && i < nfiles; i++)
        tb_import_release(&ims[i]);
    free(ims);
    free(rows);
    return rc;
}
