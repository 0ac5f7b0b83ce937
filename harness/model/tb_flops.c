/* harness/model/tb_flops.c: see tb_flops.h. */
#include "tb_flops.h"

/* Matrix-product parameters of the layers a token uses (no LM head): a mixture of
 * experts' k routed experts of each MoE layer, not all E (FLOPs count active
 * parameters). */
static double layer_matmul_params(const struct tb_arch *a)
{
    if (a->experts > 0)
        return tb_arch_params_active(a) - (double)a->vocab * a->hidden;
    return a->layers * (tb_arch_params_per_layer(a) - 2.0 * a->hidden);
}

static double lm_head_params(const struct tb_arch *a)
{
    return (double)a->vocab * a->hidden;
}

/* QK^T and AV for one query attending to n keys, all layers: 2 products of
 * NH * HD * n multiply-adds each. */
static double attn_flops_per_query(const struct tb_arch *a, double n)
{
    return a->layers * 2.0 * 2.0 * a->heads * a->head_dim * n;
}

/* Sum over t = 0..T-1 of (t + 1) keys: the causal triangle. */
static double causal_keys(double T)
{
    return T * (T + 1.0) / 2.0;
}

double tb_flops_forward(const struct tb_arch *a, double B, double T)
{
    double dense = 2.0 * (layer_matmul_params(a) + lm_head_params(a)) * B * T;
    return dense + B * attn_flops_per_query(a, 1.0) * causal_keys(T);
}

double tb_flops_prefill(const struct tb_arch *a, double B, double T)
{
    double dense = 2.0 * layer_matmul_params(a) * B * T + 2.0 * lm_head_params(a) * B;
    return dense + B * attn_flops_per_query(a, 1.0) * causal_keys(T);
}

double tb_flops_decode_step(const struct tb_arch *a, double B, double pos)
{
    return B * (2.0 * (layer_matmul_params(a) + lm_head_params(a)) +
                attn_flops_per_query(a, pos + 1.0));
}

double tb_flops_decode(const struct tb_arch *a, double B, double T, double n)
{
    /* sum over steps at positions T..T+n-1 of attended keys (pos + 1) */
    double keys = n * T + n * (n + 1.0) / 2.0;
    return B * (2.0 * (layer_matmul_params(a) + lm_head_params(a)) * n +
                attn_flops_per_query(a, 1.0) * keys);
}

double tb_flops_attention(const struct tb_arch *a, double B, double T)
{
    return B * attn_flops_per_query(a, 1.0) * causal_keys(T);
}

double tb_flops_attention_backward(const struct tb_arch *a, double B, double T)
{
    return 2.5 * tb_flops_attention(a, B, T);
}

double tb_bytes_train_elementwise(const struct tb_arch *a, double B, double T)
{
    /* forward, per token and layer, in bytes of 16-bit activations: two RMSNorms
     * (read and write C each), the residual adds (two, reading 2C and writing C),
     * RoPE on Q and K (read and write), SwiGLU (read gate and up, write F); the
     * backward pass moves about twice as much */
    double C = a->hidden, kv = (double)a->kv_heads * a->head_dim, F = tb_arch_ffn_active(a);
    double fwd = 2.0 * (2.0 * 2.0 * C + 2.0 * 3.0 * C + 2.0 * (C + kv) + 3.0 * F);
    return 3.0 * fwd * a->layers * B * T;
}

double tb_flops_train(const struct tb_arch *a, double B, double T)
{
    return 3.0 * tb_flops_forward(a, B, T);
}

double tb_flops_train_lora(const struct tb_arch *a, double B, double T, long r)
{
    return 2.0 * tb_flops_forward(a, B, T) + tb_flops_attention(a, B, T) +
           6.0 * tb_arch_params_lora(a, r) * B * T;
}

double tb_bytes_kv_per_token(const struct tb_arch *a, double bytes_per_kv)
{
    return 2.0 * a->layers * a->kv_heads * a->head_dim * bytes_per_kv;
}

double tb_bytes_decode_step(const struct tb_arch *a, double B, double pos, double bytes_per_param,
                            double bytes_per_kv)
{
    if (a->experts > 0) /* the routed experts the B tokens touch, each read once */
        return tb_arch_params_touched(a, B) * bytes_per_param +
               B * (pos + 1.0) * tb_bytes_kv_per_token(a, bytes_per_kv);
    return (layer_matmul_params(a) + lm_head_params(a)) * bytes_per_param +
           B * (pos + 1.0) * tb_bytes_kv_per_token(a, bytes_per_kv);
}
