/* tests/unit/arch.c: the model catalogue reads, its parameter counts match the
 * published sizes, and bad model files are refused with file, line and field; the
 * process's catalogue (a folder walked once, a file read once while it is unchanged)
 * still sees a file changed, a file added and another data folder. */
#include "tb_arch.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Parameter counts Meta publishes for each checkpoint (Hugging Face's safetensors
 * metadata, "Model size"), independent of the catalogue files' own published_params. */
static const struct {
    const char *name;
    double params;
} published[] = {
    {"llama-2-7b", 6738415616.0},
    {"llama-2-13b", 13015864320.0},
    {"llama-2-70b", 68976648192.0},
    {"llama-3-8b", 8030261248.0},
    {"llama-3-70b", 70553706496.0},
    {"llama-3.1-8b", 8030261248.0},
    {"llama-3.1-70b", 70553706496.0},
    {"llama-3.1-405b", 405853388800.0},
    {"llama-3.2-1b", 1235814400.0},
    {"llama-3.2-3b", 3212749824.0},
    {"llama-3.3-70b", 70553706496.0},
    /* not Meta's Llama 2/3: Hugging Face shows 7.24B and 13B; these are the exact
     * tensor totals of their config.json dimensions, which those round to */
    {"mistral-7b-v0.2", 7241732096.0},
    {"codellama-13b", 13016028160.0},
};

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        bail("cannot write %s", path);
}

static void expect_error(const char *text, const char *want, const char *what)
{
    struct tb_arch a;
    char err[512] = "";
    char *p = test_tmp_path("bad.model");
    write_file(p, text);
    IS_INT(-1, tb_arch_load(&a, p, err, sizeof err), "%s is refused", what);
    OK(strstr(err, want) != NULL, "%s: message names it: %s", what, err);
    free(p);
}

/* A model file of L layers at path (the catalogue's llama-tiny otherwise). */
static void write_model(const char *path, const char *name, int layers)
{
    FILE *f = fopen(path, "w");
    if (!f)
        bail("cannot write '%s'", path);
    fprintf(f,
            "name = %s\nfamily = llama\nlayers = %d\nhidden = 64\nheads = 4\nkv_heads = 2\n"
            "ffn = 160\nvocab = 256\n",
            name, layers);
    fclose(f);
}

/* The catalogue of the process: walked and read once, but never stale. */
static void catalogue_cache(void)
{
    char *dir = test_tmp_path("arch_catalogue"), path[4096], err[512], *was;
    struct tb_arch a;
    struct stat st;
    struct timespec times[2];

    snprintf(path, sizeof path, "%s/workloads/mine", dir);
    if (tb_mkdir_p(path, err, sizeof err) != 0)
        bail("%s", err);
    snprintf(path, sizeof path, "%s/workloads/mine/cached.model", dir);
    write_model(path, "cached", 2);
    was = strdup(getenv("TRNBENCH_DATADIR"));
    setenv("TRNBENCH_DATADIR", dir, 1);
    IS_INT(0, tb_arch_find(&a, "cached", err, sizeof err), "another data folder: found %s", err);
    IS_INT(2, a.layers, "its 2 layers");
    IS_INT(-1, tb_arch_find(&a, "llama-3.1-8b", err, sizeof err),
           "the first folder's models are not in it");

    /* the same size and time, the content changed in place: the copy read before */
    if (stat(path, &st) != 0)
        bail("stat '%s'", path);
    write_model(path, "cached", 3);
    times[0] = st.st_atim;
    times[1] = st.st_mtim;
    if (utimensat(AT_FDCWD, path, times, 0) != 0)
        bail("utimensat '%s'", path);
    IS_INT(0, tb_arch_find(&a, "cached", err, sizeof err), "unchanged file: found");
    IS_INT(2, a.layers, "read once: the copy read before (2 layers, not the 3 written)");
    /* a change that shows: read again */
    write_model(path, "cached", 12);
    IS_INT(0, tb_arch_find(&a, "cached", err, sizeof err), "changed file: found");
    IS_INT(12, a.layers, "changed file: read again (12 layers)");
    /* a file added after the folder was walked */
    snprintf(path, sizeof path, "%s/workloads/mine/added.model", dir);
    write_model(path, "added", 5);
    IS_INT(0, tb_arch_find(&a, "added", err, sizeof err), "a file added since: found %s", err);
    IS_INT(5, a.layers, "its 5 layers");

    setenv("TRNBENCH_DATADIR", was, 1);
    IS_INT(0, tb_arch_find(&a, "llama-tiny", err, sizeof err), "back to the first folder");
    IS_INT(-1, tb_arch_find(&a, "added", err, sizeof err), "not the other folder's models");
    free(was);
    free(dir);
}

