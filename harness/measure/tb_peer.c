/* harness/measure/tb_peer.c: see tb_peer.h. */
#include "tb_peer.h"

#include "tb_csv.h"
#include "tb_flops.h"
#include "tb_proc.h"
#include "tb_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REL_TOL 1e-6 /* agreement asked of the peer's derived figures and FLOPs */

const char *const TB_PEER_COLUMNS[TB_PEER_NCOLS] = {
    "peer",  "peer_version", "mode",     "device",       "model",  "layers",    "phase",
    "batch", "seq_in",       "seq_out",  "reps",         "warmup", "median_s",  "min_s",
    "max_s", "mean_s",       "stddev_s", "tokens_per_s", "flops",  "samples_s", "notes",
};

static const char *const PEERS[] = {"pytorch"};
/* the peer's numeric options, in the order of num[] in tb_peer_run */
static const char *const NUM_OPTS[6] = {"--batch", "--seq",    "--seq-out",
                                        "--reps",  "--warmup", "--seed"};

/* ---- reading the output ---- */

/* The cursor over one row: where errors point. */
struct field_ctx {
    const struct tb_csv_table *t;
    size_t row;
    const char *name;
    char *err;
    size_t errlen;
};

static int bad(const struct field_ctx *f, const char *col, const char *what)
{
    return tb_err(f->err, f->errlen, "%s: line %ld: field '%s': %s: '%s'", f->name,
                  f->t->lines[f->row], col, what, tb_csv_field(f->t, f->row, col));
}

static int get_text(const struct field_ctx *f, const char *col, char *out, size_t len, bool need)
{
    const char *v = tb_csv_field(f->t, f->row, col);
    if ((need && !*v) || strlen(v) >= len)
        return bad(f, col, need && !*v ? "empty" : "too long");
    snprintf(out, len, "%s", v);
    return 0;
}

static int get_int(const struct field_ctx *f, const char *col, long lo, int *out)
{
    long v;
    if (tb_parse_long(tb_csv_field(f->t, f->row, col), lo, 1L << 30, &v) != 0)
        return bad(f, col, lo > 0 ? "not a positive integer" : "not a non-negative integer");
    *out = (int)v;
    return 0;
}

/* A finite number > 0 (>= 0 when zero_ok). */
static int get_num(const struct field_ctx *f, const char *col, bool zero_ok, double *out)
{
    if (tb_parse_double(tb_csv_field(f->t, f->row, col), 0, HUGE_VAL, out) != 0 ||
        (!zero_ok && *out <= 0))
        return bad(f, col, zero_ok ? "not a non-negative number" : "not a positive number");
    return 0;
}

static bool close_to(double want, double got)
{
    return fabs(want - got) <= REL_TOL * fabs(want);
}

/* samples_s: reps numbers in [min_s, max_s], ';' between them, into x->samples_s. */
static int get_samples(const struct field_ctx *f, struct tb_peer_row *x)
{
    const char *s = tb_csv_field(f->t, f->row, "samples_s");
    char *copy = tb_strdup(s), *save = NULL, *tok;
    int n = 0, rc = -1;

    x->samples_s = tb_alloc_array((size_t)x->reps, sizeof *x->samples_s);
    if (!copy || !x->samples_s) {
        free(copy);
        return tb_err(f->err, f->errlen, "out of memory");
    }
    for (tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        double v;
        if (n == x->reps)
            goto bad_count;
        if (tb_parse_double(tok, 0, HUGE_VAL, &v) != 0 || v <= 0) {
            bad(f, "samples_s", "not a list of numbers");
            goto out;
        }
        if (v < x->min_s * (1 - REL_TOL) || v > x->max_s * (1 + REL_TOL)) {
            bad(f, "samples_s", "a sample outside [min_s, max_s]");
            goto out;
        }
        x->samples_s[n++] = v;
    }
    if (n != x->reps)
        goto bad_count;
    rc = 0;
    goto out;
bad_count:
    tb_err(f->err, f->errlen, "%s: line %ld: field 'samples_s': %s%d samples where reps is %d",
           f->name, f->t->lines[f->row], n == x->reps ? "more than " : "", n, x->reps);
out:
    free(copy);
    return rc;
}

