/*
 * harness/cli/cli_opt.h: a command's options as data, in the manner of git's
 * parse-options. Each entry binds a long option to the variable it fills, the value's
 * kind and range; one loop (tb_cli_parse) reads argv into the variables and refuses a
 * bad value in one wording per kind, naming the command and the option:
 *
 *   trnbench CMD: option '--NAME': 'V' is not a whole number from LO to HI
 *   trnbench CMD: option '--NAME': 'V' is not a number from LO to HI
 *   trnbench CMD: option '--NAME': 'V' is not A, B or C
 *   trnbench CMD: option '--NAME': given more than N times         (TB_OPT_LIST)
 *   trnbench CMD: option '--NAME': MESSAGE                       (a TB_OPT_FN's own)
 *
 * The syntax: long options only, "--opt value" or "--opt=value", -h and --help for
 * the usage, operands anywhere (GNU permutation: argv is reordered, operands last),
 * "--" ends the options; an unknown option or a missing value is said as
 * "trnbench CMD: unknown option '--x'" or "trnbench CMD: option '--x' needs a value".
 * Bounds are the existing constants of the thing an option sets (TB_SLURM_MAX_NODES,
 * a tb_range table's lo and hi), so the message and the check share them.
 *
 * Ownership: a table is the caller's (usually a local array, since its dst pointers
 * point at the caller's variables); TB_OPT_STR stores pointers into argv.
 */
#ifndef TB_CLI_OPT_H
#define TB_CLI_OPT_H

#include <getopt.h> /* optind */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum tb_opt_kind {
    TB_OPT_KIND_FLAG,   /* no value: *(bool *)dst = true */
    TB_OPT_KIND_LONG,   /* *(long *)dst: a whole number in [lo, hi] */
    TB_OPT_KIND_DOUBLE, /* *(double *)dst: a finite number in [lo, hi] */
    TB_OPT_KIND_STR,    /* *(const char **)dst = the value (points into argv) */
    TB_OPT_KIND_CHOICE, /* *(int *)dst = the index of the value in choices */
    TB_OPT_KIND_LIST,   /* struct tb_opt_list *dst: the value appended (repeatable) */
    TB_OPT_KIND_FN,     /* fn(opt, value, err, errlen): 0, or -1 with a message in err */
};

struct tb_opt {
    const char *name; /* the long name without "--"; NULL ends a table */
    enum tb_opt_kind kind;
    void *dst;                  /* borrowed: the variable the option fills (FN: what fn fills) */
    double lo, hi;              /* LONG, DOUBLE: inclusive bounds */
    const char *const *choices; /* CHOICE: the accepted values, NULL-terminated */
    int (*fn)(const struct tb_opt *o, const char *value, char *err, size_t errlen); /* FN */
    bool *seen; /* may be NULL: set true when the option is given */
};

/* The values of a repeatable option, in order: v[0..n), at most cap (one more is refused,
 * "given more than CAP times"). v is borrowed; its strings point into argv. */
struct tb_opt_list {
    const char **v;
    size_t n, cap;
};

/* Table entries. */
#define TB_OPT_FLAG(n, d)                                                                          \
    {                                                                                              \
        (n), TB_OPT_KIND_FLAG, (d), 0, 0, NULL, NULL, NULL                                         \
    }
#define TB_OPT_LONG(n, d, l, h)                                                                    \
    {                                                                                              \
        (n), TB_OPT_KIND_LONG, (d), (l), (h), NULL, NULL, NULL                                     \
    }
#define TB_OPT_DOUBLE(n, d, l, h)                                                                  \
    {                                                                                              \
        (n), TB_OPT_KIND_DOUBLE, (d), (l), (h), NULL, NULL, NULL                                   \
    }
#define TB_OPT_STR(n, d)                                                                           \
    {                                                                                              \
        (n), TB_OPT_KIND_STR, (d), 0, 0, NULL, NULL, NULL                                          \
    }
#define TB_OPT_CHOICE(n, d, c)                                                                     \
    {                                                                                              \
        (n), TB_OPT_KIND_CHOICE, (d), 0, 0, (c), NULL, NULL                                        \
    }
#define TB_OPT_LIST(n, l)                                                                          \
    {                                                                                              \
        (n), TB_OPT_KIND_LIST, (l), 0, 0, NULL, NULL, NULL                                         \
    }
#define TB_OPT_FN(n, f, d)                                                                         \
    {                                                                                              \
        (n), TB_OPT_KIND_FN, (d), 0, 0, NULL, (f), NULL                                            \
    }
#define TB_OPT_END                                                                                 \
    {                                                                                              \
        NULL, TB_OPT_KIND_FLAG, NULL, 0, 0, NULL, NULL, NULL                                       \
    }

/* What tb_cli_parse returns when the command goes on. */
#define TB_CLI_GO (-1)

/* Read argv's options (argv[0] is the command's name) into opts' variables, in order
 * (a later value wins). Returns TB_CLI_GO with optind at the first operand (operands
 * are moved after the options); else the command's exit status, having said why:
 *   0  -h or --help: usage(stdout) printed;
 *   2  an unknown option or a missing value (said, then usage(stderr)), or a
 *      refused value (the one wording above, no usage).
 * cmd names the command in messages ("run", "perf"). usage may be NULL. */
int tb_cli_parse(const char *cmd, int argc, char **argv, const struct tb_opt *opts,
                 void (*usage)(FILE *f));

/* The one wording of a refused number, into err: "'V' is not a whole number from LO to
 * HI" (integer) or "'V' is not a number from LO to HI"; for a TB_OPT_FN that checks a
 * number itself (against a tb_range table's lo and hi, say). Returns -1. */
int tb_cli_bad_number(char *err, size_t errlen, const char *v, bool integer, double lo, double hi);

#endif
