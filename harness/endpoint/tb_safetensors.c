/* harness/endpoint/tb_safetensors.c: see tb_safetensors.h. */
#include "tb_safetensors.h"

#include "tb_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* ---- the tensors of a Llama ---- */

struct tensor {
    char name[80];
    int ndim;
    uint64_t shape[2];
    bool ones; /* an RMSNorm weight: 1.0 */
    int shard; /* 0-based */
};

static uint64_t tensor_bytes(const struct tensor *t)
{
    return 2 * t->shape[0] * (t->ndim > 1 ? t->shape[1] : 1);
}

static void add(struct tensor *t, int *n, bool ones, uint64_t rows, uint64_t cols, const char *name)
{
    struct tensor *x = &t[(*n)++];
    memset(x, 0, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    x->ones = ones;
    x->ndim = cols ? 2 : 1;
    x->shape[0] = rows;
    x->shape[1] = cols;
}

/* The tensors of a in LlamaForCausalLM's order (state_dict order): a malloc'ed array
 * of *n, or NULL with a message. */
static struct tensor *llama_tensors(const struct tb_arch *a, int *n, char *err, size_t errlen)
{
    const uint64_t C = (uint64_t)a->hidden, F = (uint64_t)a->ffn, V = (uint64_t)a->vocab;
    const uint64_t Q = (uint64_t)a->heads * (uint64_t)a->head_dim;
    const uint64_t KV = (uint64_t)a->kv_heads * (uint64_t)a->head_dim;
    /* a layer's tensors: name, RMSNorm, [rows, cols] (cols 0: a vector) */
    const struct {
        const char *name;
        bool ones;
        uint64_t rows, cols;
    } layer[] = {
        {"input_layernorm", true, C, 0},    {"self_attn.q_proj", false, Q, C},
        {"self_attn.k_proj", false, KV, C}, {"self_attn.v_proj", false, KV, C},
        {"self_attn.o_proj", false, C, Q},  {"post_attention_layernorm", true, C, 0},
        {"mlp.gate_proj", false, F, C},     {"mlp.up_proj", false, F, C},
        {"mlp.down_proj", false, C, F},
    };
    struct tensor *t;
    char name[80];

    *n = 0;
    if (a->experts > 0)
        return tb_err(err, errlen,
                      "model '%s': a mixture of experts has no Llama checkpoint layout (serve "
                      "its published checkpoint with --model-path)",
                      a->name),
               NULL;
    if (a->layers < 1 || C < 1 || F < 1 || V < 1 || Q < 1 || KV < 1)
        return tb_err(err, errlen, "model '%s': a dimension is not positive", a->name), NULL;
    t = tb_alloc_array((size_t)a->layers * 9 + 3, sizeof *t);
    if (!t)
        return tb_err(err, errlen, "out of memory"), NULL;
    add(t, n, false, V, C, "model.embed_tokens.weight");
    for (int l = 0; l < a->layers; l++)
        for (size_t k = 0; k < sizeof layer / sizeof *layer; k++) {
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, layer[k].name);
            add(t, n, layer[k].ones, layer[k].rows, layer[k].cols, name);
        }
    add(t, n, true, C, 0, "model.norm.weight");
    if (!a->tied_embeddings)
        add(t, n, false, V, C, "lm_head.weight");
    return t;
}

/* ---- the layout: shards, headers, index ---- */

struct layout {
    struct tensor *t; /* owned */
    int n;
    int nshards;
    char (*file)[64];   /* owned: [nshards] */
    char **header;      /* owned: [nshards], each the padded JSON (NUL-terminated) */
    size_t *header_len; /* owned: [nshards] */
    uint64_t *data;     /* owned: [nshards] tensor bytes */
    char *index;        /* owned: the index's JSON, NULL with one shard */
    uint64_t tensor_bytes, file_bytes;
};

static void layout_release(struct layout *L)
{
    for (int s = 0; L->header && s < L->nshards; s++)
        free(L->header[s]);
    free(L->t);
    free(L->file);
    free(L->header);
    free(L->header_len);
    free(L->data);
    free(L->index);
    memset(L, 0, sizeof *L);
}

