/* harness/report/tb_plot.c: see tb_plot.h. */
#include "tb_plot.h"

#include "tb_proc.h"
#include "tb_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PLOT_MAX_ARGS 16

const char *tb_plot_program(void)
{
    const char *env = getenv("TRNBENCH_GNUPLOT");
    return env && *env ? env : "gnuplot";
}

int tb_plot_script_path(const char *script, char *path, size_t len)
{
    int n;
    if (strchr(script, '/'))
        n = snprintf(path, len, "%s", script);
    else
        n = snprintf(path, len, "%s/reports/%s.gp", tb_datadir(), script);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Run argv (stdin from /dev/null) into *pr (release it). Its message: gnuplot's last
 * line on stderr or, failing that, on stdout. Returns 0, or -1 with err set. */
static int run_gnuplot(const char *const *argv, struct tb_proc_result *pr, char *line,
                       size_t linelen, char *err, size_t errlen)
{
    if (tb_proc_run(argv, NULL, pr, err, errlen) != 0)
        return -1;
    tb_proc_last_line(pr->err_tail, line, linelen);
    if (!*line && pr->out)
        tb_proc_last_line(pr->out, line, linelen);
    return 0;
}

int tb_plot_run(const char *script, const char *data, const char *output, const char *const *args,
                size_t nargs, char *err, size_t errlen)
{
    const char *argv[PLOT_MAX_ARGS + 6];
    char path[4096], line[512];
    struct tb_proc_result pr;
    struct stat st;
    int rc = TB_PLOT_FAILED;
    size_t k = 0;

    if (nargs > PLOT_MAX_ARGS)
        return tb_err(err, errlen, "too many chart arguments (%zu, at most %d)", nargs,
                      PLOT_MAX_ARGS);
    if (tb_plot_script_path(script, path, sizeof path) != 0)
        return tb_err(err, errlen, "chart script name too long: '%s'", script);
    if (stat(path, &st) != 0)
        return tb_err(err, errlen, "no chart script '%s': %s", path, strerror(errno));
    if (stat(data, &st) != 0)
        return tb_err(err, errlen, "no data file '%s' for chart '%s': %s", data, path,
                      strerror(errno));
    if (unlink(output) != 0 && errno != ENOENT)
        return tb_err(err, errlen, "cannot remove the old '%s': %s", output, strerror(errno));

    argv[k++] = tb_plot_program();
    argv[k++] = "-c";
    argv[k++] = path;
    argv[k++] = data;
    argv[k++] = output;
    for (size_t i = 0; i < nargs; i++)
        argv[k++] = args[i];
    argv[k] = NULL;

    if (run_gnuplot(argv, &pr, line, sizeof line, err, errlen) != 0)
        goto out;
    if (pr.exec_errno) {
        tb_err(err, errlen,
               "cannot run '%s': %s (install gnuplot, e.g. apt-get install gnuplot-nox)", argv[0],
               strerror(pr.exec_errno));
        rc = TB_PLOT_MISSING;
    } else if (pr.term_signal) {
        tb_err(err, errlen, "gnuplot on '%s' killed by signal %d: %s", path, pr.term_signal, line);
    } else if (pr.exit_status != 0) {
        tb_err(err, errlen, "gnuplot on '%s' failed (exit status %d): %s", path, pr.exit_status,
               *line ? line : "no message");
    } else if (stat(output, &st) != 0 || st.st_size == 0) {
        tb_err(err, errlen, "gnuplot on '%s' wrote no output to '%s': %s", path, output,
               *line ? line : "no message");
    } else {
        rc = TB_PLOT_OK;
    }
out:
    tb_proc_result_release(&pr);
    return rc;
}

bool tb_plot_has_terminal(const char *terminal, char *why, size_t whylen)
{
    char cmd[128], line[512], err[256] = "";
    const char *argv[4];
    struct tb_proc_result pr;
    bool ok = false;

    if (snprintf(cmd, sizeof cmd, "set terminal %s", terminal) >= (int)sizeof cmd) {
        tb_err(why, whylen, "terminal name too long");
        return false;
    }
    argv[0] = tb_plot_program();
    argv[1] = "-e";
    argv[2] = cmd;
    argv[3] = NULL;
    if (run_gnuplot(argv, &pr, line, sizeof line, err, sizeof err) != 0)
        tb_err(why, whylen, "%s", err);
    else if (pr.exec_errno)
        tb_err(why, whylen, "cannot run '%s': %s", argv[0], strerror(pr.exec_errno));
    else if (pr.exit_status != 0)
        tb_err(why, whylen, "gnuplot has no '%s' terminal: %s", terminal, line);
    else
        ok = true;
    tb_proc_result_release(&pr);
    return ok;
}
