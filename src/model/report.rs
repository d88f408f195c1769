//! What `render-report` and `meeting` print (docs/design/report.md#report).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Board, Status, Usage};

/// Which kind of report a board calls for, and so which template renders it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    /// The PM finished in normal mode with a report.
    Normal,
    /// The PM wrote the report in forced-finish mode; adds a Process Note.
    Forced,
    /// No valid PM report: built locally from the whiteboard.
    Fallback,
}

/// Output of `render-report`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportResult {
    pub report_version: u32,
    pub status: Status,
    /// Which template produced the report: `normal`, `forced` or `fallback`.
    pub kind: ReportKind,
    pub report_file: Option<String>,
    pub markdown: String,
    pub board: Board,
    /// What the meeting's live model calls cost, as the report's appendix says (absent when
    /// none was live).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<super::Cost>,
}

/// How a meeting ended, as `meeting` prints it (docs/design/flow.md#statuses): the board's
/// status, with two verdicts of the driver on a saved report: `failed` when no model call
/// returned a usable answer, `no_decision` when the report is the fallback (no PM decision).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MeetingStatus {
    Running,
    Reviewing,
    Finishing,
    ForcedStop,
    /// The report is saved and carries the PM's decision (its own report, normal or forced).
    Finished,
    /// The report is saved but is the fallback: the PM made no decision (exit 3).
    NoDecision,
    Failed,
    /// The meeting stopped for a person with no one there to answer (exit 4): its run folder
    /// holds `waiting.json`, and `meeting --resume DIR --answer FILE` goes on.
    Waiting,
}

impl MeetingStatus {
    /// Every status, in the order a meeting may pass them.
    pub const ALL: [MeetingStatus; 8] = [
        MeetingStatus::Running,
        MeetingStatus::Reviewing,
        MeetingStatus::Finishing,
        MeetingStatus::ForcedStop,
        MeetingStatus::Waiting,
        MeetingStatus::Finished,
        MeetingStatus::NoDecision,
        MeetingStatus::Failed,
    ];

    /// Its name as serde writes it (docs/design/flow.md#documents).
    pub fn as_str(self) -> &'static str {
        super::names::wire_name(&self)
    }
}

impl From<Status> for MeetingStatus {
    fn from(s: Status) -> MeetingStatus {
        match s {
            Status::Running => MeetingStatus::Running,
            Status::Reviewing => MeetingStatus::Reviewing,
            Status::Finishing => MeetingStatus::Finishing,
            Status::ForcedStop => MeetingStatus::ForcedStop,
            Status::Finished => MeetingStatus::Finished,
            Status::Failed => MeetingStatus::Failed,
        }
    }
}

/// Output of the `meeting` driver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingResult {
    pub status: MeetingStatus,
    pub report_file: Option<String>,
    pub run_dir: Option<String>,
    pub trace_id: String,
    pub loops: u32,
    pub forced: bool,
    pub usage: Usage,
    /// Why the meeting did not end `finished`: why it failed, or why the PM made no decision
    /// (`no_decision`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// What the meeting's live model calls cost (absent when none was live: a replay, the
    /// sample provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<super::Cost>,
    /// `waiting`: the run folder's `waiting.json`, what the person is asked and how to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_file: Option<String>,
    /// A fork (`meeting --fork`): the meeting it was forked from, and at which loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkOf>,
}

/// A fork's parent (`meeting --fork DIR --at-loop N`, docs/design/run-folder.md#fork): every
/// call before loop `at_loop` was answered from the parent's exchange log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkOf {
    /// The parent's run folder (absolute).
    pub run_dir: String,
    pub trace_id: String,
    pub at_loop: u32,
    /// What the parent's log answered (the usage when the fork reached `at_loop`, from the
    /// board's `record.from_parent`): paid by the parent, so left out of the fork's cost.
    /// A MeetingResult's only: `meeting.json`'s fork record has the flags, not the usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_parent: Option<super::Usage>,
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn report_kinds_serialise_as_their_names() {
        for (kind, name) in [
            (ReportKind::Normal, "normal"),
            (ReportKind::Forced, "forced"),
            (ReportKind::Fallback, "fallback"),
        ] {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, name);
            assert_eq!(serde_json::from_value::<ReportKind>(json).unwrap(), kind);
        }
    }
}
