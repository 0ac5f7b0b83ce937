/*
 * harness/cli/cmd_run.c: `trnbench run`, the command line of the plan stage (run/tb_run.h):
 * a suite or one workload given by options, on this CPU and, where a CUDA device and
 * the plugin are present, on the GPU as well (executor cuda, bf16, run ids prefixed
 * "cuda:", energy rows, and the performance model's prediction of the same workload on
 * the detected chip), into DIR/results.csv. This file parses the options and lists the
 * catalogue; the plan, the executors and the recorder do the rest. A run of precision fp8 is the
 * GPU's alone: the CPU executor skips it with the reason, as the GPU does below compute
 * capability 8.9; a skipped run is not a failure.
 *
 * Everything is checked before anything runs: the suite, every model file, every
 * shape against the model's context and the existing results file; any problem is an
 * input error (exit 2) and nothing is written. Then each run whose id is not yet in
 * results.csv is measured and its rows appended atomically, so an interrupted suite,
 * run again, resumes where it stopped. A run that fails (engine error or failed
 * validation) records nothing and makes the exit status 1; the others still run.
 */
#include "cli.h"
#include "cli_opt.h"
#include "cmd_run_slurm.h"
#include "tb_arch.h"
#include "tb_darch.h"
#include "tb_range.h"
#include "tb_results.h"
#include "tb_run.h"
#include "tb_suite.h"
#include "tb_timer.h"
#include "tb_util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench run --suite NAME|FILE [--out DIR] [--progress S]\n"
          "       trnbench run --model M --phase P --seq-in T [--seq-out N] [--batch B]\n"
          "                    [--layers N] [--reps R] [--warmup W] [--seed S] [--out DIR]\n"
          "                    [--precision fp32|fp8] [--executor cpu|cuda|all]\n"
          "       trnbench run --executor pytorch --model M --phase train --seq-in T\n"
          "                    [--batch B] [--precision fp32|bf16] [--nproc-per-node K]\n"
          "                    [--torch-device auto|cpu|cuda|neuron|xla] [--python PATH]\n"
          "                    [--train-script FILE] [--train-timeout S] [--out DIR]\n"
          "       trnbench run --model M --phase denoise [--steps N] [--resolution PX]\n"
          "                    [--batch B] [--reps R] [--warmup W] [--seed S] [--out DIR]\n"
          "       trnbench run --endpoint URL|self --model M --seq-in T --seq-out N\n"
          "                    [--served-model NAME] [--concurrency C,...] [--request-rate R,...]\n"
          "                    [--requests N | --duration S] [--warmup-requests N]\n"
          "                    [--request-timeout S] [--api completions|chat] [--chips N]\n"
          "                    [--ttft-ms MS] [--tpot-ms MS] [--server-cmd 'ARGV...']\n"
          "                    [--server-label TEXT] [--server-start cold|cold,warm] [--out DIR]\n"
          "       trnbench run --recipe vllm --model M --seq-in T --seq-out N [--tp N]\n"
          "                    [--max-num-seqs N] [--max-model-len N] [--prefill-buckets L]\n"
          "                    [--decode-buckets L] [--max-num-batched-tokens N]\n"
          "                    [--prefix-caching on|off] [--server-start cold,warm] [...]\n"
          "       trnbench run --slurm --nodes N [--ntasks-per-node K] [--partition P]\n"
          "                    [--time T] [--account A] [--no-submit] --suite S --out DIR\n"
          "       trnbench run --slurm --nodes N [--partition P] [--time T] [--account A]\n"
          "                    [--no-submit] --executor pytorch --phase train --model M\n"
          "                    --seq-in T [--batch B] [--nproc-per-node K] [...] --out DIR\n"
          "       trnbench run --list\n"
          "\n"
          "Run Llama and diffusion workloads on this machine's CPU (fp32, matrix products\n"
          "and convolutions through OpenBLAS) and append their measurements to\n"
          "DIR/results.csv, one row per metric.\n"
          "Where a CUDA GPU and the CUDA plugin are present, each Llama run and each\n"
          "denoise run (SDXL UNet, SD3 MMDiT, FLUX) also runs on the GPU (executor cuda,\n"
          "bf16 mixed precision, run id prefixed 'cuda:', plus avg_power_w and j_per_token\n"
          "or j_per_image from NVML, mfu for training, and the performance model's rows\n"
          "for the same workload on that chip); without one, a line says why and only the\n"
          "CPU runs.\n"
          "A run already in DIR/results.csv is skipped: run the same command again to\n"
          "resume an interrupted suite.\n"
          "\n"
          "  --suite NAME|FILE  suites/NAME.suite in the data folder, or a file\n"
          "  --out DIR          folder of results.csv (default: the current folder)\n"
          "  --no-wait          when another trnbench writes DIR/results.csv, stop (exit 1)\n"
          "                     instead of waiting for it (the default: wait, then skip\n"
          "                     the runs it recorded)\n"
          "  --progress S       during a run, a line on stderr every S seconds (default 10,\n"
          "                     0: none) with the repetition, the time elapsed and about\n"
          "                     how long is left; each run's lines start with [k/N], N\n"
          "                     the measurements planned (a serving level is one)\n"
          "  --model M          catalogue name (see --list) or a .model file\n"
          "  --phase P          prefill, decode or train (Llama); denoise (diffusion: one\n"
          "                     generation of --batch images, every step, both CFG halves);\n"
          "                     serve (an endpoint under load: below)\n"
          "  --steps N          denoise: denoising steps (default: the model's)\n"
          "  --resolution PX    denoise: square image size (default: the model's)\n"
          "  --seq-in T         prompt tokens (prefill, decode) or sequence length (train)\n"
          "  --seq-out N        decode: tokens generated per repetition (default 32)\n"
          "  --batch B          sequences processed together (default 1)\n"
          "  --layers N         keep the first N layers of the model: a quick run of a big\n"
          "                     model's real layer shapes, named MODEL@LN in the results\n"
          "  --reps R           timed repetitions (default 5); --warmup W untimed ones\n"
          "                     before them (default 1)\n"
          "  --seed S           weights and tokens are drawn from it (default 1)\n"
          "  --precision P      fp32 (default: fp32 on the CPU, bf16 mixed precision on\n"
          "                     the GPU) or fp8 (e4m3 matrix products; GPU inference only,\n"
          "                     compute capability 8.9+; the CPU skips it)\n"
          "  --executor E       cpu, cuda or all (default: all that are available; cuda\n"
          "                     without a GPU is an error). TRNBENCH_CUDA=0 turns the GPU\n"
          "                     off. pytorch: the training runs (phase train) through\n"
          "                     PyTorch instead, below\n"
          "\n"
          "Training through PyTorch (--executor pytorch; a suite's executor=pytorch): the\n"
          "training script workloads/train/llama_train.py launched by torchrun (python3 -m\n"
          "torch.distributed.run, an argv, no shell), data parallel over K processes on the\n"
          "CPU (gloo), GPUs (NCCL) or NeuronCores (TorchNeuron; torch-xla on older SDKs);\n"
          "--reps timed steps after --warmup steps (at least 1; 2 on Neuron: two graphs\n"
          "compile), --batch the global batch. Run id prefixed 'pytorch:'. Without torch\n"
          "or the device it fails (a suite's executor=pytorch line under --executor all is\n"
          "skipped, with why).\n"
          "  --nproc-per-node K processes (torchrun's; default 1): one per GPU or NeuronCore\n"
          "  --torch-device D   auto (on Neuron: neuron where the torch-neuronx installed is\n"
          "                     TorchNeuron, 2.10+; xla where it is PyTorch/XLA, 2.9 and\n"
          "                     before; else cuda when torch sees a GPU, else cpu), cpu,\n"
          "                     cuda, neuron (TorchNeuron's native device, torch.compile) or\n"
          "                     xla (PyTorch/XLA: no training support from Neuron 2.30)\n"
          "  --precision P      fp32 (default) or bf16 (autocast, fp32 master weights)\n"
          "  --python PATH      the interpreter with torch (default python3 on the PATH)\n"
          "  --train-script F   another script speaking the same protocol\n"
          "  --train-timeout S  for the whole launch, compilation included (default 3600)\n"
          "With --suite these five apply to every run of the suite through PyTorch.\n"
          "Training metrics through PyTorch: step_time_s, train_tokens_per_s, gflop_per_s,\n"
          "loss, compile_s (the warm-up steps' time beyond a steady step: compilation on\n"
          "xla), mfu (against the GPU's or Neuron chip's peak in pricing/chips.csv; none on\n"
          "the CPU), device_mem_gib (GPU).\n"
          "\n"
          "Serving (phase serve; --endpoint implies it): an OpenAI-compatible server (vLLM,\n"
          "vllm-neuron, NxD Inference, TGI, SGLang, TensorRT-LLM, trnbench serve) measured\n"
          "under load, every request streamed: one closed-loop level per concurrency, one\n"
          "open-loop level (Poisson arrivals, seeded) per request rate.\n"
          "  --endpoint URL     http://HOST:PORT/v1; self: start `trnbench serve` for the\n"
          "                     model on this host (CPU engine) and stop it after\n"
          "  --served-model N   the server's name for the model (default: the one model\n"
          "                     the server lists, else --model); --model names the\n"
          "                     catalogue architecture (vocabulary, FLOPs, the prediction)\n"
          "  --concurrency C,.. requests kept in flight, one level each (default 1)\n"
          "  --request-rate R,. requests/s arriving (inf: all at once), one level each;\n"
          "                     --max-concurrency caps them\n"
          "  --requests N       counted requests per level (default 4 x concurrency, at\n"
          "                     least 16; 32 open-loop), or --duration S of sending\n"
          "  --warmup-requests N  sent first, not counted (default: the concurrency, at\n"
          "                     most 32; 4 open-loop)\n"
          "  --request-timeout S  per request (default 120)\n"
          "  --api A            completions (prompts as token ids; default) or chat (text)\n"
          "  --ttft-ms MS, --tpot-ms MS  latency limits of goodput_requests_per_s\n"
          "  --chips N          accelerators the server uses, for cost per token (default:\n"
          "                     every one of the instance)\n"
          "  --server-cmd 'ARGV...'  start this server first (split into words, quotes\n"
          "                     group, no shell), wait for GET /models, stop it after;\n"
          "                     --server-timeout S for readiness (default 1800)\n"
          "  --server-label TEXT  what the server is, for the rows' device column\n"
          "  --server-start cold,warm  start the server twice and record both starts\n"
          "  --max-num-seqs N   endpoint=self: trnbench serve's running sequences (16)\n"
          "  --engine cpu|cuda  endpoint=self: trnbench serve's engine (cpu, fp32; cuda:\n"
          "                     bf16 on the first GPU)\n"
          "  --target TYPE      the instance type the server runs on when it is not this\n"
          "                     machine (pricing/instances.csv; default: the one detected)\n"
          "  --client-threads T the load client's threads, streams split among them\n"
          "                     (default: one per 64 streams, at most one per core but one)\n"
          "  --recipe vllm      start vLLM for the model instead of naming an endpoint:\n"
          "                     random weights (GPUs: --load-format dummy) from a\n"
          "                     config.json written from the .model file, nothing\n"
          "                     downloaded; on Neuron through the vllm-neuron plugin, on\n"
          "                     GPUs plain vLLM; its\n"
          "                     compile cache in the out folder (cold, then warm with\n"
          "                     --server-start cold,warm: the difference is compile time)\n"
          "  --tp N, --max-model-len N  the recipe's tensor-parallel degree (1) and length\n"
          "                     (seq-in + seq-out); --max-num-seqs N its batch (16)\n"
          "  --max-num-batched-tokens N  prompt tokens a step prefills (default: the\n"
          "                     max-model-len up to 16384, else 8192); on Neuron one of\n"
          "                     512, 1024, 2048, 4096, 8192 when below the max-model-len\n"
          "  --prefix-caching on|off  the server's prefix cache (default off, on GPUs and\n"
          "                     Neuron alike; on Neuron it needs segmented prefill)\n"
          "  --prefill-buckets 128,512,2560  --decode-buckets 1,4,16  Neuron's compiled\n"
          "                     shapes (vllm-neuron): the largest prefill bucket must be\n"
          "                     min(max-num-batched-tokens, max-model-len), the largest\n"
          "                     decode bucket --max-num-seqs; a list short of them is\n"
          "                     completed, one past them refused (exit 2) before any\n"
          "                     start. Compile and execute timeouts: --server-timeout\n"
          "  --model-path DIR   the recipe serves this Hugging Face checkpoint (config.json\n"
          "                     of the model's dimensions, *.safetensors) instead of random\n"
          "                     weights; on Neuron without it the recipe writes random bf16\n"
          "                     safetensors of the model (16 GB for llama-3.1-8b, 141 GB for\n"
          "                     llama-3.1-70b) into the out folder, its free space checked\n"
          "                     first\n"
          "Serving metrics, per level: ttft_ms, tpot_ms ((e2e - ttft) / (output tokens -\n"
          "1), never including TTFT), itl_ms, e2e_latency_ms, tokens_per_s_per_user (value\n"
          "p50, columns p90 and p99), output_tokens_per_s, total_tokens_per_s,\n"
          "requests_per_s, goodput_requests_per_s, failed_requests (reasons in notes),\n"
          "mismatched_requests, achieved_concurrency or achieved_request_rate,\n"
          "server_start_s. A level with failed requests makes the exit status 1.\n"
          "\n"
          "A suite as a Slurm job (--slurm): DIR/trnbench.sbatch is written and submitted\n"
          "with sbatch (the job id printed, and added to DIR/slurm_job); in the job each task\n"
          "runs its share of the suite (run i goes to task i mod tasks) into\n"
          "DIR/ranks/results.<rank>.csv, and once srun has returned one DIR/results.csv is\n"
          "assembled, each row with nodes, ranks, rank, node and slurm_job. DIR must be on a\n"
          "file system every node sees. Inside an allocation (salloc) --slurm runs srun and\n"
          "the assembly at once. Submitted again, the job resumes.\n"
          "  --nodes N          nodes of the job (1-100000)\n"
          "  --ntasks-per-node K  tasks on each (1-4096; default 1)\n"
          "  --partition P      partition(s): letters, digits, '.', '_', '-'; ',' between\n"
          "  --time T           limit: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S or UNLIMITED\n"
          "  --account A        account to charge (characters as --partition)\n"
          "  --no-submit        write the script only\n"
          "A training across the nodes (--slurm with --executor pytorch --phase train and\n"
          "a workload): one task a node (#SBATCH --exclusive, --wait-all-nodes=1), each\n"
          "starting torchrun with --nnodes N --node_rank SLURM_NODEID --rdzv_backend c10d\n"
          "--rdzv_endpoint FIRST:PORT (the first node of the job, by its Slurm NodeAddr;\n"
          "port 29400 + job id mod 1000) --rdzv_id JOB and --nproc-per-node K processes;\n"
          "--batch is the global batch over N x K. The node with the script's rank 0\n"
          "records the rows (run id .../nodes<N>/np<K>: nodes, ranks N x K, ranks_per_node\n"
          "K, instances N, slurm_job). Not --ntasks-per-node.\n"
          "\n"
          "  --list             the model catalogue with parameter counts\n"
          "  -h, --help         this text\n"
          "\n"
          "Metrics: prefill ttft_ms, prefill_tokens_per_s, gflop_per_s; decode tpot_ms,\n"
          "decode_tokens_per_s, gflop_per_s, gbyte_per_s; train step_time_s,\n"
          "train_tokens_per_s, gflop_per_s, loss; denoise s_per_image, images_per_s,\n"
          "gflop_per_s. Values are medians of the repetitions.\n"
          "Exit status: 0 ok, 1 a run failed, 2 usage or input error (nothing run).\n",
          f);
}

