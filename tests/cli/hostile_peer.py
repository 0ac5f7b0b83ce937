#!/usr/bin/env python3
"""tests/cli/hostile_peer.py: hostile peers for tests/cli/hostile.t (Python 3 stdlib only,
loopback only). Not a test itself.

Clients against `trnbench serve` (each prints one line of key=value figures):
  body PORT BYTES claim|stream|chunked WAIT_S
      POST /v1/completions with a body of BYTES: only claimed by Content-Length (claim),
      sent in full as fast as the server takes it (stream), or sent chunked without a
      length (chunked); prints the answer's status (none when the server closed without
      one), the seconds to it and the bytes sent by then.
  slowloris PORT N LIMIT_S
      N connections each send a request one byte a second; prints how many the server
      dropped within LIMIT_S and when (the latest drop).
  flood PORT N WAIT_S [hold]
      N connections at once, each sending GET /health (with hold, a request whose
      headers never end); prints how many were answered 200, answered 503, closed
      without an answer (and of them within the first second), or still waiting after
      WAIT_S.

  stall PORT MAX_TOKENS STALL_S
      a streamed completion of MAX_TOKENS whose reader takes 1 KB, then nothing for
      STALL_S (a small receive buffer), then reads on: prints the bytes read, whether
      the server ended the connection (eof=1) and when, from the start.

A server for the load client:
  server PORTFILE MODE...
      an OpenAI-like streaming server on a free port (written to PORTFILE); the i-th
      POST /v1/completions gets MODE i (then good): good, huge (a 100 MB event without a
      newline), endless (content chunks until the client leaves), utf8 (a chunk with
      invalid UTF-8 in its text), drip (a good stream at one byte a second), badjson (a
      chunk that is not JSON), notype (a good stream without a Content-Type), chatter
      (SSE comments until the client leaves: no event, only bytes). It logs one line per
      request on stderr.
"""
import http.server
import json
import os
import selectors
import socket
import sys
import threading
import time


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def status_of(data):
    """The status code of an HTTP answer's first line, or None."""
    line = data.split(b"\r\n", 1)[0].split()
    return line[1].decode() if len(line) > 1 and line[0].startswith(b"HTTP/") else None


def cmd_body(port, nbytes, how, wait_s):
    s = connect(port)
    head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    if how == "chunked":
        head += b"Transfer-Encoding: chunked\r\n\r\n"
    else:
        head += b"Content-Length: %d\r\n\r\n" % nbytes
    t0 = time.monotonic()
    s.sendall(head)
    sent = [0]
    stop = threading.Event()

    def pump():
        piece = b"[" + b"1," * (1 << 15)  # 64 KiB of a prompt that never ends
        try:
            while sent[0] < nbytes and not stop.is_set():
                k = min(len(piece), nbytes - sent[0])
                data = piece[:k]
                if how == "chunked":
                    data = b"%x\r\n" % k + data + b"\r\n"
                s.sendall(data)
                sent[0] += k
            if how == "chunked" and not stop.is_set():
                s.sendall(b"0\r\n\r\n")
        except OSError:
            pass

    th = None
    if how != "claim":
        th = threading.Thread(target=pump, daemon=True)
        th.start()
    s.settimeout(wait_s)
    got = b""
    try:
        while b"\r\n" not in got:
            d = s.recv(4096)
            if not d:
                break
            got += d
    except OSError:
        pass
    t = time.monotonic() - t0
    stop.set()
    print("status=%s seconds=%.3f sent=%d" % (status_of(got) or "none", t, sent[0]))
    s.close()


def cmd_slowloris(port, n, limit_s):
    req = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"{" * 100
    socks = []
    for _ in range(n):
        c = connect(port)
        c.setblocking(False)
        socks.append(c)
    t0 = time.monotonic()
    pos = [0] * n
    dropped = [None] * n
    sel = selectors.DefaultSelector()
    for i, c in enumerate(socks):
        sel.register(c, selectors.EVENT_READ, i)
    next_byte = t0
    while time.monotonic() - t0 < limit_s and None in dropped:
        now = time.monotonic()
        if now >= next_byte:
            for i, c in enumerate(socks):
                if dropped[i] is None and pos[i] < len(req):
                    try:
                        c.send(req[pos[i]:pos[i] + 1])
                        pos[i] += 1
                    except OSError:
                        dropped[i] = now - t0
            next_byte += 1.0
        for key, _ in sel.select(timeout=max(0.0, min(0.2, next_byte - time.monotonic()))):
            i = key.data
            try:
                d = key.fileobj.recv(4096)
            except OSError:
                d = b""
            if not d and dropped[i] is None:
                dropped[i] = time.monotonic() - t0
            if not d:
                sel.unregister(key.fileobj)
    gone = [d for d in dropped if d is not None]
    print("dropped=%d of=%d first_s=%.2f last_s=%.2f bytes_max=%d" % (
        len(gone), n, min(gone) if gone else -1, max(gone) if gone else -1, max(pos)))
    for c in socks:
        c.close()


