keep = []
loop { keep << "x" * (1 << 20) }
