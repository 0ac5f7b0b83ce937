/*
 * tests/unit/safetensors.c: the random-weight checkpoint of harness/endpoint/
 * tb_safetensors.h, read back by an independent reader written here from the format's
 * description (huggingface/safetensors README.md: an 8-byte little-endian header
 * length, the JSON header, the data): llama-tiny's tensors under the Hugging Face
 * Llama names and shapes, bf16, offsets contiguous from 0, the file's size exactly 8 +
 * header + data; values non-zero and within +-0.02, norms 1.0; the same seed the same
 * bytes, another seed other bytes; shards with an index whose weight_map names every
 * tensor once and matches the shards' headers; a tied model without lm_head; the sizes
 * of llama-3.1-8b and 70B (twice the published parameter counts); the disk budget
 * refused with the bytes needed and free, nothing written; TRNBENCH_TEST_DISK_FREE
 * refused outside tests. When python3 has the safetensors package, its reader opens
 * the files too (skipped otherwise, saying so).
 */
#include "tb_arch.h"
#include "tb_safetensors.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- an independent reader ---- */

struct file {
    unsigned char *bytes;
    size_t len;
    uint64_t hlen;             /* the header's length, from the first 8 bytes */
    json_t *header;            /* parsed */
    const unsigned char *data; /* bytes + 8 + hlen */
};

static void file_load(struct file *f, const char *dir, const char *name)
{
    char path[4096], err[512], *text;
    size_t len;
    json_error_t e;
    memset(f, 0, sizeof *f);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (tb_read_file(path, &text, &len, err, sizeof err) != 0)
        bail("%s", err);
    f->bytes = (unsigned char *)text;
    f->len = len;
    if (len < 8)
        bail("%s: %zu bytes", path, len);
    for (int b = 7; b >= 0; b--)
        f->hlen = f->hlen << 8 | f->bytes[b];
    if (f->hlen > len - 8)
        bail("%s: header length %llu past the end", path, (unsigned long long)f->hlen);
    f->header = json_loadb((const char *)f->bytes + 8, (size_t)f->hlen, 0, &e);
    if (!f->header)
        bail("%s: header: %s", path, e.text);
    f->data = f->bytes + 8 + f->hlen;
}

static void file_release(struct file *f)
{
    json_decref(f->header);
    free(f->bytes);
    memset(f, 0, sizeof *f);
}

