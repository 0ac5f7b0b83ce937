/* harness/run/tb_slurm.c: see tb_slurm.h. */
#include "tb_slurm.h"

#include "tb_csv.h"
#include "tb_proc.h"
#include "tb_results.h"
#include "tb_suite.h"
#include "tb_util.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks of what goes into the script ---- */

static bool name_char(int c)
{
    return isalnum(c) || c == '.' || c == '_' || c == '-';
}

int tb_slurm_check_name(const char *what, const char *s, bool list, char *err, size_t errlen)
{
    size_t len = 0;
    if (!*s)
        return tb_err(err, errlen, "option '%s': empty", what);
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (list && c == ',' && len > 0 && p[1]) {
            len = 0;
            continue;
        }
        if (!name_char(c) || (len == 0 && !isalnum(c))) {
            if (isgraph(c))
                return tb_err(err, errlen,
                              "option '%s': '%s': character '%c' at %zu is not allowed (a Slurm "
                              "name: letters, digits, '.', '_', '-'%s)",
                              what, s, c, (size_t)(p - s) + 1,
                              list ? ", names separated by ','" : "");
            return tb_err(err, errlen,
                          "option '%s': byte 0x%02x at %zu is not allowed (a Slurm name: letters, "
                          "digits, '.', '_', '-'%s)",
                          what, c, (size_t)(p - s) + 1, list ? ", names separated by ','" : "");
        }
        if (++len > TB_SLURM_MAX_NAME)
            return tb_err(err, errlen, "option '%s': a name longer than %d characters", what,
                          TB_SLURM_MAX_NAME);
    }
    return 0;
}

/* Digits of s up to a separator in seps (or the end) as a number below lim (0: no
 * limit); *s moves past them. Returns 0 or -1. */
static int time_field(const char **s, long lim)
{
    char *end;
    long v;
    if (!isdigit((unsigned char)**s))
        return -1;
    v = strtol(*s, &end, 10);
    if (end - *s > 7 || (lim && v >= lim))
        return -1;
    *s = end;
    return 0;
}

int tb_slurm_check_time(const char *s, char *err, size_t errlen)
{
    const char *p = s;
    int colons = 0;
    bool day = strchr(s, '-') != NULL;

    if (!strcmp(s, "UNLIMITED") || !strcmp(s, "INFINITE"))
        return 0;
    for (const char *q = s; *q; q++)
        colons += *q == ':';
    if (time_field(&p, 0) != 0)
        goto bad;
    if (colons > 2)
        goto bad;
    if (day) { /* D-H, D-H:M, D-H:M:S: the hours below 24 */
        if (*p != '-')
            goto bad;
        p++;
        if (time_field(&p, 24) != 0)
            goto bad;
    }
    /* the fields after a colon (M:S, H:M:S, D-H:M, D-H:M:S) below 60 */
    for (int k = 0; k < colons; k++) {
        if (*p != ':')
            goto bad;
        p++;
        if (time_field(&p, 60) != 0)
            goto bad;
    }
    if (*p == '\0')
        return 0;
bad:
    return tb_err(err, errlen,
                  "option '--time': '%.64s%s' is not a Slurm time (M, M:S, H:M:S, D-H, D-H:M, "
                  "D-H:M:S, UNLIMITED; minutes and seconds below 60, hours below 24 after a day)",
                  s, strlen(s) > 64 ? "..." : "");
}

int tb_slurm_check_path(const char *what, const char *s, char *err, size_t errlen)
{
    if (s[0] != '/')
        return tb_err(err, errlen, "%s: '%s' is not an absolute path", what, s);
    if (strlen(s) >= PATH_MAX - 64)
        return tb_err(err, errlen, "%s: path too long", what);
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (!(isalnum(c) || strchr("/._+-,=@", c)))
            return tb_err(err, errlen,
                          isgraph(c) ? "%s: '%s': character '%c' at %zu is not allowed in a path "
                                       "of a batch script (letters, digits and /._+-,=@)"
                                     : "%s: '%s': byte 0x%02x at %zu is not allowed in a path of "
                                       "a batch script (letters, digits and /._+-,=@)",
                          what, s, c, (size_t)(p - s) + 1);
    }
    return 0;
}

int tb_slurm_quote(const char *s, char *out, size_t len)
{
    size_t k = 0;
#define PUT(ch)                                                                                    \
    do {                                                                                           \
        if (k + 1 >= len)                                                                          \
            return -1;                                                                             \
        out[k++] = (ch);                                                                           \
    } while (0)
    PUT('\'');
    for (const char *p = s; *p; p++) {
        if (*p == '\'') {
            /* close, an escaped quote, open again */
            PUT('\'');
            PUT('\\');
            PUT('\'');
            PUT('\'');
        } else {
            PUT(*p);
        }
    }
    PUT('\'');
#undef PUT
    out[k] = '\0';
    return 0;
}

