use fdr::fdr_scope;

fn main() {
    let name = "parse";
    fdr_scope!(name);
    fdr_scope!();
    fdr_scope!(5);
    fdr_scope!("parse", "again");
    fdr_scope!("");
}
