# sbx: the Python kernel behind run_cell (lib/run/cell.h has the protocol).
#
# One interpreter runs a session's cells in one namespace, in its sandbox.
# Requests come on stdin, which is a socket to sbx-run, one JSON object a
# line; this moves it off fd 0 (stdin becomes /dev/null for cells) and
# answers each cell with one line.  A reader thread takes the requests, so
# that an interrupt reaches a cell that is busy: it is a real SIGINT at the
# main thread, which Python turns into KeyboardInterrupt there (a time.sleep or
# a wait for a child is cut short too), and the child processes the cell
# started are killed when it stops, or half a second later if it has not.  Whatever a cell does to
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


def descendants():
    """The processes started under this one (the cells' children)."""
    out, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for t in tasks:
            try:
                with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                    kids = [int(x) for x in f.read().split()]
            except (OSError, ValueError):
                continue
            out += kids
            todo += kids
    return out


class Kernel:
    def __init__(self, sock):
        self.sock = sock
        self.send_lock = threading.Lock()
        self.requests = queue.Queue()
        self.running = None  # the number of the cell running, or None
        self.interrupted = None
        self.before = set()  # the processes there before the cell
        self.main = types.ModuleType("__main__")
        self.main.__builtins__ = builtins
        sys.modules["__main__"] = self.main

    def send(self, msg):
        line = (json.dumps(msg, ensure_ascii=True) + "\n").encode()
        with self.send_lock:
            self.sock.sendall(line)

    def reader(self):
        f = self.sock.makefile("rb")
        for line in f:
            try:
                msg = json.loads(line)
            except ValueError:
                break
            if "interrupt" in msg:
                if msg["interrupt"] == self.running:
                    self.interrupt(msg["interrupt"])
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
        left running on purpose)."""
        for pid in descendants():
            if pid not in self.before:
                try:
                    os.kill(pid, signal.SIGKILL)
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
        return text if len(text) <= VALUE_MAX else text[:VALUE_MAX] + "…"

    def figures(self):
        # Figures shown or left open become figure-N.png (sitecustomize's
        # plt.show saves the new and the changed ones), returned as images.
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None and plt.get_fignums():
            plt.show()

    def serve(self):
        threading.Thread(target=self.reader, daemon=True).start()
        while True:
            try:
                msg = self.requests.get()
            except KeyboardInterrupt:
                continue  # an interrupt that came as its cell ended
            n, code = msg.get("cell"), msg.get("code")
            if not isinstance(n, int) or not isinstance(code, str):
                os._exit(70)
            status, value = "ok", None
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self.before = set(descendants())
            self.running = n
            try:
                value = self.run(n, code)
                self.figures()
            except BaseException as e:  # SystemExit too: the kernel lives on
                status = "error"
                tb = e.__traceback__
                while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
                    tb = tb.tb_next
                try:
                    traceback.print_exception(type(e), e, tb)
                except KeyboardInterrupt:
                    pass
            finally:
                self.running = None
                if self.interrupted == n:
                    self.reap()
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except (OSError, ValueError, KeyboardInterrupt):
                pass
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
