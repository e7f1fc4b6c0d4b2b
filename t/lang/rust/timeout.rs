fn main() {
    loop {
        std::hint::spin_loop();
    }
}