/* ---- the end ---- */

/* What the plan did, on stderr, in the plan's terms: every planned measurement and
 * prediction in exactly one of the counts, so they add up to the plan line's total. */
static void say_counts(const struct tb_run_counts *n, double secs, const char *results)
{
    char took[32], more[512] = "";
    size_t k = 0;

#define MORE(c, what)                                                                              \
    if ((c) && k < sizeof more)                                                                    \
    k += (size_t)snprintf(more + k, sizeof more - k, ", %d %s", (c), (what))
    MORE(n->unsupported, "not for an executor here (precision, no torch or device for PyTorch; "
                         "reasons above)");
    MORE(n->unpredicted, "not predicted (reasons above)");
    MORE(n->elsewhere, "reported by another node");
#undef MORE
    fprintf(stderr,
            "trnbench run: done in %s: of %d planned, %d run%s measured, %d modeled, %d already "
            "there, %d failed%s; results in '%s'\n",
            tb_progress_duration(secs, took, sizeof took), n->planned, n->measured,
            n->measured == 1 ? "" : "s", n->modeled, n->skipped, n->failed, more, results);
    if (n->twins)
        fprintf(stderr,
                "trnbench run: and %d modeled twin%s of measured serving levels (the same load "
                "on the target the model prices), not in the plan\n",
                n->twins, n->twins == 1 ? "" : "s");
}

