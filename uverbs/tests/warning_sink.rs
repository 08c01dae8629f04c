//! The warning sink is process-wide and written once: this binary is its own process, so the
//! test may name it.

use std::sync::Mutex;

use uverbs::settings::{set_warning_sink, warn, Warning};

static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn record(w: &Warning) {
    SEEN.lock().unwrap().push(w.to_string());
}

fn ignore(_: &Warning) {}

#[test]
fn warnings_reach_the_sink_named_first() {
    warn("dropped: no sink yet");
    assert!(set_warning_sink(record));
    warn("kept");
    // A second sink is refused; warnings still go to the first.
    assert!(!set_warning_sink(ignore));
    warn("kept too");
    assert_eq!(*SEEN.lock().unwrap(), vec!["kept".to_string(), "kept too".to_string()]);
}
