/*
 * tests/unit/recipe.c: the server recipes (harness/endpoint/tb_recipe.h): the model
 * folder written from a catalogue file (config.json with the published dimensions of
 * llama-3.1-8b, its llama3 RoPE scaling; a word-level tokenizer of exactly the
 * vocabulary) and vLLM's command line and environment, on a GPU machine and on Neuron
 * (the buckets as vllm-neuron's additional config; no --load-format dummy there, nor
 * with a real checkpoint), with bad values refused; --model-path's checkpoint checks;
 * the vLLM Neuron plugin's scheduler rules (tb_recipe_settle: buckets completed or
 * refused, segmented prefill, prefix caching), which plugin a machine gets, and the
 * Neuron environment (timeouts from the server timeout, inherited artifacts cleared).
 */
#include "tb_arch.h"
#include "tb_recipe.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static json_t *load(const char *dir, const char *name)
{
    char path[4096];
    json_error_t e;
    json_t *j;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    j = json_load_file(path, 0, &e);
    if (!j)
        bail("%s: line %d: %s", path, e.line, e.text);
    return j;
}

static long long int_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

static double num_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : -1;
}

/* The index of word in argv, or -1. */
static int arg_at(char *const *argv, const char *word)
{
    for (int i = 0; argv[i]; i++)
        if (!strcmp(argv[i], word))
            return i;
    return -1;
}

static const char *after(char *const *argv, const char *flag)
{
    int i = arg_at(argv, flag);
    return i >= 0 && argv[i + 1] ? argv[i + 1] : "";
}

static void model_folder(void)
{
    struct tb_arch a;
    char err[1024];
    char *dir = test_tmp_path("recipe_model");
    json_t *c, *s, *t, *vocab;

    if (tb_arch_find(&a, "llama-3.1-8b", err, sizeof err) != 0)
        bail("%s", err);
    mkdir(dir, 0777);
    IS_INT(0, tb_recipe_write_model(&a, dir, err, sizeof err), "model folder written %s", err);
    c = load(dir, "config.json");
    IS_STRING("LlamaForCausalLM",
              json_string_value(json_array_get(json_object_get(c, "architectures"), 0)),
              "config: LlamaForCausalLM");
    IS_STRING("llama", json_string_value(json_object_get(c, "model_type")), "model_type llama");
    IS_INT(4096, int_of(c, "hidden_size"), "hidden_size 4096");
    IS_INT(14336, int_of(c, "intermediate_size"), "intermediate_size 14336");
    IS_INT(32, int_of(c, "num_hidden_layers"), "32 layers");
    IS_INT(32, int_of(c, "num_attention_heads"), "32 heads");
    IS_INT(8, int_of(c, "num_key_value_heads"), "8 KV heads");
    IS_INT(128, int_of(c, "head_dim"), "head_dim 128");
    IS_INT(128256, int_of(c, "vocab_size"), "vocabulary 128256");
    IS_INT(131072, int_of(c, "max_position_embeddings"), "context 131072");
    IS_DOUBLE(500000, num_of(c, "rope_theta"), 0, "rope_theta 500000");
    IS_DOUBLE(1e-5, num_of(c, "rms_norm_eps"), 1e-12, "rms_norm_eps 1e-5");
    OK(json_is_false(json_object_get(c, "tie_word_embeddings")), "untied embeddings");
    IS_STRING("bfloat16", json_string_value(json_object_get(c, "torch_dtype")), "bf16");
    s = json_object_get(c, "rope_scaling");
    IS_STRING("llama3", json_string_value(json_object_get(s, "rope_type")), "llama3 RoPE scaling");
    IS_DOUBLE(8, num_of(s, "factor"), 0, "factor 8");
    IS_DOUBLE(1, num_of(s, "low_freq_factor"), 0, "low_freq_factor 1");
    IS_DOUBLE(4, num_of(s, "high_freq_factor"), 0, "high_freq_factor 4");
    IS_INT(8192, int_of(s, "original_max_position_embeddings"), "original context 8192");
    json_decref(c);

    t = load(dir, "tokenizer.json");
    vocab = json_object_get(json_object_get(t, "model"), "vocab");
    IS_STRING("WordLevel", json_string_value(json_object_get(json_object_get(t, "model"), "type")),
              "tokenizer: word level");
    IS_INT(128256, (long long)json_object_size(vocab), "one word per token id");
    IS_INT(0, int_of(vocab, "t0"), "t0 is id 0");
    IS_INT(128255, int_of(vocab, "t128255"), "t128255 is the last id");
    IS_INT(-1, int_of(vocab, "t128256"), "nothing past the vocabulary");
    json_decref(t);
    t = load(dir, "tokenizer_config.json");
    IS_STRING("PreTrainedTokenizerFast", json_string_value(json_object_get(t, "tokenizer_class")),
              "tokenizer_config: the fast tokenizer class");
    json_decref(t);

    IS_INT(-1, tb_recipe_write_model(&a, "/nonexistent/trnbench-dir", err, sizeof err),
           "a folder that does not exist: -1");
    OK(strstr(err, "/nonexistent/trnbench-dir/config.json") != NULL, "naming the file: %s", err);
    free(dir);
}

