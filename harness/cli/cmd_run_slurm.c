/*
 * harness/cli/cmd_run_slurm.c: `trnbench run --slurm`, a suite as a Slurm job (run/tb_slurm.h).
 *
 *   --slurm outside an allocation: every value checked, the suite loaded and checked, the
 *            batch script written to DIR/trnbench.sbatch, then `sbatch --parsable` run
 *            (an argv; no shell) and the job id printed and added to DIR/slurm_job.
 *            --no-submit stops after the script.
 *   --slurm inside one (SLURM_JOB_ID set, as in salloc): srun runs the ranks here, then
 *            the rows are assembled, as the batch script does.
 *   --slurm-rank (the script's srun line): this task's share of the suite into
 *            DIR/ranks/results.<rank>.csv (tb_plan_slurm), then DIR/ranks/done.<rank>.
 *   --slurm-assemble (the script's last line): the rank files joined into DIR/results.csv
 *            under the folder's lock.
 *
 * Why srun's exit is the barrier: srun returns when every task of the step has ended,
 * whether it finished, failed or was killed, so the assembly neither waits on a timeout
 * that is too short for a long suite nor hangs on a task that died; it runs in the batch
 * step, on the allocation's first node (where task 0 runs), and joins whatever the
 * tasks recorded, so a job cut off by its time limit leaves rank files the next
 * submission resumes from.
 */
#include "cli.h"
#include "tb_lock.h"
#include "tb_proc.h"
#include "tb_results.h"
#include "tb_run.h"
#include "cmd_run_slurm.h"
#include "tb_slurm.h"
#include "tb_util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WHO "trnbench run"

/* path made absolute (against the current folder; not resolved: it may not exist yet)
 * into abs, then checked for a batch script. Returns 0 or -1 with a message. */
static int absolute(const char *what, const char *path, char *abs, size_t len, char *err,
                    size_t errlen)
{
    char cwd[PATH_MAX];
    if (path[0] == '/') {
        if ((size_t)snprintf(abs, len, "%s", path) >= len)
            return tb_err(err, errlen, "%s: path too long", what);
    } else {
        if (!getcwd(cwd, sizeof cwd))
            return tb_err(err, errlen, "cannot find the current folder: %s", strerror(errno));
        if ((size_t)snprintf(abs, len, "%s/%s", cwd, path) >= len)
            return tb_err(err, errlen, "%s: path too long", what);
    }
    /* "dir/." and "dir/" read as dir */
    for (size_t n = strlen(abs); n > 1 && (abs[n - 1] == '/' || !strcmp(abs + n - 2, "/."));
         n = strlen(abs))
        abs[n - (abs[n - 1] == '/' ? 1 : 2)] = '\0';
    return tb_slurm_check_path(what, abs, err, errlen);
}

/* The command line's Slurm values checked. Returns 0 or -1 with a message. */
static int check_job(const struct tb_run_slurm *o, char *err, size_t errlen)
{
    if (o->job.partition && tb_slurm_check_name("--partition", o->job.partition, true, err, errlen))
        return -1;
    if (o->job.account && tb_slurm_check_name("--account", o->job.account, false, err, errlen))
        return -1;
    if (o->job.time && tb_slurm_check_time(o->job.time, err, errlen))
        return -1;
    return 0;
}

/* The batch script's two lines run here inside an allocation (salloc): srun runs `exe
 * run WORDS...` (words NULL-terminated; one task a node when one_a_node), then the
 * assembly of out. Returns the exit status. */
