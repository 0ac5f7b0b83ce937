#!/usr/bin/env python3
"""workloads/peers/pytorch_llama.py: the PyTorch peer of trnbench's GPU executor.

`trnbench perf --gpu --peer pytorch` runs this to see how plain PyTorch does on the
same work: the Llama of a trnbench catalogue file (workloads/llama/NAME.model, format
in workloads/README.md) with random weights drawn from a seed, on the first CUDA
device, timed with CUDA events, eager and under torch.compile. It needs python3 and
torch (2.0 or later) only; trnbench itself never needs PyTorch. Without torch the
catalogue parser and the counts below still work (tests/peers/).

What one repetition is, per phase (B = batch, T = --seq, n = --seq-out), as in
trnbench's executors (harness/tb_exec.h):
  prefill  B prompts of T tokens into a KV cache, LM head on the last position
  decode   n greedy steps (argmax fed back) at positions T .. T+n-1 on a static,
           pre-allocated KV cache, after one untimed prefill; every repetition
           restarts at position T
  train    forward, cross-entropy over all B x T tokens, backward, AdamW (fused):
           fp32 master weights and optimizer state, bf16 products under autocast
Inference holds bf16 weights and a bf16 KV cache. Attention is
F.scaled_dot_product_attention: causal, grouped-query through enable_gqa (torch 2.5+)
or repeated K/V heads (prefill, train); for decode the query heads that share a K/V
head are folded into the query-length axis and masked over the static cache, so the
cache is read once per step. compile mode: torch.compile (default mode) for prefill
and the training step's forward and loss; for decode mode="reduce-overhead" (CUDA
graphs).

Output: CSV on stdout, header COLUMNS, one line per (phase, mode); progress on stderr.
Times are seconds of one unit of work: the batch's prefill, one decode step (a
repetition's n steps divided by n), one training step; samples_s lists every timed
repetition in that unit; tokens_per_s = B*T (prefill, train) or B (decode) per
median_s; flops: model FLOPs of one unit, counted as trnbench counts them
(harness/tb_flops.h).

Exit status: 0 measured; 1 a run failed or did not validate; 2 usage or input error;
3 cannot measure here (no torch, torch older than 2.0, no CUDA device), with a
one-line reason on stderr.
"""
import argparse
import csv
import glob
import math
import os
import platform
import re
import stat
import statistics
import sys
import time
import traceback

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the parser and the counts do not need it
    torch = F = None
    TORCH_MISSING = str(e)

EXIT_FAILED, EXIT_USAGE, EXIT_UNAVAILABLE = 1, 2, 3
PHASES = ("prefill", "decode", "train")
MODES = ("eager", "compile")
COLUMNS = ("peer", "peer_version", "mode", "device", "model", "layers", "phase", "batch",
           "seq_in", "seq_out", "reps", "warmup", "median_s", "min_s", "max_s", "mean_s",
           "stddev_s", "tokens_per_s", "flops", "samples_s", "notes")
INIT_STD = 0.02  # trnbench's random initialisation
ADAMW = dict(lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)  # tb_adamw_default


def log(msg):
    print("pytorch_llama: " + msg, file=sys.stderr, flush=True)


# ---- the catalogue file (the rules of harness/tb_arch.c) ----

class ModelError(Exception):
    """A catalogue file trnbench would refuse: "path: line N: field 'key': why"."""


INT_KEYS = {"layers": (1, 100000), "hidden": (1, 1 << 20), "heads": (1, 1 << 16),
            "kv_heads": (1, 1 << 16), "head_dim": (1, 1 << 16), "ffn": (1, 1 << 22),
            "vocab": (2, 1 << 24), "max_context": (1, 1 << 26),
            "rope_original_context": (1, 1 << 26),
            # a mixture of experts (tb_arch.h): read so that the catalogue's files parse;
            # the peer runs dense models only (main refuses the others)
            "experts": (0, 1 << 16), "experts_active": (1, 1 << 16), "expert_ffn": (1, 1 << 22),
            "shared_experts": (0, 64), "shared_expert_ffn": (1, 1 << 22),
            "moe_layer_step": (1, 100000)}