static void commands(void)
{
    struct tb_recipe_opts o;
    struct tb_recipe_cmd c;
    char err[512];
    json_t *x;
    json_error_t e;

    memset(&o, 0, sizeof o);
    o.tp = 8;
    o.max_num_seqs = 64;
    o.max_model_len = 2560;
    o.seed = 7;
    o.prefill_buckets[0] = 512;
    o.prefill_buckets[1] = 2048;
    o.nprefill = 2;
    o.decode_buckets[0] = 1;
    o.decode_buckets[1] = 8;
    o.decode_buckets[2] = 64;
    o.ndecode = 3;
    IS_INT(0,
           tb_recipe_vllm(&c, "/o/recipe-1/model", "llama-3.1-8b", "/o/recipe-1/vllm-cache", 8000,
                          &o, err, sizeof err),
           "GPU machine: command built");
    IS_STRING("vllm", c.argv[0], "argv[0] vllm (on PATH)");
    IS_STRING("serve", c.argv[1], "serve");
    IS_STRING("/o/recipe-1/model", c.argv[2], "the model folder");
    IS_STRING("llama-3.1-8b", after(c.argv, "--served-model-name"), "served as the model");
    IS_STRING("dummy", after(c.argv, "--load-format"), "random weights");
    IS_STRING("bfloat16", after(c.argv, "--dtype"), "bf16");
    IS_STRING("8", after(c.argv, "--tensor-parallel-size"), "tp 8");
    IS_STRING("64", after(c.argv, "--max-num-seqs"), "max-num-seqs 64");
    IS_STRING("2560", after(c.argv, "--max-model-len"), "max-model-len 2560");
    IS_STRING("7", after(c.argv, "--seed"), "seed 7");
    IS_STRING("127.0.0.1", after(c.argv, "--host"), "loopback");
    IS_STRING("8000", after(c.argv, "--port"), "port 8000");
    IS_INT(-1, arg_at(c.argv, "--additional-config"), "no Neuron: no buckets");
    IS_STRING("2560", after(c.argv, "--max-num-batched-tokens"),
              "max-num-batched-tokens always passed: the max-model-len");
    OK(arg_at(c.argv, "--no-enable-prefix-caching") > 0, "prefix caching off on a GPU too");
    IS_STRING("VLLM_CACHE_ROOT=/o/recipe-1/vllm-cache", c.env[0], "the compile cache");
    IS_STRING("HF_HUB_OFFLINE=1", c.env[1], "offline: nothing downloaded");
    OK(c.env[3] == NULL, "three variables");
    IS_STRING("vLLM (recipe vllm: tp=8, max-num-seqs 64, max-model-len 2560, dummy weights)",
              c.label, "label");

    o.neuron = true;
    IS_INT(0, tb_recipe_vllm(&c, "m", "llama-3.1-8b", "cache", 8000, &o, err, sizeof err),
           "Neuron machine: command built");
    x = json_loads(after(c.argv, "--additional-config"), 0, &e);
    OK(x != NULL, "the additional config is JSON: %s", after(c.argv, "--additional-config"));
    {
        json_t *nc = json_object_get(x, "neuron_config");
        json_t *pb = json_object_get(nc, "num_batched_tokens_buckets");
        json_t *db = json_object_get(nc, "num_seqs_buckets");
        IS_INT(3, (long long)json_array_size(pb), "2 prefill buckets and the one completing them");
        IS_INT(2048, json_integer_value(json_array_get(pb, 1)), "2048 kept");
        IS_INT(2560, json_integer_value(json_array_get(pb, 2)),
               "the largest the max-model-len, as vllm-neuron requires");
        IS_INT(3, (long long)json_array_size(db), "3 decode buckets");
        IS_INT(64, json_integer_value(json_array_get(db, 2)), "the largest 64");
    }
    json_decref(x);
    IS_INT(-1, arg_at(c.argv, "--load-format"),
           "Neuron: no --load-format (vllm-neuron loads the folder's safetensors)");
    IS_STRING("vLLM (recipe vllm: tp=8, max-num-seqs 64, max-model-len 2560, random safetensors "
              "weights, Neuron: vllm-neuron not found, 0.21+ settings)",
              c.label, "label says Neuron, the weights and that no plugin was found");
    o.plugin_version = "0.24.0.1.1.0";
    IS_INT(0, tb_recipe_vllm(&c, "m", "x", "cache", 8000, &o, err, sizeof err), "plugin found");
    IS_STRING("vLLM (recipe vllm: tp=8, max-num-seqs 64, max-model-len 2560, random safetensors "
              "weights, Neuron: vllm-neuron 0.24.0.1.1.0)",
              c.label, "label names the plugin's version");
    o.plugin = TB_RECIPE_PLUGIN_NXDI;
    o.plugin_version = "0.5.3";
    o.ndecode = 0;
    IS_INT(0, tb_recipe_vllm(&c, "m", "x", "cache", 8000, &o, err, sizeof err), "NxDI plugin");
    OK(strstr(c.label, "Neuron: vllm-neuron 0.5.3 on NxD Inference)") != NULL,
       "label names the NxD Inference plugin: %s", c.label);
    o.plugin = TB_RECIPE_PLUGIN_CURRENT;
    o.plugin_version = NULL;
    o.ndecode = 3;
    o.nprefill = 0;
    IS_INT(0, tb_recipe_vllm(&c, "m", "x", "cache", 8000, &o, err, sizeof err), "decode only");
    IS_STRING("{\"neuron_config\": {\"num_seqs_buckets\": [1, 8, 64]}}",
              after(c.argv, "--additional-config"), "only the decode buckets");

    o.neuron = false;
    o.checkpoint = true;
    IS_INT(0, tb_recipe_vllm(&c, "/ckpt", "x", "cache", 8000, &o, err, sizeof err),
           "a real checkpoint on a GPU machine");
    IS_INT(-1, arg_at(c.argv, "--load-format"), "--model-path: its weights, no dummy");
    OK(strstr(c.label, "checkpoint weights") != NULL, "the label says so: %s", c.label);
    o.checkpoint = false;

    o.tp = 0;
    IS_INT(-1, tb_recipe_vllm(&c, "m", "x", "cache", 8000, &o, err, sizeof err), "tp 0 refused");
    IS_STRING("recipe vllm: tp 0 outside [1, 1024]", err, "saying why");
    o.tp = 1;
    IS_INT(-1, tb_recipe_vllm(&c, "m", "x", "cache", 70000, &o, err, sizeof err),
           "port 70000 refused");
}

