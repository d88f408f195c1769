//! A specialist's answer and the evidence the board keeps of it (docs/design/agent-turn.md#agent-turn).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A reference from an agent's answer to a collected document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentCitation {
    pub document_id: String,
    pub source_path: String,
    #[serde(default)]
    pub quote: String,
    /// The exact text of the key point, risk or recommendation of the same answer that this
    /// quote backs (docs/design/whiteboard.md#findings-and-evidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports: Option<String>,
    /// Set by the runtime: whether `quote` was found in the document's excerpt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
}

/// The fixed structure of every specialist answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentTurnResult {
    /// Filled by the runtime, never trusted from the model.
    #[serde(default)]
    pub agent_name: String,
    pub response: String,
    #[serde(default)]
    pub key_points: Vec<String>,
    #[serde(default)]
    pub risks: Vec<String>,
    #[serde(default)]
    pub recommendations: Vec<String>,
    #[serde(default)]
    pub citations: Vec<DocumentCitation>,
}

/// A validated citation kept for the report's Evidence Reviewed, with who cited it and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// `E1`, `E2`, … in the order the board kept them; never reused.
    pub id: String,
    pub agent: String,
    #[serde(rename = "loop")]
    pub loop_no: u32,
    pub document_id: String,
    pub source_path: String,
    pub quote: String,
    pub verified: bool,
}

/// Most citations the board keeps for the report (each turn adds a few).
pub(crate) const EVIDENCE_CAP: usize = 200;

/// The fields of AgentTurnResult, for the output-schema compatibility rules.
pub(crate) const AGENT_TURN_FIELDS: [&str; 6] = [
    "agent_name",
    "response",
    "key_points",
    "risks",
    "recommendations",
    "citations",
];
