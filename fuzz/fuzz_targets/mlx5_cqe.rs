#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| providers::fuzzing::mlx5_cqe(data));
