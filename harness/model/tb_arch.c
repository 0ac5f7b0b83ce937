/* harness/model/tb_arch.c: see tb_arch.h. */
#include "tb_arch.h"

#include "tb_range.h"
#include "tb_util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REQ_LAYERS (1u << 0)
#define REQ_HIDDEN (1u << 1)
#define REQ_HEADS  (1u << 2)
#define REQ_FFN    (1u << 3)
#define REQ_VOCAB  (1u << 4)
#define REQ_NAME   (1u << 5)
#define REQ_FAMILY (1u << 6)
#define REQ_ALL    0x7fu

/* The numeric keys of a Llama model file (README "Input ranges"). rope_theta above 1:
 * a base of 1 rotates nothing. */
const struct tb_range TB_ARCH_RANGES[] = {
    {"layers", 1, 100000, true, "decoder layers"},
    {"hidden", 1, 1048576, true, "width"},
    {"heads", 1, 65536, true, "attention heads"},
    {"kv_heads", 1, 65536, true, "key/value heads"},
    {"head_dim", 1, 65536, true, "width"},
    {"ffn", 1, 4194304, true, "width"},
    {"vocab", 2, 16777216, true, "tokens"},
    {"max_context", 1, 67108864, true, "tokens"},
    {"rope_original_context", 1, 67108864, true, "tokens (with rope_scale_factor)"},
    {"rope_theta", 2, 1e12, false, "RoPE base"},
    {"norm_eps", 1e-12, 1, false, "RMSNorm epsilon"},
    {"rope_scale_factor", 0, 1e6, false, "llama3 RoPE scaling (0: none)"},
    {"rope_low_freq_factor", 0, 1e6, false, "llama3 RoPE scaling"},
    {"rope_high_freq_factor", 0, 1e6, false, "llama3 RoPE scaling, above the low one"},
    {"published_params", 0, 1e15, false, "parameters (0: not given)"},
    {"experts", 0, 65536, true, "routed experts per MoE layer (0: dense)"},
    {"experts_active", 1, 65536, true, "routed experts per token, at most experts"},
    {"expert_ffn", 1, 4194304, true, "width"},
    {"shared_experts", 0, 64, true, "experts every token uses"},
    {"shared_expert_ffn", 1, 4194304, true, "width"},
    {"moe_layer_step", 1, 100000, true, "layers (1: every layer MoE)"},
    {NULL, 0, 0, false, NULL},
};

/* key's value v as TB_ARCH_RANGES says, into *out; or -1 with "path: line N: ...". */
static int set_num(const char *path, long line, const char *key, const char *v, double *out,
                   char *err, size_t errlen)
{
    char e[256];
    if (tb_range_field(TB_ARCH_RANGES, key, v, out, e, sizeof e) != 0)
        return tb_err(err, errlen, "%s: line %ld: %s", path, line, e);
    return 0;
}