/* ---- --list ---- */

struct list_ctx {
    int bad;       /* a file failed to load */
    int diffusion; /* diffusion models seen */
};

static void list_diffusion(const char *path, void *vctx)
{
    struct tb_darch d;
    char err[512];
    (void)vctx;
    if (tb_darch_load(&d, path, err, sizeof err) != 0)
        return;
    printf("%-16s %-6s %9.1f %8.1f %9.1f %5d %6s  %s\n", d.name, d.family,
           tb_darch_params_denoiser(&d) / 1e6, tb_darch_params_vae_decoder(&d) / 1e6,
           tb_darch_params_encoders(&d) / 1e6, d.resolution, d.cfg ? "yes" : "no",
           d.published_params > 0 ? "" : "(not a published model)");
}

static void list_one(const char *path, void *vctx)
{
    struct list_ctx *ctx = vctx;
    struct tb_arch a;
    char err[512];

    if (tb_arch_load(&a, path, err, sizeof err) != 0) {
        struct tb_darch d;
        char derr[512];
        if (tb_darch_load(&d, path, derr, sizeof derr) == 0) {
            ctx->diffusion++;
            return; /* listed in their own table */
        }
        fprintf(stderr, "trnbench run: %s\n", err);
        ctx->bad = 1;
        return;
    }
    printf("%-16s %3d %6d %4d %4d %6d %7d %10.1f  %s\n", a.name, a.layers, a.hidden, a.heads,
           a.kv_heads, a.ffn, a.vocab, tb_arch_params_total(&a) / 1e6,
           a.published_params > 0 ? "" : "(not a published model)");
}