static float bf16_at(const unsigned char *p)
{
    uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The expected tensors of a, written from transformers' LlamaForCausalLM. */
struct want {
    char name[96];
    long long rows, cols; /* cols 0: a vector */
    bool norm;
};

static int wanted(const struct tb_arch *a, struct want *w)
{
    int n = 0;
    long long C = a->hidden, F = a->ffn, V = a->vocab, Q = (long long)a->heads * a->head_dim,
              KV = (long long)a->kv_heads * a->head_dim;
#define W(r, c, nm, ...)                                                                           \
    do {                                                                                           \
        snprintf(w[n].name, sizeof w[n].name, __VA_ARGS__);                                        \
        w[n].rows = r;                                                                             \
        w[n].cols = c;                                                                             \
        w[n++].norm = nm;                                                                          \
    } while (0)
    W(V, C, false, "model.embed_tokens.weight");
    for (int l = 0; l < a->layers; l++) {
        W(Q, C, false, "model.layers.%d.self_attn.q_proj.weight", l);
        W(KV, C, false, "model.layers.%d.self_attn.k_proj.weight", l);
        W(KV, C, false, "model.layers.%d.self_attn.v_proj.weight", l);
        W(C, Q, false, "model.layers.%d.self_attn.o_proj.weight", l);
        W(F, C, false, "model.layers.%d.mlp.gate_proj.weight", l);
        W(F, C, false, "model.layers.%d.mlp.up_proj.weight", l);
        W(C, F, false, "model.layers.%d.mlp.down_proj.weight", l);
        W(C, 0, true, "model.layers.%d.input_layernorm.weight", l);
        W(C, 0, true, "model.layers.%d.post_attention_layernorm.weight", l);
    }
    W(C, 0, true, "model.norm.weight");
    if (!a->tied_embeddings)
        W(V, C, false, "lm_head.weight");
#undef W
    return n;
}

/* Check one shard f against the wanted tensors: each of its tensors one of w, with
 * dtype, shape and contiguous offsets; values in bounds. Adds what it found to seen[]
 * and returns the data bytes. */
static uint64_t check_shard(const char *label, struct file *f, const struct want *w, int nw,
                            int *seen)
{
    const char *key;
    json_t *v;
    uint64_t off = 0;
    int bad_meta = 0, bad_shape = 0, bad_off = 0, zeros = 0, out = 0, norms_off = 0, neg = 0;
    long long values = 0;
    float vmax = 0;

    json_object_foreach(f->header, key, v)
    {
        json_t *shape = json_object_get(v, "shape"), *offs = json_object_get(v, "data_offsets");
        int k;
        long long n;
        uint64_t b, e;
        if (!strcmp(key, "__metadata__"))
            continue;
        for (k = 0; k < nw && strcmp(w[k].name, key); k++)
            ;
        if (k == nw) {
            diag("%s: tensor '%s' is not a Llama tensor", label, key);
            bad_meta++;
            continue;
        }
        seen[k]++;
        if (!json_is_string(json_object_get(v, "dtype")) ||
            strcmp(json_string_value(json_object_get(v, "dtype")), "BF16"))
            bad_meta++;
        if (json_array_size(shape) != (w[k].cols ? 2u : 1u) ||
            json_integer_value(json_array_get(shape, 0)) != w[k].rows ||
            (w[k].cols && json_integer_value(json_array_get(shape, 1)) != w[k].cols)) {
            diag("%s: '%s' has the wrong shape", label, key);
            bad_shape++;
        }
        n = w[k].rows * (w[k].cols ? w[k].cols : 1);
        b = (uint64_t)json_integer_value(json_array_get(offs, 0));
        e = (uint64_t)json_integer_value(json_array_get(offs, 1));
        if (b != off || e != b + 2 * (uint64_t)n) {
            diag("%s: '%s' at [%llu, %llu), expected [%llu, +%lld)", label, key,
                 (unsigned long long)b, (unsigned long long)e, (unsigned long long)off, 2 * n);
            bad_off++;
            continue;
        }
        off = e;
        if (8 + f->hlen + e > f->len)
            continue;
        for (long long i = 0; i < n; i++) {
            float x = bf16_at(f->data + b + 2 * i);
            values++;
            if (w[k].norm) {
                norms_off += x != 1.0f;
                continue;
            }
            zeros += x == 0.0f;
            out += !(fabsf(x) <= 0.02f);
            neg += x < 0;
            if (fabsf(x) > vmax)
                vmax = fabsf(x);
        }
    }
    OK(!bad_meta, "%s: every tensor a Llama tensor, BF16", label);
    OK(!bad_shape, "%s: shapes as LlamaForCausalLM's", label);
    OK(!bad_off, "%s: data_offsets contiguous from 0", label);
    IS_INT((long long)f->len, (long long)(8 + f->hlen + off), "%s: file = 8 + header + data",
           label);
    IS_INT(0, (long long)(f->hlen % 8), "%s: header padded to 8 bytes", label);
    IS_INT(0, zeros, "%s: no weight is 0 (of %lld values)", label, values);
    IS_INT(0, out, "%s: every weight within +-0.02 (max %g)", label, vmax);
    IS_INT(0, norms_off, "%s: RMSNorm weights 1.0", label);
    OK(vmax > 0.019f, "%s: the draws reach the bound (max %g)", label, vmax);
    OK(neg > 0, "%s: negative weights too (%d)", label, neg);
    return off;
}

/* Count the files of dir (not . and ..). */
static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

static bool same_file(const char *d1, const char *d2, const char *name)
{
    struct file a, b;
    bool same;
    file_load(&a, d1, name);
    file_load(&b, d2, name);
    same = a.len == b.len && !memcmp(a.bytes, b.bytes, a.len);
    file_release(&a);
    file_release(&b);
    return same;
}

static char *fresh_dir(const char *rel)
{
    char *dir = test_tmp_path(rel);
    DIR *d;
    struct dirent *e;
    mkdir(dir, 0777);
    d = opendir(dir);
    while (d && (e = readdir(d))) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(p);
    }
    if (d)
        closedir(d);
    if (files_in(dir))
        bail("cannot empty '%s'", dir);
    return dir;
}