int tb_arch_load(struct tb_arch *a, const char *path, char *err, size_t errlen)
{
    FILE *f;
    char *buf = NULL;
    size_t cap = 0;
    long line = 0;
    char *key, *val;
    int kv;
    unsigned seen = 0;
    int rc = -1;

    memset(a, 0, sizeof *a);
    a->norm_eps = 1e-5;
    a->rope_theta = 10000.0;
    snprintf(a->path, sizeof a->path, "%s", path);
    f = tb_text_open(path, TB_TEXT_FILE_MAX, err, errlen);
    if (!f)
        return -1;
    while ((kv = tb_kv_next(f, path, &buf, &cap, &line, &key, &val, err, errlen)) > 0) {
#define INT_KEY(k, field, bit)                                                                     \
    else if (!strcmp(key, k))                                                                      \
    {                                                                                              \
        double x_;                                                                                 \
        if (set_num(path, line, key, val, &x_, err, errlen))                                       \
            goto out;                                                                              \
        a->field = (int)x_;                                                                        \
        seen |= bit;                                                                               \
    }
#define DBL_KEY(k, field)                                                                          \
    else if (!strcmp(key, k))                                                                      \
    {                                                                                              \
        if (set_num(path, line, key, val, &a->field, err, errlen))                                 \
            goto out;                                                                              \
    }
        if (!strcmp(key, "name")) {
            if (!*val || strlen(val) >= sizeof a->name || strpbrk(val, " \t,/\"")) {
                tb_err(err, errlen, "%s: line %ld: field 'name': bad model name '%s'", path, line,
                       val);
                goto out;
            }
            snprintf(a->name, sizeof a->name, "%s", val);
            seen |= REQ_NAME;
        } else if (!strcmp(key, "family")) {
            if (strcmp(val, "llama") != 0) {
                tb_err(err, errlen,
                       "%s: line %ld: field 'family': unknown family '%s' (known: llama)", path,
                       line, val);
                goto out;
            }
            snprintf(a->family, sizeof a->family, "%s", val);
            seen |= REQ_FAMILY;
        } else if (!strcmp(key, "source")) {
            snprintf(a->source, sizeof a->source, "%s", val);
        } else if (!strcmp(key, "tied_embeddings")) {
            if (tb_parse_bool(val, &a->tied_embeddings) != 0) {
                tb_err(err, errlen,
                       "%s: line %ld: field 'tied_embeddings': expected true or false, got '%s'",
                       path, line, val);
                goto out;
            }
        }
        INT_KEY("layers", layers, REQ_LAYERS)
        INT_KEY("hidden", hidden, REQ_HIDDEN)
        INT_KEY("heads", heads, REQ_HEADS)
        INT_KEY("kv_heads", kv_heads, 0)
        INT_KEY("head_dim", head_dim, 0)
        INT_KEY("ffn", ffn, REQ_FFN)
        INT_KEY("vocab", vocab, REQ_VOCAB)
        INT_KEY("max_context", max_context, 0)
        INT_KEY("rope_original_context", rope_original_context, 0)
        INT_KEY("experts", experts, 0)
        INT_KEY("experts_active", experts_active, 0)
        INT_KEY("expert_ffn", expert_ffn, 0)
        INT_KEY("shared_experts", shared_experts, 0)
        INT_KEY("shared_expert_ffn", shared_expert_ffn, 0)
        INT_KEY("moe_layer_step", moe_layer_step, 0)
        DBL_KEY("rope_theta", rope_theta)
        DBL_KEY("norm_eps", norm_eps)
        DBL_KEY("rope_scale_factor", rope_scale_factor)
        DBL_KEY("rope_low_freq_factor", rope_low_freq_factor)
        DBL_KEY("rope_high_freq_factor", rope_high_freq_factor)
        DBL_KEY("published_params", published_params)
        else
        {
            tb_err(err, errlen, "%s: line %ld: field '%s': unknown key", path, line, key);
            goto out;
        }
#undef INT_KEY
#undef DBL_KEY
    }
    if (kv < 0)
        goto out;
    if ((seen & REQ_ALL) != REQ_ALL) {
        static const char *names[] = {"layers", "hidden", "heads", "ffn",
                                      "vocab",  "name",   "family"};
        for (int i = 0; i < 7; i++)
            if (!(seen & (1u << i))) {
                tb_err(err, errlen, "%s: line %ld: field '%s': missing", path, line, names[i]);
                goto out;
            }
    }
    if (!a->kv_heads)
        a->kv_heads = a->heads;
    if (!a->head_dim) {
        if (a->hidden % a->heads) {
            tb_err(err, errlen, "%s: field 'heads': hidden %d is not a multiple of heads %d", path,
                   a->hidden, a->heads);
            goto out;
        }
        a->head_dim = a->hidden / a->heads;
    }
    if (a->heads % a->kv_heads) {
        tb_err(err, errlen, "%s: field 'kv_heads': heads %d is not a multiple of kv_heads %d", path,
               a->heads, a->kv_heads);
        goto out;
    }
    if (a->head_dim % 2) {
        tb_err(err, errlen, "%s: field 'head_dim': RoPE needs an even head dimension, got %d", path,
               a->head_dim);
        goto out;
    }
    /* llama3 RoPE scaling needs its three companions (the engine refused them at run
     * time, exit 1) */
    if (a->rope_scale_factor > 0 && (a->rope_original_context < 1 || a->rope_low_freq_factor <= 0 ||
                                     a->rope_high_freq_factor <= a->rope_low_freq_factor)) {
        tb_err(err, errlen,
               "%s: field '%s': rope_scale_factor %g needs rope_original_context, "
               "rope_low_freq_factor above 0 and rope_high_freq_factor above it",
               path,
               a->rope_original_context < 1   ? "rope_original_context"
               : a->rope_low_freq_factor <= 0 ? "rope_low_freq_factor"
                                              : "rope_high_freq_factor",
               a->rope_scale_factor);
        goto out;
    }
    if (!a->max_context)
        a->max_context = 2048;
    /* a mixture of experts: the router's k of E, each expert's width, and at least one
     * MoE layer; the MoE keys of a dense model (experts 0) are an error, not ignored */
    if (a->experts > 0) {
        const char *bad = !a->experts_active               ? "experts_active"
                          : a->experts_active > a->experts ? "experts_active"
                          : !a->expert_ffn                 ? "expert_ffn"
                          : a->moe_layer_step > a->layers  ? "moe_layer_step"
                                                           : NULL;
        if (bad) {
            tb_err(err, errlen,
                   "%s: field '%s': a mixture of experts needs experts_active from 1 to experts "
                   "(%d), expert_ffn, and moe_layer_step at most layers (%d)",
                   path, bad, a->experts, a->layers);
            goto out;
        }
        if (!a->moe_layer_step)
            a->moe_layer_step = 1;
        if (!a->shared_expert_ffn)
            a->shared_expert_ffn = a->expert_ffn;
    } else if (a->experts_active || a->expert_ffn || a->shared_experts || a->shared_expert_ffn ||
               a->moe_layer_step) {
        tb_err(err, errlen,
               "%s: field '%s': a mixture-of-experts key without experts (the routed experts "
               "per layer)",
               path,
               a->experts_active      ? "experts_active"
               : a->expert_ffn        ? "expert_ffn"
               : a->shared_experts    ? "shared_experts"
               : a->shared_expert_ffn ? "shared_expert_ffn"
                                      : "moe_layer_step");
        goto out;
    }
    a->full_layers = a->layers;
    rc = 0;
out:
    free(buf);
    fclose(f);
    return rc;
}

