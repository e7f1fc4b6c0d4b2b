def f():
    raise RuntimeError("boom")
f()
