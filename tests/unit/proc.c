/* tests/unit/proc.c: child processes without a shell between us and the argv (tb_proc):
 * stdout captured, stderr kept and echoed line by line, exit status, signal, a program
 * that cannot be run, the time limit over the whole process group, and what a child
 * leaves behind holding its output. The children are real programs (sh, sleep). */
#include "tb_proc.h"
#include "tb_timer.h"

#include "tests/tap/basic.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

static int run_sh(const char *script, const struct tb_proc_opts *o, struct tb_proc_result *r,
                  double *secs)
{
    const char *argv[] = {"sh", "-c", script, NULL};
    char err[256] = "";
    uint64_t t0 = tb_timer_now_ns();
    int rc = tb_proc_run(argv, o, r, err, sizeof err);
    if (secs)
        *secs = tb_timer_seconds(t0, tb_timer_now_ns());
    if (rc != 0)
        diag("tb_proc_run: %s", err);
    return rc;
}

/* Whether process pid is gone (or a zombie waiting for its new parent), within 2 s. */
static bool gone(long pid)
{
    for (int i = 0; i < 200; i++) {
        char path[64], state = '?';
        FILE *f;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            return true;
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        f = fopen(path, "r");
        if (f) {
            int n = fscanf(f, "%*d (%*[^)]) %c", &state);
            fclose(f);
            if (n == 1 && state == 'Z')
                return true;
        }
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    }
    return false;
}

int main(void)
{
    struct tb_proc_result r;
    struct tb_proc_opts o;
    char line[256], how[128], *echo_path = test_tmp_path("proc-echo.txt"), echo[256] = "";
    double secs;
    FILE *f;
    plan_lazy();

    /* ---- stdout, stderr, exit status, echo ---- */
    f = fopen(echo_path, "w+");
    if (!f)
        bail("cannot open %s", echo_path);
    memset(&o, 0, sizeof o);
    o.echo = f;
    o.echo_prefix = "  peer: ";
    IS_INT(0,
           run_sh("printf 'a,b\\n1,2\\n'; echo progress >&2; printf 'last words' >&2; exit 3", &o,
                  &r, NULL),
           "a child that exits 3 ran");
    IS_STRING("a,b\n1,2\n", r.out, "stdout captured whole");
    IS_INT(3, r.exit_status, "its exit status");
    IS_INT(0, r.term_signal, "no signal");
    OK(!r.timed_out && !r.exec_errno, "not timed out, executed");
    tb_proc_last_line(r.err_tail, line, sizeof line);
    IS_STRING("last words", line, "the last stderr line, even without a newline");
    tb_proc_describe(&r, 0, how, sizeof how);
    IS_STRING("exited with status 3", how, "described");
    rewind(f);
    if (fread(echo, 1, sizeof echo - 1, f) == 0)
        echo[0] = '\0';
    IS_STRING("  peer: progress\n  peer: last words\n", echo, "stderr echoed line by line");
    fclose(f);
    tb_proc_result_release(&r);

    IS_INT(0, run_sh("cat", NULL, &r, &secs), "a child reading stdin");
    OK(r.exit_status == 0 && r.out_len == 0 && secs < 2, "stdin is /dev/null (%.2f s)", secs);
    tb_proc_result_release(&r);

    /* both pipes busy at once: neither may fill and block the child */
    IS_INT(0,
           run_sh("head -c 300000 /dev/zero | tr '\\0' x; head -c 100000 /dev/zero | tr '\\0' y "
                  ">&2; echo >&2; echo end >&2",
                  NULL, &r, NULL),
           "a child writing 300 kB and 100 kB");
    IS_INT(300000, (long long)r.out_len, "all of stdout");
    tb_proc_last_line(r.err_tail, line, sizeof line);
    IS_STRING("end", line, "the end of stderr");
    OK(strlen(r.err_tail) < sizeof r.err_tail, "stderr tail bounded (%zu bytes)",
       strlen(r.err_tail));
    tb_proc_result_release(&r);

    /* ---- how a run can end badly ---- */
    {
        const char *argv[] = {"/nonexistent/python3", "script.py", NULL};
        char err[256];
        IS_INT(0, tb_proc_run(argv, NULL, &r, err, sizeof err), "a missing program: no error here");
        IS_INT(ENOENT, r.exec_errno, "its exec errno");
        tb_proc_describe(&r, 0, how, sizeof how);
        IS_STRING("cannot be run: No such file or directory", how, "described");
        tb_proc_result_release(&r);
    }
    IS_INT(0, run_sh("kill -9 $$", NULL, &r, NULL), "a child killed by a signal");
    IS_INT(SIGKILL, r.term_signal, "the signal");
    IS_INT(-1, r.exit_status, "no exit status");
    tb_proc_result_release(&r);

    memset(&o, 0, sizeof o);
    o.timeout_s = 0.3;
    o.grace_s = 0.3;
    IS_INT(0, run_sh("echo started >&2; sleep 30; echo never", &o, &r, &secs),
           "a child past its time limit");
    OK(r.timed_out, "timed out");
    OK(secs < 3, "ended within the limit and the grace (%.2f s)", secs);
    IS_INT(SIGTERM, r.term_signal, "by SIGTERM to its group");
    OK(!r.out || !strstr(r.out, "never"), "its sleep ended with it");
    tb_proc_describe(&r, o.timeout_s, how, sizeof how);
    IS_STRING("timed out after 0.3 s", how, "described");
    tb_proc_result_release(&r);

    o.timeout_s = 0.3;
    IS_INT(0, run_sh("trap '' TERM; sleep 30", &o, &r, &secs), "a child that ignores SIGTERM");
    OK(r.timed_out && secs < 3, "killed after the grace (%.2f s)", secs);
    tb_proc_result_release(&r);

    /* a grandchild in the background holds stdout open after the child exits */
    memset(&o, 0, sizeof o);
    o.grace_s = 0.3;
    IS_INT(0, run_sh("sleep 30 & echo $!", &o, &r, &secs), "a child leaving a sleep behind");
    OK(r.exit_status == 0 && secs < 3, "returns after the grace (%.2f s)", secs);
    OK(r.out && gone(strtol(r.out, NULL, 10)), "the sleep it left (pid %ld) is ended",
       r.out ? strtol(r.out, NULL, 10) : -1L);
    tb_proc_result_release(&r);

    tb_proc_last_line("one\ntwo  \n\n", line, sizeof line);
    IS_STRING("two", line, "last line skips blank lines and trailing spaces");
    tb_proc_last_line("", line, sizeof line);
    IS_STRING("", line, "empty text, empty line");
    free(echo_path);
    return 0;
}
