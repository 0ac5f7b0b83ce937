/* harness/platform/tb_proc.c: see tb_proc.h. One poll loop reads the child's stdout and stderr
 * as they come (so neither pipe fills and blocks it), checks whether it has exited, and
 * signals its process group when the time limit or the grace after its exit runs out. */
#include "tb_proc.h"

#include "tb_sbuf.h"
#include "tb_timer.h"
#include "tb_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define POLL_MS 100 /* how often the loop looks at the child and the clock */

/* The parent's side of a run: where the child's output goes. */
struct reader {
    const struct tb_proc_opts *o; /* borrowed */
    struct tb_proc_result *r;     /* borrowed: err_tail */
    struct tb_sbuf out;           /* owned until handed to r->out */
    size_t tail_len;              /* bytes in r->err_tail */
    char line[1024];              /* the stderr line being echoed */
    size_t line_len;
};

static void echo_line(struct reader *d)
{
    if (d->o->echo && d->line_len) {
        fprintf(d->o->echo, "%s%.*s\n", d->o->echo_prefix ? d->o->echo_prefix : "",
                (int)d->line_len, d->line);
        fflush(d->o->echo);
    }
    d->line_len = 0;
}

static void take_err(struct reader *d, const char *buf, size_t n)
{
    char *tail = d->r->err_tail;
    const size_t cap = sizeof d->r->err_tail;
    for (size_t i = 0; i < n; i++) {
        /* keep the last bytes: when the buffer is full, drop its older half */
        if (d->tail_len + 1 >= cap) {
            memmove(tail, tail + d->tail_len - cap / 2, cap / 2);
            d->tail_len = cap / 2;
        }
        tail[d->tail_len++] = buf[i];
        if (buf[i] == '\n' || d->line_len + 1 >= sizeof d->line)
            echo_line(d);
        if (buf[i] != '\n')
            d->line[d->line_len++] = buf[i];
    }
    tail[d->tail_len] = '\0';
}

