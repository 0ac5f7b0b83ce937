/* harness/tb_plot.c: see tb_plot.h. */
#include "tb_plot.h"

#include "tb_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PLOT_MAX_ARGS 16
#define PLOT_TAIL     4096 /* bytes of gnuplot's output kept for the message */

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

/* The last non-empty line of text, trimmed, into out. */
static void last_line(const char *text, char *out, size_t len)
{
    const char *end = text + strlen(text), *start;
    while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    start = end;
    while (start > text && start[-1] != '\n')
        start--;
    while (start < end && (*start == ' ' || *start == '\t'))
        start++;
    snprintf(out, len, "%.*s", (int)(end - start), start);
}

/* Run argv with stdin from /dev/null and stdout+stderr into tail (its last bytes,
 * NUL-terminated). Returns 0 with *status from waitpid, 1 when argv[0] could not be
 * executed (*exec_errno set), -1 on a local failure (err set). */
static int spawn(const char *const *argv, char *tail, size_t tailcap, int *status, int *exec_errno,
                 char *err, size_t errlen)
{
    int outp[2] = {-1, -1}, execp[2] = {-1, -1};
    pid_t pid = -1;
    size_t used = 0;
    int rc = -1, child_errno = 0;
    ssize_t n;
    char buf[1024];

    tail[0] = '\0';
    if (pipe(outp) != 0 || pipe(execp) != 0) {
        tb_err(err, errlen, "cannot create a pipe: %s", strerror(errno));
        goto out;
    }
    if (fcntl(execp[1], F_SETFD, FD_CLOEXEC) != 0) {
        tb_err(err, errlen, "cannot set close-on-exec: %s", strerror(errno));
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        tb_err(err, errlen, "cannot fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        int e;
        if (null < 0 || dup2(null, 0) < 0 || dup2(outp[1], 1) < 0 || dup2(outp[1], 2) < 0)
            _exit(126);
        close(null);
        close(outp[0]);
        close(outp[1]);
        close(execp[0]);
        execvp(argv[0], (char *const *)argv);
        e = errno;
        if (write(execp[1], &e, sizeof e) < 0)
            _exit(127);
        _exit(127);
    }
    close(outp[1]);
    outp[1] = -1;
    close(execp[1]);
    execp[1] = -1;
    /* keep the tail of the output: when the buffer fills, drop its older half */
    while ((n = read(outp[0], buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (ssize_t i = 0; i < n; i++) {
            if (used + 1 >= tailcap) {
                size_t keep = tailcap / 2;
                memmove(tail, tail + used - keep, keep);
                used = keep;
            }
            tail[used++] = buf[i];
        }
    }
    tail[used] = '\0';
    while ((n = read(execp[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR)
        ;
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR) {
            tb_err(err, errlen, "cannot wait for '%s': %s", argv[0], strerror(errno));
            goto out;
        }
    }
    if (n == (ssize_t)sizeof child_errno) {
        *exec_errno = child_errno;
        rc = 1;
        goto out;
    }
    rc = 0;
out:
    for (int i = 0; i < 2; i++) {
        if (outp[i] >= 0)
            close(outp[i]);
        if (execp[i] >= 0)
            close(execp[i]);
    }
    return rc;
}

int tb_plot_run(const char *script, const char *data, const char *output, const char *const *args,
                size_t nargs, char *err, size_t errlen)
{
    const char *argv[PLOT_MAX_ARGS + 6];
    char path[4096], tail[PLOT_TAIL], line[512];
    struct stat st;
    int status = 0, exec_errno = 0, r;
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

    r = spawn(argv, tail, sizeof tail, &status, &exec_errno, err, errlen);
    if (r < 0)
        return TB_PLOT_FAILED;
    if (r == 1) {
        tb_err(err, errlen,
               "cannot run '%s': %s (install gnuplot, e.g. apt-get install gnuplot-nox)", argv[0],
               strerror(exec_errno));
        return TB_PLOT_MISSING;
    }
    last_line(tail, line, sizeof line);
    if (WIFSIGNALED(status)) {
        tb_err(err, errlen, "gnuplot on '%s' killed by signal %d: %s", path, WTERMSIG(status),
               line);
        return TB_PLOT_FAILED;
    }
    if (WEXITSTATUS(status) != 0) {
        /* execvp failing in the child after a successful exec check reads as 127 */
        tb_err(err, errlen, "gnuplot on '%s' failed (exit status %d): %s", path,
               WEXITSTATUS(status), *line ? line : "no message");
        return TB_PLOT_FAILED;
    }
    if (stat(output, &st) != 0 || st.st_size == 0) {
        tb_err(err, errlen, "gnuplot on '%s' wrote no output to '%s': %s", path, output,
               *line ? line : "no message");
        return TB_PLOT_FAILED;
    }
    return TB_PLOT_OK;
}

bool tb_plot_has_terminal(const char *terminal, char *why, size_t whylen)
{
    char cmd[128], tail[PLOT_TAIL], line[512], err[256] = "";
    const char *argv[4];
    int status = 0, exec_errno = 0, r;

    if (snprintf(cmd, sizeof cmd, "set terminal %s", terminal) >= (int)sizeof cmd) {
        tb_err(why, whylen, "terminal name too long");
        return false;
    }
    argv[0] = tb_plot_program();
    argv[1] = "-e";
    argv[2] = cmd;
    argv[3] = NULL;
    r = spawn(argv, tail, sizeof tail, &status, &exec_errno, err, sizeof err);
    if (r < 0) {
        tb_err(why, whylen, "%s", err);
        return false;
    }
    if (r == 1) {
        tb_err(why, whylen, "cannot run '%s': %s", argv[0], strerror(exec_errno));
        return false;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        last_line(tail, line, sizeof line);
        tb_err(why, whylen, "gnuplot has no '%s' terminal: %s", terminal, line);
        return false;
    }
    return true;
}