static int parse_row(const struct field_ctx *f, struct tb_peer_row *x)
{
    char phase[16];
    double units;

    memset(x, 0, sizeof *x);
    x->line = f->t->lines[f->row];
    if (get_text(f, "peer", x->peer, sizeof x->peer, true) ||
        get_text(f, "peer_version", x->version, sizeof x->version, true) ||
        get_text(f, "mode", x->mode, sizeof x->mode, true) ||
        get_text(f, "device", x->device, sizeof x->device, true) ||
        get_text(f, "model", x->model, sizeof x->model, true) ||
        get_text(f, "phase", phase, sizeof phase, true) ||
        get_text(f, "notes", x->notes, sizeof x->notes, false))
        return -1;
    if (strcmp(x->mode, "eager") && strcmp(x->mode, "compile"))
        return bad(f, "mode", "not eager or compile");
    if (tb_phase_from_string(phase, &x->phase) != 0 || x->phase == TB_PHASE_DENOISE)
        return bad(f, "phase", "not prefill, decode or train");
    if (get_int(f, "layers", 1, &x->layers) || get_int(f, "batch", 1, &x->batch) ||
        get_int(f, "seq_in", 1, &x->seq_in) ||
        get_int(f, "seq_out", x->phase == TB_PHASE_DECODE ? 1 : 0, &x->seq_out) ||
        get_int(f, "reps", 1, &x->reps) || get_int(f, "warmup", 0, &x->warmup))
        return -1;
    if (get_num(f, "median_s", false, &x->median_s) || get_num(f, "min_s", false, &x->min_s) ||
        get_num(f, "max_s", false, &x->max_s) || get_num(f, "mean_s", false, &x->mean_s) ||
        get_num(f, "stddev_s", true, &x->stddev_s) ||
        get_num(f, "tokens_per_s", false, &x->tokens_per_s) ||
        get_num(f, "flops", false, &x->flops))
        return -1;
    if (x->min_s > x->median_s || x->median_s > x->max_s)
        return bad(f, "median_s", "not between min_s and max_s");
    if (x->min_s > x->mean_s || x->mean_s > x->max_s)
        return bad(f, "mean_s", "not between min_s and max_s");
    units = x->phase == TB_PHASE_DECODE ? x->batch : (double)x->batch * x->seq_in;
    if (!close_to(units / x->median_s, x->tokens_per_s))
        return tb_err(
            f->err, f->errlen, "%s: line %ld: field 'tokens_per_s': %g, but %s / median_s is %g",
            f->name, x->line, x->tokens_per_s,
            x->phase == TB_PHASE_DECODE ? "batch" : "batch x seq_in", units / x->median_s);
    return get_samples(f, x);
}

int tb_peer_parse(struct tb_peer_output *o, const char *name, const char *text, size_t len,
                  char *err, size_t errlen)
{
    struct tb_csv_table t;
    const char *need[TB_PEER_NCOLS + 1];
    int rc = -1;

    memset(o, 0, sizeof *o);
    if (tb_csv_parse(&t, name, text, len, err, errlen) != 0)
        return -1;
    memcpy(need, TB_PEER_COLUMNS, sizeof TB_PEER_COLUMNS);
    need[TB_PEER_NCOLS] = NULL;
    if (tb_csv_require(&t, need, err, errlen) != 0)
        goto out;
    if (t.nrows == 0) {
        tb_err(err, errlen, "%s: no measurements (a header only)", name);
        goto out;
    }
    o->rows = tb_alloc_array(t.nrows, sizeof *o->rows);
    if (!o->rows) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    for (size_t r = 0; r < t.nrows; r++) {
        struct field_ctx f = {&t, r, name, err, errlen};
        int bad_row = parse_row(&f, &o->rows[r]);
        o->nrows++; /* its samples are owned now, even when the row is bad */
        if (bad_row)
            goto out;
    }
    rc = 0;
out:
    if (rc != 0)
        tb_peer_output_release(o);
    tb_csv_release(&t);
    return rc;
}

