use fdr::instrument_fdr;

// The option is wrong, so this is a compile error; but the function is still there as written,
// so its callers compile and the one error is the one about the option.
#[instrument_fdr(log_args(count))]
fn resize(len: usize) -> usize {
    len * 2
}

fn grow(len: usize) -> usize {
    resize(len) + 1
}

mod elsewhere {
    pub fn shrink(len: usize) -> usize {
        super::resize(len) / 4
    }
}

fn main() {
    let from_main: usize = resize(1);
    let from_fn: usize = grow(2);
    let from_module: usize = elsewhere::shrink(3);
    println!("{from_main} {from_fn} {from_module}");
}
