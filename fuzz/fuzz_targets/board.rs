//! The board reader, and what every stage does next with a board it accepted: the PM input,
//! the agent's whiteboard view, the merge and the report must not panic on any board.
#![no_main]
use agent_meeting::model::{Board, BOARD_VERSION};
use agent_meeting::io;
use agent_meeting::stage::{agent_turn as turn, merge_board as board, pm_step as pm, render_report as report};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(b) = io::parse_versioned::<Board>("<fuzz>", &text, "board_version", BOARD_VERSION) else {
        return;
    };
    let _ = pm::pm_input(&b);
    let _ = turn::meeting_summary(&b);
    if let Some(call) = &b.pending_call {
        let _ = turn::render_agent_user(&b, call);
    }
    let _ = report::render(&b, None);
    let _ = board::merge(b, "2026-01-01T00:00:00Z");
});
