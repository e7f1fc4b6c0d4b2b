keep = []
while True:
    keep.append(b"x" * (1 << 20))