static int launch_here(const struct tb_run_slurm *o, const char *exe, const char *const *words,
                       bool one_a_node, const char *out)
{
    char nodes[48], tasks[48], err[1024];
    const char *argv[64];
    struct tb_proc_opts po = {.echo = stderr};
    struct tb_proc_result r = {0};
    int k = 0, rc;

    argv[k++] = "srun";
    if (o->have_nodes) {
        snprintf(nodes, sizeof nodes, "--nodes=%ld", o->job.nodes);
        argv[k++] = nodes;
    }
    if (o->have_tasks || one_a_node) {
        snprintf(tasks, sizeof tasks, "--ntasks-per-node=%ld",
                 one_a_node ? 1L : o->job.ntasks_per_node);
        argv[k++] = tasks;
    }
    argv[k++] = "--kill-on-bad-exit=0";
    argv[k++] = exe;
    argv[k++] = "run";
    for (const char *const *w = words; *w && k < 63; w++)
        argv[k++] = *w;
    argv[k] = NULL;
    fprintf(stderr, WHO ": inside Slurm job %s: srun runs the tasks\n", getenv("SLURM_JOB_ID"));
    if (tb_proc_run(argv, &po, &r, err, sizeof err) != 0) {
        fprintf(stderr, WHO ": srun: %s\n", err);
        tb_proc_result_release(&r);
        return 1;
    }
    if (r.out_len)
        fwrite(r.out, 1, r.out_len, stdout);
    if (r.exit_status != 0) {
        char how[256];
        tb_proc_describe(&r, 0, how, sizeof how);
        fprintf(stderr, WHO ": srun %s; assembling what the tasks recorded\n", how);
    }
    rc = r.exit_status == 0 ? 0 : 1;
    tb_proc_result_release(&r);
    {
        int a = tb_run_slurm_assemble(out, true);
        return a ? a : rc;
    }
}

/* Add job id to out/slurm_job (one id a line, the latest last), atomically. */
static int record_job(const char *out, const char *id, char *err, size_t errlen)
{
    char path[PATH_MAX], *old = NULL, *text;
    size_t len = 0;
    int rc;
    if ((size_t)snprintf(path, sizeof path, "%s/" TB_SLURM_JOBID, out) >= sizeof path)
        return tb_err(err, errlen, "--out: folder name too long");
    if (tb_file_exists(path) && tb_read_file(path, &old, &len, err, errlen) != 0)
        return -1;
    text = malloc(len + strlen(id) + 3);
    if (!text) {
        free(old);
        return tb_err(err, errlen, "out of memory");
    }
    snprintf(text, len + strlen(id) + 3, "%s%s%s\n", old ? old : "",
             len && old[len - 1] != '\n' ? "\n" : "", id);
    rc = tb_write_file_atomic(path, text, strlen(text), err, errlen);
    free(old);
    free(text);
    return rc;
}

static int submit(const struct tb_run_slurm *o, const char *out, const char *script);

int tb_run_slurm_submit(const struct tb_run_slurm *o, const char *suite_name, const char *out_arg)
{
    struct tb_plan plan;
    struct tb_run_spec none;
    char err[2048] = "", out[PATH_MAX], suite[PATH_MAX], exe[PATH_MAX], script[PATH_MAX + 32];
    char *text = NULL;
    int rc = 2;

    memset(&plan, 0, sizeof plan);
    if (!suite_name) {
        fprintf(stderr, WHO ": --slurm runs a suite: give --suite NAME|FILE\n");
        return 2;
    }
    if (!o->have_nodes && !tb_slurm_inside()) {
        fprintf(stderr, WHO ": --slurm: give --nodes N (the nodes of the job)\n");
        return 2;
    }
    /* every value, then the suite, before anything is written */
    if (check_job(o, err, sizeof err) != 0 ||
        absolute("--out", out_arg, out, sizeof out, err, sizeof err) != 0) {
        fprintf(stderr, WHO ": %s\n", err);
        return 2;
    }
    tb_run_spec_init(&none);
    rc = tb_plan_load(&plan, suite_name, &none, out, TB_RUN_ALL, err, sizeof err);
    if (rc != TB_OK) {
        fprintf(stderr, WHO ": %s\n", err);
        rc = tb_cli_exit_status(rc);
        goto done;
    }
    rc = 2;
    if (absolute("the suite", plan.suite.path, suite, sizeof suite, err, sizeof err) != 0 ||
        tb_self_exe(exe, sizeof exe, err, sizeof err) != 0 ||
        tb_slurm_check_path("this program", exe, err, sizeof err) != 0) {
        fprintf(stderr, WHO ": %s\n", err);
        goto done;
    }
    if (tb_slurm_inside() && o->submit) {
        const char *words[] = {"--slurm-rank", "--suite", suite,
                               "--out",        out,       o->executor ? "--executor" : NULL,
                               o->executor,    NULL};
        tb_plan_release(&plan);
        return launch_here(o, exe, words, false, out);
    }
    text = tb_slurm_script(&o->job, exe, suite, out, o->executor, err, sizeof err);
    snprintf(script, sizeof script, "%s/" TB_SLURM_SCRIPT, out);
    if (!text || tb_mkdir_p(out, err, sizeof err) != 0 ||
        tb_write_file_atomic(script, text, strlen(text), err, sizeof err) != 0) {
        fprintf(stderr, WHO ": %s\n", err);
        rc = 1;
        goto done;
    }
    fprintf(stderr, WHO ": batch script '%s': suite '%s' on %ld node%s, %ld task%s each\n", script,
            plan.suite.name, o->job.nodes, o->job.nodes == 1 ? "" : "s", o->job.ntasks_per_node,
            o->job.ntasks_per_node == 1 ? "" : "s");
    rc = submit(o, out, script);
done:
    free(text);
    tb_plan_release(&plan);
    return rc;
}

