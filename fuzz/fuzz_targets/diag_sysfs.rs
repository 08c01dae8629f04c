#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| diag::fuzzing::diag_sysfs(data));
