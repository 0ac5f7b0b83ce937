"""tests/peers/pytorch_llama_test.py: the PyTorch peer (workloads/peers/pytorch_llama.py)
without a GPU, as TAP on stdout (tests/cli/peer.t runs it).

Always (python3 only): the catalogue parser gives llama-3.2-1b's published parameter
count (1.24e9 within 1%) and every published count the catalogue states, refuses bad
files with the line and field as trnbench does, shortens a model as trnbench names it;
its FLOP counts equal trnbench's for llama-tiny (the flops column of `trnbench run`
rows, when TB_BIN is there); its CSV columns are the ones harness/tb_peer.c reads; and
the script as a program: a usage error exits 2, and where it cannot measure it exits
3 with one line on stderr and nothing on stdout.

Where torch imports (any version, on the CPU): decode through the static KV cache (the
grouped queries folded over the masked cache) gives the logits of a full forward pass
at every position, the module holds the counted parameters, a training step starts
near ln V and learns, and each phase's CSV row holds together.
"""
import csv
import io
import math
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
SRC = os.environ.get("TB_SRCDIR", ".")
sys.path.insert(0, os.path.join(SRC, "workloads", "peers"))
os.environ.setdefault("TRNBENCH_DATADIR", SRC)
import pytorch_llama as pl  # noqa: E402

SCRIPT = os.path.join(SRC, "workloads", "peers", "pytorch_llama.py")
n_tests = 0


def ok(cond, what):
    global n_tests
    n_tests += 1
    print(f"{'ok' if cond else 'not ok'} {n_tests} - {what}", flush=True)
    return cond


def skip(reason):
    global n_tests
    n_tests += 1
    print(f"ok {n_tests} # SKIP {reason}", flush=True)


