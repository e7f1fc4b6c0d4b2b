fn main() {
    let data = std::fs::read_to_string("data.txt").expect("data.txt");
    print!("{}", data);
}
