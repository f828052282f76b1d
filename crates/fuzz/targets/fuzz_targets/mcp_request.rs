#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codectx_fuzz::mcp_request(data));