static int list_models(void)
{
    struct list_ctx ctx = {0};
    char err[512];

    printf("%-16s %3s %6s %4s %4s %6s %7s %10s\n", "model", "L", "hidden", "NH", "NKV", "ffn",
           "vocab", "params(M)");
    if (tb_arch_list(list_one, &ctx, err, sizeof err) < 0) {
        fprintf(stderr, "trnbench run: %s\n", err);
        return 2;
    }
    if (ctx.diffusion) {
        printf("\n%-16s %-6s %9s %8s %9s %5s %6s\n", "diffusion model", "kind", "denoiser",
               "vae-dec", "encoders", "px", "cfg");
        printf("%-16s %-6s %9s %8s %9s\n", "", "", "(M params)", "(M)", "(M)");
        tb_arch_list(list_diffusion, &ctx, err, sizeof err);
    }
    return ctx.bad ? 2 : 0;
}

/* ---- options ---- */

/* The workload's options, as given: each is a run-spec field ("--seq-in 8" is
 * "seq_in=8"), applied in order once the options are read. */
enum { MAX_WORDS = 128 };
struct spec_opts {
    const char *name[MAX_WORDS];  /* borrowed: the option's long name ("seq-in") */
    const char *value[MAX_WORDS]; /* borrowed: argv's */
    bool torch[MAX_WORDS];        /* training through PyTorch: a suite's too */
    int n;
};

