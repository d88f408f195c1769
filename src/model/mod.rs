//! The documents (docs/design/flow.md#documents): the types every program reads and writes, and their validation.
//!
//! Every struct refuses unknown fields (typos must not pass silently) except `metadata`
//! objects. Validation that serde cannot express (non-empty strings, safe names, the PM
//! decision's conditional fields) lives in the `validate` methods and reports the JSON path of
//! the offending field.

mod agent;
mod answer;
mod board;
mod council;
mod decision;
mod event;
mod input;
mod names;
mod record;
mod report;
mod review;
mod usage;
mod waiting;

pub use agent::*;
pub use answer::*;
pub use board::*;
pub use council::*;
pub use decision::*;
pub use event::*;
pub use input::*;
pub(crate) use names::wire_name;
pub use record::*;
pub use report::*;
pub use review::*;
pub use usage::*;
pub use waiting::*;

use schemars::JsonSchema;
use serde_json::Value;

/// Current major versions of the documents that flow between the programs.
/// 3: the fields every stage writes are required (no defaults kept for boards of earlier
/// releases), evidence ids are always set and the record says why a meeting was forced to
/// close (docs/design/run-folder.md#events). 4: one shape per fact: calls only in
/// `pending_calls`, turns only in `last_turns` (a single call is a list of one). Earlier
/// boards are refused ([`OLDER_BOARDS`]).
pub const BOARD_VERSION: u32 = 5;

/// Every earlier board version, with what its boards predate: each is refused with this
/// reason, not converted (docs/design/run-folder.md#events).
pub(crate) const OLDER_BOARDS: [(u32, &str); 4] = [
    (1, "bounded boards (its whole history in event_log)"),
    (2, "required board fields and typed forced-finish reasons"),
    (
        3,
        "one shape for calls and turns (pending_calls, last_turns)",
    ),
    (
        4,
        "questions and findings kept once, in record (key_points, risks, decisions and open_questions were lists of their own)",
    ),
];
pub const PACKET_VERSION: u32 = 1;
pub const REPORT_VERSION: u32 = 1;

/// Largest number of items each whiteboard list keeps (merge rule 5, docs/design/whiteboard.md#whiteboard-bounds).
pub(crate) const LIST_CAP: usize = 20;

// What `skip_serializing_if` and `default` call, shared by the documents.
fn is_zero(n: &u32) -> bool {
    *n == 0
}
fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// Every model with a JSON Schema in `share/schemas/`, by file stem.
pub fn schemas() -> Vec<(&'static str, Value)> {
    fn gen<T: JsonSchema>() -> Value {
        serde_json::to_value(schemars::schema_for!(T)).expect("schemas serialise")
    }
    vec![
        ("AgentConfig", gen::<AgentConfig>()),
        ("MeetingInput", gen::<MeetingInput>()),
        ("MeetingPacket", gen::<MeetingPacket>()),
        ("Board", gen::<Board>()),
        ("PMDecision", gen::<PmDecision>()),
        ("AgentTurnResult", gen::<AgentTurnResult>()),
        ("ReportResult", gen::<ReportResult>()),
        ("MeetingResult", gen::<MeetingResult>()),
    ]
}
