/*
 * harness/run/tb_run.h: the plan stage of the pipeline (suite -> PLAN -> executor ->
 * results): a suite (or one workload from the command line) resolved into runs, the
 * executors that take them (cpu, cuda where a GPU and the plugin are present, model for
 * the suite's predict lines and for the GPU runs' modeled twins, endpoint for serve
 * lines, pytorch for training runs of executor=pytorch) and the resume keys
 * (run ids already in results.csv are skipped). Every run goes executor -> tb_measure
 * -> recorder (tb_record.h) -> tb_results, downward only.
 *
 * Everything is checked before anything runs (tb_plan_load): the suite, every model
 * file, every shape against the model's context, the predict lines' targets and models,
 * the existing results file; a problem is an input error and nothing is written. A run
 * that fails (engine error or failed validation) records nothing and counts as failed;
 * the others still run.
 *
 * Ownership: a struct tb_plan owns the suite, the resolved models, the price catalogue,
 * the performance model and the GPU; release with tb_plan_release.
 */
#ifndef TB_RUN_H
#define TB_RUN_H

#include "tb_arch.h"
#include "tb_darch.h"
#include "tb_gpu.h"
#include "tb_model.h"
#include "tb_neuron.h"
#include "tb_neuron_monitor.h"
#include "tb_platform.h"
#include "tb_pricing.h"
#include "tb_progress.h"
#include "tb_record.h"
#include "tb_suite.h"

#include <limits.h>
#include <stdbool.h>

/* Which measuring executors a plan uses. */
enum tb_run_executors {
    TB_RUN_ALL,     /* every one available: the CPU, and the GPU when there is one */
    TB_RUN_CPU,     /* the CPU only */
    TB_RUN_CUDA,    /* the GPU only; no GPU is an error */
    TB_RUN_PYTORCH, /* the training runs through PyTorch only (executor=pytorch on each) */
};

/* A run's model: a Llama, or a diffusion model for phase denoise. */
struct tb_resolved {
    struct tb_arch a;
    struct tb_darch d;
    bool diffusion;
};

/* The GPU, when one is in use. */
struct tb_plan_gpu {
    bool on;                        /* a device is in use */
    struct tb_gpu gpu;              /* owned */
    struct tb_record_ctx ctx;       /* the rows' GPU facts */
    const struct tb_chip *chip;     /* the catalogue's chip, or NULL (why in chip_why) */
    const struct tb_instance *inst; /* the instance of the modeled twins */
    char chip_why[256];
    struct tb_gpu_share share; /* the part of the machine its rows are charged */
};

/* Where a plan's execution stands, for the "[k/N]" of its lines and the progress lines
 * during a run (tb_progress.h). */
struct tb_run_progress {
    int started;           /* measurements started (or skipped) so far */
    int measurements;      /* measurements planned */
    uint64_t t0_ns;        /* when the plan started executing */
    double every_s;        /* a progress line this often during a run; <= 0: none */
    struct tb_progress pg; /* the current run's */
};

