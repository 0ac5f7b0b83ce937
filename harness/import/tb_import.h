/*
 * harness/import/tb_import.h: a team's own measurements, made with a vendor's tool, read
 * into results.csv rows (tb_results.h) under trnbench's metric definitions
 * (tb_vocab.h). What a tool measures the way trnbench defines a metric is imported
 * under that metric; what it defines differently is converted where the file holds
 * what an exact conversion needs, and the row's notes say "converted: ..."; anything
 * else is left out with the reason (tb_import.skipped), never relabelled.
 *
 * The formats, and where their definitions were read (the code, not a capture):
 *
 *   vllm      `vllm bench serve --save-result` (vllm-project/vllm,
 *             vllm/benchmarks/serve.py: calculate_metrics, benchmark, main_async; the
 *             older benchmarks/benchmark_serving.py writes the same keys)
 *   nxdi      NxD Inference's benchmark_report.json (aws-neuron/
 *             neuronx-distributed-inference, src/neuronx_distributed_inference/utils/
 *             benchmark.py: benchmark_sampling, generate_submodule_reports,
 *             generate_report; utils/constants.py for the submodel names)
 *   llmperf   the LLMPerf summary JSON (ray-project/llmperf, token_benchmark_ray.py:
 *             metrics_summary, run_token_benchmark; src/llmperf/utils.py:
 *             LLMPerfResults, flatten_dict; src/llmperf/common_metrics.py) of the
 *             Neuron fork: ray-project/llmperf with aws-neuron/aws-neuron-sdk's
 *             src/benchmark/helper_scripts/neuron_perf.patch, whose inter-token latency
 *             leaves out TTFT ((gaps after the first token) / (output tokens - 1))
 *   llmperf-upstream  the same summary from ray-project/llmperf unpatched, whose
 *             inter-token latency includes TTFT ((TTFT + gaps) / output tokens): not a
 *             TPOT, and not convertible from its quantiles, so it is left out
 *   torchtitan  TorchTitan's training log, its metrics lines (pytorch/torchtitan
 *             torchtitan/components/metrics.py MetricsProcessor.log, commit b5bcd76c;
 *             torchtitan/tools/logging.py for the line's prefix; torchtitan/trainer.py for
 *             the tokens counted): tps (per device), loss and mfu per log window, the
 *             first window (compilation, warm-up) left out; step_time_s,
 *             train_tokens_per_s, gflop_per_s and mfu converted with the global batch,
 *             seq_len and devices given, TorchTitan's own mfu and tflops (its FLOP count,
 *             its peak) only in the notes. TorchTitan Neuron (aws-neuron/torchtitan-neuron,
 *             the trainer the Neuron docs set up from SDK 2.33) prints the same lines.
 *
 * Every row is provenance measured (real hardware, measured by the team, not a
 * published figure), executor "import", source naming the tool and the file, notes
 * beginning "imported: measured by WHO on DATE with TOOL; not run by trnbench". The
 * run ids are "import:FORMAT:HASH" ("import:nxdi:HASH/PHASE" for NxDI's three runs),
 * HASH the file's content (FNV-1a, 64 bits) and nothing of the options, so importing a
 * file again, with whatever options, finds its runs already in the results. The
 * workload and config columns are those of trnbench's own runs of the same shape, so
 * the report compares and pairs the rows alike.
 *
 * Ownership: a struct tb_import owns its rows and their strings; the options are
 * borrowed for the call only.
 */
#ifndef TB_IMPORT_H
#define TB_IMPORT_H

#include "tb_arch.h"
#include "tb_results.h"

#include <stddef.h>

enum tb_import_format {
    TB_IMPORT_VLLM,
    TB_IMPORT_NXDI,
    TB_IMPORT_LLMPERF,          /* the Neuron fork (neuron_perf.patch) */
    TB_IMPORT_LLMPERF_UPSTREAM, /* ray-project/llmperf as published */
    TB_IMPORT_TORCHTITAN,       /* TorchTitan's training log (text) */
};
#define TB_IMPORT_NFORMATS 5

