use std::io::{self, Read, Write};

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    io::stdout().write_all(s.as_bytes()).unwrap();
}
