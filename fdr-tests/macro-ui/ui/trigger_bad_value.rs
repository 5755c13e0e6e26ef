use fdr::instrument_fdr;

#[instrument_fdr(trigger = "50")]
fn no_unit() {}

#[instrument_fdr(trigger = "50sec")]
fn unknown_unit() {}

#[instrument_fdr(trigger = "1.5ns")]
fn finer_than_a_nanosecond() {}

#[instrument_fdr(trigger = "1.5.2ms")]
fn two_points() {}

#[instrument_fdr(trigger = "-3ms")]
fn negative() {}

#[instrument_fdr(trigger = "0ms")]
fn zero() {}

#[instrument_fdr(trigger = "18446744074s")]
fn overflow() {}

#[instrument_fdr(trigger = "fast")]
fn not_a_duration() {}

#[instrument_fdr(trigger = 50ms)]
fn not_a_string() {}

#[instrument_fdr(trigger = 50)]
fn no_unit_no_string() {}

#[instrument_fdr(trigger)]
fn no_value() {}

#[instrument_fdr(log_args, trigger = "1ms", trigger = "2ms")]
fn twice(n: u32) -> u32 {
    n
}

struct S;

impl S {
    // In a method's own attribute too, and in an async fn.
    #[instrument_fdr(trigger = "2 s")]
    async fn method(&self) {}
}

fn main() {
    no_unit();
    twice(1);
    let _ = S.method();
}
