//! The `fdr` binary: see `fdr --help`.

fn main() {
    // Arguments as the operating system gives them: a path need not be UTF-8.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
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