/* sbatch script (--no-submit: not), the job id printed and recorded. Returns the exit
 * status. */
static int submit(const struct tb_run_slurm *o, const char *out, const char *script)
{
    char err[1024];
    int rc;
    if (!o->submit) {
        fprintf(stderr, WHO ": not submitted (--no-submit): sbatch '%s' submits it\n", script);
        return 0;
    }
    {
        const char *argv[] = {"sbatch", "--parsable", script, NULL};
        struct tb_proc_opts po = {.timeout_s = 300};
        struct tb_proc_result r = {0};
        char id[32], how[256];
        rc = 1;
        if (tb_proc_run(argv, &po, &r, err, sizeof err) != 0) {
            fprintf(stderr, WHO ": sbatch: %s\n", err);
        } else if (r.exit_status != 0) {
            tb_proc_describe(&r, po.timeout_s, how, sizeof how);
            fprintf(stderr, WHO ": sbatch %s: %s\n", how, r.err_tail);
        } else if (tb_slurm_parse_jobid(r.out ? r.out : "", id, sizeof id, err, sizeof err) != 0 ||
                   record_job(out, id, err, sizeof err) != 0) {
            fprintf(stderr, WHO ": %s\n", err);
        } else {
            printf("%s\n", id);
            fprintf(stderr,
                    WHO ": submitted job %s; its rows arrive in '%s/results.csv' when it ends "
                        "(its log: '%s/slurm-%s.out')\n",
                    id, out, out, id);
            rc = 0;
        }
        tb_proc_result_release(&r);
    }
    return rc;
}

/* A path of the workload (what: "--model") made absolute and checked into buf, or a
 * name (no '/': a catalogue model, an interpreter on the PATH) checked as a Slurm name.
 * Returns the word for the script, or NULL with a message. */
static const char *path_or_name(const char *what, const char *v, bool name_ok, char *buf,
                                size_t len, char *err, size_t errlen)
{
    if (name_ok && !strchr(v, '/'))
        return tb_slurm_check_name(what, v, false, err, errlen) ? NULL : v;
    return absolute(what, v, buf, len, err, errlen) ? NULL : buf;
}

