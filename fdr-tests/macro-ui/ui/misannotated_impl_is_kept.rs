use fdr::instrument_fdr;

struct Buffer {
    len: usize,
}

trait Capacity {
    fn capacity(&self) -> usize;
}

// One method's own option is wrong: the block is kept as written (without that method's
// attribute, which would otherwise expand a second time), so every method stays callable.
#[instrument_fdr]
impl Buffer {
    fn len(&self) -> usize {
        self.len
    }

    #[instrument_fdr(log_args(extra))]
    fn grow(&mut self, by: usize) {
        self.len += by;
    }
}

// An option that cannot go on a block: the trait is still implemented.
#[instrument_fdr(tail)]
impl Capacity for Buffer {
    fn capacity(&self) -> usize {
        self.len * 2
    }
}

fn total<C: Capacity>(c: &C) -> usize {
    c.capacity()
}

fn main() {
    let mut buffer = Buffer { len: 1 };
    buffer.grow(2);
    println!("{} {}", buffer.len(), total(&buffer));
}
