//! The tolerant JSON extractor must return Ok or Err on any text, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = agent_meeting::llm::parse::parse_json_reply(&text);
});