/* ---- the script ---- */

/* Whether word is an option's name ("--slurm-rank": '-' then lower-case letters, digits
 * and '-'), written as it is; every other word is quoted. */
static bool option_word(const char *w)
{
    if (strncmp(w, "--", 2) != 0 || !w[2])
        return false;
    for (const char *p = w + 2; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-'))
            return false;
    return true;
}

char *tb_slurm_script_words(const struct tb_slurm_job *j, const char *exe, const char *out,
                            const char *const *words, const char *what, const char *step, char *err,
                            size_t errlen)
{
    char qexe[PATH_MAX * 4 + 3], qout[PATH_MAX * 4 + 3], q[PATH_MAX * 4 + 3];
    char qpart[TB_SLURM_MAX_NAME * 64], qtime[200], qacct[TB_SLURM_MAX_NAME * 4 + 3];
    char opts[TB_SLURM_MAX_NAME * 80 + 256];
    char *text = NULL;
    size_t len = 0;
    FILE *f;

    if (tb_slurm_quote(exe, qexe, sizeof qexe) || tb_slurm_quote(out, qout, sizeof qout) ||
        tb_slurm_quote(j->partition ? j->partition : "", qpart, sizeof qpart) ||
        tb_slurm_quote(j->time ? j->time : "", qtime, sizeof qtime) ||
        tb_slurm_quote(j->account ? j->account : "", qacct, sizeof qacct))
        return tb_err(err, errlen, "a value too long for the batch script"), NULL;
    /* the #SBATCH lines: sbatch reads them itself (no shell); it takes a quoted value
     * as the value without its quotes */
    snprintf(opts, sizeof opts,
             "#SBATCH --nodes=%ld\n#SBATCH --ntasks-per-node=%ld\n%s%s%s%s%s%s%s%s%s%s", j->nodes,
             j->ntasks_per_node,
             j->exclusive ? "#SBATCH --exclusive\n#SBATCH --wait-all-nodes=1\n" : "",
             j->partition ? "#SBATCH --partition=" : "", j->partition ? qpart : "",
             j->partition ? "\n" : "", j->time ? "#SBATCH --time=" : "", j->time ? qtime : "",
             j->time ? "\n" : "", j->account ? "#SBATCH --account=" : "", j->account ? qacct : "",
             j->account ? "\n" : "");
    f = open_memstream(&text, &len);
    if (!f)
        return tb_err(err, errlen, "out of memory"), NULL;
    fprintf(f,
            "#!/bin/bash\n"
            "# Written by `trnbench run --slurm`: %s on %ld node%s, %ld task%s each,\n"
            "# into the folder below. Each value was checked (Slurm names of letters, digits,\n"
            "# '.', '_', '-'; a Slurm time; absolute paths of letters, digits and /._+-,=@) and\n"
            "# is quoted all the same. Submit it again to resume: runs already recorded are\n"
            "# skipped.\n"
            "#SBATCH --job-name=trnbench\n"
            "%s"
            "#SBATCH --output=%s/slurm-%%j.out\n"
            "#SBATCH --open-mode=append\n"
            "\n"
            "%s"
            "srun --kill-on-bad-exit=0 %s run",
            what, j->nodes, j->nodes == 1 ? "" : "s", j->ntasks_per_node,
            j->ntasks_per_node == 1 ? "" : "s", opts, out, step, qexe);
    for (const char *const *w = words; *w; w++) {
        if (option_word(*w)) {
            fprintf(f, " %s", *w);
        } else if (tb_slurm_quote(*w, q, sizeof q) != 0) {
            fclose(f);
            free(text);
            return tb_err(err, errlen, "a value too long for the batch script"), NULL;
        } else {
            fprintf(f, " %s", q);
        }
    }
    fprintf(f,
            "\n"
            "rc=$?\n"
            "# then one results.csv from the rank files, under the folder's lock\n"
            "%s run --slurm-assemble --out %s || rc=$?\n"
            "exit $rc\n",
            qexe, qout);
    if (fclose(f) != 0) {
        free(text);
        return tb_err(err, errlen, "out of memory"), NULL;
    }
    return text;
}

char *tb_slurm_script(const struct tb_slurm_job *j, const char *exe, const char *suite,
                      const char *out, const char *executor, char *err, size_t errlen)
{
    const char *words[] = {"--slurm-rank", "--suite", suite,
                           "--out",        out,       executor ? "--executor" : NULL,
                           executor,       NULL};
    return tb_slurm_script_words(j, exe, out, words, "the suite below",
                                 "# every task runs its share of the suite into "
                                 "ranks/results.<rank>.csv; srun\n"
                                 "# returns once every task has ended, however it ended\n",
                                 err, errlen);
}

int tb_slurm_parse_jobid(const char *text, char *id, size_t idlen, char *err, size_t errlen)
{
    size_t n = 0;
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    while (isdigit((unsigned char)p[n]))
        n++;
    if (n == 0 || n >= idlen || n > 20 || (p[n] && p[n] != ';' && !isspace((unsigned char)p[n])))
        return tb_err(err, errlen, "sbatch --parsable printed no job id: '%.80s'", text);
    memcpy(id, p, n);
    id[n] = '\0';
    return 0;
}

/* ---- a task inside the job ---- */

bool tb_slurm_inside(void)
{
    const char *j = getenv("SLURM_JOB_ID");
    return j && *j;
}

static int env_long(const char *name, long lo, long hi, long *v, char *err, size_t errlen)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return tb_err(err, errlen,
                      "inside a Slurm job, but %s is not set (is this a task of srun?)", name);
    if (tb_parse_long(s, lo, hi, v) != 0)
        return tb_err(err, errlen,
                      "environment variable %s: '%.40s' is not a number from %ld to %ld", name, s,
                      lo, hi);
    return 0;
}

