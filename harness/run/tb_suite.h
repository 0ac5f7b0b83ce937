/*
 * harness/run/tb_suite.h: suites, the list of runs `trnbench run --suite NAME` performs.
 * The format (suites/README.md): one directive per line, '#' starts a comment,
 *
 *   suite default
 *   description Llama inference and training on small configurations
 *   run model=llama-small phase=prefill batch=1 seq_in=256 reps=5 warmup=1
 *
 *   predict target=trn1.32xlarge,p5.48xlarge model=llama-3.1-8b phase=serve seq_in=2048
 *           seq_out=512 batch=max precision=bf16
 *
 * A run also comes from command-line options (tb_suite_parse_run on "key=value"
 * words), so the same validation applies to both.
 */
#ifndef TB_SUITE_H
#define TB_SUITE_H

#include "tb_range.h"
#include "tb_vocab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* enum tb_phase, tb_phase_to_string, tb_phase_from_string: tb_vocab.h */

/* A serving run's options (phase serve: the endpoint executor, measure/exec_endpoint.c).
 * Its levels: one closed loop per concurrency of the list, then one open loop per
 * request rate; the plan runs each level as a run of its own (its resume key). */
#define TB_SERVE_MAX_LEVELS 16
enum tb_serve_api {
    TB_SERVE_COMPLETIONS, /* /v1/completions, prompts as token ids */
    TB_SERVE_CHAT,        /* /v1/chat/completions, text prompts */
};
struct tb_serve_opts {
    char endpoint[512];     /* "http://HOST:PORT/v1", or "self": `trnbench serve` on this host */
    char served_model[128]; /* the server's name for the model; "": the model's */
    enum tb_serve_api api;
    int concurrency[TB_SERVE_MAX_LEVELS]; /* closed-loop levels */
    int nconcurrency;
    double request_rate[TB_SERVE_MAX_LEVELS]; /* open-loop levels, requests/s (INFINITY: all
                                                 at once) */
    int nrate;
    int max_concurrency;      /* open loop: at most this many in flight; 0: no cap */
    int requests;             /* counted requests per level; 0: the default (or duration) */
    double duration_s;        /* per level, instead of a request count; 0: none */
    int warmup_requests;      /* per level, not counted; -1: the default */
    double request_timeout_s; /* per request (default 120) */
    double ttft_limit_ms;     /* goodput: a request counts within both limits; 0: none */
    double tpot_limit_ms;
    int chips;               /* accelerators the server uses; 0: every one of the target */
    char server_cmd[1024];   /* start this server (argv, no shell) and stop it after; "" */
    char server_label[128];  /* what the server is ("vLLM 0.6 tp=8"), for provenance */
    double server_timeout_s; /* readiness wait of a started server (default 1800: Neuron
                                compiles on a cold start) */
    int server_starts;       /* 1; 2: start it twice, cold then warm (server_warm_start_s) */
    int max_num_seqs;        /* endpoint=self: trnbench serve's --max-num-seqs (default 16);
                                a recipe's vllm --max-num-seqs */
    bool engine_cuda;        /* endpoint=self: trnbench serve --engine cuda (bf16 on the GPU);
                                else its CPU engine (fp32) */
    char recipe[16];         /* "vllm": start that server for the model (tb_recipe.h) */
    int tp;                  /* recipe: tensor-parallel degree (default 1) */
    int max_model_len;       /* recipe: --max-model-len (0: seq_in + seq_out) */
    int max_batched_tokens;  /* recipe: --max-num-batched-tokens (0: tb_recipe_settle's) */
    bool prefix_caching;     /* recipe: the server caches prompt prefixes (default off on
                                every vendor: prefix_caching=on to measure it) */
    int prefill_buckets[16]; /* recipe on Neuron: compiled prefill token counts */
    int nprefill;
    int decode_buckets[16]; /* recipe on Neuron: compiled decode batch sizes */
    int ndecode;
    char model_path[1024]; /* recipe: a real checkpoint folder to serve; "": random
                              weights written by trnbench (tb_recipe.h) */
    int client_threads;    /* the load client's threads (tb_load_spec.threads; 0: auto) */
    char target[64];       /* the instance type the server runs on, when it is not this
                              machine (an instance of pricing/instances.csv); "": the
                              one detected */
    /* the level a run of the plan measures: concurrency (0: none, open loop uncapped) and
     * rate (0: closed loop) */
    int level_concurrency;
    double level_rate;
};

