/* harness/cli/cli_opt.c: options as data (cli_opt.h). */
#include "cli_opt.h"

#include "cli.h"
#include "tb_util.h"

#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A bound as people write it: 86400, 0.001, 1099511627776, 1e18, 1e-6; a whole number's
 * in digits (LONG_MAX for any bound past it). */
static void bound(char *buf, size_t len, double x, bool integer)
{
    char *e;
    if (integer && fabs(x) < 0x1p63) {
        snprintf(buf, len, "%ld", (long)x);
        return;
    }
    if (integer) {
        snprintf(buf, len, "%ld", x < 0 ? LONG_MIN : LONG_MAX);
        return;
    }
    snprintf(buf, len, "%.15g", x);
    if ((e = strchr(buf, 'e')) != NULL) /* "1e+18" -> "1e18" */
        snprintf(e, len - (size_t)(e - buf), "e%d", atoi(e + 1));
}

int tb_cli_bad_number(char *err, size_t errlen, const char *v, bool integer, double lo, double hi)
{
    char l[32], h[32];
    bound(l, sizeof l, lo, integer);
    bound(h, sizeof h, hi, integer);
    return tb_err(err, errlen, "'%s' is not a%s number from %s to %s", v, integer ? " whole" : "",
                  l, h);
}

/* getopt_long with the commands' conventions: long options take "--opt value" and
 * "--opt=value"; -h is the only short option. Call with *state = 0 before the first
 * option (it resets getopt for a command called twice in one process). Returns the
 * option's val, -1 when the options end (argv[optind] is then the first operand; "--"
 * ends them too), or '?' after printing "trnbench CMD: unknown option '--x'" or
 * "trnbench CMD: option '--x' needs a value" on stderr. Operands may come before,
 * between or after options (GNU permutation). */
static int getopt_cmd(const char *cmd, int argc, char **argv, const struct option *opts, int *state)
{
    const char *opt;
    int c;
    if (!*state) {
        optind = 0; /* glibc: a full re-initialisation, for a second command in one process */
        opterr = 0; /* our messages, with the command's name */
        *state = 1;
    }
    c = getopt_long(argc, argv, ":h", opts, NULL); /* ':' first: a missing value is ':' */
    if (c != '?' && c != ':')
        return c;
    opt = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if (c == ':') {
        /* a long option's name without any "=value" */
        int n = (int)strcspn(opt, "=");
        fprintf(stderr, "trnbench %s: option '%.*s' needs a value\n", cmd, n, opt);
    } else if (optopt && strncmp(opt, "--", 2)) {
        fprintf(stderr, "trnbench %s: unknown option '-%c'\n", cmd, optopt);
    } else {
        fprintf(stderr, "trnbench %s: unknown option '%s'\n", cmd, opt);
    }
    return '?';
}

/* Take value v of option o: 0, or -1 after saying why on stderr. */
static int take(const char *cmd, const struct tb_opt *o, const char *v)
{
    char err[512] = "";

    switch (o->kind) {
    case TB_OPT_KIND_FLAG:
        *(bool *)o->dst = true;
        break;
    case TB_OPT_KIND_LONG: {
        /* the bounds are exact in a double below 2^53; past LONG_MAX means "no bound" */
        long l = o->lo <= (double)LONG_MIN ? LONG_MIN : (long)o->lo;
        long h = o->hi >= (double)LONG_MAX ? LONG_MAX : (long)o->hi;
        if (tb_parse_long(v, l, h, o->dst) != 0) {
            tb_cli_bad_number(err, sizeof err, v, true, o->lo, o->hi);
            fprintf(stderr, "trnbench %s: option '--%s': %s\n", cmd, o->name, err);
            return -1;
        }
        break;
    }
    case TB_OPT_KIND_DOUBLE:
        if (tb_parse_double(v, o->lo, o->hi, o->dst) != 0) {
            tb_cli_bad_number(err, sizeof err, v, false, o->lo, o->hi);
            fprintf(stderr, "trnbench %s: option '--%s': %s\n", cmd, o->name, err);
            return -1;
        }
        break;
    case TB_OPT_KIND_STR:
        *(const char **)o->dst = v;
        break;
    case TB_OPT_KIND_CHOICE: {
        int k;
        for (k = 0; o->choices[k]; k++)
            if (!strcmp(v, o->choices[k]))
                break;
        if (!o->choices[k]) {
            /* "'x' is not a, b or c" */
            fprintf(stderr, "trnbench %s: option '--%s': '%s' is not ", cmd, o->name, v);
            for (k = 0; o->choices[k]; k++)
                fprintf(stderr, "%s%s",
                        k == 0              ? ""
                        : o->choices[k + 1] ? ", "
                                            : " or ",
                        o->choices[k]);
            fputc('\n', stderr);
            return -1;
        }
        *(int *)o->dst = k;
        break;
    }
    case TB_OPT_KIND_LIST: {
        struct tb_opt_list *l = o->dst;
        if (l->n >= l->cap) {
            fprintf(stderr, "trnbench %s: option '--%s': given more than %zu times\n", cmd, o->name,
                    l->cap);
            return -1;
        }
        l->v[l->n++] = v;
        break;
    }
    case TB_OPT_KIND_FN:
        if (o->fn(o, v, err, sizeof err) != 0) {
            fprintf(stderr, "trnbench %s: option '--%s': %s\n", cmd, o->name, err);
            return -1;
        }
        break;
    }
    if (o->seen)
        *o->seen = true;
    return 0;
}

int tb_cli_parse(const char *cmd, int argc, char **argv, const struct tb_opt *opts,
                 void (*usage)(FILE *f))
{
    struct option *lopts;
    size_t n = 0;
    int c, state = 0, rc = TB_CLI_GO;

    while (opts[n].name)
        n++;
    lopts = tb_alloc_array(n + 2, sizeof *lopts);
    if (!lopts) {
        fprintf(stderr, "trnbench %s: out of memory\n", cmd);
        return 1;
    }
    /* each option's val is 256 + its index: past every character, so never 'h' or '?' */
    for (size_t i = 0; i < n; i++)
        lopts[i] = (struct option){
            opts[i].name, opts[i].kind == TB_OPT_KIND_FLAG ? no_argument : required_argument, NULL,
            256 + (int)i};
    lopts[n] = (struct option){"help", no_argument, NULL, 'h'};
    lopts[n + 1] = (struct option){NULL, 0, NULL, 0};
    while (rc == TB_CLI_GO && (c = getopt_cmd(cmd, argc, argv, lopts, &state)) != -1) {
        if (c == 'h') {
            if (usage)
                usage(stdout);
            rc = 0;
        } else if (c < 256 || c >= 256 + (int)n) { /* getopt_cmd said what is wrong */
            if (usage)
                usage(stderr);
            rc = 2;
        } else if (take(cmd, &opts[c - 256], optarg) != 0) {
            rc = 2;
        }
    }
    free(lopts);
    return rc;
}