/* The JSON header of shard s, padded with spaces to a multiple of 8 bytes. */
static char *shard_header(const struct layout *L, int s, const struct tb_arch *a, uint64_t seed,
                          size_t *len)
{
    json_t *h = json_object(), *meta = json_object();
    char seedtxt[24], *text = NULL, *padded = NULL;
    uint64_t off = 0;
    size_t n, p;

    if (!h || !meta)
        goto out;
    snprintf(seedtxt, sizeof seedtxt, "%llu", (unsigned long long)seed);
    /* "format": "pt", as transformers' save_pretrained writes it */
    json_object_set_new(meta, "format", json_string("pt"));
    json_object_set_new(meta, "trnbench_model", json_string(a->name));
    json_object_set_new(meta, "trnbench_seed", json_string(seedtxt));
    json_object_set_new(meta, "trnbench_weights",
                        json_string("random: uniform in [-0.02, 0.02], never 0, bf16 truncated "
                                    "toward 0; RMSNorm weights 1.0"));
    json_object_set(h, "__metadata__", meta);
    for (int i = 0; i < L->n; i++) {
        const struct tensor *t = &L->t[i];
        json_t *e, *shape, *offs;
        if (t->shard != s)
            continue;
        e = json_object();
        shape = json_array();
        offs = json_array();
        if (!e || !shape || !offs) {
            json_decref(e);
            json_decref(shape);
            json_decref(offs);
            goto out;
        }
        for (int d = 0; d < t->ndim; d++)
            json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
        json_array_append_new(offs, json_integer((json_int_t)off));
        off += tensor_bytes(t);
        json_array_append_new(offs, json_integer((json_int_t)off));
        json_object_set_new(e, "dtype", json_string("BF16"));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(e, "data_offsets", offs);
        if (json_object_set_new(h, t->name, e) != 0)
            goto out;
    }
    text = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!text)
        goto out;
    n = strlen(text);
    p = (n + 7) / 8 * 8;
    padded = malloc(p + 1);
    if (padded) {
        memcpy(padded, text, n);
        memset(padded + n, ' ', p - n);
        padded[p] = '\0';
        *len = p;
    }
out:
    free(text);
    json_decref(meta);
    json_decref(h);
    return padded;
}

/* Lay out a's checkpoint: tensors into shards (huggingface_hub's rule), file names,
 * headers, index. Returns 0, or -1 with a message. */