/* A training run through PyTorch (executor=pytorch: measure/exec_torch.c): the training
 * script (workloads/train/llama_train.py, or one speaking its protocol) launched by
 * torchrun, with an argv and no shell. */
#define TB_TORCH_DEVICE_AUTO "auto"
struct tb_torch_opts {
    bool on;            /* executor=pytorch (or `run --executor pytorch`) */
    int nproc_per_node; /* torchrun's processes (data parallel ranks; default 1) */
    char device[8];     /* "auto" (on Neuron: neuron or xla by the torch-neuronx
                           installed, tb_torch_neuron_device; else cuda, cpu), "cpu",
                           "cuda", "neuron" (TorchNeuron), "xla" (PyTorch/XLA) */
    char python[256];   /* the interpreter, looked up on PATH (default "python3") */
    char script[1024];  /* the training script; "": <datadir>/workloads/train/llama_train.py */
    double timeout_s;   /* the whole launch, compilation included (default 3600) */
    bool set;           /* one of these keys was given (only executor=pytorch takes them) */
    /* across the nodes of a Slurm job (`run --slurm --executor pytorch`, one torchrun a
     * node; set from Slurm's environment, never a suite key): */
    int nnodes;              /* torchrun --nnodes (default 1: --standalone, this machine) */
    int node_rank;           /* torchrun --node_rank: SLURM_NODEID */
    char rdzv_endpoint[320]; /* "HOST:PORT" of the c10d rendezvous; "": --standalone */
    char rdzv_id[32];        /* the rendezvous id: the job id */
};

struct tb_run_spec {
    char model[64]; /* catalogue name or path of a .model file */
    enum tb_phase phase;
    int layers;                 /* keep the first n layers; 0 = all */
    int batch;                  /* sequences */
    int seq_in;                 /* prompt length (prefill, decode) or sequence length (train) */
    int seq_out;                /* decode: tokens generated per repetition */
    int steps;                  /* denoise: denoising steps (0: the model's default) */
    int resolution;             /* denoise: square image size in pixels (0: the model's) */
    int reps;                   /* timed repetitions */
    int warmup;                 /* untimed repetitions before them */
    uint64_t seed;              /* weights and tokens */
    char precision[8];          /* "fp32" (the default): the CPU engine's fp32, and bf16 mixed
                                   precision on the GPU; "fp8": GPU inference only (prefill,
                                   decode; compute capability 8.9+), the CPU executor skips it */
    long line;                  /* suite line it came from (0 = command line) */
    bool precision_set;         /* precision given (a serving run's default: bf16 for an
                                   endpoint, fp32 for self) */
    struct tb_serve_opts serve; /* phase serve */
    struct tb_torch_opts torch; /* executor=pytorch */
};

/* A modeled run: "predict key=value ..." in a suite, the columns of one scenario-table
 * row (tb_scenario.h) as text. A comma list in target or model expands into one spec
 * per target and model. */
#define TB_PREDICT_MAX_FIELDS 24
struct tb_predict_spec {
    char keys[TB_PREDICT_MAX_FIELDS][24];
    char values[TB_PREDICT_MAX_FIELDS][64];
    int nfields;
    long line; /* suite line it came from */
};

struct tb_suite {
    char name[64];
    char description[256];
    char path[4096];
    struct tb_run_spec *runs; /* owned */
    size_t nruns;
    struct tb_predict_spec *predicts; /* owned */
    size_t npredicts;
};

/* The value of key in p, or NULL when the spec does not set it. */
const char *tb_predict_spec_get(const struct tb_predict_spec *p, const char *key);
/* Stable id of a modeled run: model:<target>/<model>/<phase>/b<batch|max>/in<T>[/out<n>]
 * /<precision>[/x<instances>]. */
void tb_predict_spec_id(const struct tb_predict_spec *p, char *buf, size_t len);
/* Append to the id full (of len bytes) the software stack and serving's terms a predict
 * line or a scenario row gives ("/sw-vllm/spec3.2/k3/draft-llama-3.2-1b/hit0.9"; each
 * NULL or "" left out), so that runs differing only in them stay apart. */
void tb_model_run_id_terms(char *full, size_t len, const char *spec_accept, const char *spec_len,
                           const char *draft, const char *prefix_hit, const char *software);
/* The room a modeled run id takes (TB_MODEL_RUN_ID_LEN - 1 characters): every writer and
 * reader of one fits it to this. */
