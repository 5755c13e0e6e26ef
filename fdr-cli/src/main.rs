fn main() {
    eprintln!("fdr: not built yet");
    std::process::exit(2);
}
