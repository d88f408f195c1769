//! The decision record kept beside the whiteboard for the report (docs/design/report.md#report).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::*;

/// Where a question on the whiteboard came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuestionOrigin {
    /// The meeting file's `required_questions`.
    Required,
    /// Raised by an agent.
    Raised,
}

/// Who answered a question, with what, and when (docs/design/whiteboard.md#questions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionAnswer {
    pub text: String,
    #[serde(default)]
    pub by: Vec<String>,
    /// Loops completed when it was answered.
    #[serde(rename = "loop")]
    pub loop_no: u32,
}

/// A tracked question: a stable id, where it came from, and its answer once it has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// `Q1`, `Q2`, … in order of first appearance, never reused.
    pub id: String,
    pub text: String,
    pub origin: QuestionOrigin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raised_by: Option<String>,
    #[serde(rename = "loop", default, skip_serializing_if = "Option::is_none")]
    pub loop_no: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<QuestionAnswer>,
}

/// Which whiteboard list a finding is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    KeyPoint,
    Risk,
    /// An agent's recommendation (`decisions`).
    Proposal,
}

/// Where a key point, risk or proposal came from and which evidence supports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    pub kind: FindingKind,
    pub text: String,
    /// The agents who said it, first one first.
    pub by: Vec<String>,
    /// The loop it first appeared in.
    #[serde(rename = "loop")]
    pub loop_no: u32,
    /// Ids of the evidence (`E3`) whose citation names it in `supports`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

/// Something the reader of the report should know about how the meeting went, in plain words
/// (a retried or failed turn, a routing error, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProcessEntry {
    #[serde(rename = "loop")]
    pub loop_no: u32,
    pub kind: ProcessKind,
    pub text: String,
}

/// What a Process Note entry tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProcessKind {
    /// An unusable answer (an agent's or the PM's) was asked again.
    Retried,
    /// An agent turn ended without a usable answer.
    TurnFailed,
    /// A PM round ended without a usable decision.
    RoundFailed,
    /// An entry of the PM's `answered_questions` was not taken as written: it named no question
    /// on the whiteboard, gave no answer or only repeated the question, or credited someone who
    /// had not answered (the credit dropped).
    UnknownQuestion,
    /// The PM repeated a question, or answers stopped adding anything (docs/design/pm-round.md#circles).
    Circles,
    /// A person changed the board by hand, e.g. the decision at a flow's gate before the
    /// report (docs/design/flows.md#human-gate); written by the flow, never by a stage.
    Edited,
    /// The meeting waited for a person, who answered later (`meeting --resume --answer`,
    /// docs/design/agent-turn.md#waiting-for-a-person): who, when asked and when answered.
    Waited,
}

/// Why the meeting was made to close (docs/design/pm-round.md#pm-round): set where the `forced_finish` event
/// is logged, so the closing round's note and the driver's progress line read a fact, not the
/// event's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ForcedReason {
    /// The loop limit was reached.
    MaxLoops,
    /// The token budget had no room for another loop (docs/design/pm-round.md#token-budget).
    TokenBudget,
    /// The cost budget had no room for another loop (docs/design/pm-round.md#cost-budget).
    CostBudget,
    /// The PM kept asking what it had asked before (docs/design/pm-round.md#circles).
    Circles,
    /// A PM round ended without a usable decision.
    RoundFailed,
}

/// Who answered for a caller: the provider and model of its last call, and the cassette's
/// `note` when it was replayed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallerSource {
    pub provider: String,
    /// Answered from a cassette, not by a live model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The decision record kept beside the whiteboard for the report (docs/design/report.md#report): every
/// part bounded. Every part is written only when it holds something (a new meeting's record
/// is empty).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingRecord {
    /// When the first PM round ran, and when the PM closed the meeting (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<String>,
    /// Every question the whiteboard has had, open or answered (at most 40).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<Question>,
    /// Provenance of the key points, risks and proposals (at most one per list item).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// The PM's decision and option assessments, from its FINISH.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub option_assessments: Vec<OptionAssessment>,
    /// The `answered_questions` of the PM's last CALL_AGENT, applied by `merge-board` after the
    /// agent's turn, so the agent sees the whiteboard the PM saw (docs/design/whiteboard.md#questions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_answers: Vec<AnsweredQuestion>,
    /// Notes for the report's Process Note (the last 30).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub process: Vec<ProcessEntry>,
    /// Per caller (`pm`, agent names): who answered.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub callers: BTreeMap<String, CallerSource>,
    /// The PM's latest questions, with the answer each got (`circles::ASKED_CAP`): what a
    /// repeated question is compared with (docs/design/pm-round.md#circles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<AskedQuestion>,
    /// Agent turns in a row that added nothing new to the whiteboard (docs/design/pm-round.md#circles).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quiet_turns: u32,
    /// PM rounds in a row that ended without a usable decision (docs/design/pm-round.md#failed-rounds).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_rounds: u32,
    /// Why the meeting was made to close, once it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced: Option<ForcedReason>,
    /// A fork's usage when it reached its fork loop: the calls its parent's log answered,
    /// paid by the parent, so left out of the fork's cost (docs/design/run-folder.md#fork).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_parent: Option<Usage>,
}

/// A question the PM asked a participant, and the headline of the answer it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskedQuestion {
    pub agent: String,
    pub question: String,
    #[serde(rename = "loop")]
    pub loop_no: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

impl MeetingRecord {
    pub(super) fn is_empty(&self) -> bool {
        self == &MeetingRecord::default()
    }
}