FLOAT_KEYS = {"rope_theta": (1.0, 1e12), "norm_eps": (1e-12, 1.0),
              "rope_scale_factor": (0.0, 1e6), "rope_low_freq_factor": (0.0, 1e6),
              "rope_high_freq_factor": (0.0, 1e6), "published_params": (0.0, 1e15)}
# trnbench's rules for catalogue files (harness/base/tb_util.h, tb_arch.h): a name is a
# catalogue name, a path only a file ending in .model, a regular file of at most 1 MiB;
# a UTF-8 BOM is stripped and a NUL byte refused
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@-]{0,62}\Z")
MODEL_FILE_MAX = 1 << 20
REQUIRED = ("layers", "hidden", "heads", "ffn", "vocab", "name", "family")


def load_model(path):
    """The model file at path as a dict of its keys, defaults filled in."""
    cfg = {"kv_heads": 0, "head_dim": 0, "rope_theta": 10000.0, "max_context": 2048,
           "tied_embeddings": False, "norm_eps": 1e-5, "rope_scale_factor": 0.0,
           "rope_low_freq_factor": 0.0, "rope_high_freq_factor": 0.0,
           "rope_original_context": 0, "published_params": 0.0, "source": "", "path": path,
           "experts": 0}
    seen, line = set(), 0
    try:
        f = open(path, encoding="utf-8-sig")
        st = os.fstat(f.fileno())
    except OSError as e:
        raise ModelError(f"cannot open '{path}': {e.strerror}") from None
    with f:
        if not stat.S_ISREG(st.st_mode):
            raise ModelError(f"'{path}' is not a regular file")
        if st.st_size > MODEL_FILE_MAX:
            raise ModelError(f"'{path}' holds {st.st_size} bytes, more than such a file may "
                             f"({MODEL_FILE_MAX})")
        for line, raw in enumerate(f, 1):
            if "\0" in raw:
                head = raw.split("\0", 1)[0]
                field = (head.rsplit("=", 1)[0].split() or [""])[-1] if "=" in head \
                    else (head.split() or [""])[0]
                raise ModelError(f"{path}: line {line}: field '{field}': a NUL byte")
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            if "=" not in text:
                raise ModelError(f"{path}: line {line}: expected 'key = value', got '{text}'")
            key, val = (s.strip() for s in text.split("=", 1))
            where = f"{path}: line {line}: field '{key}'"
            if key in INT_KEYS:
                lo, hi = INT_KEYS[key]
                try:
                    cfg[key] = int(val, 10)
                except ValueError:
                    cfg[key] = None
                if cfg[key] is None or not lo <= cfg[key] <= hi:
                    raise ModelError(f"{where}: expected an integer in [{lo}, {hi}], got '{val}'")
            elif key in FLOAT_KEYS:
                lo, hi = FLOAT_KEYS[key]
                try:
                    cfg[key] = float(val)
                except ValueError:
                    cfg[key] = math.nan
                if not lo <= cfg[key] <= hi:
                    raise ModelError(f"{where}: expected a number in [{lo:g}, {hi:g}], got '{val}'")
            elif key == "name":
                if not val or len(val) >= 64 or any(c in val for c in " \t,/\""):
                    raise ModelError(f"{where}: bad model name '{val}'")
                cfg[key] = val
            elif key == "family":
                if val != "llama":
                    raise ModelError(f"{where}: unknown family '{val}' (known: llama)")
                cfg[key] = val
            elif key == "tied_embeddings":
                flag = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
                if val.lower() not in flag:
                    raise ModelError(f"{where}: expected true or false, got '{val}'")
                cfg[key] = flag[val.lower()]
            elif key == "source":
                cfg[key] = val
            else:
                raise ModelError(f"{where}: unknown key")
            seen.add(key)
    for key in REQUIRED:
        if key not in seen:
            raise ModelError(f"{path}: line {line}: field '{key}': missing")
    cfg["kv_heads"] = cfg["kv_heads"] or cfg["heads"]
    if not cfg["head_dim"]:
        if cfg["hidden"] % cfg["heads"]:
            raise ModelError(f"{path}: field 'heads': hidden {cfg['hidden']} is not a multiple "
                             f"of heads {cfg['heads']}")
        cfg["head_dim"] = cfg["hidden"] // cfg["heads"]
    if cfg["heads"] % cfg["kv_heads"]:
        raise ModelError(f"{path}: field 'kv_heads': heads {cfg['heads']} is not a multiple of "
                         f"kv_heads {cfg['kv_heads']}")
    if cfg["head_dim"] % 2:
        raise ModelError(f"{path}: field 'head_dim': RoPE needs an even head dimension, got "
                         f"{cfg['head_dim']}")
    return cfg


