#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| perftest::fuzzing::oob_key(data));