/* The catalogue of this process (tb_arch_path, tb_arch_find): the paths of the data
 * folder's *.model files, walked once per data folder (again when a name is not found:
 * a file added since), and each catalogue model read once while its file keeps its
 * inode, size and time. One compare asks for the same few models hundreds of times (a
 * validation row each); without it each ask walked workloads/ and read the file again.
 * A mutex: a server's threads may ask too. */
struct arch_memo {
    char path[PATH_MAX]; /* the file (a.path may be cut short) */
    struct tb_arch a;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};
static struct {
    pthread_mutex_t mu;
    char datadir[PATH_MAX]; /* the folder the index is of; "" none yet */
    char **paths;           /* sorted, as tb_arch_list gives them */
    size_t npaths, cap;
    struct arch_memo *memo;
    size_t nmemo, capmemo;
} cat = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void index_add(const char *path, void *ctx)
{
    bool *oom = ctx;
    char *p;
    if (*oom)
        return;
    if (cat.npaths == cat.cap) {
        size_t nc = cat.cap ? cat.cap * 2 : 64;
        char **np = realloc(cat.paths, nc * sizeof *np);
        if (!np) {
            *oom = true;
            return;
        }
        cat.paths = np;
        cat.cap = nc;
    }
    if (!(p = strdup(path))) {
        *oom = true;
        return;
    }
    cat.paths[cat.npaths++] = p;
}