def datadir():
    """$TRNBENCH_DATADIR, else the tree this file sits in (workloads/peers/..)."""
    env = os.environ.get("TRNBENCH_DATADIR")
    return env or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_model(name):
    """A file ending in .model or a catalogue name under <datadir>/workloads."""
    if name.endswith(".model"):
        return load_model(name)
    if not NAME_RE.match(name):
        raise ModelError(f"bad model name '{name}' (a catalogue name: a letter or digit, then "
                         f"letters, digits and . _ + @ -; or a file ending in .model)")
    found = sorted(glob.glob(os.path.join(datadir(), "workloads", "*", name + ".model")))
    if not found:
        raise ModelError(f"unknown model '{name}' (no {name}.model under "
                         f"'{datadir()}/workloads')")
    return load_model(found[0])


def truncate(cfg, n):
    """Keep the first n layers; the name says so ("@Ln"), as tb_arch_truncate."""
    if not 1 <= n <= cfg["layers"]:
        raise ModelError(f"field 'layers': {cfg['name']} has {cfg['layers']} layers, "
                         f"cannot keep {n}")
    if n < cfg["layers"]:
        cfg = dict(cfg, layers=n, name=f"{cfg['name']}@L{n}")
    return cfg


# ---- counts (harness/tb_arch.c, harness/tb_flops.c) ----

def params_per_layer(cfg):
    C, q, kv = cfg["hidden"], cfg["heads"] * cfg["head_dim"], cfg["kv_heads"] * cfg["head_dim"]
    return C * q + 2 * C * kv + q * C + 3 * C * cfg["ffn"] + 2 * C


def param_count(cfg):
    """Every parameter: layers, token embedding, untied LM head, final norm."""
    embed = cfg["vocab"] * cfg["hidden"]
    return (cfg["layers"] * params_per_layer(cfg) + embed
            + (0 if cfg["tied_embeddings"] else embed) + cfg["hidden"])


def flops(cfg, phase, B, T, n):
    """Model FLOPs of one unit: a prefill of B x T, one decode step (the mean over the n
    steps at positions T .. T+n-1), a training step of B x T (3 x forward)."""
    matmul = cfg["layers"] * (params_per_layer(cfg) - 2.0 * cfg["hidden"])
    head = float(cfg["vocab"] * cfg["hidden"])
    attn = cfg["layers"] * 4.0 * cfg["heads"] * cfg["head_dim"]  # per query per key seen
    causal = T * (T + 1.0) / 2.0
    if phase == "prefill":
        return 2.0 * matmul * B * T + 2.0 * head * B + B * attn * causal
    if phase == "decode":
        keys = n * T + n * (n + 1.0) / 2.0
        return B * (2.0 * (matmul + head) * n + attn * keys) / n
    return 3.0 * (2.0 * (matmul + head) * B * T + B * attn * causal)


def rope_freqs(cfg):
    """RoPE frequency of each rotated pair, with Llama 3.1's "llama3" scaling."""
    HD, out = cfg["head_dim"], []
    factor, octx = cfg["rope_scale_factor"], cfg["rope_original_context"]
    lo, hi = cfg["rope_low_freq_factor"], cfg["rope_high_freq_factor"]
    for i in range(HD // 2):
        f = cfg["rope_theta"] ** (-2.0 * i / HD)
        wavelen = 2.0 * math.pi / f
        if factor > 0 and wavelen >= octx / hi:
            if wavelen > octx / lo:
                f = f / factor
            else:
                smooth = (octx / wavelen - lo) / (hi - lo)
                f = (1.0 - smooth) * f / factor + smooth * f
        out.append(f)
    return out


# ---- the model (torch) ----
# Shapes: B batch, T tokens, C hidden, NH query heads, NKV K/V heads, G = NH / NKV,
# HD head dim, F ffn, V vocab, S static cache length.

Module = torch.nn.Module if torch is not None else object
GQA_IN_SDPA = torch is not None and tuple(
    int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)


def attention_reference(q, k, v, mask=None, causal=False):
    """softmax(q k^T / sqrt(HD)) v over [.., H, Tq, HD]: tests on a torch without SDPA."""
    s = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return (s.softmax(-1) @ v.float()).to(q.dtype)


def sdpa(q, k, v, mask=None, causal=False):
    if not hasattr(F, "scaled_dot_product_attention"):
        return attention_reference(q, k, v, mask, causal)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)


