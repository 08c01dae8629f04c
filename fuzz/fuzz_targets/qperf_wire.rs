#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| qperf::fuzzing::qperf_wire(data));