/* (Re)build the index of the data folder dir; cat.mu held. */
static int index_build(const char *dir, char *err, size_t errlen)
{
    bool oom = false;
    for (size_t i = 0; i < cat.npaths; i++)
        free(cat.paths[i]);
    cat.npaths = 0;
    cat.datadir[0] = '\0';
    if (tb_arch_list(index_add, &oom, err, errlen) < 0)
        return -1;
    if (oom)
        return tb_err(err, errlen, "out of memory listing the model catalogue");
    snprintf(cat.datadir, sizeof cat.datadir, "%s", dir);
    return 0;
}

/* The first indexed path whose file is NAME.model; NULL none. cat.mu held. */
static const char *index_find(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < cat.npaths; i++) {
        const char *base = strrchr(cat.paths[i], '/');
        base = base ? base + 1 : cat.paths[i];
        if (!strncmp(base, name, n) && !strcmp(base + n, ".model"))
            return cat.paths[i];
    }
    return NULL;
}

bool tb_arch_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof((struct tb_arch *)0)->name || !isalnum((unsigned char)name[0]))
        return false;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._+@-", *p))
            return false;
    return true;
}

int tb_arch_path(const char *name, char *out, size_t len, char *err, size_t errlen)
{
    size_t n = strlen(name);
    /* the one form of a path: a file named *.model, which tb_arch_load opens only as a
     * regular file of bounded size; anything else is a catalogue name */
    if (n > 6 && !strcmp(name + n - 6, ".model")) {
        if ((size_t)snprintf(out, len, "%s", name) >= len)
            return tb_err(err, errlen, "model file name too long: '%.64s...'", name);
        return 0;
    }
    if (!tb_arch_name_ok(name))
        return tb_err(err, errlen,
                      "bad model name '%s' (a catalogue name: a letter or digit, then letters, "
                      "digits and . _ + @ -; or a file ending in .model)",
                      name);
    {
        const char *dir = tb_datadir(), *found;
        int rc = 0;
        pthread_mutex_lock(&cat.mu);
        if (strcmp(cat.datadir, dir) != 0 || !cat.datadir[0])
            rc = index_build(dir, err, errlen);
        if (rc == 0 && !(found = index_find(name)) && (rc = index_build(dir, err, errlen)) == 0)
            found = index_find(name);
        if (rc == 0 && !found)
            rc = tb_err(err, errlen, "unknown model '%s' (no %s.model under '%s/workloads')", name,
                        name, dir);
        if (rc == 0)
            snprintf(out, len, "%s", found);
        pthread_mutex_unlock(&cat.mu);
        return rc;
    }
}

int tb_arch_find(struct tb_arch *a, const char *name, char *err, size_t errlen)
{
    char path[PATH_MAX];
    struct stat st;
    size_t n = strlen(name);
    struct arch_memo *m = NULL;
    int rc;

    if (tb_arch_path(name, path, sizeof path, err, errlen) != 0)
        return -1;
    if (n > 6 && !strcmp(name + n - 6, ".model"))
        return tb_arch_load(a, path, err, errlen); /* a user's file: read every time */
    if (stat(path, &st) != 0)
        return tb_arch_load(a, path, err, errlen); /* its own error */
    pthread_mutex_lock(&cat.mu);
    for (size_t i = 0; i < cat.nmemo; i++)
        if (!strcmp(cat.memo[i].path, path)) {
            m = &cat.memo[i];
            break;
        }
    if (m && m->dev == st.st_dev && m->ino == st.st_ino && m->size == st.st_size &&
        m->mtime.tv_sec == st.st_mtim.tv_sec && m->mtime.tv_nsec == st.st_mtim.tv_nsec) {
        *a = m->a;
        pthread_mutex_unlock(&cat.mu);
        return 0;
    }
    rc = tb_arch_load(a, path, err, errlen);
    if (rc == 0 && !m && cat.nmemo == cat.capmemo) {
        size_t nc = cat.capmemo ? cat.capmemo * 2 : 32;
        struct arch_memo *nm = realloc(cat.memo, nc * sizeof *nm);
        if (nm) {
            cat.memo = nm;
            cat.capmemo = nc;
        }
    }
    if (rc == 0 && (m || cat.nmemo < cat.capmemo)) {
        if (!m)
            m = &cat.memo[cat.nmemo++];
        *m = (struct arch_memo){
            .a = *a, .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size, .mtime = st.st_mtim};
        snprintf(m->path, sizeof m->path, "%s", path);
    }
    pthread_mutex_unlock(&cat.mu);
    return rc;
}

