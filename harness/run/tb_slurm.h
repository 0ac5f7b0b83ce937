/*
 * harness/run/tb_slurm.h: a suite run as a Slurm job (`trnbench run --slurm`). Three parts:
 *
 *   submission  outside an allocation: each value of the command line checked (names of
 *               a strict charset, a time in one of Slurm's formats, counts in range,
 *               absolute paths of a strict charset), a bash batch script written to
 *               DIR/trnbench.sbatch whose one srun line runs this binary's ranks and whose
 *               last line assembles their rows; sbatch itself is run by the command
 *               (cmd_run_slurm.c) with an argv, never a shell.
 *   a rank      inside the allocation (SLURM_JOB_ID set): the task's place in the job read
 *               from Slurm's environment (tb_slurm_task_from_env); the task runs the runs
 *               of the suite whose index i has i % ranks == rank, into
 *               DIR/ranks/results.<rank>.csv, each row stamped with nodes, ranks, rank,
 *               node and slurm_job (results.csv's last columns, tb_results.h).
 *   assembly    after srun has returned (every task ended, however): the rank files'
 *               rows joined into DIR/results.csv in one atomic write under the folder's
 *               lock, a run already there or in an earlier rank file never twice.
 *
 * Ownership: nothing here keeps a pointer past the call; text returned by
 * tb_slurm_script is malloc'ed and the caller's to free.
 */
#ifndef TB_SLURM_H
#define TB_SLURM_H

#include <stdbool.h>
#include <stddef.h>

#define TB_SLURM_MAX_NODES          100000L /* --nodes: at most */
#define TB_SLURM_MAX_TASKS_PER_NODE 4096L   /* --ntasks-per-node: at most */
#define TB_SLURM_MAX_NAME           64      /* a partition or account name: at most, in bytes */
#define TB_SLURM_SCRIPT             "trnbench.sbatch" /* the batch script, in the out folder */
#define TB_SLURM_JOBID              "slurm_job" /* the submitted job's id, in the out folder */

/* What to ask Slurm for. */
struct tb_slurm_job {
    long nodes;            /* --nodes N, 1..TB_SLURM_MAX_NODES */
    long ntasks_per_node;  /* --ntasks-per-node K, 1..TB_SLURM_MAX_TASKS_PER_NODE */
    const char *partition; /* borrowed: --partition, NULL none */
    const char *time;      /* borrowed: --time, NULL none (the partition's default) */
    const char *account;   /* borrowed: --account, NULL none */
    bool exclusive;        /* #SBATCH --exclusive and --wait-all-nodes=1: whole nodes, all
                              up before the script starts (a training across them) */
};

/* Check a partition or account name (what: "--partition"): letters, digits, '.', '_' and
 * '-', starting with a letter or digit, at most TB_SLURM_MAX_NAME bytes; a partition may
 * be a comma-separated list of such names (sbatch's own form). Returns 0 or -1 with a
 * message naming what and the offending character. */
int tb_slurm_check_name(const char *what, const char *s, bool list, char *err, size_t errlen);

/* Check a time limit in one of sbatch's formats: "M", "M:S", "H:M:S", "D-H", "D-H:M",
 * "D-H:M:S" (digits only; seconds and minutes after the first field below 60, hours after
 * a day below 24), or "UNLIMITED"/"INFINITE". Returns 0 or -1 with a message. */
int tb_slurm_check_time(const char *s, char *err, size_t errlen);

/* Check a path that goes into the script (what: "--out"): absolute, of letters, digits
 * and "/._+-,=@", no "%" (sbatch's file patterns). Returns 0 or -1 with a message. */
int tb_slurm_check_path(const char *what, const char *s, char *err, size_t errlen);

/* s single-quoted for bash into out ('it'\''s'). Returns 0, or -1 when out is short. */
int tb_slurm_quote(const char *s, char *out, size_t len);

/* The batch script for job j: exe (this program, absolute) runs suite (an absolute
 * path) into out (absolute), with executor ("cpu", "all", ...; NULL: the default). Every
 * value must have passed the checks above; each is quoted all the same. Returns a
 * malloc'ed NUL-terminated text, or NULL with a message. */
char *tb_slurm_script(const struct tb_slurm_job *j, const char *exe, const char *suite,
                      const char *out, const char *executor, char *err, size_t errlen);

/* The batch script of job j whose one srun line runs `exe run WORDS...` (words:
 * NULL-terminated; an option's name, "--" and lower-case letters, digits and '-', as it
 * is, every other word quoted) and whose last line assembles the rank files of out. what
 * names the work for the header ("the suite below"), step is the comment before srun
 * (whole lines, each ending in a newline). Every value must have passed the checks
 * above. Returns a malloc'ed text, or NULL with a message. */