/* ---- the tests ---- */

static void one_file(const struct tb_arch *a, struct want *w, int nw)
{
    struct tb_safetensors_opts o = {.seed = 7, .quiet = true};
    struct tb_safetensors_info info;
    struct file f;
    char err[1024];
    char *d1 = fresh_dir("st_seed7"), *d2 = fresh_dir("st_seed7b"), *d3 = fresh_dir("st_seed8");
    int *seen = calloc((size_t)nw, sizeof *seen), once = 0;
    json_t *meta;
    uint64_t data;

    IS_INT(0, tb_safetensors_write_llama(a, d1, &o, &info, err, sizeof err), "written %s", err);
    IS_INT(nw, info.tensors, "%d tensors (2 layers x 9 + embedding, norm, lm_head)", nw);
    IS_INT(1, info.shards, "one shard");
    OK(!info.reused, "written, not reused");
    IS_INT(1, files_in(d1), "one file: model.safetensors, no index");
    file_load(&f, d1, "model.safetensors");
    meta = json_object_get(f.header, "__metadata__");
    IS_STRING("pt", json_string_value(json_object_get(meta, "format")), "metadata format pt");
    IS_STRING("7", json_string_value(json_object_get(meta, "trnbench_seed")), "seed recorded");
    data = check_shard("model.safetensors", &f, w, nw, seen);
    for (int k = 0; k < nw; k++)
        once += seen[k] == 1;
    IS_INT(nw, once, "every tensor once");
    IS_INT((long long)info.tensor_bytes, (long long)data,
           "data bytes as tb_safetensors_llama_size");
    IS_INT((long long)f.len, (long long)info.file_bytes, "file bytes as said");
    file_release(&f);

    IS_INT(0, tb_safetensors_write_llama(a, d2, &o, &info, err, sizeof err), "again, seed 7");
    OK(same_file(d1, d2, "model.safetensors"), "the same seed: the same bytes");
    o.seed = 8;
    IS_INT(0, tb_safetensors_write_llama(a, d3, &o, &info, err, sizeof err), "seed 8");
    OK(!same_file(d1, d3, "model.safetensors"), "another seed: other bytes");
    {
        struct file f7, f8;
        json_t *e7, *e8;
        file_load(&f7, d1, "model.safetensors");
        file_load(&f8, d3, "model.safetensors");
        e7 = json_object_get(f7.header, "model.layers.1.mlp.down_proj.weight");
        e8 = json_object_get(f8.header, "model.layers.1.mlp.down_proj.weight");
        OK(json_equal(json_object_get(e7, "data_offsets"), json_object_get(e8, "data_offsets")),
           "same layout under another seed");
        {
            size_t b =
                (size_t)json_integer_value(json_array_get(json_object_get(e7, "data_offsets"), 0));
            OK(memcmp(f7.data + b, f8.data + b, 64), "a tensor's values differ with the seed");
        }
        file_release(&f7);
        file_release(&f8);
    }

    /* the folder holds it already: kept, no space needed */
    o.seed = 7;
    setenv("TRNBENCH_TEST", "1", 1);
    setenv("TRNBENCH_TEST_DISK_FREE", "0", 1);
    IS_INT(0, tb_safetensors_write_llama(a, d1, &o, &info, err, sizeof err),
           "rewrite of the same checkpoint %s", err);
    OK(info.reused, "kept as it was (no space asked)");
    IS_INT(1, tb_safetensors_llama_present(a, d1, &o), "present for seed 7");
    o.seed = 9;
    IS_INT(0, tb_safetensors_llama_present(a, d1, &o), "not for seed 9");
    unsetenv("TRNBENCH_TEST_DISK_FREE");
    unsetenv("TRNBENCH_TEST");
    free(seen);
    free(d1);
    free(d2);
    free(d3);
}