int tb_run_slurm_train(const struct tb_run_slurm *o, const struct tb_run_spec *one,
                       const char *out_arg)
{
    enum { NUM = 8 };
    struct tb_plan plan;
    struct tb_run_spec r = *one;
    struct tb_slurm_job job = o->job;
    char err[2048] = "", out[PATH_MAX], exe[PATH_MAX], script[PATH_MAX + 32];
    char model[PATH_MAX], python[PATH_MAX], train[PATH_MAX], num[NUM][40], id[400];
    const char *words[48], *m, *py, *ts = NULL;
    char *text = NULL;
    int k = 0, rc = 2;

    memset(&plan, 0, sizeof plan);
    if (!r.torch.on || r.phase != TB_PHASE_TRAIN) {
        fprintf(stderr, WHO ": --slurm with a workload trains it across the nodes through "
                            "PyTorch: give --executor pytorch --phase train (or --suite for a "
                            "suite's runs shared among the tasks)\n");
        return 2;
    }
    if (!o->have_nodes && !tb_slurm_inside()) {
        fprintf(stderr, WHO ": --slurm: give --nodes N (the nodes of the job)\n");
        return 2;
    }
    if (o->have_tasks) {
        fprintf(stderr, WHO ": --slurm --executor pytorch runs one task a node, whose torchrun "
                            "starts --nproc-per-node processes: not --ntasks-per-node\n");
        return 2;
    }
    /* every value checked, and the workload as the nodes will run it, before anything
     * is written */
    r.torch.nnodes = o->have_nodes ? (int)o->job.nodes : 1;
    if (check_job(o, err, sizeof err) != 0 ||
        absolute("--out", out_arg, out, sizeof out, err, sizeof err) != 0 ||
        !(m = path_or_name("--model", r.model, !strstr(r.model, ".model"), model, sizeof model, err,
                           sizeof err)) ||
        !(py = path_or_name("--python", r.torch.python, true, python, sizeof python, err,
                            sizeof err)) ||
        (r.torch.script[0] && !(ts = path_or_name("--train-script", r.torch.script, false, train,
                                                  sizeof train, err, sizeof err))) ||
        tb_run_spec_check(&r, "the command line", err, sizeof err) != 0) {
        fprintf(stderr, WHO ": %s\n", err);
        return 2;
    }
    rc = tb_plan_load(&plan, NULL, &r, out, TB_RUN_PYTORCH, err, sizeof err);
    if (rc != TB_OK) {
        fprintf(stderr, WHO ": %s\n", err);
        rc = tb_cli_exit_status(rc);
        goto done;
    }
    rc = 2;
    if (tb_self_exe(exe, sizeof exe, err, sizeof err) != 0 ||
        tb_slurm_check_path("this program", exe, err, sizeof err) != 0) {
        fprintf(stderr, WHO ": %s\n", err);
        goto done;
    }
    /* the node task's command line, from the values checked: numbers printed here,
     * names and paths checked above, each quoted in the script */
    snprintf(num[0], sizeof num[0], "%d", r.seq_in);
    snprintf(num[1], sizeof num[1], "%d", r.batch);
    snprintf(num[2], sizeof num[2], "%d", r.reps);
    snprintf(num[3], sizeof num[3], "%d", r.warmup);
    snprintf(num[4], sizeof num[4], "%llu", (unsigned long long)r.seed);
    snprintf(num[5], sizeof num[5], "%d", r.layers);
    snprintf(num[6], sizeof num[6], "%d", r.torch.nproc_per_node);
    snprintf(num[7], sizeof num[7], "%.17g", r.torch.timeout_s);
    words[k++] = "--slurm-node";
    words[k++] = "--executor";
    words[k++] = "pytorch";
    words[k++] = "--phase";
    words[k++] = "train";
    words[k++] = "--model";
    words[k++] = m;
    if (r.layers) {
        words[k++] = "--layers";
        words[k++] = num[5];
    }
    words[k++] = "--seq-in";
    words[k++] = num[0];
    words[k++] = "--batch";
    words[k++] = num[1];
    words[k++] = "--reps";
    words[k++] = num[2];
    words[k++] = "--warmup";
    words[k++] = num[3];
    words[k++] = "--seed";
    words[k++] = num[4];
    words[k++] = "--precision";
    words[k++] = r.precision;
    words[k++] = "--nproc-per-node";
    words[k++] = num[6];
    words[k++] = "--torch-device";
    words[k++] = r.torch.device;
    words[k++] = "--python";
    words[k++] = py;
    if (ts) {
        words[k++] = "--train-script";
        words[k++] = ts;
    }
    words[k++] = "--train-timeout";
    words[k++] = num[7];
    words[k++] = "--out";
    words[k++] = out;
    words[k] = NULL;
    if (tb_slurm_inside() && o->submit) {
        tb_plan_release(&plan);
        return launch_here(o, exe, words, true, out);
    }
    job.ntasks_per_node = 1;
    job.exclusive = true;
    snprintf(id, sizeof id, "the training of %.300s", r.model);
    text = tb_slurm_script_words(
        &job, exe, out, words, id,
        "# one task a node: each starts torchrun (--nnodes=SLURM_NNODES,\n"
        "# --node_rank=SLURM_NODEID, a c10d rendezvous at the first node of the job, the job\n"
        "# id as its id) for --nproc-per-node processes; the node with the script's rank 0\n"
        "# records the rows into ranks/results.<task>.csv. srun returns once every task\n"
        "# has ended, however it ended\n",
        err, sizeof err);
    snprintf(script, sizeof script, "%s/" TB_SLURM_SCRIPT, out);
    if (!text || tb_mkdir_p(out, err, sizeof err) != 0 ||
        tb_write_file_atomic(script, text, strlen(text), err, sizeof err) != 0) {
        fprintf(stderr, WHO ": %s\n", err);
        rc = 1;
        goto done;
    }
    fprintf(stderr,
            WHO ": batch script '%s': the training of %s on %ld node%s, torchrun with %d "
                "process%s each\n",
            script, r.model, job.nodes, job.nodes == 1 ? "" : "s", r.torch.nproc_per_node,
            r.torch.nproc_per_node == 1 ? "" : "es");
    rc = submit(o, out, script);
done:
    free(text);
    tb_plan_release(&plan);
    return rc;
}

