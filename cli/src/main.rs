//! `rperftest`: argv[0] (`ib_write_bw` …) or the first argument selects the tool.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    eprintln!("rperftest: not yet implemented ({args:?})");
    std::process::exit(1);
}
