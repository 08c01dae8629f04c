#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rperftest::fuzzing::doctor_wire(data));