void tb_peer_output_release(struct tb_peer_output *o)
{
    for (size_t i = 0; i < o->nrows; i++)
        free(o->rows[i].samples_s);
    free(o->rows);
    memset(o, 0, sizeof *o);
}

/* ---- checking it against the request ---- */

static int mismatch(const struct tb_peer_row *row, const char *name, const char *col, long got,
                    long want, char *err, size_t errlen)
{
    return tb_err(err, errlen, "%s: line %ld: field '%s': %ld, but %ld was asked", name, row->line,
                  col, got, want);
}

int tb_peer_check(const struct tb_peer_row *row, const char *name, const struct tb_peer_request *q,
                  char *err, size_t errlen)
{
    const struct tb_arch *a = q->arch;
    const double B = q->batch, T = q->seq_in, n = q->seq_out;
    double want;

    if (strcmp(row->peer, q->peer))
        return tb_err(err, errlen, "%s: line %ld: field 'peer': '%s', but '%s' was asked", name,
                      row->line, row->peer, q->peer);
    if (strcmp(row->model, a->name))
        return tb_err(err, errlen, "%s: line %ld: field 'model': '%s', but '%s' was asked", name,
                      row->line, row->model, a->name);
    if (row->phase != q->phase)
        return tb_err(err, errlen, "%s: line %ld: field 'phase': %s, but %s was asked", name,
                      row->line, tb_phase_to_string(row->phase), tb_phase_to_string(q->phase));
    if (row->layers != a->layers)
        return mismatch(row, name, "layers", row->layers, a->layers, err, errlen);
    if (row->batch != q->batch)
        return mismatch(row, name, "batch", row->batch, q->batch, err, errlen);
    if (row->seq_in != q->seq_in)
        return mismatch(row, name, "seq_in", row->seq_in, q->seq_in, err, errlen);
    if (q->phase == TB_PHASE_DECODE && row->seq_out != q->seq_out)
        return mismatch(row, name, "seq_out", row->seq_out, q->seq_out, err, errlen);
    if (row->reps != q->reps)
        return mismatch(row, name, "reps", row->reps, q->reps, err, errlen);
    want = q->phase == TB_PHASE_PREFILL  ? tb_flops_prefill(a, B, T)
           : q->phase == TB_PHASE_DECODE ? tb_flops_decode(a, B, T, n) / n
                                         : tb_flops_train(a, B, T);
    if (!close_to(want, row->flops))
        return tb_err(err, errlen,
                      "%s: line %ld: field 'flops': %.6g, but trnbench counts %.6g for %s of %s "
                      "(the peer read the model differently)",
                      name, row->line, row->flops, want, tb_phase_to_string(q->phase), a->name);
    return 0;
}

/* ---- running it ---- */

int tb_peer_script(const char *name, char *path, size_t len, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof PEERS / sizeof PEERS[0]; i++)
        if (!strcmp(name, PEERS[i])) {
            if ((size_t)snprintf(path, len, "%s/workloads/peers/%s_llama.py", tb_datadir(), name) >=
                len)
                return tb_err(err, errlen, "data folder name too long");
            return 0;
        }
    return tb_err(err, errlen, "unknown peer '%s' (known: pytorch)", name);
}

/* The child's last stderr line without the "script_name: " its messages start with. */
static void reason_of(const struct tb_proc_result *pr, const char *script, char *out, size_t len)
{
    const char *base = strrchr(script, '/');
    size_t n;
    char line[512];
    base = base ? base + 1 : script;
    n = strcspn(base, ".");
    tb_proc_last_line(pr->err_tail, line, sizeof line);
    if (!strncmp(line, base, n) && !strncmp(line + n, ": ", 2))
        snprintf(out, len, "%s", line + n + 2);
    else
        snprintf(out, len, "%s", *line ? line : "no message");
}

