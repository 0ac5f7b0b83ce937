/* harness/report/publish.c: the report stage's last step, a transaction on the output
 * folder: every file is written into a scratch folder inside it (same file system), and
 * renamed into place only when all of them were written, report.html last; outputs of an
 * older report that this one does not make are removed. A failure before the renames
 * leaves the folder as it was. Nothing here knows struct report, so another command's
 * outputs could go the same way. */
#include "report_impl.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Files a report may leave in its folder; any of them a new report does not make is
 * removed when it is published, so no stale chart sits beside it. */
static bool is_output(const char *name)
{
    static const char *const fixed[] = {"cost.csv", "report.md", "report.html", "assessment.csv"};
    static const char *const charts[] = {"throughput", "cost",  "images",
                                         "priceperf",  "train", "interactivity-"};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcmp(name, fixed[i]))
            return true;
    if (!dot || (strcmp(dot, ".svg") && strcmp(dot, ".png")))
        return false;
    for (size_t i = 0; i < sizeof charts / sizeof charts[0]; i++) {
        size_t n = strlen(charts[i]);
        if (!strncmp(name, charts[i], n) &&
            (name + n == dot || (charts[i][n - 1] == '-' && isdigit((unsigned char)name[n]))))
            return true;
    }
    return false;
}

int tb_report_scratch_open(struct tb_report_scratch *s, const char *outdir, char *err,
                           size_t errlen)
{
    memset(s, 0, sizeof *s);
    snprintf(s->outdir, sizeof s->outdir, "%s", outdir);
    if (tb_mkdir_p(s->outdir, err, errlen) != 0)
        return -1;
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

int tb_report_scratch_publish(const struct tb_report_scratch *s, char *err, size_t errlen)
{
    char from[4400], to[4400];
    DIR *dir;
    struct dirent *e;
    int rc = 0;
    /* stale outputs first: a file of an older report that this one does not make */
    dir = opendir(s->outdir);
    while (dir && (e = readdir(dir)) && rc == 0) {
        struct stat st;
        if (!is_output(e->d_name) ||
            tb_report_path_in(from, sizeof from, s->tmpdir, e->d_name) != 0 ||
            tb_report_path_in(to, sizeof to, s->outdir, e->d_name) != 0)
            continue;
        if (stat(from, &st) != 0 && unlink(to) != 0 && errno != ENOENT)
            rc = tb_err(err, errlen, "cannot remove the stale '%s': %s", to, strerror(errno));
    }
    if (dir)
        closedir(dir);
    if (rc != 0)
        return rc;
    dir = opendir(s->tmpdir);
    if (!dir)
        return tb_err(err, errlen, "cannot read '%s': %s", s->tmpdir, strerror(errno));
    while ((e = readdir(dir)) && rc == 0) {
        if (!is_output(e->d_name) || !strcmp(e->d_name, "report.html"))
            continue;
        if (tb_report_path_in(from, sizeof from, s->tmpdir, e->d_name) != 0 ||
            tb_report_path_in(to, sizeof to, s->outdir, e->d_name) != 0)
            rc = tb_err(err, errlen, "path too long: '%s'", s->outdir);
        else if (rename(from, to) != 0)
            rc = tb_err(err, errlen, "cannot rename '%s' to '%s': %s", from, to, strerror(errno));
    }
    closedir(dir);
    if (rc != 0)
        return rc;
    if (tb_report_path_in(from, sizeof from, s->tmpdir, "report.html") != 0 ||
        tb_report_path_in(to, sizeof to, s->outdir, "report.html") != 0)
        return tb_err(err, errlen, "path too long: '%s'", s->outdir);
    if (rename(from, to) != 0)
        return tb_err(err, errlen, "cannot rename '%s' to '%s': %s", from, to, strerror(errno));
    return 0;
}
