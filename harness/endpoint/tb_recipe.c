/* harness/endpoint/tb_recipe.c: see tb_recipe.h. */
#include "tb_recipe.h"

#include "tb_safetensors.h"
#include "tb_util.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Dump j (stolen) to dir/name atomically. */
static int write_json(const char *dir, const char *name, json_t *j, char *err, size_t errlen)
{
    char path[4096], *text;
    int rc;
    if (!j)
        return tb_err(err, errlen, "out of memory");
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
        json_decref(j);
        return tb_err(err, errlen, "recipe folder '%s': name too long", dir);
    }
    text = json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(j);
    if (!text)
        return tb_err(err, errlen, "out of memory");
    rc = tb_write_file_atomic(path, text, strlen(text), err, errlen);
    free(text);
    return rc;
}

/* Hugging Face's LlamaConfig of a: the keys transformers and vLLM read for Llama. */
static json_t *llama_config(const struct tb_arch *a)
{
    json_t *c = json_object();
    json_t *arch = json_array();
    if (!c || !arch) {
        json_decref(c);
        json_decref(arch);
        return NULL;
    }
    json_array_append_new(arch, json_string("LlamaForCausalLM"));
    json_object_set_new(c, "architectures", arch);
    json_object_set_new(c, "model_type", json_string("llama"));
    json_object_set_new(c, "hidden_size", json_integer(a->hidden));
    json_object_set_new(c, "intermediate_size", json_integer(a->ffn));
    json_object_set_new(c, "num_hidden_layers", json_integer(a->layers));
    json_object_set_new(c, "num_attention_heads", json_integer(a->heads));
    json_object_set_new(c, "num_key_value_heads", json_integer(a->kv_heads));
    json_object_set_new(c, "head_dim", json_integer(a->head_dim));
    json_object_set_new(c, "vocab_size", json_integer(a->vocab));
    json_object_set_new(c, "max_position_embeddings", json_integer(a->max_context));
    json_object_set_new(c, "rope_theta", json_real(a->rope_theta));
    json_object_set_new(c, "rms_norm_eps", json_real(a->norm_eps));
    json_object_set_new(c, "tie_word_embeddings", json_boolean(a->tied_embeddings));
    json_object_set_new(c, "hidden_act", json_string("silu"));
    json_object_set_new(c, "attention_bias", json_false());
    json_object_set_new(c, "mlp_bias", json_false());
    json_object_set_new(c, "torch_dtype", json_string("bfloat16"));
    /* the synthetic tokenizer's first two words; requests set ignore_eos */
    json_object_set_new(c, "bos_token_id", json_integer(0));
    json_object_set_new(c, "eos_token_id", json_integer(1));
    if (a->rope_scale_factor > 0) {
        json_t *s = json_object();
        if (s) {
            json_object_set_new(s, "rope_type", json_string("llama3"));
            json_object_set_new(s, "factor", json_real(a->rope_scale_factor));
            json_object_set_new(s, "low_freq_factor", json_real(a->rope_low_freq_factor));
            json_object_set_new(s, "high_freq_factor", json_real(a->rope_high_freq_factor));
            json_object_set_new(s, "original_max_position_embeddings",
                                json_integer(a->rope_original_context));
        }
        json_object_set_new(c, "rope_scaling", s ? s : json_null());
    } else {
        json_object_set_new(c, "rope_scaling", json_null());
    }
    json_object_set_new(c, "trnbench_note",
                        json_sprintf("written by trnbench from %s (dimensions: %s); random "
                                     "weights: --load-format dummy on GPUs, model*.safetensors "
                                     "drawn from the seed on Neuron",
                                     a->path, a->source));
    return c;
}

/* tokenizers' word-level model over "t0" .. "t<V-1>", split on whitespace. */
static json_t *word_tokenizer(const struct tb_arch *a)
{
    json_t *t = json_object(), *vocab = json_object(), *model = json_object(), *pre = json_object(),
           *dec = json_object();
    if (!t || !vocab || !model || !pre || !dec)
        goto fail;
    for (int i = 0; i < a->vocab; i++) {
        char w[24];
        snprintf(w, sizeof w, "t%d", i);
        if (json_object_set_new(vocab, w, json_integer(i)) != 0)
            goto fail;
    }
    json_object_set_new(model, "type", json_string("WordLevel"));
    json_object_set_new(model, "vocab", vocab);
    json_object_set_new(model, "unk_token", json_string("t0"));
    json_object_set_new(pre, "type", json_string("WhitespaceSplit"));
    /* decoded tokens joined by spaces, as they were split */
    json_object_set_new(dec, "type", json_string("WordPiece"));
    json_object_set_new(dec, "prefix", json_string("##"));
    json_object_set_new(dec, "cleanup", json_false());
    json_object_set_new(t, "version", json_string("1.0"));
    json_object_set_new(t, "truncation", json_null());
    json_object_set_new(t, "padding", json_null());
    json_object_set_new(t, "added_tokens", json_array());
    json_object_set_new(t, "normalizer", json_null());
    json_object_set_new(t, "pre_tokenizer", pre);
    json_object_set_new(t, "post_processor", json_null());
    json_object_set_new(t, "decoder", dec);
    json_object_set_new(t, "model", model);
    return t;
fail:
    json_decref(t);
    json_decref(vocab);
    json_decref(model);
    json_decref(pre);
    json_decref(dec);
    return NULL;
}

