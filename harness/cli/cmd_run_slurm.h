/*
 * harness/cli/cmd_run_slurm.h: the Slurm paths of `trnbench run` (cmd_run_slurm.c), called by
 * cmd_run.c once the options are parsed.
 */
#ifndef CMD_RUN_SLURM_H
#define CMD_RUN_SLURM_H

#include "tb_lock.h"
#include "tb_run.h"
#include "tb_slurm.h"

#include <stdbool.h>

/* The Slurm options of the command line. */
struct tb_run_slurm {
    bool on;                 /* --slurm */
    bool rank;               /* --slurm-rank: a task of the job's srun */
    bool node;               /* --slurm-node: a node's task of a training across nodes */
    bool assemble;           /* --slurm-assemble: the rank files into results.csv */
    bool submit;             /* false: --no-submit */
    bool have_nodes;         /* --nodes given */
    bool have_tasks;         /* --ntasks-per-node given */
    struct tb_slurm_job job; /* the values; borrowed strings */
    const char *executor;    /* borrowed: --executor as given, NULL none */
};

/* --slurm: check, write DIR/trnbench.sbatch and submit it (or, inside an allocation, run
 * its ranks with srun and assemble). Returns the exit status (2: bad input, nothing
 * written or submitted). */
int tb_run_slurm_submit(const struct tb_run_slurm *o, const char *suite_name, const char *out);

/* --slurm with a workload (one, --executor pytorch --phase train): its training across
 * the job's nodes, one task a node starting torchrun (`run --slurm-node`); the script
 * written and submitted, or inside an allocation srun and the assembly run here. Returns
 * the exit status (2: bad input, nothing written or submitted). */
int tb_run_slurm_train(const struct tb_run_slurm *o, const struct tb_run_spec *one,
                       const char *out);

/* --slurm-assemble: the rank files of out into out/results.csv under the folder's lock
 * (waiting for it, unless wait is false). Returns the exit status. */
int tb_run_slurm_assemble(const char *out, bool wait);

/* A task's lock on its rank file (out/ranks/.results.<rank>.lock), and the temporaries a
 * killed task left removed. Returns 0, 1 (held elsewhere and wait false), or -1 with a
 * message. */
int tb_run_slurm_rank_lock(struct tb_lock *l, const char *out, long rank, bool wait, char *err,
                           size_t errlen);

/* out/ranks/done.<rank>: what task t did (n). Returns 0 or -1 with a message. */
int tb_run_slurm_done(const char *out, const struct tb_slurm_task *t, const struct tb_run_counts *n,
                      char *err, size_t errlen);

#endif