struct tb_plan {
    struct tb_suite suite;     /* owned */
    struct tb_resolved *work;  /* owned: [suite.nruns] */
    struct tb_pricing pricing; /* owned when have_model */
    struct tb_model model;     /* owned when have_model */
    bool have_model;           /* pricing and model loaded */
    bool borrowed_model;       /* ... as shallow copies of the caller's: not released */
    const char *prices_dir;    /* borrowed: the tables' folder; NULL: the data folder's */
    char results[PATH_MAX];    /* DIR/results.csv */
    const char *out;           /* borrowed: DIR */
    struct tb_platform plat;   /* this machine */
    char neuron_sdk[640];      /* on a machine with Neuron devices, the SDK's provenance
                                  line ("Neuron SDK: neuronx-cc ..., runtime ..."); "" */
    char vllm_neuron[64];      /* the installed vllm-neuron's version there; "" none */
    struct tb_neuron_lnc lnc;  /* there, the LNC a recipe's tp and a training's processes
                                  are counted in, and where it was read (neuron-ls, or
                                  guessed); lnc.lnc 0 without Neuron devices */
    int recipe_plugin;         /* enum tb_recipe_plugin of a recipe's server on Neuron */
    char plugin_note[900];     /* which plugin and why (tb_recipe_plugin_choose); "" */
    struct tb_record_ctx ctx;  /* the CPU rows' facts */
    struct tb_plan_gpu gpu;    /* owned */
    enum tb_run_executors which;
    const struct tb_slurm_task *slurm; /* borrowed: the Slurm task that runs its share of the
                                          suite (tb_plan_slurm); NULL: the whole suite */
    char (*resume)[PATH_MAX];          /* owned: nresume more results files whose runs count
                                          as done (a Slurm task: the folder's results.csv,
                                          the other tasks' files) */
    size_t nresume;
    struct tb_run_progress progress; /* tb_plan_execute's; set every_s before it (10 s) */
};

/* What executing a plan did. Each planned measurement (a run on one executor, a
 * serving level) and each prediction ends in exactly one of the first seven, so they
 * add up to planned; twins are rows beside measured ones, not in the plan. */
struct tb_run_counts {
    int planned;     /* measurements + predictions this process was to do */
    int measured;    /* measurements recorded */
    int modeled;     /* predictions recorded */
    int skipped;     /* either, already in the results (resumed) */
    int failed;      /* measurements that failed (or a serving level with failed requests) */
    int unsupported; /* measurements not for an executor here (the reason said) */
    int unpredicted; /* predictions the model could not make (the reason said) */
    int elsewhere;   /* measurements another process reports (a node of a multi-node run) */
    int twins;       /* modeled rows beside measured runs (the GPU's chip, a level's target) */
};

/* Load and check a plan: the suite suite_name (NULL: the one workload *one, already
 * set from the command line) with its results in out/results.csv. Returns 0, or
 * TB_EINPUT with a message (nothing may run), or TB_EFAIL (out of memory). Release the
 * plan either way. */
int tb_plan_load(struct tb_plan *p, const char *suite_name, const struct tb_run_spec *one,
                 const char *out, enum tb_run_executors which, char *err, size_t errlen);

/* Load a plan of modeled runs only: suite s (its predict lines; taken over, s left
 * empty) on the tables of prices_dir (NULL: the data folder's), or on the caller's
 * catalogue pr and m already loaded from there (borrowed, both or neither; they must
 * outlive the plan), its rows into out/results.csv. Nothing is detected or opened:
 * tb_plan_execute next. Returns 0, or TB_EINPUT with a message (a run line, an unknown
 * target or model, a bad table). Release the plan either way. */
int tb_plan_load_modeled(struct tb_plan *p, struct tb_suite *s, const char *prices_dir,
                         const struct tb_pricing *pr, const struct tb_model *m, const char *out,
                         char *err, size_t errlen);

/* Make p, loaded, the share of Slurm task t (borrowed; tb_slurm.h) of its suite: the
 * runs and predict lines whose index is t's (tb_slurm_mine), their rows into
 * out/ranks/results.<rank>.csv stamped with t (the folder ranks/ made), and a run already
 * in out/results.csv or in another task's file skipped. Before tb_plan_open. Returns 0,
 * or TB_EINPUT with a message (a results file that cannot be read). */
int tb_plan_slurm(struct tb_plan *p, const struct tb_slurm_task *t, char *err, size_t errlen);

/* Detect this machine and open the GPU (for TB_RUN_ALL and TB_RUN_CUDA), saying what it
 * found on stderr. Returns 0, or TB_EFAIL with a message (TB_RUN_CUDA without a GPU). */
int tb_plan_open(struct tb_plan *p, char *err, size_t errlen);

/* Execute every run and predict line not yet in the results, appending their rows.
 * Returns 0 (see *n: failed runs are counted, not fatal) or TB_EFAIL with a message (a
 * write error: nothing more runs). */
