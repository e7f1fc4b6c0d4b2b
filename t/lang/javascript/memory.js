const keep = [];
for (;;) keep.push(Buffer.alloc(1 << 20, 1));