int tb_peer_run(const struct tb_peer_request *q, struct tb_peer_output *o, char *msg, size_t msglen)
{
    char num[6][32], layers[32], name[64], how[128], reason[512], err[1024];
    const char *argv[24];
    struct tb_proc_opts po = {.timeout_s = q->timeout_s, .echo = q->echo};
    struct tb_proc_result pr;
    char prefix[48];
    int k = 0, rc = TB_PEER_FAILED;

    memset(o, 0, sizeof *o);
    memset(&pr, 0, sizeof pr);
    if (!tb_file_exists(q->script))
        return tb_err(msg, msglen, "no peer script '%s'", q->script);
    snprintf(num[0], sizeof num[0], "%d", q->batch);
    snprintf(num[1], sizeof num[1], "%d", q->seq_in);
    snprintf(num[2], sizeof num[2], "%d", q->seq_out);
    snprintf(num[3], sizeof num[3], "%d", q->reps);
    snprintf(num[4], sizeof num[4], "%d", q->warmup);
    snprintf(num[5], sizeof num[5], "%llu", (unsigned long long)q->seed);
    snprintf(layers, sizeof layers, "%d", q->arch->layers);
    argv[k++] = q->python;
    argv[k++] = q->script;
    argv[k++] = "--model";
    argv[k++] = q->arch->path;
    if (q->arch->layers != q->arch->full_layers) {
        argv[k++] = "--layers";
        argv[k++] = layers;
    }
    argv[k++] = "--phase";
    argv[k++] = tb_phase_to_string(q->phase);
    for (int i = 0; i < 6; i++) {
        argv[k++] = NUM_OPTS[i];
        argv[k++] = num[i];
    }
    argv[k++] = "--mode";
    argv[k++] = q->modes;
    argv[k] = NULL;
    snprintf(prefix, sizeof prefix, "  %s: ", q->peer);
    po.echo_prefix = prefix;
    if (tb_proc_run(argv, &po, &pr, err, sizeof err) != 0) {
        tb_err(msg, msglen, "peer %s: %s", q->peer, err);
        goto out;
    }
    reason_of(&pr, q->script, reason, sizeof reason);
    if (pr.exec_errno) {
        tb_err(msg, msglen, "cannot run '%s': %s", q->python, strerror(pr.exec_errno));
        rc = TB_PEER_UNAVAILABLE;
        goto out;
    }
    if (!pr.timed_out && pr.exit_status == TB_PEER_EXIT_UNAVAILABLE) {
        tb_err(msg, msglen, "%s", reason);
        rc = TB_PEER_UNAVAILABLE;
        goto out;
    }
    if (pr.timed_out || pr.exit_status != 0) {
        tb_proc_describe(&pr, q->timeout_s, how, sizeof how);
        tb_err(msg, msglen, "'%s %s' %s: %s", q->python, q->script, how, reason);
        goto out;
    }
    snprintf(name, sizeof name, "%s peer output", q->peer);
    if (tb_peer_parse(o, name, pr.out ? pr.out : "", pr.out_len, msg, msglen) != 0)
        goto out;
    for (size_t i = 0; i < o->nrows; i++)
        if (tb_peer_check(&o->rows[i], name, q, msg, msglen) != 0)
            goto out;
    rc = TB_PEER_OK;
out:
    if (rc != TB_PEER_OK)
        tb_peer_output_release(o);
    tb_proc_result_release(&pr);
    return rc;
}

const struct tb_peer_row *tb_peer_best(const struct tb_peer_output *o, enum tb_phase phase,
                                       int batch)
{
    const struct tb_peer_row *best = NULL;
    for (size_t i = 0; i < o->nrows; i++) {
        const struct tb_peer_row *x = &o->rows[i];
        if (x->phase == phase && x->batch == batch &&
            (!best || x->tokens_per_s > best->tokens_per_s))
            best = x;
    }
    return best;
}