static void sharded(const struct tb_arch *a, struct want *w, int nw)
{
    struct tb_safetensors_opts o = {.seed = 7, .shard_bytes = 40000, .quiet = true};
    struct tb_safetensors_info info;
    char err[1024], *dir = fresh_dir("st_sharded"), *one = test_tmp_path("st_seed7");
    struct file idx_f;
    json_t *idx, *map, *v;
    const char *key;
    int *seen = calloc((size_t)nw, sizeof *seen), once = 0, mism = 0, same = 0;
    uint64_t total = 0;
    char *text;
    size_t len;
    json_error_t e;
    char path[4096];

    IS_INT(0, tb_safetensors_write_llama(a, dir, &o, &info, err, sizeof err), "sharded %s", err);
    OK(info.shards > 2, "%d shards of at most 40000 tensor bytes", info.shards);
    IS_INT(info.shards + 1, files_in(dir), "the shards and the index");
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (tb_read_file(path, &text, &len, err, sizeof err) != 0)
        bail("%s", err);
    idx = json_loads(text, 0, &e);
    free(text);
    OK(idx != NULL, "the index is JSON");
    map = json_object_get(idx, "weight_map");
    IS_INT(nw, (long long)json_object_size(map), "weight_map: %d names", nw);
    IS_INT((long long)info.tensor_bytes,
           json_integer_value(json_object_get(json_object_get(idx, "metadata"), "total_size")),
           "metadata.total_size: the tensors' bytes");
    for (int s = 1; s <= info.shards; s++) {
        char name[64], label[96];
        struct file f;
        int before[256];
        uint64_t data;
        snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s, info.shards);
        snprintf(label, sizeof label, "shard %d", s);
        memcpy(before, seen, (size_t)nw * sizeof *seen);
        file_load(&f, dir, name);
        data = check_shard(label, &f, w, nw, seen);
        OK(data <= 40000, "%s: %llu tensor bytes, within the limit", label,
           (unsigned long long)data);
        total += data;
        /* the index names this file for exactly the tensors it holds */
        for (int k = 0; k < nw; k++) {
            const char *in = json_string_value(json_object_get(map, w[k].name));
            bool here = seen[k] != before[k];
            mism += here != (in && !strcmp(in, name));
        }
        /* a tensor's bytes do not depend on the sharding: compare with the one file */
        json_object_foreach(f.header, key, v)
        {
            struct file g;
            json_t *gv;
            size_t b1, b2, n;
            if (!strcmp(key, "__metadata__"))
                continue;
            file_load(&g, one, "model.safetensors");
            gv = json_object_get(g.header, key);
            b1 = (size_t)json_integer_value(json_array_get(json_object_get(v, "data_offsets"), 0));
            n = (size_t)json_integer_value(json_array_get(json_object_get(v, "data_offsets"), 1)) -
                b1;
            b2 = (size_t)json_integer_value(json_array_get(json_object_get(gv, "data_offsets"), 0));
            same += gv && !memcmp(f.data + b1, g.data + b2, n);
            file_release(&g);
        }
        file_release(&f);
    }
    for (int k = 0; k < nw; k++)
        once += seen[k] == 1;
    IS_INT(nw, once, "across the shards every tensor once");
    IS_INT(0, mism, "weight_map: each tensor in the shard that holds it");
    IS_INT((long long)info.tensor_bytes, (long long)total, "the shards' data adds up");
    IS_INT(nw, same, "each tensor's bytes as in the one-file checkpoint of the seed");
    json_decref(idx);

    /* rewritten in one file: the shards and index of before go */
    o.shard_bytes = 0;
    IS_INT(0, tb_safetensors_write_llama(a, dir, &o, &info, err, sizeof err), "one file now");
    IS_INT(1, files_in(dir), "only model.safetensors left");
    file_load(&idx_f, dir, "model.safetensors");
    file_release(&idx_f);
    free(seen);
    free(dir);
    free(one);
}