static int layout_init(struct layout *L, const struct tb_arch *a,
                       const struct tb_safetensors_opts *o, char *err, size_t errlen)
{
    const uint64_t limit = o->shard_bytes ? o->shard_bytes : TB_SAFETENSORS_SHARD_BYTES;
    uint64_t cur = 0;
    int s = -1;

    memset(L, 0, sizeof *L);
    if (!(L->t = llama_tensors(a, &L->n, err, errlen)))
        return -1;
    for (int i = 0; i < L->n; i++) {
        uint64_t b = tensor_bytes(&L->t[i]);
        if (s < 0 || b > limit || cur + b > limit || cur > limit) {
            s++;
            cur = 0;
        }
        L->t[i].shard = s;
        cur += b;
        L->tensor_bytes += b;
    }
    L->nshards = s + 1;
    L->file = tb_alloc_array((size_t)L->nshards, sizeof *L->file);
    L->header = calloc((size_t)L->nshards, sizeof *L->header);
    L->header_len = calloc((size_t)L->nshards, sizeof *L->header_len);
    L->data = calloc((size_t)L->nshards, sizeof *L->data);
    if (!L->file || !L->header || !L->header_len || !L->data)
        goto oom;
    for (int i = 0; i < L->n; i++)
        L->data[L->t[i].shard] += tensor_bytes(&L->t[i]);
    for (s = 0; s < L->nshards; s++) {
        if (L->nshards == 1)
            snprintf(L->file[s], sizeof L->file[s], "model.safetensors");
        else
            snprintf(L->file[s], sizeof L->file[s], "model-%05d-of-%05d.safetensors", s + 1,
                     L->nshards);
        if (!(L->header[s] = shard_header(L, s, a, o->seed, &L->header_len[s])))
            goto oom;
        L->file_bytes += 8 + L->header_len[s] + L->data[s];
    }
    if (L->nshards > 1) {
        json_t *idx = json_object(), *meta = json_object(), *map = json_object();
        if (!idx || !meta || !map) {
            json_decref(idx);
            json_decref(meta);
            json_decref(map);
            goto oom;
        }
        json_object_set_new(meta, "total_size", json_integer((json_int_t)L->tensor_bytes));
        for (int i = 0; i < L->n; i++)
            json_object_set_new(map, L->t[i].name, json_string(L->file[L->t[i].shard]));
        json_object_set_new(idx, "metadata", meta);
        json_object_set_new(idx, "weight_map", map);
        L->index = json_dumps(idx, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(idx);
        if (!L->index)
            goto oom;
        L->file_bytes += strlen(L->index);
    }
    return 0;
oom:
    layout_release(L);
    return tb_err(err, errlen, "out of memory");
}

/* The margin the space check adds: 5% and 64 MiB (file system metadata, the logs and
 * compile cache beside it). */
static uint64_t margin(uint64_t bytes)
{
    return bytes / 20 + (64ULL << 20);
}

/* What layout L writes, into info: its sizes, the space it needs, its tensors and shards. */
static void layout_info(const struct layout *L, struct tb_safetensors_info *info)
{
    info->file_bytes = L->file_bytes;
    info->tensor_bytes = L->tensor_bytes;
    info->need_bytes = L->file_bytes + margin(L->file_bytes);
    info->tensors = L->n;
    info->shards = L->nshards;
}

int tb_safetensors_llama_size(const struct tb_arch *a, const struct tb_safetensors_opts *o,
                              struct tb_safetensors_info *info, char *err, size_t errlen)
{
    struct layout L;
    memset(info, 0, sizeof *info);
    if (layout_init(&L, a, o, err, errlen) != 0)
        return -1;
    layout_info(&L, info);
    layout_release(&L);
    return 0;
}

/* ---- the values ---- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The stream of tensor name under seed: FNV-1a of the name mixed into the seed. */
static uint64_t stream_of(uint64_t seed, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ULL, s;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    s = seed ^ h;
    return splitmix64(&s);
}

/* One weight from 32 random bits: the sign from the top bit, the magnitude
 * (r + 1) 0.02 / 2^24 from 24 others, in (0, 0.02]; bf16 by truncation toward 0. */
static uint16_t weight_of(uint32_t bits)
{
    const float step = TB_SAFETENSORS_WEIGHT_MAX / 16777216.0f;
    float m = (float)((bits & 0xffffffu) + 1u) * step;
    uint32_t u;
    memcpy(&u, &m, sizeof u);
    return (uint16_t)((u >> 16) | (bits & 0x80000000u ? 0x8000u : 0u));
}

float tb_bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- writing ---- */

#define CHUNK_VALUES (1u << 19) /* 1 MiB of bf16 */

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Stream tensor t's values into fd through buf (CHUNK_VALUES * 2 bytes). */
static int write_tensor(int fd, const struct tensor *t, uint64_t seed, unsigned char *buf)
{
    uint64_t left = tensor_bytes(t) / 2, s = stream_of(seed, t->name);
    while (left) {
        size_t k = left < CHUNK_VALUES ? (size_t)left : CHUNK_VALUES;
        for (size_t i = 0; i < k; i += 2) {
            uint64_t r = t->ones ? 0 : splitmix64(&s);
            uint16_t v[2] = {t->ones ? 0x3f80 : weight_of((uint32_t)r),
                             t->ones ? 0x3f80 : weight_of((uint32_t)(r >> 32))};
            for (size_t j = 0; j < 2 && i + j < k; j++) {
                buf[2 * (i + j)] = (unsigned char)(v[j] & 0xff); /* little-endian */
                buf[2 * (i + j) + 1] = (unsigned char)(v[j] >> 8);
            }
        }
        if (write_all(fd, buf, 2 * k) != 0)
            return -1;
        left -= k;
    }
    return 0;
}

/* Write file dir/name atomically: header then its tensors (data NULL: the index text).
 * Returns 0, or -1 with a message and no temporary left. */
static int write_file(const char *dir, const char *name, const struct layout *L, int s,
                      uint64_t seed, unsigned char *buf, char *err, size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    int fd, rc = -1;

    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return tb_err(err, errlen, "'%s/%s': name too long", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    tb_tmp_sweep(path, NULL, 0); /* a killed earlier write's temporary */
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return tb_err(err, errlen, "cannot create '%s': %s", tmp, strerror(errno));
    if (s < 0) {
        if (write_all(fd, L->index, strlen(L->index)) != 0)
            goto fail;
    } else {
        unsigned char len8[8];
        uint64_t n = L->header_len[s];
        for (int b = 0; b < 8; b++)
            len8[b] = (unsigned char)(n >> (8 * b));
        if (write_all(fd, len8, 8) != 0 || write_all(fd, L->header[s], L->header_len[s]) != 0)
            goto fail;
        for (int i = 0; i < L->n; i++)
            if (L->t[i].shard == s && write_tensor(fd, &L->t[i], seed, buf) != 0)
                goto fail;
    }
    if (fsync(fd) != 0)
        goto fail;
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        tb_err(err, errlen, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
fail:
    tb_err(err, errlen, "cannot write '%s' (as '%s'): %s", path, tmp, strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return rc;
}

/* Whether dir/name exists with exactly size bytes and starts with head (hlen bytes). */
static bool file_is(const char *dir, const char *name, uint64_t size, const char *head, size_t hlen)
{
    char path[PATH_MAX], *got;
    struct stat st;
    FILE *f;
    bool same;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path ||
        stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size)
        return false;
    if (!hlen)
        return true;
    if (!(f = fopen(path, "rb")))
        return false;
    got = malloc(hlen);
    same = got && fread(got, 1, hlen, f) == hlen && !memcmp(got, head, hlen);
    free(got);
    fclose(f);
    return same;
}

static bool layout_present(const struct layout *L, const char *dir)
{
    for (int s = 0; s < L->nshards; s++) {
        size_t hl = 8 + L->header_len[s];
        char *head = malloc(hl);
        bool ok;
        if (!head)
            return false;
        for (int b = 0; b < 8; b++)
            head[b] = (char)(unsigned char)((uint64_t)L->header_len[s] >> (8 * b));
        memcpy(head + 8, L->header[s], L->header_len[s]);
        ok = file_is(dir, L->file[s], hl + L->data[s], head, hl);
        free(head);
        if (!ok)
            return false;
    }
    return !L->index ||
           file_is(dir, TB_SAFETENSORS_INDEX, strlen(L->index), L->index, strlen(L->index));
}

int tb_safetensors_llama_present(const struct tb_arch *a, const char *dir,
                                 const struct tb_safetensors_opts *o)
{
    struct layout L;
    int yes;
    if (layout_init(&L, a, o, NULL, 0) != 0)
        return 0;
    yes = layout_present(&L, dir);
    layout_release(&L);
    return yes;
}

int tb_safetensors_free_bytes(const char *path, uint64_t *free_bytes, char *err, size_t errlen)
{
    const char *fake = getenv("TRNBENCH_TEST_DISK_FREE"), *test = getenv("TRNBENCH_TEST");
    char p[PATH_MAX];
    struct statvfs v;

    if (fake && *fake) {
        long long n;
        char *end;
        if (!test || strcmp(test, "1") != 0)
            return tb_err(err, errlen,
                          "TRNBENCH_TEST_DISK_FREE='%.40s' stands for the free disk space in "
                          "trnbench's own tests and is refused outside them (no "
                          "TRNBENCH_TEST=1): unset it",
                          fake);
        errno = 0;
        n = strtoll(fake, &end, 10);
        if (errno || *end || n < 0)
            return tb_err(err, errlen, "TRNBENCH_TEST_DISK_FREE: '%.40s' is not a byte count",
                          fake);
        *free_bytes = (uint64_t)n;
        return 0;
    }
    if ((size_t)snprintf(p, sizeof p, "%s", path) >= sizeof p)
        return tb_err(err, errlen, "'%s': name too long", path);
    /* the nearest folder that exists: the output folder may not be made yet */
    while (statvfs(p, &v) != 0) {
        char *slash = strrchr(p, '/');
        if (errno != ENOENT && errno != ENOTDIR)
            return tb_err(err, errlen, "cannot read the free space of '%s': %s", p,
                          strerror(errno));
        if (!slash)
            snprintf(p, sizeof p, ".");
        else if (slash == p)
            p[1] = '\0';
        else
            *slash = '\0';
    }
    *free_bytes = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    return 0;
}

/* Whether name is one of a checkpoint's files: model*.safetensors or the index. */
static bool checkpoint_file(const char *name)
{
    size_t n = strlen(name);
    return !strcmp(name, TB_SAFETENSORS_INDEX) ||
           (!strncmp(name, "model", 5) && n > 12 && !strcmp(name + n - 12, ".safetensors"));
}

/* Remove dir's checkpoint files (remove true), or only count their bytes: an earlier
 * checkpoint of another shape or seed, whose space its replacement takes over. */
static uint64_t old_checkpoint(const char *dir, bool remove)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX];
    uint64_t bytes = 0;
    while (d && (e = readdir(d))) {
        struct stat st;
        if (!checkpoint_file(e->d_name) ||
            (size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path ||
            lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        bytes += (uint64_t)st.st_size;
        if (remove)
            unlink(path);
    }
    if (d)
        closedir(d);
    return bytes;
}

static double gib(uint64_t b)
{
    return (double)b / (double)(1ULL << 30);
}

int tb_safetensors_write_llama(const struct tb_arch *a, const char *dir,
                               const struct tb_safetensors_opts *o,
                               struct tb_safetensors_info *info, char *err, size_t errlen)
{
    struct layout L;
    unsigned char *buf = NULL;
    struct timespec t0, t1;
    int rc = -1, written = 0;

    memset(info, 0, sizeof *info);
    if (layout_init(&L, a, o, err, errlen) != 0)
        return -1;
    layout_info(&L, info);
    if (layout_present(&L, dir)) {
        info->reused = true;
        rc = 0;
        goto out;
    }
    if (tb_safetensors_free_bytes(dir, &info->free_bytes, err, errlen) != 0)
        goto out;
    /* an earlier checkpoint of another shape or seed is replaced: its space counts */
    info->free_bytes += old_checkpoint(dir, false);
    if (info->free_bytes < info->need_bytes) {
        tb_err(err, errlen,
               "the random weights of '%s' (%d tensors, bf16, %d shard%s) need %llu bytes "
               "(%.2f GiB, with a margin of 5%% + 64 MiB over the files' %llu), and '%s' has "
               "%llu bytes (%.2f GiB) free: free some space, give --out on a larger disk, or "
               "serve a real checkpoint with --model-path DIR",
               a->name, L.n, L.nshards, L.nshards == 1 ? "" : "s",
               (unsigned long long)info->need_bytes, gib(info->need_bytes),
               (unsigned long long)L.file_bytes, dir, (unsigned long long)info->free_bytes,
               gib(info->free_bytes));
        rc = TB_EINPUT;
        goto out;
    }
    if (!(buf = malloc(2 * (size_t)CHUNK_VALUES))) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    old_checkpoint(dir, true); /* no index of the old one may name the new shards */
    if (!o->quiet)
        fprintf(stderr,
                "trnbench: writing the random weights of '%s' into '%s': %.2f GiB in %d "
                "shard%s (%.2f GiB free)\n",
                a->name, dir, gib(L.file_bytes), L.nshards, L.nshards == 1 ? "" : "s",
                gib(info->free_bytes));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (; written < L.nshards; written++)
        if (write_file(dir, L.file[written], &L, written, o->seed, buf, err, errlen) != 0)
            goto out;
    if (L.index && write_file(dir, TB_SAFETENSORS_INDEX, &L, -1, o->seed, buf, err, errlen) != 0)
        goto out;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!o->quiet)
        fprintf(stderr, "trnbench: random weights written in %.1f s\n",
                (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    rc = 0;
out:
    if (rc == -1) /* nothing half-written: the shards this call completed go too */
        for (int s = 0; s < written; s++) {
            char path[PATH_MAX];
            if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, L.file[s]) < sizeof path)
                unlink(path);
        }
    free(buf);
    layout_release(&L);
    return rc;
}
