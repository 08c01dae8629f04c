#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| providers::fuzzing::bnxt_re_cqe(data));
