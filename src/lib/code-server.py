# SPDX-License-Identifier: Apache-2.0
"""paddock's code interpreter, run inside a sandbox as the sandbox user (libpaddock starts it on
first use: code.c). It serves the protocol of E2B's code interpreter on 127.0.0.1:PORT in the
sandbox's own network namespace, so E2B's code-interpreter SDK, paddockd's /code API and
paddock mcp's run_code all speak to the same thing:

  POST   /execute                {code, context_id?, language?, env_vars?}  -> NDJSON lines:
         {"type": "number_of_executions", "execution_count"}, {"type": "stdout"|"stderr",
         "text", "timestamp"}, {"type": "result", "text", "html", "png", ..., "is_main_result"},
         {"type": "error", "name", "value", "traceback"}, {"type": "end_of_execution"}
  POST   /contexts               {language?, cwd?}  -> {"id", "language", "cwd"}
  GET    /contexts               -> [{"id", "language", "cwd"}, ...]
  DELETE /contexts/ID
  POST   /contexts/ID/restart
  POST   /contexts/ID/interrupt
  GET    /health

A context is a Jupyter kernel (Debian's ipykernel, driven with jupyter_client) for Python, or
a long-lived bash for bash: each keeps its state between executions. An execution whose client
goes away (a timeout, a closed connection) is interrupted; the context lives on.

Everything here runs inside the sandbox, under its limits: it trusts nobody more than the code
it runs (that code can talk to this port too), and nothing it says is trusted outside.
"""
import base64
import datetime
import errno
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 16 << 20
KERNEL_START_S = 60
INTERRUPT_GRACE_S = 10  # an interrupted run still busy after this: its kernel restarts
CWD = os.getcwd()  # the sandbox's working directory: where contexts start by default

# mime type of a Jupyter display -> the key E2B's result has for it
MIME = {
    "text/plain": "text", "text/html": "html", "text/markdown": "markdown",
    "image/svg+xml": "svg", "image/png": "png", "image/jpeg": "jpeg",
    "application/pdf": "pdf", "text/latex": "latex", "application/json": "json",
    "application/javascript": "javascript", "e2b/data": "data", "e2b/chart": "chart",
}


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def result_line(data, main):
    out = {"type": "result", "is_main_result": main}
    extra = {}
    for mime, value in data.items():
        key = MIME.get(mime)
        if key:
            out[key] = value
        else:
            extra[mime] = value
    if extra:
        out["extra"] = extra
    return out


class Gone(Exception):
    """The client of an execution went away."""