#define TB_MODEL_RUN_ID_LEN 256
/* Copy id into buf (len bytes); an id that does not fit is cut and ends in '~' and 16
 * hex digits of a hash of the whole id (FNV-1a 64), so that ids differing past the cut
 * stay apart. */
void tb_run_id_fit(char *buf, size_t len, const char *id);
/* The same id from its parts (NULL: not given; seq_in required unless denoise): the one
 * place modeled run ids are built. An id longer than len - 1 is fitted by
 * tb_run_id_fit. */
void tb_model_run_id(char *buf, size_t len, const char *target, const char *model,
                     const char *phase, const char *batch, const char *seq_in, const char *seq_out,
                     const char *steps, const char *resolution, const char *precision,
                     const char *instances);

/* Defaults: batch 1, seq_out 32 (decode), reps 5, warmup 1, seed 1, precision fp32;
 * for executor=pytorch 1 process, device auto, python3, a time limit of 3600 s. */
void tb_run_spec_init(struct tb_run_spec *r);

/* Apply one "key=value" word to r. where: "file: line N" or "command line" for the
 * message ("suites/x.suite: line 3: field 'reps': ..."). A precision list
 * ("precision=fp32,fp8") is a suite's run line's alone: tb_suite_load makes one run of
 * each. */
int tb_run_spec_set(struct tb_run_spec *r, const char *word, const char *where, char *err,
                    size_t errlen);
/* Fill the defaults that depend on other fields, once every word is set: a serving
 * run's precision (bf16 for an endpoint) and its level (concurrency 1). */
void tb_run_spec_defaults(struct tb_run_spec *r);

/* The recipe's options of r (recipe=vllm): tp, max_num_seqs, max_model_len (default
 * seq_in + seq_out), max_num_batched_tokens, the buckets, prefix caching and the server
 * timeout, for a machine without Neuron (the caller sets neuron, plugin and the rest). */
struct tb_recipe_opts;
void tb_run_spec_recipe_opts(const struct tb_run_spec *r, struct tb_recipe_opts *ro);
/* Check the run is complete and consistent (model and phase given, seq_in > 0, fp8
 * only for prefill and decode, executor=pytorch only for train with bf16 or fp32, a
 * warm-up step and a batch that its processes share evenly, ...). */
int tb_run_spec_check(const struct tb_run_spec *r, const char *where, char *err, size_t errlen);

/* Stable id of a run: model[@Ln]/phase/b<B>/in<T>[/out<n>]/precision (executor=pytorch:
 * then /nodes<N> across N nodes, /np<K> and the torch device when it is not auto:
 * .../bf16/np8/cuda), or for denoise model/denoise/b<B>/r<resolution>/s<steps>/precision, or for a
 * serving level model[@Ln]/serve/c<C>|r<R>[c<cap>]/in<T>/out<n>/precision[/chat]@<server> (server:
 * the label, "self", or the endpoint's host:port). */
void tb_run_spec_id(const struct tb_run_spec *r, char *buf, size_t len);

/* A serving level's workload and config (results.csv's columns, tb_results.h): the
 * performance model's forms, model/serve/in<T>/out<n>/precision and the same with
 * /b<C> (closed loop) or /r<R> (open loop) after the phase, so the report draws the
 * measured points beside the model's curve for the same workload; "/chips<N>" at the
 * end when the run says the chips it uses (the model's twin on as many). */
void tb_serve_workload(const struct tb_run_spec *r, char *workload, size_t wlen, char *config,
                       size_t clen);
/* The server part of a serving run's id: the label, "self", or the endpoint's host:port. */
void tb_serve_where(const struct tb_serve_opts *o, char *buf, size_t len);

/* Read a suite: a path (contains '/' or ends in .suite) or a name under
 * <datadir>/suites/NAME.suite. */
/* The numbers of a suite's run and serve lines and their ranges (README.md, "Input
 * ranges"). */
extern const struct tb_range TB_SUITE_RUN_RANGES[];

int tb_suite_load(struct tb_suite *s, const char *name_or_path, char *err, size_t errlen);
/* A suite of one predict line, its words as a suite's after "predict" ("target=a,b
 * model=m phase=serve seq_in=2048 ..."), checked as tb_suite_load checks them (messages
 * "command line: field 'batch': ..."). Returns 0, or -1 with a message (s empty). */
int tb_suite_from_predict(struct tb_suite *s, const char *name, const char *words, char *err,
                          size_t errlen);
void tb_suite_release(struct tb_suite *s);

#endif