/* "vllm", "nxdi", "llmperf", "llmperf-upstream", "torchtitan". */
const char *tb_import_format_to_string(enum tb_import_format f);
/* The name above to the format; -1 for any other. */
int tb_import_format_from_string(const char *s, enum tb_import_format *f);
/* The tool in words, for notes and messages: "vLLM bench serve", ... */
const char *tb_import_format_tool(enum tb_import_format f);

/* The format of the file at path: torchtitan for a text log with TorchTitan's metrics
 * fields ("step:", "tps: ", "mfu: "), else from the keys of the JSON. Returns 0, or -1
 * with why (not JSON, no known format, or an LLMPerf summary: which LLMPerf made it
 * cannot be told from the file, so the caller must say llmperf or llmperf-upstream). */
int tb_import_sniff(const char *path, enum tb_import_format *f, char *err, size_t errlen);

/* What the file does not say and the person importing it does. */
struct tb_import_opts {
    const struct tb_arch *arch; /* borrowed: the catalogue model the file measured */
    const char *target;         /* instance type it ran on; NULL: "unknown" (not priced) */
    int chips;                  /* chips the server used; 0: all of the target's */
    const char *precision;      /* one of TB_MODEL_PRECISIONS; NULL: bf16, assumed and said */
    const char *measured_by;    /* who measured; NULL: not named */
    const char *measured_on;    /* YYYY-MM-DD; NULL: the file's date, if it has one */
    int batch, seq_in, seq_out; /* nxdi: the shape the model was compiled and benchmarked
                                   for (benchmark_report.json does not carry it);
                                   torchtitan: batch and seq_in, the global batch (in
                                   sequences) and seq_len it trained with (seq_out 0); 0 for
                                   the other formats, whose files carry theirs */
    int devices;                /* torchtitan: the devices it trained on, TorchTitan's world
                                   size (GPUs, logical NeuronCores: NGPU x nodes); 0 others */
    int target_chips;           /* torchtitan: the chips of the target (instances.csv), for
                                   mfu when chips is 0; 0: no target */
    double chip_peak_tflops;    /* torchtitan: one chip's dense peak at the precision
                                   (pricing/chips.csv), for mfu; 0: unknown (mfu left out) */
    const char *chip_name;      /* that chip's name, for the notes; NULL: none */
    const char *now;            /* when the import runs, ISO 8601 UTC (for the notes) */
};

/* One file imported: its rows, ready for tb_results_append. */
struct tb_import {
    enum tb_import_format format;
    char hash[17];              /* FNV-1a 64 of the file's bytes, hex */
    struct tb_result_row *rows; /* owned: nrows; every cell points into strs */
    char **strs;                /* owned: nrows x TB_RESULTS_NCOLS strings (NULL: empty) */
    size_t nrows, cap;
    char runs[4][320]; /* the distinct run ids of the rows (a level or a phase) */
    int nruns;
    char skipped[4096]; /* one line per figure of the file left out: "FIELD: why" */
};

/* Read path as format f and convert it into im's rows. Returns 0, or -1 with an error
 * naming the file, the field (a JSON path: "e2e_model.latency_ms_p50"; for torchtitan
 * "line N: field 'tps'") and why: not JSON, a missing or non-numeric field, a value
 * negative, not finite or absurd, a file whose own figures disagree (vLLM's throughputs
 * against its counts and duration; NxDI's throughput against the shape given), a
 * TorchTitan log whose steps go back or that has no metrics line after the first; im is
 * then empty. Release with tb_import_release. */
int tb_import_file(struct tb_import *im, const char *path, enum tb_import_format f,
                   const struct tb_import_opts *o, char *err, size_t errlen);
/* Free what im owns; im is left empty. */
void tb_import_release(struct tb_import *im);

/* Whether s is a date YYYY-MM-DD (a real one: month 1-12, day within the month). */
int tb_import_check_date(const char *s);

#endif