/* A TB_OPT_FN for a workload option (dst: struct spec_opts): a number out of its field's
 * range in TB_SUITE_RUN_RANGES is refused here, in the options' wording; the rest is
 * tb_run_spec_set's to judge. */
static int take_spec(const struct tb_opt *o, const char *v, bool torch, char *err, size_t errlen)
{
    struct spec_opts *w = o->dst;
    const struct tb_range *r;
    char key[64];
    size_t k = 0;
    double x;

    for (const char *q = o->name; *q && k < sizeof key - 1; q++)
        key[k++] = *q == '-' ? '_' : *q;
    key[k] = '\0';
    r = tb_range_find(TB_SUITE_RUN_RANGES, key);
    if (r && !strstr(r->what, "list") && tb_range_parse(r, v, &x, NULL, 0) != 0)
        return tb_cli_bad_number(err, errlen, v, r->integer, r->lo, r->hi);
    if (w->n == MAX_WORDS)
        return tb_err(err, errlen, "more than %d workload options given", MAX_WORDS);
    w->name[w->n] = o->name;
    w->value[w->n] = v;
    w->torch[w->n++] = torch;
    return 0;
}

static int take_workload(const struct tb_opt *o, const char *v, char *err, size_t errlen)
{
    return take_spec(o, v, false, err, errlen);
}

static int take_torch(const struct tb_opt *o, const char *v, char *err, size_t errlen)
{
    return take_spec(o, v, true, err, errlen);
}

