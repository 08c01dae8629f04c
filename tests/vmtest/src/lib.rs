//! Test-only crate: see vm.rs