/* --model-path: a checkpoint folder of the model, its weights as safetensors. */
static void checkpoints(void)
{
    struct tb_arch a, tiny;
    char err[1024], path[4096];
    char *dir = test_tmp_path("recipe_ckpt");
    FILE *f;

    if (tb_arch_find(&a, "llama-3.1-8b", err, sizeof err) != 0 ||
        tb_arch_find(&tiny, "llama-tiny", err, sizeof err) != 0)
        bail("%s", err);
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    unlink(path);
    if (tb_recipe_write_model(&a, dir, err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(-1, tb_recipe_check_checkpoint(&a, dir, err, sizeof err), "no weights: refused");
    OK(strstr(err, "no model.safetensors.index.json and no *.safetensors file") != NULL,
       "saying so: %s", err);
    IS_INT(-1, tb_recipe_check_checkpoint(&tiny, dir, err, sizeof err),
           "another model's config.json: refused");
    OK(strstr(err, "config.json': field 'num_hidden_layers': 32, but model 'llama-tiny' has 2") !=
           NULL,
       "naming the file and field: %s", err);
    if (!(f = fopen(path, "w")))
        bail("cannot write '%s'", path);
    fputs("{\"metadata\": {}, \"weight_map\": {\"lm_head.weight\": "
          "\"model-00002-of-00002.safetensors\"}}\n",
          f);
    fclose(f);
    IS_INT(-1, tb_recipe_check_checkpoint(&a, dir, err, sizeof err),
           "an index naming a missing shard: refused");
    OK(strstr(err, "'lm_head.weight' is in 'model-00002-of-00002.safetensors', which is not a "
                   "file") != NULL,
       "naming the tensor and file: %s", err);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!(f = fopen(path, "w")))
        bail("cannot write '%s'", path);
    fclose(f);
    IS_INT(0, tb_recipe_check_checkpoint(&a, dir, err, sizeof err),
           "config.json and a "
           "model.safetensors: taken %s",
           err);
    IS_INT(-1, tb_recipe_check_checkpoint(&a, path, err, sizeof err), "a file: refused");
    OK(strstr(err, "not a folder") != NULL, "saying so: %s", err);
    IS_INT(-1, tb_recipe_check_checkpoint(&a, "/nonexistent/ckpt", err, sizeof err),
           "a folder that does not exist: refused");
    free(dir);
}

/* "a,b,c" into v; returns the count. */
static int parse_list(const char *s, int *v)
{
    int n = 0;
    for (const char *p = s; *p && n < TB_RECIPE_MAX_BUCKETS; p += strcspn(p, ","), p += *p == ',')
        v[n++] = atoi(p);
    return n;
}

/* "a,b,c" of v. */
static const char *show_list(const int *v, int n, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%d", i ? "," : "", v[i]);
    return buf;
}

/* tb_recipe_settle on Neuron (current plugin) for max_model_len L, max_num_seqs S,
 * max_num_batched_tokens M (0: the default), prefix caching pc and the bucket lists pre
 * and dec: want_m the max_num_batched_tokens after and the lists after, or want_m -1 and
 * want_pre a piece of the refusal. */
static void settle_case(const char *what, int L, int S, int M, bool pc, const char *pre,
                        const char *dec, int want_m, const char *want_pre, const char *want_dec)
{
    struct tb_recipe_opts o;
    char err[1024] = "", note[512], buf[200];
    int rc;
    memset(&o, 0, sizeof o);
    o.neuron = true;
    o.plugin = TB_RECIPE_PLUGIN_CURRENT;
    o.max_model_len = L;
    o.max_num_seqs = S;
    o.max_num_batched_tokens = M;
    o.prefix_caching = pc;
    o.nprefill = parse_list(pre, o.prefill_buckets);
    o.ndecode = parse_list(dec, o.decode_buckets);
    rc = tb_recipe_settle(&o, note, sizeof note, err, sizeof err);
    IS_INT(want_m < 0 ? -1 : 0, rc, "%s: %s", what, rc ? err : note);
    if (want_m < 0) {
        OK(strstr(err, want_pre) != NULL, "%s: names the rule: %s", what, err);
        return;
    }
    IS_INT(want_m, o.max_num_batched_tokens, "%s: max-num-batched-tokens", what);
    IS_STRING(want_pre, show_list(o.prefill_buckets, o.nprefill, buf, sizeof buf),
              "%s: prefill buckets", what);
    IS_STRING(want_dec, show_list(o.decode_buckets, o.ndecode, buf, sizeof buf),
              "%s: decode buckets", what);
}

static void settle(void)
{
    settle_case("defaults: one-step prefill of the max-model-len", 2560, 16, 0, false, "", "", 2560,
                "", "");
    settle_case("docs/serving.md's buckets, as given", 2560, 64, 0, false, "512,2048,2560",
                "1,8,64", 2560, "512,2048,2560", "1,8,64");
    settle_case("short lists completed", 2560, 64, 0, false, "512,2048", "1,8", 2560,
                "512,2048,2560", "1,8,64");
    settle_case("completed with min(max-num-batched-tokens, max-model-len)", 1000, 4, 4096, false,
                "128", "", 4096, "128,1000", "");
    settle_case("a prefill bucket above it", 2560, 16, 0, false, "512,4096", "", -1,
                "the largest, 4096, is above min(max_num_batched_tokens 2560, max_model_len "
                "2560)",
                NULL);
    settle_case("a decode bucket above max-num-seqs", 2560, 16, 0, false, "", "1,32", -1,
                "\"Last bucket in num_seqs_buckets must equal max_num_seqs\"", NULL);
    settle_case("past 16384: segments of 8192 by default", 32768, 16, 0, false, "", "", 8192, "",
                "");
    settle_case("one-step prefill past 16384", 32768, 16, 32768, false, "", "", -1,
                "allows up to 16384 only", NULL);
    settle_case("a chunk the kernel lacks", 4096, 16, 3000, false, "", "", -1,
                "segment sizes are 512, 1024, 2048, 4096 and 8192", NULL);
    settle_case("segmented: the one bucket is the segment", 4096, 16, 2048, false, "2048", "", 2048,
                "2048", "");
    settle_case("segmented: more buckets refused", 4096, 16, 2048, false, "512,2048", "", -1,
                "takes one prefill bucket, the segment size", NULL);
    settle_case("segmented: a short list is not completed", 4096, 16, 2048, false, "512", "", -1,
                "\"num_batched_tokens_buckets must match\"", NULL);
    settle_case("prefix caching: segments by default", 2560, 16, 0, true, "", "", 2048, "", "");
    settle_case("prefix caching with one-step prefill", 2560, 16, 2560, true, "", "", -1,
                "Automatic Prefix Caching (APC) requires segmented prefill", NULL);
    settle_case("prefix caching at 512 tokens and below", 512, 16, 0, true, "", "", -1,
                "512 or more below max_model_len 512", NULL);
}

static void plugins(void)
{
    enum tb_recipe_plugin p;
    char note[900], err[900];

    IS_INT(TB_RECIPE_PLUGIN_CURRENT, tb_recipe_plugin_of("0.24.0.1.1.0"), "0.24.0.1.1.0: current");
    IS_INT(TB_RECIPE_PLUGIN_CURRENT, tb_recipe_plugin_of("0.21.0.1.0.0"), "0.21.0.1.0.0: current");
    IS_INT(TB_RECIPE_PLUGIN_NXDI, tb_recipe_plugin_of("0.5.3"), "0.5.3: NxD Inference");
    IS_INT(TB_RECIPE_PLUGIN_NXDI, tb_recipe_plugin_of("0.2.0"), "0.2.0: NxD Inference");
    IS_INT(TB_RECIPE_PLUGIN_CURRENT, tb_recipe_plugin_of(""), "not found: current");

    IS_INT(0,
           tb_recipe_plugin_choose("0.24.0.1.1.0", "Trainium2", &p, note, sizeof note, err,
                                   sizeof err),
           "trn2 with 0.24: fine");
    IS_INT(TB_RECIPE_PLUGIN_CURRENT, p, "... the current plugin");
    IS_INT(
        -1,
        tb_recipe_plugin_choose("0.24.0.1.1.0", "Trainium", &p, note, sizeof note, err, sizeof err),
        "trn1 with 0.24: refused");
    OK(strstr(err, "git clone --branch 0.5.3 https://github.com/vllm-project/vllm-neuron.git") &&
           strstr(err, "Neuron SDK 2.29"),
       "saying which stack to pin and how: %s", err);
    IS_INT(0, tb_recipe_plugin_choose("", "Inferentia2", &p, note, sizeof note, err, sizeof err),
           "inf2 with none found: fine");
    IS_INT(TB_RECIPE_PLUGIN_NXDI, p, "... the NxD Inference plugin's settings");
    OK(strstr(note, "pin the NxD Inference stack") != NULL, "and what to pin: %s", note);
    IS_INT(0, tb_recipe_plugin_choose("0.5.3", "Trainium", &p, note, sizeof note, err, sizeof err),
           "trn1 with 0.5.3: fine");
    IS_INT(TB_RECIPE_PLUGIN_NXDI, p, "... NxD Inference");
}

/* The value of NAME in c's environment; "-" for a "NAME" alone (removed); NULL absent. */
static const char *env_of(const struct tb_recipe_cmd *c, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; c->env[i]; i++) {
        if (!strncmp(c->env[i], name, n) && c->env[i][n] == '=')
            return c->env[i] + n + 1;
        if (!strcmp(c->env[i], name))
            return "-";
    }
    return NULL;
}

