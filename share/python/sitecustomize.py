# sbx: figures in a sandbox, which has no display.  Python imports this
# module at start from PYTHONPATH (etc/sandbox.conf; make deps and make
# install put it in PREFIX/share/sbx/python).  It does nothing until a
# program imports matplotlib: then the backend is the non-interactive Agg
# (MPLBACKEND=Agg in its environment, unless the program set it; its own
# matplotlib.use still wins), and plt.show() saves each open figure as
# figure-N.png in the working directory, so that sbx returns it as an image
# (a request's "artifacts").  Nothing else of Python changes; a program
# that never plots pays for one entry on sys.meta_path.
import os
import sys



def _count_changes():
    """Count each change of a figure, in the figure, as _sbx_changes.

    matplotlib marks an artist that changed "stale" and passes that up to
    its Axes and figure (pyplot's interactive mode redraws by it); every
    such mark that reaches a figure or subfigure is counted here, on the
    figure at the root.  A figure whose count is what it was when it was
    last saved has not changed since: it need not be drawn again to know.
    A draw counts too (it lays out text, and savefig sets the dpi back),
    so the count is taken after the save.  (FigureBase holds subfigures
    and figures since matplotlib 3.4; both inherit Artist's property.)"""
    import matplotlib.figure as mfig

    base = getattr(mfig, "FigureBase", mfig.Figure)
    prop = base.stale
    Figure = mfig.Figure

    def stale(self, val):
        if val:
            # (a subfigure being made has no figure yet: nothing to count)
            root, hops = self, 0
            while root is not None and not isinstance(root, Figure) and hops < 64:
                root, hops = getattr(root, "figure", None), hops + 1
            if isinstance(root, Figure):
                d = root.__dict__
                d["_sbx_changes"] = d.get("_sbx_changes", 0) + 1
        prop.fset(self, val)

    base.stale = property(prop.fget, stale, prop.fdel, prop.__doc__)


def _patch(plt):
    global show_changed
    shown = [0]
    from matplotlib import _pylab_helpers

    try:
        _count_changes()
        counted = True
    except Exception:  # another matplotlib: every figure counts as changed
        counted = False

    def save(only_changed):
        # Each open figure that is new, or drawn differently since it was
        # last shown, becomes the next free figure-N.png; the figures stay
        # open, as Agg's own show leaves them, so a savefig after it works.
        # (The managers, not plt.figure(num): that would make each the
        # current figure, and a program's next plt.plot draw on the last.)
        import io

        for manager in sorted(_pylab_helpers.Gcf.get_all_fig_managers(), key=lambda m: m.num):
            fig = manager.canvas.figure
            if only_changed and counted and "_sbx_png" in fig.__dict__ and \
                    fig.__dict__.get("_sbx_changes") == fig.__dict__.get("_sbx_saved"):
                continue
            buf = io.BytesIO()
            fig.savefig(buf, format="png")
            png = buf.getvalue()
            fig._sbx_saved = fig.__dict__.get("_sbx_changes")
            if getattr(fig, "_sbx_png", None) == png:
                continue
            fig._sbx_png = png
            while True:
                shown[0] += 1
                path = "figure-%d.png" % shown[0]
                if not os.path.lexists(path):
                    break
            with open(path, "wb") as f:
                f.write(png)

    def show(*args, **kwargs):
        save(False)

    show.__doc__ = plt.show.__doc__
    plt.show = show
    # For sbx's Python kernel, after each cell: only the figures changed
    # since they were last saved are drawn (a draw of a figure costs tens
    # of milliseconds; a cell that does not touch one, nothing).  plt.show
    # itself draws every figure, as a program asked it to.
    show_changed = lambda: save(True)  # noqa: E731


def _font_cache():
    """A sandbox's HOME is new each run: matplotlib would build its font
    cache every time (seconds).  The one built at install (make deps)
    is copied to where matplotlib looks, if it is not there."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpl")
    try:
        names = [n for n in os.listdir(src) if n.startswith("fontlist")]
    except OSError:
        return
    cache = os.environ.get("MPLCONFIGDIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "matplotlib")
    for n in names:
        dst = os.path.join(cache, n)
        if os.path.exists(dst):
            continue
        try:
            os.makedirs(cache, exist_ok=True)
            with open(os.path.join(src, n), "rb") as f, open(dst, "wb") as g:
                g.write(f.read())
        except OSError:
            pass  # matplotlib builds its own, as it would without sbx


class _Pyplot:
    """A meta path finder (importlib's protocol; no import of importlib
    here: it would cost every Python start milliseconds)."""

    def find_spec(self, name, path, target=None):
        if name == "matplotlib":
            # Read at its import: the program's own choice (matplotlib.use,
            # MPLBACKEND) still wins.  Nothing is set for programs that
            # never import it.
            os.environ.setdefault("MPLBACKEND", "Agg")
            _font_cache()
            return None
        if name != "matplotlib.pyplot":
            return None
        sys.meta_path.remove(self)
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


sys.meta_path.insert(0, _Pyplot())
# Set once pyplot is imported (_patch): save the open figures that changed.
show_changed = None

# This module shadows the interpreter's own sitecustomize (Debian's, from
# /etc/python3.X): that one still runs, as it would without sbx.  It is
# loaded the way the import system would load it, from its cached
# bytecode: compiling even its few lines here cost every Python start
# about 9 million instructions (a fifth of `print(1)`).
def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = [d for d in sys.path if d and os.path.abspath(d) != here]
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None or isinstance(finder, _Pyplot):
            continue
        spec = find("sitecustomize", dirs)
        if spec is None or spec.loader is None:
            continue
        module = type(sys)("sitecustomize")
        module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
        spec.loader.exec_module(module)
        return


try:
    _chain()
except Exception:  # as Python treats a failing sitecustomize: not fatal
    pass