int tb_slurm_task_from_env(struct tb_slurm_task *t, char *err, size_t errlen)
{
    const long maxt = TB_SLURM_MAX_NODES * TB_SLURM_MAX_TASKS_PER_NODE;
    const char *job = getenv("SLURM_JOB_ID"), *node = getenv("SLURMD_NODENAME");
    long jobid;

    memset(t, 0, sizeof *t);
    if (!job || tb_parse_long(job, 1, 999999999999L, &jobid) != 0)
        return tb_err(err, errlen, "environment variable SLURM_JOB_ID: '%.40s' is not a job id",
                      job ? job : "");
    snprintf(t->job, sizeof t->job, "%ld", jobid);
    if (env_long("SLURM_NTASKS", 1, maxt, &t->ranks, err, errlen) ||
        env_long("SLURM_PROCID", 0, t->ranks - 1, &t->rank, err, errlen) ||
        env_long("SLURM_NNODES", 1, TB_SLURM_MAX_NODES, &t->nodes, err, errlen) ||
        env_long("SLURM_NODEID", 0, t->nodes - 1, &t->nodeid, err, errlen))
        return -1;
    if (!node || !*node)
        return tb_err(err, errlen, "inside a Slurm job, but SLURMD_NODENAME is not set");
    if (strlen(node) >= sizeof t->node)
        return tb_err(err, errlen, "environment variable SLURMD_NODENAME: too long");
    for (const char *p = node; *p; p++)
        if (!name_char((unsigned char)*p))
            return tb_err(err, errlen,
                          "environment variable SLURMD_NODENAME: '%.80s' is not a host name", node);
    snprintf(t->node, sizeof t->node, "%s", node);
    snprintf(t->s_rank, sizeof t->s_rank, "%ld", t->rank);
    snprintf(t->s_ranks, sizeof t->s_ranks, "%ld", t->ranks);
    snprintf(t->s_nodes, sizeof t->s_nodes, "%ld", t->nodes);
    return 0;
}

/* Run `scontrol WORDS...` (an argv) into *out (malloc'ed). Returns 0, or -1 with a
 * message naming the command. */
static int scontrol(const char *const *argv, char **out, char *err, size_t errlen)
{
    struct tb_proc_opts po = {.timeout_s = 60};
    struct tb_proc_result r = {0};
    char how[256], cmd[320];
    size_t k = 0;

    *out = NULL;
    for (const char *const *a = argv; *a && k < sizeof cmd; a++)
        k += (size_t)snprintf(cmd + k, sizeof cmd - k, "%s%.120s", k ? " " : "", *a);
    if (tb_proc_run(argv, &po, &r, how, sizeof how) != 0) {
        tb_proc_result_release(&r);
        return tb_err(err, errlen, "'%s': %s", cmd, how);
    }
    if (r.exec_errno || r.exit_status != 0 || r.term_signal || !r.out) {
        tb_proc_describe(&r, po.timeout_s, how, sizeof how);
        tb_err(err, errlen, "'%s' %s: %.300s", cmd, r.exec_errno ? strerror(r.exec_errno) : how,
               r.err_tail);
        tb_proc_result_release(&r);
        return -1;
    }
    *out = r.out;
    r.out = NULL;
    tb_proc_result_release(&r);
    return 0;
}

