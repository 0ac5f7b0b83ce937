/*
 * harness/model/tb_flops.h: the work a Llama phase does, counted from the architecture's
 * shapes. One function per phase; the CPU engine's gflop_per_s and the performance
 * model both use these, so there is one source of truth for FLOPs and bytes.
 *
 * Convention ("model FLOPs"): 2 FLOPs per multiply-add of every matrix product the
 * math needs: the layers' projections (Q, K, V, O, gate, up, down), the LM head, and
 * attention's QK^T and AV over the positions each query may see (causal: query t sees
 * t+1 keys, so no work is counted for the masked half). Norms, RoPE, softmax, SwiGLU
 * and the optimizer are not counted (they are O(C) per token, under 1% at real sizes).
 * Training counts forward + backward = 3x the forward FLOPs (backward computes the
 * gradients of both inputs and weights of every product). LoRA fine-tuning counts what
 * its step must compute: the forward, the input gradients of every product (the frozen
 * weights get none of their own) and the adapters' products (tb_flops_train_lora).
 * Activation recomputation is not model FLOPs.
 * A mixture of experts counts the parameters a token uses (tb_arch_params_active: k of
 * the E routed experts of each MoE layer, the shared experts and the router), so Llama 4
 * Maverick's forward is about 2 x 17B FLOPs per token, not 2 x 400B.
 */
#ifndef TB_FLOPS_H
#define TB_FLOPS_H

#include "tb_arch.h"

/* Forward FLOPs of B sequences of T tokens each, starting at position 0, with logits
 * computed for every position (as training and a scoring pass do). */
double tb_flops_forward(const struct tb_arch *a, double B, double T);

/* Prefill of B prompts of T tokens: the forward pass over all positions, but the LM
 * head only for the last position of each prompt (all a generator needs). */
double tb_flops_prefill(const struct tb_arch *a, double B, double T);

/* One decode step for B sequences: one new token each at position pos (0-based), so it
 * attends to pos + 1 cached positions (itself included). */
double tb_flops_decode_step(const struct tb_arch *a, double B, double pos);

/* Decode of n tokens after a prompt of T tokens: steps at positions T .. T+n-1. */
double tb_flops_decode(const struct tb_arch *a, double B, double T, double n);

/* The part of tb_flops_forward that is attention (QK^T and AV, causal). Kernels run it
 * in 16-bit even when the weights' products run in fp8. */
double tb_flops_attention(const struct tb_arch *a, double B, double T);

/* The work of attention's backward pass as the kernels do it: FlashAttention keeps no
 * T x T probabilities, so its backward recomputes S = Q K^T before dV = P^T dO, dP =
 * dO V^T, dQ = dS K and dK = dS^T Q: five products of the forward's size against the
 * forward's two, 2.5 times tb_flops_attention (Dao 2023, 'FlashAttention-2', section
 * 3.1.2; the flash-attention benchmarks count bwd = 2.5 x fwd). Model FLOPs (MFU)
 * still count 2 x forward; this is the time's count. */
double tb_flops_attention_backward(const struct tb_arch *a, double B, double T);

/* Bytes a training step's element-wise work (norms, residual adds, RoPE, SwiGLU)
 * moves through memory, forward and backward, with 16-bit activations: not FLOPs,
 * but time on a memory-bound path that the performance model adds. */
double tb_bytes_train_elementwise(const struct tb_arch *a, double B, double T);

/* Training step on B sequences of T tokens: 3 x tb_flops_forward. */
double tb_flops_train(const struct tb_arch *a, double B, double T);

/* LoRA fine-tuning step on B sequences of T tokens with adapters of rank r
 * (tb_arch_params_lora): the forward (tb_flops_forward), the backward's activation
 * gradients only for the frozen products (one more forward's worth of their FLOPs: no
 * weight gradients), attention's backward as in training (twice its forward: it has no
 * weights), and the adapters' own products forward and backward (6 per adapter
 * parameter and token). = 2 x forward + attention + 6 x adapter parameters x tokens. */
double tb_flops_train_lora(const struct tb_arch *a, double B, double T, long r);

/* Bytes one decode step must read from memory at minimum: every matrix-product weight
 * the step uses once (bytes_per_param each; of a mixture of experts, the routed experts
 * its B tokens touch, tb_arch_params_touched) plus the K and V cache of B sequences at pos + 1
 * positions (bytes_per_kv each). */
double tb_bytes_decode_step(const struct tb_arch *a, double B, double pos, double bytes_per_param,
                            double bytes_per_kv);

/* K and V cache bytes per token per sequence: 2 * L * NKV * HD * bytes_per_kv. */
double tb_bytes_kv_per_token(const struct tb_arch *a, double bytes_per_kv);

#endif