static void neuron_env(void)
{
    struct tb_recipe_opts o;
    struct tb_recipe_cmd c;
    char err[512];
    json_t *x;

    memset(&o, 0, sizeof o);
    o.tp = 8;
    o.max_num_seqs = 16;
    o.max_model_len = 2560;
    o.neuron = true;
    o.server_timeout_s = 1800.5;
    setenv("NEURON_COMPILED_ARTIFACTS", "/shared/artifacts", 1);
    unsetenv("NEURON_LIBTORCH_REMOTE_CACHE");
    IS_INT(0, tb_recipe_vllm(&c, "m", "x", "cache", 8000, &o, err, sizeof err), "Neuron: built");
    IS_STRING("1801", env_of(&c, "VLLM_NEURON_COMPILATION_TIMEOUT"), "compile timeout (s, up)");
    IS_STRING("1801", env_of(&c, "NEURON_LIBTORCH_COMPILATION_TIMEOUT"), "lock-wait timeout");
    IS_STRING("1801", env_of(&c, "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"), "execute timeout");
    IS_STRING("-", env_of(&c, "NEURON_COMPILED_ARTIFACTS"), "inherited artifacts removed");
    IS_STRING("-", env_of(&c, "NEURON_LIBTORCH_REMOTE_CACHE"), "remote cache removed");
    OK(strstr(c.note, "NEURON_COMPILED_ARTIFACTS='/shared/artifacts' inherited, cleared") != NULL,
       "the note records what was cleared: %s", c.note);
    OK(strstr(c.note, "NEURON_LIBTORCH_REMOTE_CACHE=") == NULL, "not what was not set");

    o.prefix_caching = true;
    IS_INT(0, tb_recipe_vllm(&c, "m", "x", "cache", 8000, &o, err, sizeof err),
           "prefix caching on: built");
    OK(arg_at(c.argv, "--enable-prefix-caching") > 0, "--enable-prefix-caching");
    IS_STRING("2048", after(c.argv, "--max-num-batched-tokens"), "segments of 2048 for it");
    o.prefix_caching = false;

    o.plugin = TB_RECIPE_PLUGIN_NXDI;
    o.artifacts_dir = "/o/recipe-1/neuron-compiled-artifacts";
    o.prefill_buckets[0] = 512;
    o.prefill_buckets[1] = 2560;
    o.nprefill = 2;
    IS_INT(0, tb_recipe_vllm(&c, "m", "x", "cache", 8000, &o, err, sizeof err), "NxDI: built");
    x = json_loads(after(c.argv, "--additional-config"), 0, NULL);
    {
        json_t *onc = json_object_get(x, "override_neuron_config");
        OK(json_is_true(json_object_get(onc, "enable_bucketing")), "override_neuron_config");
        IS_INT(
            2560,
            json_integer_value(json_array_get(json_object_get(onc, "context_encoding_buckets"), 1)),
            "context_encoding_buckets");
        OK(json_object_get(x, "neuron_config") == NULL, "no neuron_config");
    }
    json_decref(x);
    IS_STRING("/o/recipe-1/neuron-compiled-artifacts", env_of(&c, "NEURON_COMPILED_ARTIFACTS"),
              "NEURON_COMPILED_ARTIFACTS the run's folder");
    o.decode_buckets[0] = 16;
    o.ndecode = 1;
    IS_INT(-1, tb_recipe_vllm(&c, "m", "x", "cache", 8000, &o, err, sizeof err),
           "NxDI: decode buckets refused");
    OK(strstr(err, "field 'decode_buckets'") != NULL, "naming them: %s", err);
    unsetenv("NEURON_COMPILED_ARTIFACTS");
}

int main(void)
{
    plan_lazy();
    model_folder();
    commands();
    checkpoints();
    settle();
    plugins();
    neuron_env();
    return 0;
}