int main(void)
{
    char err[512];
    struct tb_arch a;
    size_t n = sizeof published / sizeof published[0];

    plan_lazy();
    setenv("TRNBENCH_DATADIR", getenv("TB_SRCDIR") ? getenv("TB_SRCDIR") : ".", 1);

    for (size_t i = 0; i < n; i++) {
        if (tb_arch_find(&a, published[i].name, err, sizeof err) != 0) {
            ok(0, "load %s: %s", published[i].name, err);
            continue;
        }
        IS_STRING(published[i].name, a.name, "%s: name", published[i].name);
        /* exact: the formula counts every tensor of the checkpoint */
        IS_DOUBLE(published[i].params, tb_arch_params_total(&a), 0.5, "%s: %.3fB parameters",
                  published[i].name, published[i].params / 1e9);
        IS_DOUBLE(published[i].params, a.published_params, 0.5, "%s: file states the same size",
                  published[i].name);
    }

    /* spot-check dimensions against config.json */
    if (tb_arch_find(&a, "llama-3.1-405b", err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(126, a.layers, "405b layers");
    IS_INT(16384, a.hidden, "405b hidden");
    IS_INT(128, a.heads, "405b heads");
    IS_INT(8, a.kv_heads, "405b kv heads");
    IS_INT(53248, a.ffn, "405b ffn");
    IS_INT(128, a.head_dim, "405b head dim");
    IS_DOUBLE(500000.0, a.rope_theta, 0, "405b rope theta");
    IS_INT(131072, a.max_context, "405b context");
    IS_DOUBLE(8.0, a.rope_scale_factor, 0, "405b rope scaling factor");
    if (tb_arch_find(&a, "llama-3.2-3b", err, sizeof err) != 0)
        bail("%s", err);
    OK(a.tied_embeddings, "3.2-3b ties its embeddings");
    IS_INT(128, a.head_dim, "3.2-3b head dim 3072/24");
    IS_DOUBLE(0.0, tb_arch_params_lm_head(&a), 0, "tied: no separate LM head");
    if (tb_arch_find(&a, "llama-2-7b", err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(32, a.kv_heads, "llama-2-7b has no GQA");
    IS_INT(32000, a.vocab, "llama-2-7b vocabulary");
    IS_INT(4096, a.max_context, "llama-2-7b context");

    /* truncation keeps the layer shapes and renames */
    if (tb_arch_find(&a, "llama-3.2-1b", err, sizeof err) != 0)
        bail("%s", err);
    {
        double per = tb_arch_params_per_layer(&a), total = tb_arch_params_total(&a);
        IS_INT(0, tb_arch_truncate(&a, 2, err, sizeof err), "truncate to 2 layers");
        IS_STRING("llama-3.2-1b@L2", a.name, "truncated name says so");
        IS_DOUBLE(total - 14 * per, tb_arch_params_total(&a), 0.5, "14 layers fewer");
        IS_INT(-1, tb_arch_truncate(&a, 3, err, sizeof err), "cannot grow");
    }
    IS_INT(-1, tb_arch_find(&a, "llama-9-1t", err, sizeof err), "unknown model refused");
    OK(strstr(err, "llama-9-1t") != NULL, "message names the model: %s", err);

    /* bad files */
    expect_error("name = x\nfamily = llama\nlayers = 2\nhidden = 64\nheads = 4\nffn = 10\n",
                 "field 'vocab': missing", "missing vocab");
    expect_error("name = x\nfamily = llama\nlayers = two\n", "line 3: field 'layers'",
                 "non-numeric layers");
    expect_error("name = x\nfamily = llama\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 3\n"
                 "ffn = 10\nvocab = 10\n",
                 "field 'kv_heads'", "heads not a multiple of kv heads");
    expect_error("name = x\nlayres = 2\n", "line 2: field 'layres': unknown key", "misspelt key");
    expect_error("name = x\nfamily = llama\nlayers 2\n", "line 3: expected 'key = value'",
                 "no equals sign");
    expect_error("name = x\nfamily = gpt\n", "line 2: field 'family'", "unknown family");
    expect_error("name = x\nfamily = llama\nlayers = 2\nhidden = 64\nheads = 4\nffn = 10\n"
                 "vocab = 10\ntied_embeddings = maybe\n",
                 "line 8: field 'tied_embeddings'", "bad boolean");
    catalogue_cache();
    return 0;
}