def cmd_flood(port, n, wait_s, hold):
    req = b"GET /health HTTP/1.1\r\nHost: x\r\n" + (b"" if hold else b"\r\n")
    sel = selectors.DefaultSelector()
    state = {}
    closed_1s = 0
    for i in range(n):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.setblocking(False)
        st = [req, b""]
        # on loopback the connect is done at once when the server's backlog has room:
        # the request goes with it, as a real client's would, and no later than that
        # (a loaded machine's slow loop must not make the server time the first out)
        if c.connect_ex(("127.0.0.1", port)) == 0:
            try:
                st[0] = st[0][c.send(st[0]):]
            except OSError:
                pass
        state[c] = st
        sel.register(c, selectors.EVENT_WRITE | selectors.EVENT_READ)
    counts = {"200": 0, "503": 0, "closed": 0, "other": 0}
    t0 = time.monotonic()
    left = n
    while left and time.monotonic() - t0 < wait_s:
        for key, ev in sel.select(timeout=0.2):
            c = key.fileobj
            st = state[c]
            done = None
            try:
                if ev & selectors.EVENT_WRITE and st[0]:
                    k = c.send(st[0])
                    st[0] = st[0][k:]
                    if not st[0]:
                        sel.modify(c, selectors.EVENT_READ)
                if ev & selectors.EVENT_READ:
                    d = c.recv(4096)
                    if not d:
                        done = status_of(st[1]) or "closed"
                    st[1] += d
                    if b"\r\n" in st[1]:
                        done = status_of(st[1]) or "other"
            except OSError:
                done = status_of(st[1]) or "closed"
            if done == "closed" and time.monotonic() - t0 < 1.0:
                closed_1s += 1
            if done:
                counts[done if done in counts else "other"] += 1
                sel.unregister(c)
                c.close()
                left -= 1
    print("ok=%d refused=%d closed=%d closed_1s=%d other=%d waiting=%d seconds=%.2f" % (
        counts["200"], counts["503"], counts["closed"], closed_1s, counts["other"], left,
        time.monotonic() - t0))
    for c in list(state):
        try:
            c.close()
        except OSError:
            pass


def cmd_stall(port, max_tokens, stall_s):
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.connect(("127.0.0.1", port))
    body = json.dumps({"prompt": [1], "max_tokens": max_tokens, "stream": True}).encode()
    t0 = time.monotonic()
    c.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    c.settimeout(10)
    n = len(c.recv(1024))
    time.sleep(stall_s)
    eof, t_end = 0, -1.0
    c.settimeout(3)
    try:
        while True:
            d = c.recv(1 << 16)
            if not d:
                eof, t_end = 1, time.monotonic() - t0
                break
            n += len(d)
    except OSError as e:
        if not isinstance(e, socket.timeout):
            eof, t_end = 1, time.monotonic() - t0
    print("bytes=%d eof=%d seconds=%.2f" % (n, eof, t_end))
    c.close()


class Hostile(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the stream ends when the connection does
    modes = []
    count = 0
    lock = threading.Lock()

    def log_message(self, fmt, *args):
        pass

    def send_body(self, data):
        self.wfile.write(data)
        self.wfile.flush()

    def do_GET(self):
        if self.path.endswith("/models"):
            body = json.dumps({"object": "list", "data": [{"id": "llama-tiny"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.send_body(body)
        else:
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

    @staticmethod
    def chunk(text, extra=None):
        o = {"object": "text_completion", "choices": [{"index": 0, "text": text}]}
        if extra:
            o.update(extra)
        return b"data: " + json.dumps(o).encode() + b"\n\n"

    def good_stream(self, n, p):
        out = [self.chunk(" t%d" % i) for i in range(n)]
        out.append(b"data: " + json.dumps({"choices": [], "usage": {
            "prompt_tokens": p, "completion_tokens": n, "total_tokens": p + n}}).encode() + b"\n\n")
        out.append(b"data: [DONE]\n\n")
        return b"".join(out)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(length))
        n, p = int(req.get("max_tokens", 4)), len(req.get("prompt", []))
        with Hostile.lock:
            i = Hostile.count
            Hostile.count += 1
        mode = Hostile.modes[i] if i < len(Hostile.modes) else "good"
        sys.stderr.write("request %d: %s\n" % (i + 1, mode))
        self.send_response(200)
        if mode != "notype":
            self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            if mode in ("good", "notype"):
                self.send_body(self.good_stream(n, p))
            elif mode == "huge":
                self.send_body(b"data: ")
                mib = b"x" * (1 << 20)
                for _ in range(100):
                    self.send_body(mib)
            elif mode == "endless":
                burst = self.chunk(" t1") * 4096
                while True:
                    self.send_body(burst)
            elif mode == "chatter":
                burst = (b": " + b"p" * 1000 + b"\n") * 1024
                while True:
                    self.send_body(burst)
            elif mode == "utf8":
                bad = self.chunk(" tXX").replace(b"XX", b"\xff\xfe")
                self.send_body(self.chunk(" t0") + bad + self.good_stream(n, p))
            elif mode == "drip":
                for b in self.good_stream(n, p):
                    self.send_body(bytes([b]))
                    time.sleep(1.0)
            elif mode == "badjson":
                self.send_body(self.chunk(" t0") + b'data: {"choices":[{"text":" t1"\n\n' +
                               self.good_stream(n, p))
        except OSError:
            pass  # the client left: what a hostile stream should make it do


def cmd_server(portfile, modes):
    Hostile.modes = modes
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    srv.daemon_threads = True
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, portfile)
    srv.serve_forever()


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "body":
        cmd_body(int(argv[2]), int(argv[3]), argv[4], float(argv[5]))
    elif cmd == "slowloris":
        cmd_slowloris(int(argv[2]), int(argv[3]), float(argv[4]))
    elif cmd == "flood":
        cmd_flood(int(argv[2]), int(argv[3]), float(argv[4]), argv[5:] == ["hold"])
    elif cmd == "stall":
        cmd_stall(int(argv[2]), int(argv[3]), float(argv[4]))
    elif cmd == "server":
        cmd_server(argv[2], argv[3:])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
