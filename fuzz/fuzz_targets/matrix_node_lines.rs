#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| matrix::fuzzing::matrix_node_lines(data));