class PythonContext:
    language = "python"

    def __init__(self, cwd):
        from jupyter_client import KernelManager

        self.id = str(uuid.uuid4())
        self.cwd = cwd
        self.lock = threading.RLock()
        self.km = KernelManager(kernel_name="python3")
        self._start()

    def _start(self):
        # inline figures, as a notebook shows them: matplotlib's plots come back as PNG
        # the kernel's own stdout and stderr go nowhere: what the code prints comes over
        # Jupyter's channels, and a pipe to a supervisor that restarted would fill and stall it
        self.km.start_kernel(cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, extra_arguments=[
            "--IPKernelApp.matplotlib=inline", "--HistoryManager.enabled=False",
            "--InteractiveShell.colors=NoColor"])
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=KERNEL_START_S)
        # the kernel moves to its cwd at its first execution, not before: a kernel started
        # ahead of use (a pooled sandbox's) must see the workspace its sandbox has by then
        self.moved = False

    def restart(self):
        with self.lock:
            self.kc.stop_channels()
            self.km.restart_kernel(now=True)
            self.kc = self.km.client()
            self.kc.start_channels()
            self.kc.wait_for_ready(timeout=KERNEL_START_S)
            self.moved = False

    def interrupt(self):
        self.km.interrupt_kernel()

    def close(self):
        try:
            self.kc.stop_channels()
        finally:
            self.km.shutdown_kernel(now=True)

    def _silent(self, code):
        msg = self.kc.execute(code, silent=True, store_history=False)
        while True:
            m = self.kc.get_iopub_msg(timeout=KERNEL_START_S)
            if m["parent_header"].get("msg_id") == msg and m["msg_type"] == "status" \
                    and m["content"]["execution_state"] == "idle":
                return

    def execute(self, code, env, emit, gone):
        with self.lock:
            if not self.moved:
                self._silent("import os as __paddock_os\n__paddock_os.chdir(%r)" % self.cwd)
                self.moved = True
            saved = None
            if env:
                saved = "__paddock_env_saved"
                self._silent("import os as __paddock_os\n%s = {k: __paddock_os.environ.get(k) "
                             "for k in %r}\n__paddock_os.environ.update(%r)"
                             % (saved, list(env), env))
            try:
                self._run(code, emit, gone)
            finally:
                if saved:
                    self._silent("for k, v in %s.items():\n"
                                 "    __paddock_os.environ.pop(k, None) if v is None "
                                 "else __paddock_os.environ.__setitem__(k, v)" % saved)

    def _run(self, code, emit, gone):
        msg_id = self.kc.execute(code, store_history=True, allow_stdin=False)
        interrupted = 0
        while True:
            if not interrupted and gone():
                self.interrupt()
                interrupted = time.monotonic()
            try:
                m = self.kc.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                if interrupted and time.monotonic() - interrupted > INTERRUPT_GRACE_S:
                    # code that ignores KeyboardInterrupt: the context starts over, empty
                    self.restart()
                    return
                continue
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            t, c = m["msg_type"], m["content"]
            if t == "status" and c["execution_state"] == "idle":
                if not interrupted:
                    emit({"type": "end_of_execution"})
                return
            if interrupted:
                continue  # nobody reads: drain the run to its end
            try:
                if t == "execute_input":
                    emit({"type": "number_of_executions", "execution_count": c["execution_count"]})
                elif t == "stream":
                    emit({"type": c["name"], "text": c["text"], "timestamp": now()})
                elif t == "display_data":
                    emit(result_line(c["data"], False))
                elif t == "execute_result":
                    emit(result_line(c["data"], True))
                elif t == "error":
                    emit({"type": "error", "name": c["ename"], "value": c["evalue"],
                          "traceback": "\n".join(c["traceback"])})
            except Gone:
                self.interrupt()
                interrupted = time.monotonic()


