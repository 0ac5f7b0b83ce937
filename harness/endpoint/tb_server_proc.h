/*
 * harness/endpoint/tb_server_proc.h: the lifecycle of a server the endpoint executor
 * starts itself (`--server-cmd`, or `trnbench serve` for a suite's own serving run):
 * its command split into argv and started without a shell (fork, execvp), in a process
 * group of its own, stdout and stderr both appended to a log file in the out folder;
 * ready when the endpoint answers (tb_endpoint_wait_ready); the time from launch to
 * ready recorded (server_start_s: minutes on Neuron, where the first start compiles);
 * SIGTERM to the group at the end or on failure, SIGKILL after a grace.
 *
 * Ownership: a struct tb_server_proc is the running child; tb_server_stop ends it (it is
 * safe to call twice and on a server that never started). Not thread-safe.
 */
#ifndef TB_SERVER_PROC_H
#define TB_SERVER_PROC_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

struct tb_server_proc {
    pid_t pid;               /* the child (its process group's id); 0: not running */
    char log_path[PATH_MAX]; /* its stdout and stderr */
    double start_s;          /* launch to ready, seconds */
};

/* Split a command line into words, for argv: whitespace separates, '...' and "..."
 * group (a backslash escapes the next character outside single quotes); nothing is
 * expanded ($, *, ~ and ` are literal). *argv is NULL-terminated, owned by the caller
 * (tb_argv_free). Returns 0, or -1 with a message (an unterminated quote, no words). */
int tb_argv_split(const char *line, char ***argv, int *argc, char *err, size_t errlen);
void tb_argv_free(char **argv);

/* Start argv (argv[0] looked up on PATH) with its output appended to log_path and wait
 * at most ready_timeout_s for base_url to answer. Returns 0 (p->start_s set), or -1
 * with a message naming why (it could not be run, it exited early and how, with the
 * log's last line; it was not ready in time): the child is stopped then. */
int tb_server_start(struct tb_server_proc *p, const char *const *argv, const char *log_path,
                    const char *base_url, double ready_timeout_s, char *err, size_t errlen);
/* The same with env ("NAME=value" strings, NULL-terminated; NULL: none) added to the
 * child's environment, e.g. a recipe's VLLM_CACHE_ROOT; a "NAME" without '=' is removed
 * from it (an inherited variable the child must not see). */
int tb_server_start_env(struct tb_server_proc *p, const char *const *argv, const char *const *env,
                        const char *log_path, const char *base_url, double ready_timeout_s,
                        char *err, size_t errlen);

/* This program's own `trnbench serve --model M --engine E [--step-us S] --port P
 * --max-num-seqs N --max-model-len L` on a free loopback port P, its log in $TMPDIR (else
 * /tmp) as trnbench-TAG-PID.log (p->log_path): the server the perf checks measure
 * against. url (at least 64 bytes) gets its base URL. Returns 0, or -1 with the reason. */
int tb_server_start_self(struct tb_server_proc *p, const char *tag, const char *model,
                         const char *engine, const char *step_us, long max_num_seqs,
                         long max_model_len, double ready_timeout_s, char *url, size_t urllen,
                         char *err, size_t errlen);

/* A free TCP port on the loopback, the kernel's pick (closed again, for a server to
 * take: another process could take it first, which the server's start then reports).
 * Returns the port, or -1 with a message. */
int tb_loopback_port(char *err, size_t errlen);

/* SIGTERM to the server's group, SIGKILL after grace_s (0: 10 s) if it has not ended;
 * how it ended into how ("exited with status 0", "killed by signal 9 after 10 s").
 * Nothing when it is not running. */
void tb_server_stop(struct tb_server_proc *p, double grace_s, char *how, size_t len);

#endif