int tb_recipe_write_model(const struct tb_arch *a, const char *dir, char *err, size_t errlen)
{
    json_t *tc;
    /* LlamaConfig has no experts: a mixture of experts' config would be a dense model */
    if (a->experts > 0)
        return tb_err(err, errlen,
                      "model '%s': a mixture of experts has no LlamaConfig (serve its published "
                      "checkpoint by name)",
                      a->name);
    if (write_json(dir, "config.json", llama_config(a), err, errlen) != 0 ||
        write_json(dir, "tokenizer.json", word_tokenizer(a), err, errlen) != 0)
        return -1;
    tc = json_pack("{s:s, s:i, s:s, s:s, s:s, s:b}", "tokenizer_class", "PreTrainedTokenizerFast",
                   "model_max_length", a->max_context, "bos_token", "t0", "eos_token", "t1",
                   "unk_token", "t0", "clean_up_tokenization_spaces", 0);
    return write_json(dir, "tokenizer_config.json", tc, err, errlen);
}

/* The integer field key of config.json c, or -1. */
static long long config_int(json_t *c, const char *key)
{
    json_t *v = json_object_get(c, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

int tb_recipe_check_checkpoint(const struct tb_arch *a, const char *dir, char *err, size_t errlen)
{
    static const char *const keys[] = {"num_hidden_layers", "hidden_size", "vocab_size"};
    const long long want[] = {a->layers, a->hidden, a->vocab};
    char path[PATH_MAX];
    struct stat st;
    json_error_t je;
    json_t *c, *idx, *map;
    const char *name;
    json_t *file;
    DIR *d;
    struct dirent *e;
    int found = 0;

    if (stat(dir, &st) != 0)
        return tb_err(err, errlen, "--model-path '%s': %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return tb_err(err, errlen, "--model-path '%s': not a folder", dir);
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", dir) >= sizeof path)
        return tb_err(err, errlen, "--model-path '%s': name too long", dir);
    if (!(c = json_load_file(path, 0, &je)))
        return tb_err(err, errlen, "--model-path: '%s': line %d: %s", path, je.line, je.text);
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        long long got = config_int(c, keys[k]);
        if (got != want[k]) {
            tb_err(err, errlen,
                   "--model-path: '%s': field '%s': %lld, but model '%s' has %lld (the rows "
                   "would name the wrong model)",
                   path, keys[k], got, a->name, want[k]);
            json_decref(c);
            return -1;
        }
    }
    json_decref(c);
    snprintf(path, sizeof path, "%s/" TB_SAFETENSORS_INDEX, dir);
    if (stat(path, &st) == 0) { /* sharded: every file its index names */
        if (!(idx = json_load_file(path, 0, &je)))
            return tb_err(err, errlen, "--model-path: '%s': line %d: %s", path, je.line, je.text);
        map = json_object_get(idx, "weight_map");
        if (!json_is_object(map) || !json_object_size(map)) {
            json_decref(idx);
            return tb_err(err, errlen, "--model-path: '%s': field 'weight_map': missing or empty",
                          path);
        }
        json_object_foreach(map, name, file)
        {
            char shard[PATH_MAX];
            const char *f = json_string_value(file);
            if (!f || strchr(f, '/') ||
                (size_t)snprintf(shard, sizeof shard, "%s/%s", dir, f) >= sizeof shard ||
                stat(shard, &st) != 0 || !S_ISREG(st.st_mode)) {
                tb_err(err, errlen,
                       "--model-path: '%s': field 'weight_map': '%s' is in '%s', which is not a "
                       "file of '%s'",
                       path, name, f ? f : "(not a string)", dir);
                json_decref(idx);
                return -1;
            }
        }
        json_decref(idx);
        return 0;
    }
    if (!(d = opendir(dir)))
        return tb_err(err, errlen, "--model-path '%s': %s", dir, strerror(errno));
    while (!found && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        found = n > 12 && !strcmp(e->d_name + n - 12, ".safetensors");
    }
    closedir(d);
    if (!found)
        return tb_err(err, errlen,
                      "--model-path '%s': no " TB_SAFETENSORS_INDEX " and no *.safetensors file "
                      "(the vllm-neuron plugin loads safetensors only)",
                      dir);
    return 0;
}

/* Append a copy of s to c's text; NULL when there is no room. */
static char *keep(struct tb_recipe_cmd *c, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p;
    if (c->used + n > sizeof c->text)
        return NULL;
    p = c->text + c->used;
    memcpy(p, s, n);
    c->used += n;
    return p;
}

/* "[a, b, c]" of n ints into buf. */
static void int_list(const int *v, int n, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%d", i ? ", " : "", v[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

int tb_recipe_vllm(struct tb_recipe_cmd *c, const char *model_dir, const char *served,
                   const char *cache_dir, int port, const struct tb_recipe_opts *o, char *err,
                   size_t errlen)
{
    char num[6][32], extra[600], pb[256], db[256], env[3][4200];
    const char *args[TB_RECIPE_MAX_ARGS];
    int n = 0, ne = 0;

    memset(c, 0, sizeof *c);
    if (o->tp < 1 || o->tp > 1024)
        return tb_err(err, errlen, "recipe vllm: tp %d outside [1, 1024]", o->tp);
    if (o->max_num_seqs < 1 || o->max_model_len < 2 || port < 1 || port > 65535)
        return tb_err(err, errlen, "recipe vllm: max_num_seqs %d, max_model_len %d or port %d bad",
                      o->max_num_seqs, o->max_model_len, port);
    snprintf(num[0], sizeof num[0], "%d", o->tp);
    snprintf(num[1], sizeof num[1], "%d", o->max_num_seqs);
    snprintf(num[2], sizeof num[2], "%d", o->max_model_len);
    snprintf(num[3], sizeof num[3], "%llu", (unsigned long long)o->seed);
    snprintf(num[4], sizeof num[4], "%d", port);
    args[n++] = "vllm";
    args[n++] = "serve";
    args[n++] = model_dir;
    args[n++] = "--served-model-name";
    args[n++] = served;
    if (!o->neuron && !o->checkpoint) { /* vllm-neuron ignores it and reads the folder */
        args[n++] = "--load-format";
        args[n++] = "dummy";
    }
    args[n++] = "--dtype";
    args[n++] = "bfloat16";
    args[n++] = "--tensor-parallel-size";
    args[n++] = num[0];
    args[n++] = "--max-num-seqs";
    args[n++] = num[1];
    args[n++] = "--max-model-len";
    args[n++] = num[2];
    args[n++] = "--seed";
    args[n++] = num[3];
    args[n++] = "--host";
    args[n++] = "127.0.0.1";
    args[n++] = "--port";
    args[n++] = num[4];
    if (o->neuron && (o->nprefill || o->ndecode)) {
        int_list(o->prefill_buckets, o->nprefill, pb, sizeof pb);
        int_list(o->decode_buckets, o->ndecode, db, sizeof db);
        snprintf(extra, sizeof extra, "{\"neuron_config\": {%s%s%s%s%s}}",
                 o->nprefill ? "\"num_batched_tokens_buckets\": " : "", o->nprefill ? pb : "",
                 o->nprefill && o->ndecode ? ", " : "", o->ndecode ? "\"num_seqs_buckets\": " : "",
                 o->ndecode ? db : "");
        args[n++] = "--additional-config";
        args[n++] = extra;
    }
    args[n] = NULL;
    for (int i = 0; i < n; i++)
        if (!(c->argv[i] = keep(c, args[i])))
            return tb_err(err, errlen, "recipe vllm: command too long");
    snprintf(env[0], sizeof env[0], "VLLM_CACHE_ROOT=%s", cache_dir);
    snprintf(env[1], sizeof env[1], "HF_HUB_OFFLINE=1");
    snprintf(env[2], sizeof env[2], "TRANSFORMERS_OFFLINE=1");
    for (int i = 0; i < 3; i++)
        if (!(c->env[ne++] = keep(c, env[i])))
            return tb_err(err, errlen, "recipe vllm: environment too long");
    snprintf(c->label, sizeof c->label,
             "vLLM (recipe vllm: tp=%d, max-num-seqs %d, max-model-len %d, %s%s)", o->tp,
             o->max_num_seqs, o->max_model_len,
             o->checkpoint ? "checkpoint weights"
             : o->neuron   ? "random safetensors weights"
                           : "dummy weights",
             o->neuron ? ", Neuron" : "");
    return 0;
}