class BashContext:
    """A bash that lives as long as the context: variables, functions and cwd carry over."""
    language = "bash"

    def __init__(self, cwd):
        self.id = str(uuid.uuid4())
        self.cwd = cwd
        self.lock = threading.Lock()
        self.count = 0
        self._start()

    def _start(self):
        self.p = subprocess.Popen(["bash", "--norc", "--noprofile"], cwd=self.cwd,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, start_new_session=True)
        # an interrupt ends the running command, not the shell: with a trap, bash carries on
        # with the next line (the end marker) once its child is gone
        self.p.stdin.write(b"trap : INT\n")
        self.p.stdin.flush()

    def restart(self):
        with self.lock:
            self.close()
            self._start()
            self.count = 0

    def interrupt(self):
        try:
            os.killpg(self.p.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def close(self):
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait()

    def execute(self, code, env, emit, gone):
        with self.lock:
            if self.p.poll() is not None:
                self._start()  # an interrupt ended it (bash exits on its child's SIGINT)
            self.count += 1
            emit({"type": "number_of_executions", "execution_count": self.count})
            mark = "__paddock_end_%s" % uuid.uuid4().hex
            exports = "".join("export %s=%s\n" % (k, shlex_quote(v)) for k, v in env.items())
            script = "%s%s\n__paddock_rc=$?\necho %s $__paddock_rc\necho %s >&2\n" % (
                exports, code, mark, mark)
            self.p.stdin.write(script.encode())
            self.p.stdin.flush()
            done = {self.p.stdout.fileno(): False, self.p.stderr.fileno(): False}
            names = {self.p.stdout.fileno(): "stdout", self.p.stderr.fileno(): "stderr"}
            rc, interrupted, partial = 0, False, {k: b"" for k in done}
            while not all(done.values()):
                if not interrupted and gone():
                    self.interrupt()
                    interrupted = True
                ready, _, _ = select.select([f for f in done if not done[f]], [], [], 0.2)
                for fd in ready:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        done[fd] = True
                        continue
                    buf = partial[fd] + chunk
                    lines = buf.split(b"\n")
                    partial[fd] = lines.pop()
                    text = []
                    for line in lines:
                        s = line.decode(errors="replace")
                        if s.startswith(mark):
                            done[fd] = True
                            rest = s[len(mark):].strip()
                            rc = int(rest) if rest.isdigit() else rc
                            break
                        text.append(s + "\n")
                    if text:
                        try:
                            emit({"type": names[fd], "text": "".join(text), "timestamp": now()})
                        except Gone:
                            if not interrupted:
                                self.interrupt()
                                interrupted = True
            if rc != 0:
                emit({"type": "error", "name": "ExitCode", "value": str(rc),
                      "traceback": "the command exited with status %d" % rc})
            emit({"type": "end_of_execution"})


def shlex_quote(s):
    return "'" + str(s).replace("'", "'\"'\"'") + "'"


KINDS = {"python": PythonContext, "python3": PythonContext, "bash": BashContext,
         "sh": BashContext}


class Contexts:
    def __init__(self):
        self.lock = threading.Lock()
        self.all = {}
        self.default = {}
        self.making = {}

    def create(self, language, cwd):
        if cwd is not None and (not isinstance(cwd, str) or not cwd.startswith("/")):
            raise ValueError("cwd: expected an absolute path")
        ctx = self.kind(language)(cwd or CWD)
        with self.lock:
            self.all[ctx.id] = ctx
        return ctx

    def kind(self, language):
        if language is not None and not isinstance(language, str):
            raise ValueError("language: expected a string")
        kind = KINDS.get((language or "python").lower().strip())
        if not kind:
            raise ValueError("language '%s' is not served here (python, bash)" % language)
        return kind

    def default_for(self, kind):
        """The language's default context, made on first use (once: callers wait for it)."""
        with self.lock:
            made = self.making.setdefault(kind, threading.Lock())
        with made:
            with self.lock:
                ctx = self.default.get(kind)
            if ctx:
                return ctx
            ctx = kind(CWD)
            with self.lock:
                self.default[kind] = ctx
                self.all[ctx.id] = ctx
            return ctx

    def get(self, cid):
        with self.lock:
            return self.all.get(cid)

    def remove(self, cid):
        with self.lock:
            ctx = self.all.pop(cid, None)
            for k, v in list(self.default.items()):
                if v is ctx:
                    del self.default[k]
        if ctx:
            ctx.close()
        return ctx is not None


contexts = Contexts()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the answer ends with the connection: no chunking

    def log_message(self, *args):
        pass

    def answer(self, code, body=None, ctype="application/json", reason=None):
        data = b"" if body is None else (body if isinstance(body, bytes) else
                                        json.dumps(body).encode())
        self.send_response(code, reason)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def fail(self, code, msg):
        # the message is the reason phrase too: E2B's SDK shows only "status reason"
        reason = "".join(ch if " " <= ch <= "~" else " " for ch in msg)[:200]
        self.answer(code, msg.encode(), "text/plain; charset=utf-8", reason)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n < 0 or n > MAX_BODY:
            raise ValueError("the request body is larger than %d bytes" % MAX_BODY)
        raw = self.rfile.read(n) if n else b"{}"
        d = json.loads(raw or b"{}")
        if not isinstance(d, dict):
            raise ValueError("expected a JSON object")
        return d

    def path_parts(self):
        return [p for p in self.path.split("?", 1)[0].split("/") if p]

    def do_GET(self):
        parts = self.path_parts()
        if parts == ["health"]:
            return self.answer(200, "OK")
        if parts == ["contexts"]:
            with contexts.lock:
                items = list(contexts.all.values())
            return self.answer(200, [{"id": c.id, "language": c.language, "cwd": c.cwd}
                                     for c in items])
        self.fail(404, "no such route")

    def do_DELETE(self):
        parts = self.path_parts()
        if len(parts) == 2 and parts[0] == "contexts":
            if contexts.remove(parts[1]):
                return self.answer(204)
            return self.fail(404, "context %s not found" % parts[1])
        self.fail(404, "no such route")

    def do_POST(self):
        try:
            parts = self.path_parts()
            req = self.body()
            if parts == ["execute"]:
                return self.execute(req)
            if parts == ["contexts"]:
                ctx = contexts.create(req.get("language"), req.get("cwd"))
                return self.answer(200, {"id": ctx.id, "language": ctx.language,
                                         "cwd": ctx.cwd})
            if len(parts) == 3 and parts[0] == "contexts" and parts[2] in ("restart",
                                                                           "interrupt"):
                ctx = contexts.get(parts[1])
                if not ctx:
                    return self.fail(404, "context %s not found" % parts[1])
                ctx.restart() if parts[2] == "restart" else ctx.interrupt()
                return self.answer(200, {})
            self.fail(404, "no such route")
        except ValueError as e:
            self.fail(400, str(e))
        except Exception as e:  # the kernel could not start, say
            self.fail(500, "%s: %s" % (type(e).__name__, e))

    def execute(self, req):
        code = req.get("code")
        if not isinstance(code, str):
            raise ValueError("code: expected a string")
        env = req.get("env_vars") or {}
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in env.items()):
            raise ValueError("env_vars: expected an object of strings")
        cid = req.get("context_id")
        ctx = kind = None
        if cid:
            if not isinstance(cid, str):
                raise ValueError("context_id: expected a string")
            ctx = contexts.get(cid)
            if not ctx:
                return self.fail(404, "context %s not found" % cid)
        else:
            kind = contexts.kind(req.get("language"))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        sock = self.connection
        lost = []

        def gone():
            if lost:
                return True
            r, _, _ = select.select([sock], [], [], 0)
            if r:
                try:
                    if not sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT):
                        lost.append(True)
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    lost.append(True)
            return bool(lost)

        def emit(line):
            if lost:
                raise Gone()
            try:
                self.wfile.write((json.dumps(line) + "\n").encode())
                self.wfile.flush()
            except OSError:
                lost.append(True)
                raise Gone()

        try:
            if not ctx:
                try:
                    ctx = contexts.default_for(kind)
                except Exception as e:  # the kernel could not start: say why, in the stream
                    emit({"type": "error", "name": type(e).__name__, "value": str(e),
                          "traceback": "the %s context could not start: %s" % (
                              kind.language, e)})
                    emit({"type": "end_of_execution"})
                    return
            ctx.execute(code, env, emit, gone)
        except Gone:
            pass


def warm():
    """Starts the default Python kernel ahead of the first request: it takes a second."""
    try:
        contexts.default_for(PythonContext)
    except Exception as e:
        print("paddock-code-server: the default Python context did not start: %s" % e,
              file=sys.stderr, flush=True)


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 49999
    # Jupyter's and matplotlib's files of this server's kernels: a private directory in /tmp,
    # so a read-only or foreign home does not stop them
    state = tempfile.mkdtemp(prefix="paddock-code-")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # a warning at each start
    for name, sub in (("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython"),
                      ("MPLCONFIGDIR", "matplotlib")):
        os.environ.setdefault(name, os.path.join(state, sub))
    # interrupts reach the contexts' commands even when this server was started with SIGINT
    # ignored (a background job): what a process ignores, its children ignore too
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise
        # a server of an earlier supervisor (paddockd restarted and adopted the sandbox)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        except OSError:
            raise e
        print("paddock-code-server ready %d (running already)" % port, flush=True)
        return
    server.daemon_threads = True
    # libpaddock waits for this line: it means the port takes connections
    print("paddock-code-server ready %d" % port, flush=True)
    threading.Thread(target=warm, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
