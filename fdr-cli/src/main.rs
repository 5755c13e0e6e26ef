//! The `fdr` binary: see `fdr --help`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Err(e) = fdr_cli::run(&args, &mut out) {
        if e.is_broken_pipe() {
            return;
        }
        eprintln!("{e}");
        std::process::exit(e.exit_code());
    }
}