char *tb_slurm_script_words(const struct tb_slurm_job *j, const char *exe, const char *out,
                            const char *const *words, const char *what, const char *step, char *err,
                            size_t errlen);

/* The job id sbatch --parsable printed ("123" or "123;cluster"): its digits into id.
 * Returns 0, or -1 with a message when it is not one. */
int tb_slurm_parse_jobid(const char *text, char *id, size_t idlen, char *err, size_t errlen);

/* One task of a job, from Slurm's environment. The strings are what the rows record. */
struct tb_slurm_task {
    long rank, ranks;                          /* SLURM_PROCID, SLURM_NTASKS: 0 <= rank < ranks */
    long nodes, nodeid;                        /* SLURM_NNODES, SLURM_NODEID */
    char job[32];                              /* SLURM_JOB_ID, digits */
    char node[TB_SLURM_MAX_NAME + 192];        /* SLURMD_NODENAME (a host name) */
    char s_rank[24], s_ranks[24], s_nodes[24]; /* the numbers as written */
    /* a training across the nodes (tb_slurm_torch_node): the rows' ranks_per_node
     * (torchrun's processes a node) and instances (the nodes); "" otherwise */
    char s_ranks_per_node[24], s_instances[24];
};

/* Whether this process runs inside a Slurm allocation (SLURM_JOB_ID set). */
bool tb_slurm_inside(void);

/* Read the task from the environment: every variable present and well formed (numbers in
 * range, rank below ranks, a host name of a host name's characters). Returns 0, or -1 with
 * a message naming the variable. */
int tb_slurm_task_from_env(struct tb_slurm_task *t, char *err, size_t errlen);

/* The first node of the job, the first host of `scontrol show hostnames
 * "$SLURM_JOB_NODELIST"` (run as an argv), into host, and its address as Slurm reaches
 * it (NodeAddr of `scontrol -o show node HOST`: an IP on ParallelCluster, the name where
 * none is set) into addr. Returns 0, or -1 with a message. */
int tb_slurm_first_node(char *host, size_t hlen, char *addr, size_t alen, char *err, size_t errlen);

/* The c10d rendezvous port of job id: TB_SLURM_RDZV_PORT + id mod 1000, the same on every
 * node of the job and different for jobs running together. */
#define TB_SLURM_RDZV_PORT 29400
int tb_slurm_rdzv_port(const char *job);

/* Make t (from the environment, one task a node: SLURM_NTASKS = SLURM_NNODES) the node
 * task of a training across the job's nodes with nproc processes a node: o gets nnodes,
 * node_rank (SLURM_NODEID), the rendezvous endpoint (the first node, the job's port) and
 * id (the job id); the rows t stamps say ranks = nodes x nproc, rank 0 (the script's
 * rank that reports), ranks_per_node nproc and instances the nodes (t->rank stays the
 * task's: its rank file). Returns 0, or -1 with a message. */
struct tb_torch_opts;
int tb_slurm_torch_node(struct tb_slurm_task *t, struct tb_torch_opts *o, char *err, size_t errlen);

/* Whether the suite's item i (runs, then predict lines, counted together) is t's
 * (every item for a node's task of a training across the nodes). */
bool tb_slurm_mine(const struct tb_slurm_task *t, size_t i);

/* A rank's files: DIR/ranks/results.<rank>.csv and DIR/ranks/done.<rank>. Returns 0, or -1
 * when the path does not fit. */
int tb_slurm_rank_results(const char *out, long rank, char *path, size_t len);
int tb_slurm_rank_done(const char *out, long rank, char *path, size_t len);

/* The ranks N of the files out/ranks/results.<N>.csv, ascending, into a malloc'ed array
 * (*ranks; free it). Returns how many (0 when there is no such folder), or -1 with a
 * message. */
long tb_slurm_rank_list(const char *out, long **ranks, char *err, size_t errlen);

/* Join the rank files of out (DIR/ranks/results.<N>.csv, in order of N) into
 * out/results.csv in one atomic write: the rows of each run id that is neither in
 * results.csv nor in an earlier rank file. The caller holds the folder's lock
 * (tb_results_lock). *added gets the rows added, *files the rank files read, *runs the
 * runs added. Returns 0, or -1 with a message (results.csv unchanged). */
int tb_slurm_assemble(const char *out, size_t *added, size_t *files, size_t *runs, char *err,
                      size_t errlen);

#endif