def rope(x, cos, sin):
    """Rotate pairs (i, i + HD/2) of x [B, T, H, HD] by cos, sin [T, HD/2] (HF layout)."""
    x1, x2 = x.chunk(2, dim=-1)
    c, s = cos[:, None, :].to(x.dtype), sin[:, None, :].to(x.dtype)
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)


class RMSNorm(Module):
    def __init__(self, C, eps, dtype, device):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(C, dtype=dtype, device=device))

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * y.to(x.dtype)


class Block(Module):
    """RMSNorm, attention with RoPE and a KV cache, RMSNorm, SwiGLU; q|k|v and
    gate|up as one product each (as trnbench's engines and gpt-fast do)."""

    def __init__(self, cfg, dtype, device):
        super().__init__()
        C, HD = cfg["hidden"], cfg["head_dim"]
        self.NH, self.NKV, self.HD = cfg["heads"], cfg["kv_heads"], HD
        lin = dict(bias=False, dtype=dtype, device=device)
        self.attn_norm = RMSNorm(C, cfg["norm_eps"], dtype, device)
        self.wqkv = torch.nn.Linear(C, (self.NH + 2 * self.NKV) * HD, **lin)
        self.wo = torch.nn.Linear(self.NH * HD, C, **lin)
        self.mlp_norm = RMSNorm(C, cfg["norm_eps"], dtype, device)
        self.w_gate_up = torch.nn.Linear(C, 2 * cfg["ffn"], **lin)
        self.w_down = torch.nn.Linear(cfg["ffn"], C, **lin)
        self.register_buffer("k_cache", None, persistent=False)  # [B, NKV, S, HD] once set up
        self.register_buffer("v_cache", None, persistent=False)

    def attend(self, q, k, v, pos, cache_pos):
        """q [B, NH, T, HD], k, v [B, NKV, T, HD] -> [B, NH, T, HD]."""
        B, NH, T, HD = q.shape
        if pos is None:  # positions 0 .. T-1: prefill, train
            if self.k_cache is not None:
                self.k_cache[:, :, :T] = k
                self.v_cache[:, :, :T] = v
            if GQA_IN_SDPA:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            G = NH // self.NKV
            return sdpa(q, k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1),
                        causal=True)
        # one step at position pos: the G query heads of a K/V head as G queries
        self.k_cache.index_copy_(2, pos, k)
        self.v_cache.index_copy_(2, pos, v)
        mask = (cache_pos <= pos).view(1, 1, 1, -1)
        y = sdpa(q.reshape(B, self.NKV, NH // self.NKV, HD), self.k_cache, self.v_cache, mask)
        return y.reshape(B, NH, 1, HD)

    def forward(self, x, cos, sin, pos, cache_pos):
        B, T, _ = x.shape
        qkv = self.wqkv(self.attn_norm(x))
        q, k, v = qkv.split([self.NH * self.HD, self.NKV * self.HD, self.NKV * self.HD], -1)
        q = rope(q.view(B, T, self.NH, self.HD), cos, sin).transpose(1, 2)
        k = rope(k.view(B, T, self.NKV, self.HD), cos, sin).transpose(1, 2)
        v = v.view(B, T, self.NKV, self.HD).transpose(1, 2)
        y = self.attend(q, k, v, pos, cache_pos)
        x = x + self.wo(y.transpose(1, 2).reshape(B, T, self.NH * self.HD))
        gate, up = self.w_gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.w_down(F.silu(gate) * up)


class Llama(Module):
    """Token embedding, the layers, final RMSNorm, LM head (the embedding when tied).
    Weights drawn from N(0, 0.02) (norms 1) by the caller's seeded generator."""

    def __init__(self, cfg, max_seq, dtype, device):
        super().__init__()
        C, V = cfg["hidden"], cfg["vocab"]
        self.cfg = cfg
        self.embed = torch.nn.Embedding(V, C, dtype=dtype, device=device)
        self.layers = torch.nn.ModuleList(Block(cfg, dtype, device) for _ in range(cfg["layers"]))
        self.norm = RMSNorm(C, cfg["norm_eps"], dtype, device)
        self.head = (None if cfg["tied_embeddings"]
                     else torch.nn.Linear(C, V, bias=False, dtype=dtype, device=device))
        freqs = torch.tensor(rope_freqs(cfg), dtype=torch.float64, device=device)
        angle = torch.arange(max_seq, dtype=torch.float64, device=device)[:, None] * freqs
        self.register_buffer("rope_cos", angle.cos().float(), persistent=False)  # [S, HD/2]
        self.register_buffer("rope_sin", angle.sin().float(), persistent=False)
        self.cache_pos = None

    def init_weights(self, generator):
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    p.copy_(torch.randn(p.shape, generator=generator, device=p.device) * INIT_STD)

    def setup_cache(self, B, S, graphs=False):
        """Static K and V caches of S positions (a multiple of 64, masked beyond pos);
        graphs: marked as static addresses for CUDA graphs, as a StaticCache is."""
        S = (S + 63) // 64 * 64
        p = self.embed.weight
        for blk in self.layers:
            shape = (B, blk.NKV, S, blk.HD)
            blk.k_cache = torch.zeros(shape, dtype=p.dtype, device=p.device)
            blk.v_cache = torch.zeros(shape, dtype=p.dtype, device=p.device)
            if graphs:
                from torch import _dynamo  # loaded by torch.compile, maybe not yet
                _dynamo.mark_static_address(blk.k_cache)
                _dynamo.mark_static_address(blk.v_cache)
        self.cache_pos = torch.arange(S, device=p.device)

    def forward(self, tokens, pos=None, last_only=False):
        """tokens [B, T] -> logits [B, T or 1, V]. pos None: positions 0 .. T-1 (filling
        the cache when there is one); a tensor [1]: one decode step there (T = 1)."""
        T = tokens.shape[1]
        cos, sin = ((self.rope_cos[:T], self.rope_sin[:T]) if pos is None
                    else (self.rope_cos[pos], self.rope_sin[pos]))
        x = self.embed(tokens)
        for blk in self.layers:
            x = blk(x, cos, sin, pos, self.cache_pos)
        if last_only:
            x = x[:, -1:]
        head = self.embed.weight if self.head is None else self.head.weight
        return F.linear(self.norm(x), head)


# ---- the phases: each set-up returns rep() (one repetition) and check() -> (ok, detail),
# the validation after the timed repetitions ----

def make_inputs(cfg, B, T, seed, device):
    g = torch.Generator(device=device)
    g.manual_seed(seed + 1)
    tokens = torch.randint(0, cfg["vocab"], (B, T + 1), generator=g, device=device)
    return tokens[:, :T].contiguous(), tokens[:, 1:].contiguous()


def build(cfg, max_seq, dtype, seed, device):
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    model = Llama(cfg, max_seq, dtype, device)
    model.init_weights(g)
    return model


def logits_finite(logits):
    return bool(torch.isfinite(logits).all())


def setup_prefill(cfg, args, mode, device):
    B, T = args.batch, args.seq
    model = build(cfg, T, torch.bfloat16, args.seed, device)
    model.setup_cache(B, T)
    tokens, _ = make_inputs(cfg, B, T, args.seed, device)

    def prefill(tok):
        return model(tok, last_only=True)
    fn = torch.compile(prefill) if mode == "compile" else prefill
    out = {}

    def rep():
        with torch.no_grad():
            out["logits"] = fn(tokens)
    return rep, lambda: (logits_finite(out["logits"]), "")


def setup_decode(cfg, args, mode, device):
    B, T, n = args.batch, args.seq, args.seq_out
    graphs = mode == "compile"
    model = build(cfg, T + n, torch.bfloat16, args.seed, device)
    model.setup_cache(B, T + n, graphs)
    tokens, _ = make_inputs(cfg, B, T, args.seed, device)
    positions = torch.arange(T, T + n, device=device)
    with torch.no_grad():  # the prompt, once and untimed; its greedy tokens start each rep
        first = model(tokens, last_only=True)[:, -1].argmax(-1, keepdim=True)

    def step(tok, pos):
        return model(tok, pos=pos)[:, -1].argmax(-1, keepdim=True)
    fn = torch.compile(step, mode="reduce-overhead", fullgraph=True) if graphs else step

    def rep():
        tok = first
        with torch.no_grad():
            for s in range(n):
                if graphs:  # the step's outputs of the last replay are not read again
                    torch.compiler.cudagraph_mark_step_begin()
                tok = fn(tok, positions[s:s + 1]).clone()

    def check():  # one more step's logits, outside the timed region
        with torch.no_grad():
            return logits_finite(model(first, pos=positions[:1])), ""
    return rep, check


def setup_train(cfg, args, mode, device):
    B, T, V = args.batch, args.seq, cfg["vocab"]
    model = build(cfg, T, torch.float32, args.seed, device)
    tokens, targets = make_inputs(cfg, B, T, args.seed, device)
    decay = [p for p in model.parameters() if p.dim() == 2]
    other = [p for p in model.parameters() if p.dim() != 2]
    fused = {"fused": True} if device.type == "cuda" else {}  # one kernel for all tensors
    opt = torch.optim.AdamW([{"params": decay}, {"params": other, "weight_decay": 0.0}],
                            **fused, **ADAMW)

    def loss_of(tok, tgt):
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits = model(tok)
        return F.cross_entropy(logits.float().view(-1, V), tgt.view(-1))
    fn = torch.compile(loss_of) if mode == "compile" else loss_of
    losses = []

    def rep():
        opt.zero_grad(set_to_none=True)
        loss = fn(tokens, targets)
        loss.backward()
        opt.step()
        losses.append(loss.detach())

    def check():
        got = [float(x) for x in losses]
        ok = all(math.isfinite(x) for x in got) and abs(got[0] - math.log(V)) < 1.0
        return ok, f"first loss {got[0]:.4f} (ln V = {math.log(V):.4f}), last {got[-1]:.4f}"
    return rep, check


SETUP = {"prefill": setup_prefill, "decode": setup_decode, "train": setup_train}


# ---- timing ----

def time_reps(rep, reps, warmup, device):
    """Seconds of each timed repetition (CUDA events; wall clock on a CPU)."""
    out = []
    for k in range(warmup + reps):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            rep()
            end.record()
            end.synchronize()
            secs = start.elapsed_time(end) / 1e3
        else:
            t0 = time.perf_counter()
            rep()
            secs = time.perf_counter() - t0
        if k >= warmup:
            out.append(secs)
    return out


def measure(cfg, args, phase, mode, device, writer):
    B, T, n = args.batch, args.seq, args.seq_out
    t0 = time.perf_counter()
    rep, check = SETUP[phase](cfg, args, mode, device)
    log(f"{phase} {mode} B={B} T={T}" + (f" n={n}" if phase == "decode" else "")
        + f": {args.warmup} warm-up + {args.reps} timed ...")
    secs = time_reps(rep, args.reps, args.warmup, device)
    ok, detail = check()
    if not ok:
        raise RuntimeError("validation failed: " + (detail or "logits not finite"))
    unit = [s / n for s in secs] if phase == "decode" else secs
    med = statistics.median(unit)
    tokens = B if phase == "decode" else B * T
    notes = "; ".join(x for x in (mode_note(phase, mode), detail, f"python "
                                  f"{platform.python_version()}, CUDA {torch.version.cuda}") if x)
    writer.writerow(["pytorch", torch.__version__, mode,
                     torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                     cfg["name"], cfg["layers"], phase, B, T, n if phase == "decode" else 0,
                     args.reps, args.warmup, repr(med), repr(min(unit)), repr(max(unit)),
                     repr(statistics.mean(unit)),
                     repr(statistics.stdev(unit) if len(unit) > 1 else 0.0),
                     repr(tokens / med), repr(flops(cfg, phase, B, T, n)),
                     ";".join(repr(s) for s in unit), notes])
    sys.stdout.flush()
    log(f"{phase} {mode}: median {med * 1e3:.3f} ms, {tokens / med:.1f} tokens/s "
        f"({time.perf_counter() - t0:.1f} s with set-up and compilation)")


def mode_note(phase, mode):
    attn = "SDPA enable_gqa" if GQA_IN_SDPA else "SDPA, K/V heads repeated"
    if phase == "decode":
        attn = "SDPA over the static cache, grouped queries folded, masked"
    if mode == "eager":
        return f"eager; attention {attn}"
    how = 'mode="reduce-overhead" (CUDA graphs)' if phase == "decode" else "default mode"
    return f"torch.compile {how}; attention {attn}"


# ---- command line ----

def words(text, known, what):
    got = [w for w in text.split(",") if w]
    bad = [w for w in got if w not in known]
    if not got or bad:
        raise argparse.ArgumentTypeError(f"{what}: '{text}' is not a comma list of "
                                         f"{', '.join(known)}")
    return got


def positive(text):
    try:
        v = int(text, 10)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: '{text}'")
    return v


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="pytorch_llama.py", description="PyTorch peer of trnbench's GPU executor: times "
        "a catalogue Llama's prefill, decode and training step; CSV on stdout.")
    p.add_argument("--model", default="llama-3.2-1b", help="catalogue name or .model path")
    p.add_argument("--layers", type=positive, help="keep the first N layers")
    p.add_argument("--phase", default="prefill,decode,train",
                   type=lambda s: words(s, PHASES, "--phase"), help="comma list (default all)")
    p.add_argument("--mode", default="eager,compile",
                   type=lambda s: words(s.replace("both", "eager,compile"), MODES, "--mode"),
                   help="eager, compile or both (default)")
    p.add_argument("--batch", type=positive, default=1, help="sequences (default 1)")
    p.add_argument("--seq", type=positive, default=2048,
                   help="prompt or training length, decode start position (default 2048)")
    p.add_argument("--seq-out", type=positive, default=32, help="decode steps (default 32)")
    p.add_argument("--reps", type=positive, default=5, help="timed repetitions (default 5)")
    p.add_argument("--warmup", type=int, default=3, help="untimed repetitions (default 3)")
    p.add_argument("--seed", type=int, default=1, help="weights and tokens (default 1)")
    args = p.parse_args(argv)
    if args.warmup < 0:
        p.error("--warmup: not a non-negative integer")
    return args


def unavailable():
    """Why this machine cannot measure, or None."""
    if torch is None:
        return f"torch not importable: {TORCH_MISSING}"
    if not hasattr(torch, "compile") or not hasattr(F, "scaled_dot_product_attention"):
        return f"torch {torch.__version__} is older than 2.0 (no torch.compile, no SDPA)"
    if not torch.cuda.is_available():
        if torch.version.cuda is None:
            return f"torch {torch.__version__} is a CPU-only build: no CUDA"
        return f"no CUDA device for torch {torch.__version__} (CUDA {torch.version.cuda})"
    return None


def main(argv):
    args = parse_args(argv)
    try:
        cfg = find_model(args.model)
        if cfg["experts"]:
            raise ModelError(f"model '{cfg['name']}': a mixture of experts ({cfg['experts']} "
                             f"experts) is not run by this peer; its performance is predicted "
                             f"(trnbench predict)")
        if args.layers:
            cfg = truncate(cfg, args.layers)
    except ModelError as e:
        print(f"pytorch_llama: {e}", file=sys.stderr)
        return EXIT_USAGE
    why = unavailable()
    if why:
        print(f"pytorch_llama: {why}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    device = torch.device("cuda", 0)
    log(f"torch {torch.__version__} on {torch.cuda.get_device_name(device)}; {cfg['name']}, "
        f"{param_count(cfg) / 1e9:.3f}B parameters")
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(COLUMNS)
    for phase in args.phase:
        for mode in args.mode:
            try:
                measure(cfg, args, phase, mode, device, writer)
            except Exception as e:  # noqa: BLE001 - any failure of torch is a failed run
                traceback.print_exc()
                print(f"pytorch_llama: {phase} {mode}: {type(e).__name__}: {e}".splitlines()[0],
                      file=sys.stderr)
                return EXIT_FAILED
            finally:
                if mode == "compile":
                    torch._dynamo.reset()  # drop the compiled graphs and their memory
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
