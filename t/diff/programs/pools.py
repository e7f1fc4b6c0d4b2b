# Python's process and thread pools, POSIX semaphores in /dev/shm,
# subprocesses, the user database, locales, the time zone, deep recursion.
import concurrent.futures, getpass, locale, multiprocessing, os, pwd, subprocess, sys, tempfile, threading, time


def square(x):
    return x * x


def recurse(n):
    return 0 if n == 0 else 1 + recurse(n - 1)


if __name__ == "__main__":
    with multiprocessing.Pool(4) as p:
        print("pool", sum(p.map(square, range(1000))))
    with concurrent.futures.ProcessPoolExecutor(4) as ex:
        print("process executor", sum(ex.map(square, range(100))))
    with concurrent.futures.ThreadPoolExecutor(32) as ex:
        print("32 threads", sum(ex.map(square, range(1000))))
    q = multiprocessing.Queue()
    ps = [multiprocessing.Process(target=q.put, args=(i,)) for i in range(8)]
    [x.start() for x in ps]
    print("queue", sorted(q.get() for _ in ps))
    [x.join() for x in ps]
    sem = multiprocessing.Semaphore(2)
    with sem:
        print("semaphore ok")
    print("subprocess", subprocess.run(["sh", "-c", "echo $((6*7))"], capture_output=True, text=True).stdout.strip())
    me = pwd.getpwuid(os.getuid())
    print("user known", me.pw_name == getpass.getuser(), "home writable", os.access(os.path.expanduser("~"), os.W_OK))
    with tempfile.NamedTemporaryFile() as f:
        print("tempfile in TMPDIR", os.path.dirname(f.name) == tempfile.gettempdir() == os.environ["TMPDIR"])
    locale.setlocale(locale.LC_ALL, "C.UTF-8")
    print("locale", locale.getlocale(), "preferred encoding", locale.getpreferredencoding())
    os.environ["TZ"] = "Europe/Paris"
    time.tzset()
    print("Paris", time.strftime("%Y-%m-%d %H:%M %Z", time.localtime(0)))
    sys.setrecursionlimit(200000)
    threading.stack_size(256 << 20)
    t = threading.Thread(target=lambda: print("recursion depth", recurse(100000)))
    t.start()
    t.join()
    print("cpu count known", os.cpu_count() is not None, "/proc/self/status readable", os.path.exists("/proc/self/status"))