int tb_run_slurm_rank_lock(struct tb_lock *l, const char *out, long rank, bool wait, char *err,
                           size_t errlen)
{
    char lock[PATH_MAX], file[PATH_MAX];
    if ((size_t)snprintf(lock, sizeof lock, "%s/ranks/.results.%ld.lock", out, rank) >=
            sizeof lock ||
        tb_slurm_rank_results(out, rank, file, sizeof file) != 0)
        return tb_err(err, errlen, "--out: folder name too long");
    return tb_results_lock_file(l, lock, file, file, "it (another task of this rank)",
                                WHO " --slurm-rank", wait, err, errlen);
}

int tb_run_slurm_done(const char *out, const struct tb_slurm_task *t, const struct tb_run_counts *n,
                      char *err, size_t errlen)
{
    char path[PATH_MAX], text[512];
    if (tb_slurm_rank_done(out, t->rank, path, sizeof path) != 0)
        return tb_err(err, errlen, "--out: folder name too long");
    snprintf(text, sizeof text,
             "job %s rank %ld of %ld node %s: %d measured, %d modeled, %d already there, %d "
             "failed, %d not for an executor here\n",
             t->job, t->rank, t->ranks, t->node, n->measured, n->modeled, n->skipped, n->failed,
             n->unsupported);
    return tb_write_file_atomic(path, text, strlen(text), err, errlen);
}

int tb_run_slurm_assemble(const char *out, bool wait)
{
    struct tb_lock lock = {0};
    char err[2048] = "";
    size_t added, files, runs;
    long *ranks = NULL, n;
    int rc = 1;

    switch (tb_results_lock(&lock, out, WHO " --slurm-assemble", wait, err, sizeof err)) {
    case 0:
        break;
    case 1:
        fprintf(stderr, WHO ": %s (--no-wait)\n", err);
        return 1;
    default:
        fprintf(stderr, WHO ": %s\n", err);
        return 1;
    }
    /* what each task said it did */
    n = tb_slurm_rank_list(out, &ranks, err, sizeof err);
    for (long k = 0; k < n; k++) {
        char path[PATH_MAX], *text = NULL, e[256];
        size_t len;
        if (tb_slurm_rank_done(out, ranks[k], path, sizeof path) == 0 &&
            tb_read_file(path, &text, &len, e, sizeof e) == 0)
            fprintf(stderr, WHO ": %s", text);
        else
            fprintf(stderr, WHO ": rank %ld: no done marker (it did not finish): its rows so far\n",
                    ranks[k]);
        free(text);
    }
    free(ranks);
    if (n < 0 || tb_slurm_assemble(out, &added, &files, &runs, err, sizeof err) != 0) {
        fprintf(stderr, WHO ": %s\n", err);
        goto out;
    }
    fprintf(stderr, WHO ": %zu row%s of %zu run%s from %zu rank file%s added to '%s/results.csv'\n",
            added, added == 1 ? "" : "s", runs, runs == 1 ? "" : "s", files, files == 1 ? "" : "s",
            out);
    rc = 0;
out:
    tb_lock_release(&lock);
    return rc;
}
