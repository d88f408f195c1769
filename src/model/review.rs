//! Reviewer mode's documents (docs/design/review.md): the meeting file's `review:`, a
//! reviewer's verdict on the PM's draft, the objections the board keeps, and the PM's answer
//! to each.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The built-in reviewer, asked when `review:` names none (`share/agents/devils-advocate.yaml`).
pub const DEVILS_ADVOCATE: &str = "devils-advocate";

/// Most review rounds a meeting may ask for (each is a reviewer call per reviewer and a PM
/// round).
pub const MAX_REVIEW_ROUNDS: u32 = 5;

/// A meeting file's `review:` (and `meeting --review-by`): who reviews the PM's draft, and how
/// many times a FINISH is reviewed (docs/design/review.md#settings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewSettings {
    /// Reviewer agent names (a participant or any agent config); none: the built-in
    /// devil's advocate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by: Vec<String>,
    /// Review rounds: how many of the PM's FINISHes are reviewed (1 to 5, default 1).
    #[serde(default = "one")]
    pub rounds: u32,
}

fn one() -> u32 {
    1
}

impl ReviewSettings {
    /// The reviewers asked, in order: `by`, or the devil's advocate.
    pub fn reviewers(&self) -> Vec<String> {
        if self.by.is_empty() {
            vec![DEVILS_ADVOCATE.to_string()]
        } else {
            self.by.clone()
        }
    }
}

/// A reviewer's verdict on the draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    Object,
}

/// A document a reviewer cites for an objection (checked like any agent's citation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewCitation {
    pub document_id: String,
    pub source_path: String,
    pub quote: String,
}

/// One objection as the reviewer writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectionDraft {
    /// What part of the draft it is about (the decision, an option, a finding, a question).
    pub about: String,
    /// Why the draft is wrong or not yet supported there.
    pub why: String,
    #[serde(default)]
    pub evidence: Vec<ReviewCitation>,
}

/// A reviewer's answer (docs/design/review.md#verdict): `approve`, or `object` with at least
/// one objection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewVerdict {
    pub verdict: Verdict,
    #[serde(default)]
    pub objections: Vec<ObjectionDraft>,
}

/// Where an objection stands (docs/design/review.md#objections).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ObjectionStatus {
    /// Waiting for the PM's answer.
    Open,
    /// The PM asked a participant about it; the answer is in `answer`.
    Addressed,
    /// The PM changed its decision for it.
    Revised,
    /// The PM kept its decision, for the reason in `resolution`.
    Overruled,
}

impl ObjectionStatus {
    /// Its name as serde writes it (docs/design/flow.md#documents).
    pub fn as_str(self) -> &'static str {
        super::names::wire_name(&self)
    }
}

/// An objection on the whiteboard: its id, who raised it, what it says and how it was resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Objection {
    /// `O1`, `O2`, … in order of filing, never reused.
    pub id: String,
    pub by: String,
    pub about: String,
    pub why: String,
    /// Ids of the evidence (`E3`) it cites.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// The review round it was raised in (1-based).
    pub round: u32,
    pub status: ObjectionStatus,
    /// The PM's reason (revised, overruled, or the question it asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    /// With `addressed`: the participant asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<String>,
    /// With `addressed`: the headline of that participant's answer, once merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// How the PM resolves an objection: `revise` changes the decision (with FINISH and the
/// revised report), `overrule` keeps it for the reason given (with FINISH), `ask` puts a
/// question to a participant (with CALL_AGENT). (Plain comments on the variants: a documented
/// variant would make the schema sent a `oneOf`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    Revise,
    Overrule,
    Ask,
}

/// The PM's answer to one open objection (docs/design/review.md#pm-answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectionResponse {
    /// The objection's id (`O1`).
    pub id: String,
    pub resolution: Resolution,
    /// One or two sentences: what changed, why it stands, or what the question settles.
    pub reason: String,
}
