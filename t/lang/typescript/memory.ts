const keep: Buffer[] = [];
for (;;) keep.push(Buffer.alloc(1 << 20, 1));
