# sbx: the Python kernel behind run_cell (lib/run/cell.h has the protocol).
#
# One interpreter runs a session's cells in one namespace, in its sandbox.
# Requests come on stdin, which is a socket to sbx-run, one JSON object a
# line; this moves it off fd 0 (stdin becomes /dev/null for cells) and
# answers each cell with one line.  A reader thread takes the requests, so
# that an interrupt reaches a cell that is busy: it is a real SIGINT at the
# main thread, which Python turns into KeyboardInterrupt there (a time.sleep or
# a wait for a child is cut short too), and the processes the cell started
# (its children, and any they detached) are killed when it stops, or half a
# second later if it has not.  Whatever a cell does to
# the channel can only break its own kernel: sbx-run kills a kernel whose
# lines are not replies to its cell.
import ast
import builtins
import json
import linecache
import os
import queue
import signal
import socket
import sys
import threading
import traceback
import types

VALUE_MAX = 64 * 1024
# Ours, taken before any cell can replace them (json.dumps with indent
# would split a reply over lines).
_dumps, _loads = json.dumps, json.loads
_stdout, _stderr = sys.stdout, sys.stderr
# and what reaping an interrupted cell's processes needs, so that the
# cell cannot turn it off
_listdir, _kill, _open, _getpid = os.listdir, os.kill, open, os.getpid


def processes():
    """The sandbox's processes but its init (pid 1) and this kernel, as
    (pid, start time) pairs: the cells' children, and what those left,
    however detached (setsid and a double fork make an orphan of init's,
    no descendant of ours).  The start time tells a reused pid apart."""
    out, me = set(), _getpid()
    for name in _listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with _open("/proc/%s/stat" % name) as f:
                st = f.read()
            out.add((int(name), st[st.rindex(")") + 2:].split()[19]))
        except (OSError, ValueError, IndexError):
            continue
    return out


class Kernel:
    def __init__(self, sock):
        self.sock = sock
        self.send_lock = threading.Lock()
        self.state = threading.Lock()  # running, done and early, between the threads
        self.requests = queue.Queue()
        self.running = None  # the number of the cell running, or None
        self.done = 0  # the last cell answered
        self.early = None  # an interrupt for a cell not yet started
        self.interrupted = None
        self.before = set()  # the processes there before the cell (processes())
        self.pid = os.getpid()
        self.main = types.ModuleType("__main__")
        self.main.__builtins__ = builtins
        sys.modules["__main__"] = self.main

    def send(self, msg):
        if os.getpid() != self.pid:
            os._exit(0)  # a child a cell forked, back here: it answers nothing
        line = (_dumps(msg, ensure_ascii=True) + "\n").encode()
        with self.send_lock:
            self.sock.sendall(line)

    def reader(self):
        f = self.sock.makefile("rb")
        for line in f:
            try:
                msg = _loads(line)
            except ValueError:
                break
            if "interrupt" in msg:
                n = msg["interrupt"]
                with self.state:
                    if n == self.running:
                        self.interrupt(n)
                    elif isinstance(n, int) and n > self.done:
                        self.early = n  # its timeout came before it started
            else:
                self.requests.put(msg)
        os._exit(0)  # sbx-run went away: so does the kernel

    def interrupt(self, n):
        self.interrupted = n
        # At the main thread: a process-wide signal may land on another
        # thread, and leave the main one asleep in a system call.
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

        def late():
            if self.running == n:
                self.reap()

        t = threading.Timer(0.5, late)
        t.daemon = True
        t.start()

    def reap(self):
        """Kill what the interrupted cell started (not what earlier cells
        left running on purpose), again while any of it is still forking."""
        for _ in range(50):
            new = processes() - self.before
            if not new:
                return
            for pid, _start in new:
                try:
                    _kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def run(self, n, code):
        name = "<cell %d>" % n
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        ns = self.main.__dict__
        tree = ast.parse(code, name, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), ns)
        if last is None:
            return None
        value = eval(compile(last, name, "eval"), ns)
        if value is None:
            return None
        builtins._ = value
        text = repr(value)
        if len(text) > VALUE_MAX:
            text = text[:VALUE_MAX] + "…"
        # A lone surrogate (a surrogateescape'd file name) is no UTF-8.
        return text.encode("utf-8", "backslashreplace").decode("utf-8")

    def figures(self):
        # Figures shown or left open become figure-N.png, returned as
        # images: sitecustomize saves the new and the changed ones, and
        # draws only those (a mark of matplotlib's own tells them), so
        # that a cell that touches no figure costs what one without
        # figures does.  Without sbx's sitecustomize, plt.show.
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None and plt.get_fignums():
            changed = getattr(sys.modules.get("sitecustomize"), "show_changed", None)
            (changed or plt.show)()

    def report(self, e):
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        for err in (sys.stderr, _stderr):
            try:
                traceback.print_exception(type(e), e, tb, file=err)
                return
            except BaseException:
                continue

    def cell(self, n, code):
        """Run cell n: its status and value."""
        signal.signal(signal.SIGINT, signal.default_int_handler)
        self.before = processes()
        # An interrupt meant for the last cell, come after it ended, is
        # not this one's.
        if signal.SIGINT in signal.sigpending():
            signal.sigtimedwait({signal.SIGINT}, 0)
        with self.state:
            if self.early == n:
                print("KeyboardInterrupt: the cell's timeout came before it started", file=_stderr)
                return "interrupted", None
            self.running = n
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        try:
            value = self.run(n, code)
            self.figures()
            return "ok", value
        except BaseException as e:  # SystemExit too: the kernel lives on
            self.report(e)
            interrupted = isinstance(e, KeyboardInterrupt) and self.interrupted == n
            return "interrupted" if interrupted else "error", None
        finally:
            # What follows is ours: a late interrupt waits for the next cell.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            with self.state:
                self.running = None

    def serve(self):
        threading.Thread(target=self.reader, daemon=True).start()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        # Started: an interrupt from now on is a cell's, not a slow start's.
        self.send({"ready": True})
        while True:
            msg = self.requests.get()
            n, code = msg.get("cell"), msg.get("code")
            if not isinstance(n, int) or not isinstance(code, str):
                os._exit(70)
            try:
                status, value = self.cell(n, code)
            except BaseException:  # KeyboardInterrupt between our own lines
                status, value = "error", None
            if self.interrupted == n:
                self.reap()
            for f in (sys.stdout, sys.stderr, _stdout, _stderr):
                try:
                    f.flush()
                except BaseException:
                    pass
            with self.state:
                self.done = n
            self.send({"cell": n, "status": status, "value": value})


def main():
    sock = socket.socket(fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(0, closefd=False)
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)
    sys.argv = [""]
    sys.path[0] = ""  # the workspace, as for a program run there
    Kernel(sock).serve()


if __name__ == "__main__":
    main()
