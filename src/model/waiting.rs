//! `waiting.json` (docs/design/agent-turn.md#waiting-for-a-person): what a meeting that stopped
//! for a person keeps in its run folder for them — the question, the documents they may cite,
//! and the answer to fill in, as JSON and in the editor's text form.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a run folder waiting for a person keeps for them, and the answer's text form.
pub const WAITING_FILE: &str = "waiting.json";
pub const ANSWER_TEXT_FILE: &str = "answer.txt";

/// The version of `waiting.json`.
pub const WAITING_VERSION: u32 = 1;

/// A person asked with no one there to answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Waiting {
    pub waiting_version: u32,
    /// The participant (`kind: human`) asked.
    pub agent: String,
    pub role: String,
    /// The PM's question.
    pub question: String,
    /// When the person was asked (the meeting's clock).
    pub asked_at: String,
    /// The call number the answer takes in `llm.jsonl`.
    pub call: u64,
    /// Why no one could be asked (no terminal, no editor, no `--human-answers` line left).
    pub why: String,
    /// The documents an answer may cite.
    pub documents: Vec<WaitingDocument>,
    /// After an unusable answer: what was wrong with it (the answer's one chance to be fixed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The answer to fill in, as JSON (an AgentTurnResult; `source_path` may be left out).
    pub answer_template: Value,
    /// The same in the editor's text form (`[response]`, `[citations]`, ... sections).
    pub answer_text: String,
    /// What the person would have been shown: the question, the documents, the whiteboard.
    pub screen: String,
}

/// One document an answer may cite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitingDocument {
    pub document_id: String,
    pub source_path: String,
    pub purpose: String,
}
