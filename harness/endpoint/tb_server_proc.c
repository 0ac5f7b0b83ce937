/* harness/endpoint/tb_server_proc.c: see tb_server_proc.h. The child is started by
 * tb_proc's exec path (its own process group, stdin from /dev/null, an exec failure
 * reported through a close-on-exec pipe); readiness is polled one try at a time so that
 * a child that exits early is noticed between tries. */
#include "tb_server_proc.h"

#include "tb_loadgen.h"
#include "tb_proc.h"
#include "tb_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define READY_EVERY_S 0.2  /* between readiness tries */
#define STOP_GRACE_S  10.0 /* SIGTERM to SIGKILL when the caller says 0 */
#define LOG_TAIL      4096 /* bytes of the log read for its last line */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- argv ---- */

void tb_argv_free(char **argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

int tb_argv_split(const char *line, char ***argv, int *argc, char *err, size_t errlen)
{
    size_t n = strlen(line), nwords = 0, cap = 8, wlen = 0;
    char **words = NULL, *word = malloc(n + 1); /* no word is longer than the line */
    const char *p = line;
    int rc = -1;

    *argv = NULL;
    *argc = 0;
    words = tb_alloc_array(cap, sizeof *words);
    if (!word || !words) {
        tb_err(err, errlen, "out of memory splitting a command line");
        goto out;
    }
    words[0] = NULL;
    while (*p) {
        bool in_word = false;
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')
            p++;
        if (!*p)
            break;
        wlen = 0;
        while (*p &&
               !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')) {
            in_word = true;
            if (*p == '\'') {
                const char *end = strchr(p + 1, '\'');
                if (!end) {
                    tb_err(err, errlen, "command line '%s': unterminated ' quote", line);
                    goto out;
                }
                memcpy(word + wlen, p + 1, (size_t)(end - p - 1));
                wlen += (size_t)(end - p - 1);
                p = end + 1;
            } else if (*p == '"') {
                p++;
                while (*p && *p != '"') {
                    if (*p == '\\' && p[1])
                        p++;
                    word[wlen++] = *p++;
                }
                if (*p != '"') {
                    tb_err(err, errlen, "command line '%s': unterminated \" quote", line);
                    goto out;
                }
                p++;
            } else if (*p == '\\') {
                if (!p[1]) {
                    tb_err(err, errlen, "command line '%s': a backslash at the end", line);
                    goto out;
                }
                word[wlen++] = p[1];
                p += 2;
            } else {
                word[wlen++] = *p++;
            }
        }
        if (!in_word)
            continue;
        if (nwords + 2 > cap) {
            char **q = realloc(words, 2 * cap * sizeof *q);
            if (!q) {
                tb_err(err, errlen, "out of memory splitting a command line");
                goto out;
            }
            words = q;
            cap *= 2;
        }
        words[nwords] = malloc(wlen + 1);
        if (!words[nwords]) {
            tb_err(err, errlen, "out of memory splitting a command line");
            goto out;
        }
        memcpy(words[nwords], word, wlen);
        words[nwords][wlen] = '\0';
        words[++nwords] = NULL;
    }
    if (nwords == 0) {
        tb_err(err, errlen, "command line '%s': no words", line);
        goto out;
    }
    *argv = words; /* handed over */
    *argc = (int)nwords;
    words = NULL;
    rc = 0;
out:
    tb_argv_free(words);
    free(word);
    return rc;
}

/* ---- the server's lifecycle ---- */

/* The last line of the log file written after offset from (its last LOG_TAIL bytes), ""
 * when none. */
static void log_last_line(const char *path, off_t from, char *out, size_t len)
{
    char buf[LOG_TAIL + 1];
    ssize_t got;
    off_t size;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    out[0] = '\0';
    if (fd < 0)
        return;
    size = lseek(fd, 0, SEEK_END);
    if (size - from > LOG_TAIL)
        from = size - LOG_TAIL;
    lseek(fd, from, SEEK_SET);
    got = read(fd, buf, LOG_TAIL);
    close(fd);
    if (got <= 0)
        return;
    buf[got] = '\0';
    tb_proc_last_line(buf, out, len);
}

/* How a waited-for status ended, in tb_proc_describe's words. */
static void describe_status(int status, int exec_errno, char *buf, size_t len)
{
    struct tb_proc_result r;
    memset(&r, 0, sizeof r);
    r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    r.exec_errno = exec_errno;
    tb_proc_describe(&r, 0, buf, len);
}

int tb_server_start_self(struct tb_server_proc *p, const char *tag, const char *model,
                         const char *engine, const char *step_us, long max_num_seqs,
                         long max_model_len, double ready_timeout_s, char *url, size_t urllen,
                         char *err, size_t errlen)
{
    char exe[PATH_MAX], port_s[24], seqs_s[24], len_s[24], log[PATH_MAX + 32], e[512];
    const char *tmp = getenv("TMPDIR");
    int port;
    memset(p, 0, sizeof *p);
    if (tb_self_exe(exe, sizeof exe, e, sizeof e) != 0)
        return tb_err(err, errlen, "cannot start trnbench serve: %s", e);
    port = tb_loopback_port(err, errlen);
    if (port < 0)
        return -1;
    snprintf(port_s, sizeof port_s, "%d", port);
    snprintf(seqs_s, sizeof seqs_s, "%ld", max_num_seqs);
    snprintf(len_s, sizeof len_s, "%ld", max_model_len);
    snprintf(url, urllen, "http://127.0.0.1:%d/v1", port);
    snprintf(log, sizeof log, "%s/trnbench-%s-%d.log", tmp ? tmp : "/tmp", tag, (int)getpid());
    const char *args[] = {exe,
                          "serve",
                          "--model",
                          model,
                          "--engine",
                          engine,
                          "--port",
                          port_s,
                          "--max-num-seqs",
                          seqs_s,
                          "--max-model-len",
                          len_s,
                          step_us ? "--step-us" : NULL,
                          step_us,
                          NULL};
    return tb_server_start(p, args, log, url, ready_timeout_s, err, errlen);
}

int tb_server_start(struct tb_server_proc *p, const char *const *argv, const char *log_path,
                    const char *base_url, double ready_timeout_s, char *err, size_t errlen)
{
    return tb_server_start_env(p, argv, NULL, log_path, base_url, ready_timeout_s, err, errlen);
}

int tb_server_start_env(struct tb_server_proc *p, const char *const *argv, const char *const *env,
                        const char *log_path, const char *base_url, double ready_timeout_s,
                        char *err, size_t errlen)
{
    int logfd = -1, execp[2] = {-1, -1}, exec_errno = 0, status = 0;
    off_t log_start;
    double t0;
    pid_t pid;
    char why[256] = "";

    memset(p, 0, sizeof *p);
    if (!argv || !argv[0])
        return tb_err(err, errlen, "no server command");
    if (snprintf(p->log_path, sizeof p->log_path, "%s", log_path) >= (int)sizeof p->log_path)
        return tb_err(err, errlen, "log path '%s' is too long", log_path);
    logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logfd < 0)
        return tb_err(err, errlen, "cannot open '%s': %s", log_path, strerror(errno));
    log_start = lseek(logfd, 0, SEEK_END); /* the last line is this run's, not an earlier one's */
    if (log_start < 0)
        log_start = 0;
    if (pipe(execp) != 0 || fcntl(execp[0], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(execp[1], F_SETFD, FD_CLOEXEC) != 0) {
        tb_err(err, errlen, "cannot create a pipe: %s", strerror(errno));
        goto fail;
    }
    t0 = mono_s();
    pid = fork();
    if (pid < 0) {
        tb_err(err, errlen, "cannot fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        /* the child of a single-threaded parent (the plan starts servers between load
         * levels, no client thread running): setenv is safe here */
        for (size_t k = 0; env && env[k]; k++) {
            char name[128];
            size_t n = strcspn(env[k], "=");
            if (n == 0 || n >= sizeof name)
                continue;
            memcpy(name, env[k], n);
            name[n] = '\0';
            if (env[k][n] == '=')
                setenv(name, env[k] + n + 1, 1);
            else /* "NAME" alone: not inherited (a recipe's cold start) */
                unsetenv(name);
        }
        tb_proc_exec_child(argv, logfd, logfd, execp[1]);
    }
    setpgid(pid, pid); /* here too, so the group exists before any signal to it */
    p->pid = pid;
    close(execp[1]);
    execp[1] = -1;
    /* EOF once the exec succeeded (the pipe closes on exec), or the exec's errno */
    while (read(execp[0], &exec_errno, sizeof exec_errno) < 0 && errno == EINTR)
        ;
    close(execp[0]);
    execp[0] = -1;
    close(logfd);
    logfd = -1;
    if (exec_errno) {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        p->pid = 0;
        return tb_err(err, errlen, "cannot run server '%s': %s", argv[0], strerror(exec_errno));
    }
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            char how[160], last[160];
            p->pid = 0;
            describe_status(status, exec_errno, how, sizeof how);
            log_last_line(log_path, log_start, last, sizeof last);
            return tb_err(err, errlen, "server '%s' %s before it was ready%s%s%s", argv[0], how,
                          last[0] ? "; its log's last line: '" : "", last, last[0] ? "'" : "");
        }
        if (tb_endpoint_wait_ready(base_url, 0, why, sizeof why) == 0) {
            p->start_s = mono_s() - t0;
            return 0;
        }
        if (mono_s() - t0 + READY_EVERY_S > ready_timeout_s)
            break;
        sleep_s(READY_EVERY_S);
    }
    {
        char how[160];
        tb_server_stop(p, TB_PROC_GRACE_S, how, sizeof how);
        return tb_err(err, errlen, "server '%s' was not ready within %g s (%s; stopped: %s)",
                      argv[0], ready_timeout_s, why, how);
    }