/* The first n bytes of s as a host name or address (name_char only) into buf. */
static int host_word(const char *s, size_t n, char *buf, size_t len)
{
    if (n == 0 || n >= len)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!name_char((unsigned char)s[i]))
            return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return 0;
}

int tb_slurm_first_node(char *host, size_t hlen, char *addr, size_t alen, char *err, size_t errlen)
{
    const char *list = getenv("SLURM_JOB_NODELIST");
    char *text = NULL;
    const char *p;

    if (!list || !*list)
        return tb_err(err, errlen, "inside a Slurm job, but SLURM_JOB_NODELIST is not set");
    {
        const char *argv[] = {"scontrol", "show", "hostnames", list, NULL};
        if (scontrol(argv, &text, err, errlen) != 0)
            return -1;
    }
    if (host_word(text, strcspn(text, "\n"), host, hlen) != 0) {
        tb_err(err, errlen, "'scontrol show hostnames %.200s' printed no host name: '%.80s'", list,
               text);
        free(text);
        return -1;
    }
    free(text);
    /* its address as Slurm reaches it (NodeAddr), which the other nodes can reach too */
    {
        const char *argv[] = {"scontrol", "-o", "show", "node", host, NULL};
        if (scontrol(argv, &text, err, errlen) != 0)
            return -1;
    }
    p = strstr(text, " NodeAddr=");
    if (!p || host_word(p + 10, strcspn(p + 10, " \n"), addr, alen) != 0) {
        tb_err(err, errlen, "'scontrol -o show node %s' names no NodeAddr of a host's characters",
               host);
        free(text);
        return -1;
    }
    free(text);
    return 0;
}

int tb_slurm_rdzv_port(const char *job)
{
    long id = 0;
    tb_parse_long(job, 0, 999999999999L, &id);
    return TB_SLURM_RDZV_PORT + (int)(id % 1000);
}

int tb_slurm_torch_node(struct tb_slurm_task *t, struct tb_torch_opts *o, char *err, size_t errlen)
{
    char host[TB_SLURM_MAX_NAME + 192], addr[TB_SLURM_MAX_NAME + 192];
    if (t->ranks != t->nodes)
        return tb_err(err, errlen,
                      "a training across the nodes runs one task a node (torchrun starts the "
                      "processes), but this job step has %ld tasks on %ld nodes",
                      t->ranks, t->nodes);
    if (t->nodes > INT_MAX / 4096)
        return tb_err(err, errlen, "SLURM_NNODES: %ld nodes, too many", t->nodes);
    if (tb_slurm_first_node(host, sizeof host, addr, sizeof addr, err, errlen) != 0)
        return -1;
    o->nnodes = (int)t->nodes;
    o->node_rank = (int)t->nodeid;
    snprintf(o->rdzv_endpoint, sizeof o->rdzv_endpoint, "%s:%d", addr, tb_slurm_rdzv_port(t->job));
    snprintf(o->rdzv_id, sizeof o->rdzv_id, "%s", t->job);
    snprintf(t->s_ranks, sizeof t->s_ranks, "%ld", t->nodes * o->nproc_per_node);
    snprintf(t->s_rank, sizeof t->s_rank, "0");
    snprintf(t->s_ranks_per_node, sizeof t->s_ranks_per_node, "%d", o->nproc_per_node);
    snprintf(t->s_instances, sizeof t->s_instances, "%ld", t->nodes);
    return 0;
}

bool tb_slurm_mine(const struct tb_slurm_task *t, size_t i)
{
    if (t->s_ranks_per_node[0])
        return true; /* a training across the nodes: every node's task takes part in each */
    return (long)(i % (size_t)t->ranks) == t->rank;
}

int tb_slurm_rank_results(const char *out, long rank, char *path, size_t len)
{
    return (size_t)snprintf(path, len, "%s/ranks/results.%ld.csv", out, rank) < len ? 0 : -1;
}

int tb_slurm_rank_done(const char *out, long rank, char *path, size_t len)
{
    return (size_t)snprintf(path, len, "%s/ranks/done.%ld", out, rank) < len ? 0 : -1;
}

/* ---- assembly ---- */

