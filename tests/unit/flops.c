/* tests/unit/flops.c: FLOP and byte counts per phase against counts done by hand. */
#include "tb_arch.h"
#include "tb_flops.h"

#include "tests/tap/basic.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    struct tb_arch a;
    char err[512];
    plan_lazy();
    setenv("TRNBENCH_DATADIR", getenv("TB_SRCDIR") ? getenv("TB_SRCDIR") : ".", 1);

    /* A hand-made architecture: L=2, C=8, NH=2, NKV=1, HD=4, F=16, V=10, untied. */
    memset(&a, 0, sizeof a);
    a.layers = 2, a.hidden = 8, a.heads = 2, a.kv_heads = 1, a.head_dim = 4, a.ffn = 16;
    a.vocab = 10;
    /* per layer matmul params: wq 8*8 + wk 8*4 + wv 8*4 + wo 8*8 + 3*8*16 = 576 */
    IS_DOUBLE(2 * 576 + 80, tb_arch_params_matmul(&a), 0, "matmul params by hand");
    /* forward B=1,T=3: dense 2*(1152+80)*3 = 7392; attention per query per key per layer
     * 2*2*NH*HD = 32, two layers 64, causal keys 1+2+3 = 6 -> 384 */
    IS_DOUBLE(7392 + 384, tb_flops_forward(&a, 1, 3), 0, "forward by hand");
    IS_DOUBLE(3 * (7392 + 384), tb_flops_train(&a, 1, 3), 0, "train = 3 x forward");
    /* prefill: LM head for the last position only: 2*1152*3 + 2*80 + 384 */
    IS_DOUBLE(2 * 1152 * 3 + 160 + 384, tb_flops_prefill(&a, 1, 3), 0, "prefill by hand");
    /* decode step at pos 3 attends 4 keys: 2*1232 + 64*4 */
    IS_DOUBLE(2 * 1232 + 256, tb_flops_decode_step(&a, 1, 3), 0, "decode step by hand");
    IS_DOUBLE(2 * (2 * 1232 + 256), tb_flops_decode_step(&a, 2, 3), 0, "decode scales with B");
    /* decode of 2 tokens after 3: steps at pos 3 and 4 */
    IS_DOUBLE(tb_flops_decode_step(&a, 1, 3) + tb_flops_decode_step(&a, 1, 4),
              tb_flops_decode(&a, 1, 3, 2), 1e-9, "decode = sum of its steps");
    /* prefill T then decode = forward of T+n up to the LM head of prompt positions */
    IS_DOUBLE(tb_flops_forward(&a, 1, 5) - 2 * 80 * 2,
              tb_flops_prefill(&a, 1, 3) + tb_flops_decode(&a, 1, 3, 2), 1e-9,
              "prefill + decode = forward minus the prompt's unused LM-head rows");
    /* bytes: 4 bytes per weight + KV: 2*L*NKV*HD*4 = 64 bytes per token */
    IS_DOUBLE(64, tb_bytes_kv_per_token(&a, 4), 0, "kv bytes per token");
    IS_DOUBLE(1232 * 4 + 4 * 64, tb_bytes_decode_step(&a, 1, 3, 4, 4), 0, "decode bytes");

    /* Real model: llama-3.1-8b forward of one 2048-token sequence, against the
     * well-known 2 * N_matmul * T plus causal attention. */
    if (tb_arch_find(&a, "llama-3.1-8b", err, sizeof err) != 0)
        bail("%s", err);
    {
        double nm = 8030261248.0 - 128256.0 * 4096 - 65.0 * 4096; /* minus embedding, norms */
        double attn = 32 * 4.0 * 32 * 128 * (2048.0 * 2049 / 2);
        IS_REL(2 * nm * 2048 + attn, tb_flops_forward(&a, 1, 2048), 1e-12,
               "llama-3.1-8b forward at 2048 tokens: %.3g FLOPs", tb_flops_forward(&a, 1, 2048));
        /* 6ND rule of thumb holds within the attention term */
        OK(tb_flops_train(&a, 1, 2048) > 6 * nm * 2048,
           "train exceeds 6*N*D by the attention term");
    }
    return 0;
}