int tb_arch_truncate(struct tb_arch *a, int n, char *err, size_t errlen)
{
    char name[sizeof a->name];
    if (n < 1 || n > a->layers)
        return tb_err(err, errlen, "field 'layers': %s has %d layers, cannot keep %d", a->name,
                      a->layers, n);
    if (n == a->layers)
        return 0;
    if ((size_t)snprintf(name, sizeof name, "%s@L%d", a->name, n) >= sizeof name)
        return tb_err(err, errlen, "model name too long");
    memcpy(a->name, name, sizeof name);
    a->layers = n;
    return 0;
}

double tb_arch_params_per_layer(const struct tb_arch *a)
{
    double C = a->hidden, q = (double)a->heads * a->head_dim,
           kv = (double)a->kv_heads * a->head_dim;
    double attn = C * q + 2.0 * C * kv + q * C; /* wq, wk, wv, wo */
    double mlp = 3.0 * C * a->ffn;              /* gate, up, down */
    return attn + mlp + 2.0 * C;                /* + two RMSNorm weights */
}

double tb_arch_params_embedding(const struct tb_arch *a)
{
    return (double)a->vocab * a->hidden;
}

double tb_arch_params_lm_head(const struct tb_arch *a)
{
    return a->tied_embeddings ? 0.0 : (double)a->vocab * a->hidden;
}

/* ---- mixture of experts ---- */

int tb_arch_moe_layers(const struct tb_arch *a)
{
    return a->experts > 0 ? a->layers / a->moe_layer_step : 0;
}

double tb_arch_params_expert(const struct tb_arch *a)
{
    return a->experts > 0 ? 3.0 * a->hidden * a->expert_ffn : 0.0;
}

double tb_arch_params_experts(const struct tb_arch *a)
{
    return (double)tb_arch_moe_layers(a) * a->experts * tb_arch_params_expert(a);
}

/* A MoE layer's FFN parameters besides the routed experts: the shared experts and the
 * router (C x E). */
static double moe_fixed_params(const struct tb_arch *a)
{
    return 3.0 * a->hidden * a->shared_expert_ffn * a->shared_experts +
           (double)a->hidden * a->experts;
}

/* The matrix-product parameters of a MoE model with r routed experts per MoE layer,
 * LM head included: attention of every layer, the dense layers' FFN, the MoE layers'
 * shared experts, router and r routed experts. */
static double moe_matmul(const struct tb_arch *a, double r)
{
    double Lm = tb_arch_moe_layers(a);
    double attn = tb_arch_params_per_layer(a) - 2.0 * a->hidden - 3.0 * a->hidden * a->ffn;
    return a->layers * attn + (a->layers - Lm) * 3.0 * a->hidden * a->ffn +
           Lm * (moe_fixed_params(a) + r * tb_arch_params_expert(a)) + (double)a->vocab * a->hidden;
}

