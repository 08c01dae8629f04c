#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bench::fuzzing::qperf_wire(data));