static int take_out(struct reader *d, const char *buf, size_t n, char *err, size_t errlen)
{
    if (d->out.len + n > TB_PROC_MAX_OUT)
        return tb_err(err, errlen, "more than %zu MiB on stdout", TB_PROC_MAX_OUT >> 20);
    tb_sb_putn(&d->out, buf, n);
    if (d->out.failed)
        return tb_err(err, errlen, "out of memory for the output of a child process");
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void tb_proc_exec_child(const char *const *argv, int out_w, int err_w, int exec_w)
{
    int null = open("/dev/null", O_RDONLY), e;
    setpgid(0, 0);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
        _exit(126);
    if (null > 2)
        close(null);
    if (out_w > 2)
        close(out_w);
    if (err_w > 2)
        close(err_w);
    execvp(argv[0], (char *const *)argv);
    e = errno;
    if (write(exec_w, &e, sizeof e) < 0)
        _exit(127);
    _exit(127);
}

int tb_proc_run(const char *const *argv, const struct tb_proc_opts *o, struct tb_proc_result *r,
                char *err, size_t errlen)
{
    static const struct tb_proc_opts none;
    int outp[2] = {-1, -1}, errp[2] = {-1, -1}, execp[2] = {-1, -1};
    struct reader d;
    pid_t pid = -1;
    bool exited = false, term_sent = false, kill_sent = false;
    double exited_s = 0, kill_s = 0, grace;
    uint64_t t0;
    int status = 0, child_errno = 0, rc = -1;
    char buf[4096];

    o = o ? o : &none;
    grace = o->grace_s > 0 ? o->grace_s : TB_PROC_GRACE_S;
    memset(r, 0, sizeof *r);
    r->exit_status = -1;
    memset(&d, 0, sizeof d);
    d.o = o;
    d.r = r;
    if (pipe(outp) != 0 || pipe(errp) != 0 || pipe(execp) != 0) {
        tb_err(err, errlen, "cannot create a pipe: %s", strerror(errno));
        goto out;
    }
    /* only the exec report's write end must close on exec; the parent's read ends must
     * not leak into the child (it would then never see its own EOF) */
    if (fcntl(execp[1], F_SETFD, FD_CLOEXEC) != 0 || fcntl(outp[0], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(errp[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(execp[0], F_SETFD, FD_CLOEXEC) != 0) {
        tb_err(err, errlen, "cannot set close-on-exec: %s", strerror(errno));
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        tb_err(err, errlen, "cannot fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0)
        tb_proc_exec_child(argv, outp[1], errp[1], execp[1]);
    setpgid(pid, pid); /* here too, so the group exists before any signal to it */
    close_fd(&outp[1]);
    close_fd(&errp[1]);
    close_fd(&execp[1]);
    t0 = tb_timer_now_ns();
    for (;;) {
        struct pollfd p[2];
        int *fds[2];
        nfds_t n = 0;
        double now = tb_timer_seconds(t0, tb_timer_now_ns());
        if (outp[0] >= 0)
            fds[n++] = &outp[0];
        if (errp[0] >= 0)
            fds[n++] = &errp[0];
        if (exited && n == 0)
            break;
        if (exited && now - exited_s > grace) {
            kill(-pid, SIGKILL); /* what it left behind still holds its output open */
            break;
        }
        if (!exited && o->timeout_s > 0 && now >= o->timeout_s && !term_sent) {
            kill(-pid, SIGTERM);
            r->timed_out = term_sent = true;
            kill_s = now + grace;
        }
        if (term_sent && !kill_sent && now >= kill_s) {
            kill(-pid, SIGKILL);
            kill_sent = true;
        }
        for (nfds_t i = 0; i < n; i++)
            p[i] = (struct pollfd){.fd = *fds[i], .events = POLLIN};
        if (poll(p, n, POLL_MS) < 0 && errno != EINTR) {
            tb_err(err, errlen, "cannot wait for '%s': %s", argv[0], strerror(errno));
            goto out;
        }
        for (nfds_t i = 0; i < n; i++) {
            ssize_t got;
            if (!p[i].revents)
                continue;
            got = read(*fds[i], buf, sizeof buf);
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (got <= 0) {
                close_fd(fds[i]);
                continue;
            }
            if (fds[i] == &errp[0])
                take_err(&d, buf, (size_t)got);
            else if (take_out(&d, buf, (size_t)got, err, errlen) != 0)
                goto out;
        }
        if (!exited) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid) {
                exited = true;
                exited_s = tb_timer_seconds(t0, tb_timer_now_ns());
            } else if (w < 0 && errno != EINTR) {
                tb_err(err, errlen, "cannot wait for '%s': %s", argv[0], strerror(errno));
                goto out;
            }
        }
    }
    echo_line(&d);
    r->out = d.out.p; /* handed over */
    r->out_len = d.out.len;
    memset(&d.out, 0, sizeof d.out);
    if (WIFEXITED(status))
        r->exit_status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        r->term_signal = WTERMSIG(status);
    if (read(execp[0], &child_errno, sizeof child_errno) == (ssize_t)sizeof child_errno)
        r->exec_errno = child_errno;
    rc = 0;
out:
    tb_sb_release(&d.out);
    if (pid > 0 && !exited) {
        kill(-pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    for (int i = 0; i < 2; i++) {
        close_fd(&outp[i]);
        close_fd(&errp[i]);
        close_fd(&execp[i]);
    }
    return rc;
}

void tb_proc_result_release(struct tb_proc_result *r)
{
    free(r->out);
    memset(r, 0, sizeof *r);
    r->exit_status = -1;
}

void tb_proc_last_line(const char *text, char *out, size_t len)
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

void tb_proc_describe(const struct tb_proc_result *r, double timeout_s, char *buf, size_t len)
{
    if (r->exec_errno)
        snprintf(buf, len, "cannot be run: %s", strerror(r->exec_errno));
    else if (r->timed_out)
        snprintf(buf, len, "timed out after %g s", timeout_s);
    else if (r->term_signal)
        snprintf(buf, len, "killed by signal %d (%s)", r->term_signal, strsignal(r->term_signal));
    else
        snprintf(buf, len, "exited with status %d", r->exit_status);
}