double tb_arch_params_total(const struct tb_arch *a)
{
    if (a->experts > 0)
        return moe_matmul(a, a->experts) - (double)a->vocab * a->hidden +
               2.0 * a->hidden * a->layers + tb_arch_params_embedding(a) +
               tb_arch_params_lm_head(a) + a->hidden;
    return a->layers * tb_arch_params_per_layer(a) + tb_arch_params_embedding(a) +
           tb_arch_params_lm_head(a) + a->hidden; /* final norm */
}

double tb_arch_params_matmul(const struct tb_arch *a)
{
    if (a->experts > 0)
        return moe_matmul(a, a->experts);
    return a->layers * (tb_arch_params_per_layer(a) - 2.0 * a->hidden) +
           (double)a->vocab * a->hidden;
}

double tb_arch_params_active(const struct tb_arch *a)
{
    return a->experts > 0 ? moe_matmul(a, a->experts_active) : tb_arch_params_matmul(a);
}

double tb_arch_experts_touched(const struct tb_arch *a, double n)
{
    double E = a->experts, k = a->experts_active;
    if (a->experts <= 0 || n <= 0)
        return 0.0;
    if (n <= 1.0)
        return k * n;
    return E * (1.0 - pow(1.0 - k / E, n));
}

double tb_arch_params_touched(const struct tb_arch *a, double n)
{
    return a->experts > 0 ? moe_matmul(a, tb_arch_experts_touched(a, n)) : tb_arch_params_matmul(a);
}

double tb_arch_ffn_active(const struct tb_arch *a)
{
    double Lm = tb_arch_moe_layers(a);
    if (a->experts <= 0)
        return a->ffn;
    return ((a->layers - Lm) * a->ffn + Lm * ((double)a->experts_active * a->expert_ffn +
                                              (double)a->shared_experts * a->shared_expert_ffn)) /
           a->layers;
}

double tb_arch_params_lora(const struct tb_arch *a, long r)
{
    double q = (double)a->heads * a->head_dim, kv = (double)a->kv_heads * a->head_dim;
    double qkv = (double)a->hidden + q + 2.0 * kv, o = q + (double)a->hidden;
    return (double)r * (qkv + o) * a->layers;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

int tb_arch_list(void (*fn)(const char *path, void *ctx), void *ctx, char *err, size_t errlen)
{
    char root[PATH_MAX];
    DIR *top;
    struct dirent *d;
    char **paths = NULL;
    size_t n = 0, cap = 0;
    int rc = -1;

    if ((size_t)snprintf(root, sizeof root, "%s/workloads", tb_datadir()) >= sizeof root)
        return tb_err(err, errlen, "data folder name too long");
    top = opendir(root);
    if (!top)
        return tb_err(err, errlen, "cannot open '%s': %s", root, strerror(errno));
    while ((d = readdir(top))) {
        char sub[PATH_MAX];
        DIR *dd;
        struct dirent *e;
        if (d->d_name[0] == '.')
            continue;
        if ((size_t)snprintf(sub, sizeof sub, "%s/%s", root, d->d_name) >= sizeof sub)
            continue;
        dd = opendir(sub);
        if (!dd)
            continue;
        while ((e = readdir(dd))) {
            size_t len = strlen(e->d_name);
            char *p;
            if (len <= 6 || strcmp(e->d_name + len - 6, ".model"))
                continue;
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 32;
                char **np = realloc(paths, nc * sizeof(*np));
                if (!np) {
                    closedir(dd);
                    tb_err(err, errlen, "out of memory");
                    goto out;
                }
                paths = np;
                cap = nc;
            }
            p = malloc(strlen(sub) + len + 2);
            if (!p) {
                closedir(dd);
                tb_err(err, errlen, "out of memory");
                goto out;
            }
            sprintf(p, "%s/%s", sub, e->d_name);
            paths[n++] = p;
        }
        closedir(dd);
    }
    qsort(paths, n, sizeof(*paths), cmp_str);
    for (size_t i = 0; i < n; i++)
        fn(paths[i], ctx);
    rc = (int)n;
out:
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    closedir(top);
    return rc;
}