def diag(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


def refused(text, want, what):
    with tempfile.NamedTemporaryFile("w", suffix=".model", delete=False) as f:
        f.write(text)
    try:
        pl.load_model(f.name)
        ok(False, f"refused: {what} (it was read)")
    except pl.ModelError as e:
        ok(want in str(e) and f.name in str(e), f"refused: {what}: {e}")
    finally:
        os.unlink(f.name)


def catalogue():
    cfg = pl.find_model("llama-3.2-1b")
    n = pl.param_count(cfg)
    ok(abs(n - 1.24e9) <= 0.01 * 1.24e9, f"llama-3.2-1b: {n / 1e9:.4f}B parameters, 1.24B within 1%")
    ok(n == 1235814400, f"llama-3.2-1b: {n} parameters exactly as published")
    ok(cfg["tied_embeddings"] and cfg["kv_heads"] == 8 and cfg["head_dim"] == 64,
       "llama-3.2-1b: tied embeddings, 8 K/V heads of 64")
    ok(cfg["rope_scale_factor"] == 32 and cfg["rope_original_context"] == 8192
       and cfg["norm_eps"] == 1e-5, "llama-3.2-1b: llama3 RoPE scaling and norm eps")
    for path in sorted(os.listdir(os.path.join(SRC, "workloads", "llama"))):
        if not path.endswith(".model"):
            continue
        c = pl.load_model(os.path.join(SRC, "workloads", "llama", path))
        if c["published_params"] and not c["experts"]:  # MoE: tests/unit/moe.c
            ok(pl.param_count(c) == c["published_params"],
               f"{c['name']}: {pl.param_count(c)} parameters = published_params")
    f = pl.rope_freqs(cfg)
    ok(f[0] == 1.0, "RoPE: the fastest pair is not scaled")
    ok(abs(f[-1] - 500000.0 ** (-62 / 64) / 32) < 1e-15, "RoPE: the slowest pair / 32")
    ok(all(a > b for a, b in zip(f, f[1:])), "RoPE: frequencies fall monotonically")
    short = pl.truncate(cfg, 2)
    ok(short["name"] == "llama-3.2-1b@L2" and short["layers"] == 2, "--layers 2: llama-3.2-1b@L2")
    ok(pl.truncate(cfg, 16)["name"] == "llama-3.2-1b", "all layers: the name unchanged")
    good = "name = m\nfamily = llama\nlayers = 2\nhidden = 64\nheads = 4\nffn = 8\nvocab = 9\n"
    refused(good + "colour = blue\n", "line 8: field 'colour': unknown key", "an unknown key")
    refused(good.replace("ffn = 8\n", ""), "field 'ffn': missing", "a missing key")
    refused(good.replace("heads = 4", "heads = four"),
            "line 5: field 'heads': expected an integer", "a word for a number")
    refused(good + "kv_heads = 3\n", "field 'kv_heads': heads 4 is not a multiple of kv_heads 3",
            "heads not a multiple of kv_heads")
    refused(good.replace("llama", "gpt"), "line 2: field 'family': unknown family 'gpt'",
            "another family")
    refused(good + "tied_embeddings = maybe\n", "field 'tied_embeddings': expected true or false",
            "a bad flag")
    refused(good + "oops\n", "line 8: expected 'key = value'", "a line without '='")
    # trnbench's rules for text files (issue 19): a BOM stripped, a NUL refused, a name
    # a name, a .model path a regular file
    with tempfile.NamedTemporaryFile("wb", suffix=".model", delete=False) as f:
        f.write(b"\xef\xbb\xbf" + good.encode())
    try:
        ok(pl.load_model(f.name)["name"] == "m", "a file with a UTF-8 BOM is read")
    except pl.ModelError as e:
        ok(False, f"a file with a UTF-8 BOM is read: {e}")
    finally:
        os.unlink(f.name)
    refused(good.replace("hidden = 64", "hidden = 6\0" + "4"), "line 4: field 'hidden': a NUL byte",
            "a NUL byte")
    zero = os.path.join(tempfile.mkdtemp(), "zero.model")
    os.symlink("/dev/zero", zero)
    for name, want in (("/etc/passwd", "bad model name '/etc/passwd'"),
                       (zero, "zero.model' is not a regular file"),
                       ("../x", "bad model name '../x'")):
        try:
            pl.find_model(name)
            ok(False, f"model {name} refused")
        except pl.ModelError as e:
            ok(want in str(e), f"model {name} refused: {e}")
    try:
        pl.find_model("llama-9")
        ok(False, "an unknown model name refused")
    except pl.ModelError as e:
        ok("unknown model 'llama-9'" in str(e), f"an unknown model name refused: {e}")


def flops_match_trnbench():
    """The script's FLOPs of one unit against the rows `trnbench run` writes."""
    tb = os.environ.get("TB_BIN")
    if not tb or not os.access(tb, os.X_OK):
        for _ in range(3):
            skip("no TB_BIN: FLOPs not compared with trnbench's")
        return
    cfg = pl.find_model("llama-tiny")
    tmp = os.path.join(os.environ.get("TB_BUILDDIR", "build"), "tests", "tmp")
    out = tempfile.mkdtemp(prefix="peer-flops-", dir=tmp if os.path.isdir(tmp) else None)
    env = dict(os.environ, TRNBENCH_CUDA="0")
    for phase, B, T, n in (("prefill", 2, 16, 0), ("decode", 3, 16, 4), ("train", 2, 16, 0)):
        cmd = [tb, "run", "--model", "llama-tiny", "--phase", phase, "--batch", str(B),
               "--seq-in", str(T), "--reps", "1", "--warmup", "0", "--out", out]
        if n:
            cmd += ["--seq-out", str(n)]
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        with open(os.path.join(out, "results.csv"), newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["phase"] == phase
                    and r["metric"] == "gflop_per_s"]
        want = float(rows[0]["flops"]) / (n or 1) if rows else math.nan
        got = pl.flops(cfg, phase, B, T, n or 1)
        ok(abs(got - want) <= 1e-5 * want, f"{phase} B={B} T={T}: FLOPs {got:.6g}, trnbench "
           f"{want:.6g}")


def columns_match_c():
    with open(os.path.join(SRC, "harness", "measure", "tb_peer.c")) as f:
        text = f.read()
    block = re.search(r"TB_PEER_COLUMNS\[TB_PEER_NCOLS\] = \{(.*?)\};", text, re.S)
    cols = tuple(re.findall(r'"([^"]+)"', block.group(1))) if block else ()
    ok(cols == pl.COLUMNS, "CSV columns are the ones harness/tb_peer.c reads")


def as_program():
    r = subprocess.run([sys.executable, SCRIPT, "--phase", "serve"], capture_output=True,
                       text=True)
    ok(r.returncode == 2 and "--phase" in r.stderr, "a bad --phase: exit 2, says which option")
    r = subprocess.run([sys.executable, SCRIPT, "--model", "llama-9"], capture_output=True,
                       text=True)
    ok(r.returncode == 2 and "unknown model 'llama-9'" in r.stderr, "an unknown model: exit 2")
    r = subprocess.run([sys.executable, SCRIPT, "--model", "llama-tiny", "--phase", "prefill",
                        "--seq", "8", "--reps", "1", "--warmup", "0", "--mode", "eager"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode == 0:  # a GPU with torch: it measured
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        ok(len(rows) == 1 and rows[0]["model"] == "llama-tiny", "measured llama-tiny on a GPU")
        skip("it measured here, so there is no reason to check")
        return
    lines = r.stderr.strip().splitlines()
    ok(r.returncode == 3 and r.stdout == "", "cannot measure here: exit 3, nothing on stdout")
    ok(len(lines) == 1 and lines[0].startswith("pytorch_llama: "),
       f"one line on stderr: {lines[-1] if lines else ''}")


# ---- with torch, on the CPU ----

def close(a, b, tol):
    return float((a - b).abs().max()) <= tol * max(1.0, float(b.abs().max()))


def torch_checks(torch):
    cpu = torch.device("cpu")
    cfg = pl.find_model("llama-tiny")
    B, T, n, V = 2, 7, 4, cfg["vocab"]
    model = pl.build(cfg, T + n, torch.float32, 3, cpu)
    ok(sum(p.numel() for p in model.parameters()) == pl.param_count(cfg),
       "the module holds the counted parameters")
    tied = dict(cfg, tied_embeddings=True)
    ok(sum(p.numel() for p in pl.build(tied, 8, torch.float32, 3, cpu).parameters())
       == pl.param_count(tied), "tied: the LM head is the embedding")
    tokens = torch.randint(0, V, (B, T + n), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        full = model(tokens)  # no cache: positions 0 .. T+n-1 at once
        model.setup_cache(B, T + n)
        pre = model(tokens[:, :T], last_only=True)
        ok(close(pre[:, -1], full[:, T - 1], 1e-5), "prefill's last logits = the full pass's")
        worst = 0.0
        for s in range(n):
            pos = torch.tensor([T + s])
            step = model(tokens[:, T + s:T + s + 1], pos=pos)
            worst = max(worst, float((step[:, -1] - full[:, T + s]).abs().max()))
        ok(worst < 1e-4, f"decode through the static cache = the full pass at every position "
           f"(max difference {worst:.2e})")

    class Args:
        batch, seq, seq_out, reps, warmup, seed = 2, 8, 3, 2, 1, 1
    rep, check = pl.setup_train(cfg, Args, "eager", cpu)
    for _ in range(6):
        rep()
    good, detail = check()
    ok(good, f"training validates: {detail}")
    first, last = (float(x) for x in re.findall(r"(?:first loss|last) ([0-9.]+)", detail))
    ok(last < first, f"and learns the batch ({first:.3f} -> {last:.3f})")
    for phase in pl.PHASES:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(pl.COLUMNS)
        pl.measure(cfg, Args, phase, "eager", cpu, writer)
        row = next(csv.DictReader(io.StringIO(buf.getvalue())))
        units = 2 if phase == "decode" else 2 * 8
        samples = [float(x) for x in row["samples_s"].split(";")]
        ok(len(samples) == 2 and abs(float(row["tokens_per_s"]) * float(row["median_s"]) - units)
           < 1e-9 * units and float(row["min_s"]) <= float(row["median_s"]) <= float(row["max_s"])
           and float(row["flops"]) == pl.flops(cfg, phase, 2, 8, 3),
           f"{phase}: its CSV row holds together ({row['tokens_per_s']} tokens/s on the CPU)")


def main():
    catalogue()
    flops_match_trnbench()
    columns_match_c()
    as_program()
    try:
        import torch
    except ImportError as e:
        diag(f"no torch ({e}): the model's checks are skipped")
        torch = None
    if torch is None:
        for _ in range(9):
            skip("torch not importable")
    else:
        diag(f"torch {torch.__version__} on the CPU")
        torch_checks(torch)
    print(f"1..{n_tests}")


if __name__ == "__main__":
    main()