long tb_slurm_rank_list(const char *out, long **ranks, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    DIR *d;
    struct dirent *e;
    long n = 0, cap = 0, *v = NULL;
    *ranks = NULL;
    if ((size_t)snprintf(dir, sizeof dir, "%s/ranks", out) >= sizeof dir)
        return tb_err(err, errlen, "--out: folder name too long");
    d = opendir(dir);
    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        long r;
        char num[32];
        size_t k = strlen(e->d_name);
        if (k < 13 || k > 30 || strncmp(e->d_name, "results.", 8) ||
            strcmp(e->d_name + k - 4, ".csv"))
            continue;
        memcpy(num, e->d_name + 8, k - 12);
        num[k - 12] = '\0';
        if (tb_parse_long(num, 0, TB_SLURM_MAX_NODES * TB_SLURM_MAX_TASKS_PER_NODE, &r) != 0)
            continue;
        if (n == cap) {
            long *nv = realloc(v, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *v);
            if (!nv) {
                free(v);
                closedir(d);
                return tb_err(err, errlen, "out of memory");
            }
            v = nv;
        }
        v[n++] = r;
    }
    closedir(d);
    for (long i = 1; i < n; i++) /* insertion sort: a job's ranks */
        for (long k = i; k > 0 && v[k - 1] > v[k]; k--) {
            long t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    *ranks = v;
    return n;
}

/* Whether id is one of the n ids of ids. */
static bool seen(const char *const *ids, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ids[i], id))
            return true;
    return false;
}

int tb_slurm_assemble(const char *out, size_t *added, size_t *files, size_t *runs, char *err,
                      size_t errlen)
{
    char results[PATH_MAX];
    struct tb_csv_table old = {0}, *t = NULL;
    struct tb_result_row *rows = NULL;
    const char **ids = NULL; /* run ids known: results.csv's, then each file's added */
    size_t nids = 0, cap = 0, nrows = 0, rcap = 0;
    long *ranks = NULL, nfiles;
    int rc = -1;

    *added = *files = *runs = 0;
    if ((size_t)snprintf(results, sizeof results, "%s/results.csv", out) >= sizeof results)
        return tb_err(err, errlen, "--out: folder name too long");
    nfiles = tb_slurm_rank_list(out, &ranks, err, errlen);
    if (nfiles < 0)
        return -1;
    t = tb_alloc_array((size_t)nfiles + 1, sizeof *t);
    if (!t) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    if (tb_file_exists(results) && tb_csv_load(&old, results, err, errlen) != 0)
        goto out;
    /* the ids of results.csv and every rank file: room for all */
    cap = old.nrows;
    for (long f = 0; f < nfiles; f++) {
        char path[PATH_MAX];
        if (tb_slurm_rank_results(out, ranks[f], path, sizeof path) != 0 ||
            tb_csv_load(&t[f], path, err, errlen) != 0) {
            if (!err[0])
                tb_err(err, errlen, "--out: folder name too long");
            nfiles = f; /* loaded so far: released below */
            goto out;
        }
        if (tb_csv_col(&t[f], "run_id") < 0) {
            tb_err(err, errlen, "%s: line 1: no column 'run_id' (not a results file)", path);
            nfiles = f + 1;
            goto out;
        }
        cap += t[f].nrows;
        rcap += t[f].nrows;
    }
    ids = tb_alloc_array(cap + 1, sizeof *ids);
    rows = tb_alloc_array(rcap + 1, sizeof *rows);
    if (!ids || !rows) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    for (size_t r = 0; r < old.nrows; r++)
        ids[nids++] = tb_csv_field(&old, r, "run_id");
    for (long f = 0; f < nfiles; f++) {
        size_t before = nids; /* ids of earlier files and results.csv */
        int col[TB_RESULTS_NCOLS];
        for (int c = 0; c < TB_RESULTS_NCOLS; c++)
            col[c] = tb_csv_col(&t[f], TB_RESULTS_COLUMNS[c]);
        for (size_t r = 0; r < t[f].nrows; r++) {
            const char *id = tb_csv_field(&t[f], r, "run_id");
            if (seen(ids, before, id))
                continue; /* recorded already (an earlier job, or another rank's file) */
            if (!seen(ids + before, nids - before, id)) {
                ids[nids++] = id;
                (*runs)++;
            }
            memset(&rows[nrows], 0, sizeof rows[nrows]);
            for (int c = 0; c < TB_RESULTS_NCOLS; c++)
                rows[nrows].col[c] = col[c] < 0 ? NULL : tb_csv_get(&t[f], r, col[c]);
            nrows++;
        }
    }
    *files = (size_t)nfiles;
    *added = nrows;
    if (nrows == 0) {
        rc = 0; /* nothing new: results.csv stays as it is */
        goto out;
    }
    rc = tb_results_append(results, rows, nrows, err, errlen);
out:
    for (long f = 0; t && f < nfiles; f++)
        tb_csv_release(&t[f]);
    tb_csv_release(&old);
    free(t);
    free(rows);
    free(ids);
    free(ranks);
    return rc;
}