static void tied(const struct tb_arch *base)
{
    struct tb_arch a = *base;
    struct tb_safetensors_opts o = {.seed = 1, .quiet = true};
    struct tb_safetensors_info info;
    struct want w[64];
    struct file f;
    char err[512], *dir = fresh_dir("st_tied");
    int nw, seen[64] = {0};
    a.tied_embeddings = true;
    nw = wanted(&a, w);
    IS_INT(0, tb_safetensors_write_llama(&a, dir, &o, &info, err, sizeof err), "tied %s", err);
    IS_INT(nw, info.tensors, "tied: %d tensors", nw);
    file_load(&f, dir, "model.safetensors");
    OK(!json_object_get(f.header, "lm_head.weight"), "tied: no lm_head.weight");
    check_shard("tied", &f, w, nw, seen);
    file_release(&f);
    free(dir);
}

static void sizes(void)
{
    struct tb_safetensors_opts o = {0};
    struct tb_safetensors_info info;
    struct tb_arch a;
    char err[512];
    unsigned long long b8;

    if (tb_arch_find(&a, "llama-3.1-8b", err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(0, tb_safetensors_llama_size(&a, &o, &info, err, sizeof err), "8b size");
    IS_INT(2 * 8030261248LL, (long long)info.tensor_bytes,
           "llama-3.1-8b: 2 bytes each of its published 8030261248 parameters");
    IS_INT(4, info.shards, "in 4 shards of at most 4 GiB");
    OK(info.file_bytes > info.tensor_bytes && info.file_bytes < info.tensor_bytes + (1 << 20),
       "headers and index add little (%llu bytes)",
       (unsigned long long)(info.file_bytes - info.tensor_bytes));
    IS_INT((long long)(info.file_bytes + info.file_bytes / 20 + (64LL << 20)),
           (long long)info.need_bytes, "the space asked: files + 5%% + 64 MiB");
    b8 = (unsigned long long)info.file_bytes;
    if (tb_arch_find(&a, "llama-3.1-70b", err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(0, tb_safetensors_llama_size(&a, &o, &info, err, sizeof err), "70b size");
    IS_INT(2 * 70553706496LL, (long long)info.tensor_bytes,
           "llama-3.1-70b: 2 bytes each of its published 70553706496 parameters");
    diag("files: llama-3.1-8b %llu bytes, llama-3.1-70b %llu bytes in %d shards", b8,
         (unsigned long long)info.file_bytes, info.shards);
    a.experts = 8;
    IS_INT(-1, tb_safetensors_llama_size(&a, &o, &info, err, sizeof err), "MoE refused");
    OK(strstr(err, "mixture of experts") != NULL, "saying why: %s", err);
}

static void budget(const struct tb_arch *a)
{
    struct tb_safetensors_opts o = {.seed = 3, .quiet = true};
    struct tb_safetensors_info info;
    char err[1024], want[160], *dir = fresh_dir("st_budget");
    uint64_t fb = 0;

    setenv("TRNBENCH_TEST", "1", 1);
    setenv("TRNBENCH_TEST_DISK_FREE", "1000", 1);
    IS_INT(TB_EINPUT, tb_safetensors_write_llama(a, dir, &o, &info, err, sizeof err),
           "1000 bytes free: refused as bad input");
    snprintf(want, sizeof want, "need %llu bytes", (unsigned long long)info.need_bytes);
    OK(strstr(err, want) != NULL, "naming the bytes needed: %s", err);
    OK(strstr(err, "has 1000 bytes") != NULL, "and the bytes free");
    IS_INT(0, files_in(dir), "nothing written");
    snprintf(want, sizeof want, "%llu", (unsigned long long)info.need_bytes);
    setenv("TRNBENCH_TEST_DISK_FREE", want, 1);
    IS_INT(0, tb_safetensors_write_llama(a, dir, &o, &info, err, sizeof err),
           "exactly the bytes needed: written %s", err);
    setenv("TRNBENCH_TEST_DISK_FREE", "12x", 1);
    IS_INT(-1, tb_safetensors_free_bytes(dir, &fb, err, sizeof err), "12x refused");
    unsetenv("TRNBENCH_TEST");
    setenv("TRNBENCH_TEST_DISK_FREE", "1000", 1);
    IS_INT(-1, tb_safetensors_free_bytes(dir, &fb, err, sizeof err),
           "TRNBENCH_TEST_DISK_FREE outside tests: refused");
    OK(strstr(err, "refused outside them") != NULL, "saying so: %s", err);
    unsetenv("TRNBENCH_TEST_DISK_FREE");
    {
        char *missing = test_tmp_path("st_budget/not/yet/made");
        IS_INT(0, tb_safetensors_free_bytes(missing, &fb, err, sizeof err),
               "statvfs of a folder not made yet: its parent's %s", err);
        OK(fb > 0, "some bytes free (%llu)", (unsigned long long)fb);
        free(missing);
    }
    free(dir);
}

/* python3's safetensors reader, when it is installed: it validates the header and
 * offsets (the Rust code of the format's authors) and lists names, shapes, dtypes. */
static void python_reader(const char *dir, int nw)
{
    static const char script[] = "import sys\n"
                                 "try:\n"
                                 "    from safetensors import safe_open\n"
                                 "except ImportError:\n"
                                 "    sys.exit(3)\n"
                                 "n = 0\n"
                                 "with safe_open(sys.argv[1], framework='numpy') as f:\n"
                                 "    for k in f.keys():\n"
                                 "        s = f.get_slice(k)\n"
                                 "        assert s.get_dtype() == 'BF16', (k, s.get_dtype())\n"
                                 "        n += 1\n"
                                 "print(n)\n"
                                 "sys.exit(0 if n == int(sys.argv[2]) else 1)\n";
    char path[4096], count[16];
    char *argv[] = {"python3", "-c", (char *)script, path, count, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int st = 0;

    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(count, sizeof count, "%d", nw);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    if (posix_spawnp(&pid, "python3", &fa, NULL, argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        skip("no python3: the safetensors package's reader not tried");
        return;
    }
    posix_spawn_file_actions_destroy(&fa);
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && (WEXITSTATUS(st) == 3 || WEXITSTATUS(st) == 127))
        skip("python3 has no safetensors package: its reader not tried");
    else
        OK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "python3's safetensors opens the file: %d BF16 tensors", nw);
}

int main(void)
{
    struct tb_arch a;
    struct want w[64];
    char err[512], *dir;
    int nw;

    plan_lazy();
    if (tb_arch_find(&a, "llama-tiny", err, sizeof err) != 0)
        bail("%s", err);
    if (a.layers != 2)
        bail("llama-tiny has %d layers, the test expects 2", a.layers);
    nw = wanted(&a, w);
    one_file(&a, w, nw);
    sharded(&a, w, nw);
    tied(&a);
    sizes();
    budget(&a);
    dir = test_tmp_path("st_seed7");
    python_reader(dir, nw);
    free(dir);
    return 0;
}
