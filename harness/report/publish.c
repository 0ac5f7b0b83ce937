/* harness/report/publish.c: the report stage's last step, a transaction on the output
 * folder: every file is written into a scratch folder inside it (same file system), and
 * renamed into place only when all of them were written, report.html last; outputs of an
 * older report that this one does not make are removed: only those the older report
 * published itself, as OUTDIR/.report.files lists them ("INODE NAME" a line), still the
 * same files (another command's, such as assess's assessment.csv, stay). A failure before the
 * renames leaves the folder as it was. Nothing here knows struct report, so another command's
 * outputs could go the same way. */
#include "report_impl.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Files a report may leave in its folder; any of them a new report does not make is
 * removed when it is published, so no stale chart sits beside it. */
static bool is_output(const char *name)
{
    static const char *const fixed[] = {"cost.csv", "report.md", "report.html", "assessment.csv"};
    static const char *const charts[] = {"throughput",
                                         "cost",
                                         "images",
                                         "priceperf",
                                         "train",
                                         "interactivity-",
                                         "collectives-shm",
                                         "collectives-loopback",
                                         "collectives-tcp",
                                         "collectives-efa",
                                         "collectives-nvlink",
                                         "collectives-neuronlink"};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcmp(name, fixed[i]))
            return true;
    if (!dot || (strcmp(dot, ".svg") && strcmp(dot, ".png") && strcmp(dot, ".tsv")))
        return false;
    for (size_t i = 0; i < sizeof charts / sizeof charts[0]; i++) {
        size_t n = strlen(charts[i]);
        if (!strncmp(name, charts[i], n) &&
            (name + n == dot || (charts[i][n - 1] == '-' && isdigit((unsigned char)name[n]))))
            return true;
    }
    return false;
}

/* Remove the scratch folders (.report.tmp.PID) of reports killed before they finished:
 * those whose PID runs no process here. */
static void sweep_scratch(const char *outdir)
{
    DIR *dir = opendir(outdir);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        struct tb_report_scratch old;
        const char *d = e->d_name + strlen(".report.tmp.");
        long pid;
        if (strncmp(e->d_name, ".report.tmp.", strlen(".report.tmp.")) != 0 ||
            tb_parse_long(d, 1, 999999999, &pid) != 0 || pid == (long)getpid() ||
            kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        memset(&old, 0, sizeof old);
        if (tb_report_path_in(old.tmpdir, sizeof old.tmpdir, outdir, e->d_name) != 0)
            continue;
        old.made = true;
        tb_report_scratch_remove(&old);
    }
    if (dir)
        closedir(dir);
}

int tb_report_scratch_open(struct tb_report_scratch *s, const char *outdir, char *err,
                           size_t errlen)
{
    memset(s, 0, sizeof *s);
    snprintf(s->outdir, sizeof s->outdir, "%s", outdir);
    if (tb_mkdir_p(s->outdir, err, errlen) != 0)
        return -1;
    sweep_scratch(s->outdir);
    snprintf(s->tmpdir, sizeof s->tmpdir, "%s/.report.tmp.%ld", s->outdir, (long)getpid());
    if (mkdir(s->tmpdir, 0777) != 0 && errno != EEXIST)
        return tb_err(err, errlen, "cannot create '%s': %s", s->tmpdir, strerror(errno));
    s->made = true;
    return 0;
}

void tb_report_scratch_remove(struct tb_report_scratch *s)
{
    char p[4400];
    DIR *dir;
    struct dirent *e;
    if (!s->made)
        return;
    dir = opendir(s->tmpdir);
    while (dir && (e = readdir(dir)))
        if (e->d_name[0] != '.' && tb_report_path_in(p, sizeof p, s->tmpdir, e->d_name) == 0)
            unlink(p);
    if (dir)
        closedir(dir);
    rmdir(s->tmpdir);
    s->made = false;
}