fail:
    if (logfd >= 0)
        close(logfd);
    if (execp[0] >= 0)
        close(execp[0]);
    if (execp[1] >= 0)
        close(execp[1]);
    return -1;
}

void tb_server_stop(struct tb_server_proc *p, double grace_s, char *how, size_t len)
{
    double t0 = mono_s(), grace = grace_s > 0 ? grace_s : STOP_GRACE_S;
    int status = 0;
    bool killed = false;
    pid_t w;

    if (len)
        how[0] = '\0';
    if (p->pid <= 0) {
        if (len)
            snprintf(how, len, "not running");
        return;
    }
    kill(-p->pid, SIGTERM);
    for (;;) {
        w = waitpid(p->pid, &status, WNOHANG);
        if (w == p->pid || (w < 0 && errno != EINTR))
            break;
        if (!killed && mono_s() - t0 >= grace) {
            kill(-p->pid, SIGKILL);
            killed = true;
        }
        sleep_s(0.01);
    }
    kill(-p->pid, SIGKILL); /* what the leader left behind in its group */
    if (len) {
        if (w != p->pid)
            snprintf(how, len, "cannot wait for it: %s", strerror(errno));
        else if (killed && WIFSIGNALED(status))
            snprintf(how, len, "killed by signal %d after %g s", WTERMSIG(status), grace);
        else
            describe_status(status, 0, how, len);
    }
    p->pid = 0;
}

int tb_loopback_port(char *err, size_t errlen)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
    if (fd < 0)
        return tb_err(err, errlen, "socket: %s", strerror(errno));
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    else
        tb_err(err, errlen, "no free port on the loopback: %s", strerror(errno));
    close(fd);
    return port;
}