int tb_cmd_run(int argc, char **argv)
{
    struct tb_plan plan;
    struct tb_run_spec one;
    struct tb_run_counts n;
    const char *suite_name = NULL, *out = ".";
    char err[2048] = "";
    bool have_one = false, list = false, no_wait = false, wait;
    double progress_s = 10; /* a progress line this often during a run */
    struct tb_lock lock = {0};
    enum tb_run_executors executor = TB_RUN_ALL;
    /* --executor's values, in its message's order, and what they run */
    static const char *const EXECUTORS[] = {"cpu", "cuda", "pytorch", "all", NULL};
    static const enum tb_run_executors EXECUTOR_OF[] = {TB_RUN_CPU, TB_RUN_CUDA, TB_RUN_PYTORCH,
                                                        TB_RUN_ALL};
    int executor_k = -1;
    enum { MAX_TORCH_WORDS = 16 };
    char torch_words[MAX_TORCH_WORDS][1200];  /* --nproc-per-node ... as "key=value" */
    const char *torch_names[MAX_TORCH_WORDS]; /* their options' names */
    int rc, ntorch = 0;
    uint64_t t0;
    struct tb_run_slurm slurm = {.submit = true, .job = {.nodes = 1, .ntasks_per_node = 1}};
    bool no_submit = false;
    struct tb_slurm_task task;
    struct spec_opts w = {.n = 0};
#define WORKLOAD(name) TB_OPT_FN(name, take_workload, &w)
    const struct tb_opt opts[] = {
        TB_OPT_FLAG("list", &list),
        TB_OPT_STR("suite", &suite_name),
        TB_OPT_STR("out", &out),
        TB_OPT_CHOICE("executor", &executor_k, EXECUTORS),
        TB_OPT_FLAG("no-wait", &no_wait),
        TB_OPT_DOUBLE("progress", &progress_s, 0, 86400),
        /* the workload's options are run-spec fields: --seq-in T is seq_in=T */
        WORKLOAD("model"),
        WORKLOAD("phase"),
        WORKLOAD("seq-in"),
        WORKLOAD("seq-out"),
        WORKLOAD("batch"),
        WORKLOAD("layers"),
        WORKLOAD("reps"),
        WORKLOAD("warmup"),
        WORKLOAD("seed"),
        WORKLOAD("steps"),
        WORKLOAD("resolution"),
        WORKLOAD("precision"),
        /* serving (phase serve): the endpoint executor */
        WORKLOAD("endpoint"),
        WORKLOAD("served-model"),
        WORKLOAD("api"),
        WORKLOAD("concurrency"),
        WORKLOAD("request-rate"),
        WORKLOAD("max-concurrency"),
        WORKLOAD("requests"),
        WORKLOAD("duration"),
        WORKLOAD("warmup-requests"),
        WORKLOAD("request-timeout"),
        WORKLOAD("ttft-ms"),
        WORKLOAD("tpot-ms"),
        WORKLOAD("chips"),
        WORKLOAD("server-cmd"),
        WORKLOAD("server-label"),
        WORKLOAD("server-timeout"),
        WORKLOAD("server-start"),
        WORKLOAD("max-num-seqs"),
        WORKLOAD("target"),
        WORKLOAD("client-threads"),
        WORKLOAD("recipe"),
        WORKLOAD("engine"),
        WORKLOAD("tp"),
        WORKLOAD("max-model-len"),
        WORKLOAD("prefill-buckets"),
        WORKLOAD("decode-buckets"),
        WORKLOAD("max-num-batched-tokens"),
        WORKLOAD("prefix-caching"),
        WORKLOAD("model-path"),
        /* training through PyTorch (executor=pytorch): the workload's, or a suite's */
        TB_OPT_FN("nproc-per-node", take_torch, &w),
        TB_OPT_FN("torch-device", take_torch, &w),
        TB_OPT_FN("python", take_torch, &w),
        TB_OPT_FN("train-script", take_torch, &w),
        TB_OPT_FN("train-timeout", take_torch, &w),
        /* a suite as a Slurm job (cmd_run_slurm.c) */
        TB_OPT_FLAG("slurm", &slurm.on),
        {"nodes", TB_OPT_KIND_LONG, &slurm.job.nodes, 1, TB_SLURM_MAX_NODES, NULL, NULL,
         &slurm.have_nodes},
        {"ntasks-per-node", TB_OPT_KIND_LONG, &slurm.job.ntasks_per_node, 1,
         TB_SLURM_MAX_TASKS_PER_NODE, NULL, NULL, &slurm.have_tasks},
        TB_OPT_STR("partition", &slurm.job.partition),
        TB_OPT_STR("time", &slurm.job.time),
        TB_OPT_STR("account", &slurm.job.account),
        TB_OPT_FLAG("no-submit", &no_submit),
        TB_OPT_FLAG("slurm-rank", &slurm.rank),
        TB_OPT_FLAG("slurm-assemble", &slurm.assemble),
        TB_OPT_FLAG("slurm-node", &slurm.node),
        TB_OPT_END,
    };
#undef WORKLOAD

    tb_run_spec_init(&one);
    if ((rc = tb_cli_parse("run", argc, argv, opts, usage)) != TB_CLI_GO)
        return rc;
    wait = !no_wait;
    slurm.submit = !no_submit;
    if (executor_k >= 0) {
        executor = EXECUTOR_OF[executor_k];
        slurm.executor = EXECUTORS[executor_k];
    }
    /* the workload's options into one, in order ("--seq-in" -> "seq_in=VALUE") */
    for (int i = 0; i < w.n; i++) {
        char word[1200];
        size_t k = 0;
        for (const char *q = w.name[i]; *q && k < 64; q++)
            word[k++] = *q == '-' ? '_' : *q;
        if ((size_t)snprintf(word + k, sizeof word - k, "=%s", w.value[i]) >= sizeof word - k) {
            fprintf(stderr, "trnbench run: option '--%s': value too long\n", w.name[i]);
            return 2;
        }
        if (tb_run_spec_set(&one, word, "command line", err, sizeof err) != 0) {
            fprintf(stderr, "trnbench run: %s\n", err);
            return 2;
        }
        if (!w.torch[i]) {
            have_one = true;
            continue;
        }
        /* training through PyTorch: the workload's, or every such run of a suite */
        if (ntorch == MAX_TORCH_WORDS) {
            fprintf(stderr, "trnbench run: option '--%s': given too often\n", w.name[i]);
            return 2;
        }
        torch_names[ntorch] = w.name[i];
        snprintf(torch_words[ntorch++], sizeof torch_words[0], "%s", word);
    }
    if (optind < argc) {
        fprintf(stderr, "trnbench run: unknown argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (list)
        return list_models();
    if ((slurm.have_nodes || slurm.have_tasks || slurm.job.partition || slurm.job.time ||
         slurm.job.account || !slurm.submit) &&
        !slurm.on) {
        fprintf(stderr, "trnbench run: --nodes, --ntasks-per-node, --partition, --time, "
                        "--account and --no-submit are options of --slurm\n");
        return 2;
    }
    if (slurm.on + slurm.rank + slurm.node + slurm.assemble > 1) {
        fprintf(stderr, "trnbench run: --slurm, --slurm-rank, --slurm-node and --slurm-assemble "
                        "go alone\n");
        return 2;
    }
    if (slurm.assemble)
        return tb_run_slurm_assemble(out, wait);
    if (slurm.on && have_one) {
        /* one training across the job's nodes (cmd_run_slurm.c) */
        one.torch.on = executor == TB_RUN_PYTORCH;
        tb_run_spec_defaults(&one);
        return tb_run_slurm_train(&slurm, &one, out);
    }
    if (slurm.on) {
        if (have_one || ntorch) {
            fprintf(stderr, "trnbench run: --slurm runs a suite (--suite) with its own lines' "
                            "options\n");
            return 2;
        }
        return tb_run_slurm_submit(&slurm, suite_name, out);
    }
    if ((slurm.rank || slurm.node) && tb_slurm_task_from_env(&task, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench run: --slurm-%s: %s\n", slurm.rank ? "rank" : "node", err);
        return 2;
    }
    if (!suite_name == !have_one) {
        fprintf(stderr, "trnbench run: give either --suite or a workload (--model, --phase, "
                        "--seq-in)\n");
        usage(stderr);
        return 2;
    }

    if (have_one && (one.serve.endpoint[0] || one.serve.recipe[0]) && (int)one.phase < 0)
        one.phase = TB_PHASE_SERVE; /* --endpoint or --recipe: a serving run */
    if (have_one && executor == TB_RUN_PYTORCH)
        one.torch.on = true; /* the workload through the training script */
    if (slurm.node) {
        /* this node's part of a training across the job's nodes: torchrun's rendezvous */
        if (!one.torch.on) {
            fprintf(stderr, "trnbench run: --slurm-node trains a workload through PyTorch "
                            "(--executor pytorch --phase train)\n");
            return 2;
        }
        if (tb_slurm_torch_node(&task, &one.torch, err, sizeof err) != 0) {
            fprintf(stderr, "trnbench run: --slurm-node: %s\n", err);
            return 1;
        }
        fprintf(stderr,
                "trnbench run: torchrun on node %d of %d: c10d rendezvous at %s, id %s, %d "
                "process%s here\n",
                one.torch.node_rank, one.torch.nnodes, one.torch.rdzv_endpoint, one.torch.rdzv_id,
                one.torch.nproc_per_node, one.torch.nproc_per_node == 1 ? "" : "es");
    }
    tb_run_spec_defaults(&one);

    /* ---- load and check everything first: an input error runs nothing ---- */
    rc = tb_plan_load(&plan, suite_name, &one, out, executor, err, sizeof err);
    if (rc != TB_OK) {
        fprintf(stderr, "trnbench run: %s\n", err);
        rc = tb_cli_exit_status(rc);
        goto out;
    }
    if (suite_name && ntorch) {
        /* --python, --nproc-per-node, ...: for every run of the suite through PyTorch */
        int ntrain = 0;
        for (size_t i = 0; i < plan.suite.nruns; i++) {
            struct tb_run_spec *r = &plan.suite.runs[i];
            char where[PATH_MAX + 64];
            if (!r->torch.on)
                continue;
            snprintf(where, sizeof where, "%s: line %ld (with the command line's options)",
                     plan.suite.path, r->line);
            for (int k = 0; k < ntorch; k++)
                tb_run_spec_set(r, torch_words[k], where, err, sizeof err); /* checked above */
            if (tb_run_spec_check(r, where, err, sizeof err) != 0) {
                fprintf(stderr, "trnbench run: %s\n", err);
                rc = 2;
                goto out;
            }
            ntrain++;
        }
        if (!ntrain) {
            fprintf(stderr,
                    "trnbench run: option '--%s': no run of the suite trains through PyTorch "
                    "(--executor pytorch, or a line's executor=pytorch)\n",
                    torch_names[0]);
            rc = 2;
            goto out;
        }
    }
    if (slurm.rank || slurm.node) {
        /* this task's share (a node's task: the training), into its own file */
        rc = tb_plan_slurm(&plan, &task, err, sizeof err);
        if (rc != TB_OK) {
            fprintf(stderr, "trnbench run: %s\n", err);
            rc = tb_cli_exit_status(rc);
            goto out;
        }
        fprintf(stderr, "trnbench run: Slurm job %s, task %ld of %ld on %s (node %ld of %ld)\n",
                task.job, task.rank, task.ranks, task.node, task.nodeid, task.nodes);
    }
    rc = tb_plan_open(&plan, err, sizeof err);
    if (rc != TB_OK) {
        fprintf(stderr, "trnbench run: %s\n", err);
        rc = tb_cli_exit_status(rc);
        goto out;
    }
    /* the output folder only once the run can go ahead (--executor cuda without a
     * GPU stops above and leaves nothing behind) */
    if (tb_mkdir_p(out, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench run: %s\n", err);
        rc = 1;
        goto out;
    }
    /* one writer of the folder at a time: a second run waits (or, --no-wait, stops)
     * and then skips what the first recorded */
    switch (slurm.rank || slurm.node
                ? tb_run_slurm_rank_lock(&lock, out, task.rank, wait, err, sizeof err)
                : tb_results_lock(&lock, out, "trnbench run", wait, err, sizeof err)) {
    case 0:
        break;
    case 1:
        fprintf(stderr, "trnbench run: %s (--no-wait)\n", err);
        rc = 1;
        goto out;
    default:
        fprintf(stderr, "trnbench run: %s\n", err);
        rc = 1;
        goto out;
    }
    plan.progress.every_s = progress_s;
    t0 = tb_timer_now_ns();
    if (tb_plan_execute(&plan, &n, err, sizeof err) != TB_OK) {
        if (err[0])
            fprintf(stderr, "trnbench run: %s\n", err);
        rc = 1;
        goto out;
    }
    say_counts(&n, tb_timer_seconds(t0, tb_timer_now_ns()), plan.results);
    rc = n.failed ? 1 : 0;
    if ((slurm.rank || slurm.node) && tb_run_slurm_done(out, &task, &n, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench run: %s\n", err);
        rc = 1;
    }
out:
    tb_lock_release(&lock);
    tb_plan_release(&plan);
    return rc;
}