int tb_report_scratch_write(const struct tb_report_scratch *s, const char *name,
                            const struct tb_sbuf *b, char *err, size_t errlen)
{
    char p[4400];
    FILE *f = NULL;
    int rc = -1;
    if (tb_report_path_in(p, sizeof p, s->tmpdir, name) != 0)
        return tb_err(err, errlen, "path too long: '%s'", s->tmpdir);
    f = fopen(p, "w");
    if (!f || fwrite(b->p, 1, b->len, f) != b->len) {
        tb_err(err, errlen, "cannot write '%s': %s", p, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (f && fclose(f) != 0 && rc == 0)
        rc = tb_err(err, errlen, "cannot write '%s': %s", p, strerror(errno));
    return rc;
}

/* Whether OUTDIR/name is a file an earlier report published and nobody replaced since:
 * listed in the manifest text (lines "INODE NAME") with the inode it has now. Without a
 * manifest (a folder of an older version): any name of a report's outputs but
 * assessment.csv, which `trnbench assess` writes too. */
static bool owned(const char *manifest, const char *name, const char *path)
{
    struct stat st;
    if (!manifest)
        return strcmp(name, "assessment.csv") != 0;
    if (stat(path, &st) != 0)
        return false;
    for (const char *l = manifest; *l;) {
        const char *nl = strchr(l, '\n'), *sp = strchr(l, ' ');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        if (sp && sp < l + n && strtoull(l, NULL, 10) == (unsigned long long)st.st_ino &&
            (size_t)(l + n - sp - 1) == strlen(name) && !strncmp(sp + 1, name, strlen(name)))
            return true;
        l += n + (nl ? 1 : 0);
    }
    return false;
}

int tb_report_scratch_publish(const struct tb_report_scratch *s, char *err, size_t errlen)
{
    char from[4400], to[4400], *manifest = NULL, *list = NULL;
    size_t listlen = 0;
    FILE *mf = NULL;
    DIR *dir;
    struct dirent *e;
    struct stat st;
    int rc = 0;

    /* stale outputs first: a file an older report published that this one does not
     * make; never another command's file (assess's assessment.csv) */
    if (tb_report_path_in(to, sizeof to, s->outdir, ".report.files") == 0 && tb_file_exists(to) &&
        tb_read_file(to, &manifest, NULL, err, errlen) != 0)
        return -1;
    dir = opendir(s->outdir);
    while (dir && (e = readdir(dir)) && rc == 0) {
        if (!is_output(e->d_name) ||
            tb_report_path_in(from, sizeof from, s->tmpdir, e->d_name) != 0 ||
            tb_report_path_in(to, sizeof to, s->outdir, e->d_name) != 0)
            continue;
        if (stat(from, &st) != 0 && owned(manifest, e->d_name, to) && unlink(to) != 0 &&
            errno != ENOENT)
            rc = tb_err(err, errlen, "cannot remove the stale '%s': %s", to, strerror(errno));
    }
    if (dir)
        closedir(dir);
    free(manifest);
    if (rc != 0)
        return rc;
    /* then this report's files, report.html last; each goes into the manifest */
    mf = open_memstream(&list, &listlen);
    if (!mf)
        return tb_err(err, errlen, "out of memory");
    dir = opendir(s->tmpdir);
    if (!dir) {
        rc = tb_err(err, errlen, "cannot read '%s': %s", s->tmpdir, strerror(errno));
        goto out;
    }
    for (int html = 0; html < 2 && rc == 0; html++) {
        rewinddir(dir);
        while ((e = readdir(dir)) && rc == 0) {
            if (!is_output(e->d_name) || (strcmp(e->d_name, "report.html") == 0) != html)
                continue;
            if (tb_report_path_in(from, sizeof from, s->tmpdir, e->d_name) != 0 ||
                tb_report_path_in(to, sizeof to, s->outdir, e->d_name) != 0)
                rc = tb_err(err, errlen, "path too long: '%s'", s->outdir);
            else if (rename(from, to) != 0)
                rc = tb_err(err, errlen, "cannot rename '%s' to '%s': %s", from, to,
                            strerror(errno));
            else if (stat(to, &st) == 0)
                fprintf(mf, "%llu %s\n", (unsigned long long)st.st_ino, e->d_name);
        }
    }
    closedir(dir);
out:
    if (fclose(mf) != 0 && rc == 0)
        rc = tb_err(err, errlen, "out of memory");
    /* what this report published, to remove later what it alone owns */
    if (rc == 0 && (tb_report_path_in(to, sizeof to, s->outdir, ".report.files") != 0 ||
                    tb_write_file_atomic(to, list, listlen, err, errlen) != 0))
        rc = -1;
    free(list);
    return rc;
}
