//! The meeting-file reader: YAML into MeetingInput, then its validation, never panics.
#![no_main]
use agent_meeting::io::{self, Format};
use agent_meeting::model::MeetingInput;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(input) = io::parse_doc::<MeetingInput>("<fuzz>", &text, Format::Yaml) {
        let _ = input.validate();
    }
});
