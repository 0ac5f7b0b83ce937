/*
 * harness/platform/tb_proc.h: running another program as a child process, without a shell
 * (DESIGN.md section 5): fork and execvp of an argv array, stdin from /dev/null, its
 * stdout captured whole, its stderr kept (the last bytes, for the message) and, when
 * asked, copied to one of our streams line by line as it comes (a peer's progress).
 *
 * The child leads a process group of its own, so that a time limit ends everything it
 * started (PyTorch's compile workers included): SIGTERM to the group when the limit
 * runs out, SIGKILL a grace later (TB_PROC_GRACE_S unless the options say). When the
 * child exits while processes it left behind still hold its output open, they get
 * SIGKILL after the same grace.
 *
 * Ownership: a tb_proc_result owns its captured stdout; release it with
 * tb_proc_result_release, also after a failure. No state between calls; not
 * thread-safe (waitpid on the child's pid only, but SIGPIPE is not touched).
 */
#ifndef TB_PROC_H
#define TB_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define TB_PROC_GRACE_S 5.0
#define TB_PROC_MAX_OUT ((size_t)64 << 20) /* stdout captured at most; more is an error */

struct tb_proc_opts {
    double timeout_s;        /* 0: none */
    double grace_s;          /* after SIGTERM, or after the child's exit; 0: TB_PROC_GRACE_S */
    FILE *echo;              /* borrowed: gets each stderr line as it comes; NULL: none */
    const char *echo_prefix; /* before each echoed line; NULL: none */
};

struct tb_proc_result {
    char *out;           /* owned: all of stdout, NUL-terminated (NULL before a run) */
    size_t out_len;      /* bytes in out, the NUL excluded */
    char err_tail[2048]; /* the last bytes of stderr, NUL-terminated */
    int exit_status;     /* the child's exit status when it exited, else -1 */
    int term_signal;     /* the signal that ended it, else 0 */
    bool timed_out;      /* the time limit ran out and the group was signalled */
    int exec_errno;      /* errno of a failed execvp (the program never ran), else 0 */
};

/* Run argv (argv[0] looked up on PATH, NULL-terminated) to its end. Returns 0 when the
 * child ran and was waited for: see r for how it ended (a failed exec is r->exec_errno,
 * exit status 127); -1 with a message when a pipe, fork or read failed here or stdout
 * grew past TB_PROC_MAX_OUT (the child is killed then). */
int tb_proc_run(const char *const *argv, const struct tb_proc_opts *o, struct tb_proc_result *r,
                char *err, size_t errlen);
void tb_proc_result_release(struct tb_proc_result *r);

/* In a child just forked: a process group of its own, stdin from /dev/null, stdout to
 * out_w and stderr to err_w (they may be the same descriptor), then execvp(argv); a
 * failed exec writes its errno (an int) to exec_w, which should be close-on-exec so the
 * parent reads EOF after a good exec, and exits 127. Never returns. */
#ifdef __GNUC__
__attribute__((noreturn))
#endif
void tb_proc_exec_child(const char *const *argv, int out_w, int err_w, int exec_w);

/* The last non-empty line of text, trimmed, into out (truncated to len). */
void tb_proc_last_line(const char *text, char *out, size_t len);

/* How a run ended, for a message: "exited with status 1", "killed by signal 9",
 * "timed out after 900 s", "cannot be run: No such file or directory". */
void tb_proc_describe(const struct tb_proc_result *r, double timeout_s, char *buf, size_t len);

#endif
