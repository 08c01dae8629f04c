#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| uverbs::fuzzing::cm_event(data));