int tb_plan_execute(struct tb_plan *p, struct tb_run_counts *n, char *err, size_t errlen);

void tb_plan_release(struct tb_plan *p);

/* ---- inside the plan (tb_run.c, tb_run_serve.c) ---- */

/* neuron-monitor beside a run on this machine's Neuron devices (a serving level, a
 * PyTorch run on xla); NULL (said why on stderr) when it cannot run. */
tb_neuron_monitor_t tb_plan_monitor_start(const struct tb_plan *p);
/* Stop m (NULL: nothing) and turn its summary into at most cap rows of x (x NULL: none):
 * NeuronCore utilisation (the mean, the maximum in the notes), device memory, the
 * devices' power as a percentage of their maximum (never watts). Returns how many. */
int tb_plan_monitor_stop(tb_neuron_monitor_t m, struct tb_record_extra *x, int cap);

/* Whether run id is already in p's results or in the files p resumes from (the resume
 * key): 1, 0 not, -1 with a message (a results file that cannot be read). */
int tb_plan_has_run(const struct tb_plan *p, const char *id, char *err, size_t errlen);
/* The same, said: 1 (said on stderr with tag, n->skipped counted), 0 not, -1 (said). */
int tb_plan_already(const struct tb_plan *p, const char *id, const char *tag,
                    struct tb_run_counts *n);

/* The tag of the next n measurements of the plan into tag: "3/19", or "15-19/19" for
 * several; the count of those started advances by n. */
void tb_plan_next(struct tb_plan *p, int n, char *tag, size_t len);
/* p's progress lines for the run tag id (set in p->progress.pg); NULL when off. */
struct tb_progress *tb_plan_progress(struct tb_plan *p, const char *tag, const char *id);
/* How many measurements serving run spec is: one per load level. */
int tb_plan_serve_levels(const struct tb_run_spec *spec);
/* On a machine with Neuron devices, the free space the random safetensors weights of p's
 * recipe runs need (those without a model_path whose folder does not hold them yet),
 * checked against p->out's file system before anything is written, and said. Returns
 * TB_OK, or TB_EINPUT with the bytes needed and free in the message. */
int tb_plan_serve_space(const struct tb_plan *p, char *err, size_t errlen);

/* Load the price catalogue and the performance model into p (have_model). Returns 0 or
 * -1 with a message. */
int tb_plan_load_model(struct tb_plan *p, char *err, size_t errlen);
/* The model executor on sc, its rows appended under run_id. Returns 1 when recorded, 0
 * when the model could not predict it (the reason printed), -1 on a write error. */
int tb_plan_run_model(const struct tb_plan *p, const struct tb_scenario *sc, const char *metric,
                      const char *run_id, char *err, size_t errlen);
/* Serving run i (phase serve): its server started when it names one, each load level
 * not yet in the results measured by the endpoint executor, the model's prediction of
 * each closed-loop level on a catalogue target, the server stopped. Failed levels are
 * counted in n. Returns 0, or -1 on a write error (said). */
int tb_plan_serve(struct tb_plan *p, size_t i, struct tb_run_counts *n);
/* Training run i through PyTorch (executor=pytorch, tb_run_torch.c): unless already in
 * the results, the training script under torchrun (the pytorch executor through
 * tb_measure), its rows appended with the script's environment as their provenance,
 * compile_s, and MFU against the catalogue chip the device is (pricing/chips.csv, the
 * precision's dense peak). Unavailable here (no torch, no device): counted unsupported,
 * the reason said, unless --executor pytorch asked for it (TB_RUN_PYTORCH: then it
 * failed, as --executor cuda without a GPU). Returns 0 (done, skipped or unavailable),
 * 1 when the run failed, -1 on a write error (said). */
int tb_plan_torch(struct tb_plan *p, size_t i, struct tb_run_counts *n);

#endif
