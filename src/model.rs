//! The documents (DESIGN.md#documents): the types every program reads and writes, and their validation.
//!
//! Every struct refuses unknown fields (typos must not pass silently) except `metadata`
//! objects. Validation that serde cannot express (non-empty strings, safe names, the PM
//! decision's conditional fields) lives in the `validate` methods and reports the JSON path of
//! the offending field.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Invalid;

/// Current major versions of the documents that flow between the programs.
/// 2: the board carries the events of the stage that wrote it (`new_events`) and a bounded
/// `flow`, not the whole event log (DESIGN.md#events); a version 1 board is refused.
pub const BOARD_VERSION: u32 = 2;
pub const PACKET_VERSION: u32 = 1;
pub const REPORT_VERSION: u32 = 1;

/// Largest number of items each whiteboard list keeps (merge rule 5, DESIGN.md#whiteboard-bounds).
pub(crate) const LIST_CAP: usize = 20;

// ---------------------------------------------------------------------------------------------
// Agents

/// One loadable agent: a specialist or the PM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Safe filename characters `[A-Za-z0-9_-]`, 1–64; equals the config file's stem.
    pub name: String,
    pub role: String,
    pub description: String,
    /// `llm` (the default) or `human`: a person answers at the terminal (DESIGN.md#agent-configs).
    #[serde(default, skip_serializing_if = "ParticipantKind::is_llm")]
    pub kind: ParticipantKind,
    /// The role prompt; must not be empty for an `llm` agent (a human needs none).
    #[serde(default)]
    pub system_prompt: String,
    #[serde(default)]
    pub input_schema_description: String,
    #[serde(default)]
    pub output_schema_description: String,
    /// JSON Schema the runtime input `{prompt, meeting_summary, context_summary}` must satisfy
    /// (required for an `llm` agent; optional for a human).
    #[serde(default)]
    pub input_schema: Map<String, Value>,
    /// JSON Schema of the agent's answer (compatible with AgentTurnResult, or PMDecision for the
    /// PM; required for an `llm` agent, optional for a human).
    #[serde(default)]
    pub output_schema: Map<String, Value>,
    /// Free-form; recognised keys: `provider`, `model`, `temperature`, `max_tokens`.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

/// Who answers for an agent: a model (the default) or a person at the terminal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ParticipantKind {
    #[default]
    Llm,
    Human,
}

/// The provider name a person's answers carry in the exchange log, the record and the report.
pub const HUMAN_PROVIDER: &str = "human";

impl ParticipantKind {
    fn is_llm(&self) -> bool {
        *self == ParticipantKind::Llm
    }
}

/// Whether `name` is a safe agent name: `[A-Za-z0-9_-]{1,64}`.
pub fn is_safe_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `--trace-id`'s check (the one place a trace id is validated): it names the run folder, so
/// only safe filename characters.
pub(crate) fn check_trace_id(id: &str) -> Result<String, String> {
    if is_safe_name(id) {
        Ok(id.to_string())
    } else {
        Err(format!("{id:?} must be 1-64 characters of A-Z a-z 0-9 _ -"))
    }
}

impl AgentConfig {
    /// Field checks that need no other file (the schema-compatibility rules are in `loader`).
    pub fn validate(&self) -> Result<(), Invalid> {
        if !is_safe_name(&self.name) {
            return Err(Invalid::at(
                "name",
                format!(
                    "{:?} is not a safe agent name (expected 1-64 characters of A-Z a-z 0-9 _ -)",
                    self.name
                ),
            ));
        }
        if self.kind == ParticipantKind::Llm {
            // Optional in the file only for a human; the words serde would have used.
            for (field, missing) in [
                ("system_prompt", self.system_prompt.is_empty()),
                ("input_schema", self.input_schema.is_empty()),
                ("output_schema", self.output_schema.is_empty()),
            ] {
                if missing {
                    return Err(Invalid::at(
                        field,
                        format!(
                            "missing field `{field}` (only a `kind: human` agent goes without)"
                        ),
                    ));
                }
            }
            if self.system_prompt.trim().is_empty() {
                return Err(Invalid::at("system_prompt", "must not be empty"));
            }
        }
        for key in ["temperature"] {
            if let Some(v) = self.metadata.get(key) {
                if !v.is_number() {
                    return Err(Invalid::at(format!("metadata.{key}"), "expected a number"));
                }
            }
        }
        if let Some(v) = self.metadata.get("max_tokens") {
            if v.as_u64()
                .is_none_or(|n| n == 0 || u32::try_from(n).is_err())
            {
                return Err(Invalid::at(
                    "metadata.max_tokens",
                    "expected a positive integer below 2^32",
                ));
            }
        }
        for key in ["provider", "model"] {
            if let Some(v) = self.metadata.get(key) {
                if !v.is_string() {
                    return Err(Invalid::at(format!("metadata.{key}"), "expected a string"));
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Meeting input

/// Shared background of the meeting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingBrief {
    #[serde(default)]
    pub project_background: String,
    #[serde(default)]
    pub current_state: String,
    #[serde(default)]
    pub constraints: Vec<String>,
    #[serde(default)]
    pub success_criteria: Vec<String>,
    #[serde(default)]
    pub non_goals: Vec<String>,
}

/// What the meeting must decide.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionPacket {
    pub decision_to_make: String,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub evaluation_dimensions: Vec<String>,
    #[serde(default)]
    pub required_questions: Vec<String>,
    #[serde(default)]
    pub risk_tolerance: String,
    #[serde(default)]
    pub time_horizon: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    File,
    Directory,
}

fn default_max_files() -> usize {
    20
}
fn default_max_chars() -> usize {
    4000
}
fn default_true() -> bool {
    true
}
fn is_true(b: &bool) -> bool {
    *b
}

/// Where background documents come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextSource {
    #[serde(rename = "type")]
    pub source_type: SourceType,
    pub path: String,
    #[serde(default)]
    pub purpose: String,
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default = "default_max_files")]
    pub max_files: usize,
    #[serde(default = "default_max_chars")]
    pub max_chars_per_file: usize,
    /// A `directory` source skips what `.gitignore` and `.ignore` files exclude
    /// (DESIGN.md#context-collection); `false` collects it too.
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub respect_gitignore: bool,
}

/// A meeting file (or `--topic` minimal mode, or stdin of `collect-context`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingInput {
    pub topic: String,
    #[serde(default)]
    pub brief: MeetingBrief,
    pub decision_packet: DecisionPacket,
    #[serde(default)]
    pub context_sources: Vec<ContextSource>,
    /// The meeting's budget (`init-board --max-total-tokens` wins over it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<MeetingBudget>,
}

/// A meeting file's `budget:` (DESIGN.md#token-budget).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingBudget {
    /// Tokens (prompt, cached ones included, plus completion) the whole meeting may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
}

impl MeetingInput {
    /// `--topic T`: a valid input with `decision_to_make = T` and everything else empty.
    pub fn from_topic(topic: &str) -> MeetingInput {
        MeetingInput {
            topic: topic.to_string(),
            brief: MeetingBrief::default(),
            decision_packet: DecisionPacket {
                decision_to_make: topic.to_string(),
                ..DecisionPacket::default()
            },
            context_sources: Vec::new(),
            budget: None,
        }
    }

    pub fn validate(&self) -> Result<(), Invalid> {
        if self.topic.trim().is_empty() {
            return Err(Invalid::at("topic", "must not be empty"));
        }
        if self.decision_packet.decision_to_make.trim().is_empty() {
            return Err(Invalid::at(
                "decision_packet.decision_to_make",
                "must not be empty",
            ));
        }
        if self
            .budget
            .as_ref()
            .is_some_and(|b| b.max_total_tokens == Some(0))
        {
            return Err(Invalid::at(
                "budget.max_total_tokens",
                "must be greater than 0",
            ));
        }
        for (i, s) in self.context_sources.iter().enumerate() {
            let at = |f: &str| format!("context_sources[{i}].{f}");
            if s.path.trim().is_empty() {
                return Err(Invalid::at(at("path"), "must not be empty"));
            }
            if s.max_files == 0 {
                return Err(Invalid::at(at("max_files"), "must be greater than 0"));
            }
            if s.max_chars_per_file == 0 {
                return Err(Invalid::at(
                    at("max_chars_per_file"),
                    "must be greater than 0",
                ));
            }
            for (field, globs) in [("include", &s.include), ("exclude", &s.exclude)] {
                for (j, g) in globs.iter().enumerate() {
                    if let Err(e) = globset::Glob::new(g) {
                        return Err(Invalid::at(
                            format!("context_sources[{i}].{field}[{j}]"),
                            format!("{g:?} is not a valid glob ({})", e.kind()),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Context

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DocumentSource {
    File,
    DirectoryFile,
}

/// One collected background document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextDocument {
    /// The normalised path relative to the context root, `/`-separated.
    pub document_id: String,
    /// The same root-relative path; never absolute.
    pub source_path: String,
    pub source_type: DocumentSource,
    pub purpose: String,
    /// The file's text cut to `max_chars_per_file` characters.
    pub excerpt: String,
    /// Characters of the full file, each redaction marker counted as its own characters.
    pub char_count: usize,
    /// Secrets replaced by `[REDACTED:<kind>]` in `excerpt` (DESIGN.md#context-collection);
    /// written only when there are some.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub redactions: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A path that was not collected, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkippedPath {
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextBundle {
    pub summary: String,
    #[serde(default)]
    pub documents: Vec<ContextDocument>,
    #[serde(default)]
    pub skipped_paths: Vec<SkippedPath>,
}

/// Output of `collect-context`, input of `init-board`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingPacket {
    pub packet_version: u32,
    pub meeting_input: MeetingInput,
    pub context_bundle: ContextBundle,
}

// ---------------------------------------------------------------------------------------------
// Model answers

/// A reference from an agent's answer to a collected document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentCitation {
    pub document_id: String,
    pub source_path: String,
    #[serde(default)]
    pub quote: String,
    /// The exact text of the key point, risk or recommendation of the same answer that this
    /// quote backs (DESIGN.md#findings-and-evidence).
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
    /// `E1`, `E2`, … in the order the board kept them; never reused (boards from before the
    /// numbering have none: their position is their number).
    #[serde(default, skip_serializing_if = "String::is_empty")]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum NextAction {
    #[serde(rename = "CALL_AGENT")]
    CallAgent,
    // A fan-out (DESIGN.md#fan-out): several participants asked at once, one loop each (a
    // plain comment: a documented variant would make the schema a `oneOf`).
    #[serde(rename = "CALL_AGENTS")]
    CallAgents,
    #[serde(rename = "FINISH")]
    Finish,
}

impl NextAction {
    /// Every action's name as the PM writes it (what a PM config's `next_action` enum may hold).
    pub const NAMES: [&'static str; 3] = ["CALL_AGENT", "CALL_AGENTS", "FINISH"];
}

/// One call of a CALL_AGENTS fan-out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentCall {
    pub target_agent: String,
    pub prompt_for_agent: String,
}

/// The PM's only valid output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PmDecision {
    #[serde(default)]
    pub analysis: String,
    pub next_action: NextAction,
    #[serde(default)]
    pub target_agent: Option<String>,
    #[serde(default)]
    pub prompt_for_agent: Option<String>,
    #[serde(default)]
    pub final_report: Option<String>,
    /// With CALL_AGENTS: the calls, in the order they are merged (DESIGN.md#fan-out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<AgentCall>,
    /// Questions of the whiteboard this step's PM marks answered (any step).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered_questions: Vec<AnsweredQuestion>,
    /// With FINISH: the decision itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// With FINISH: a short verdict per option and evaluation dimension.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub option_assessments: Vec<OptionAssessment>,
}

/// One question the PM marks answered (DESIGN.md#questions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnsweredQuestion {
    /// The question's id (`Q2`) or its exact text.
    pub question: String,
    /// One or two sentences.
    pub answer: String,
    /// The participants whose answers settle it.
    #[serde(default)]
    pub by: Vec<String>,
}

/// How sure the PM is of its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    #[serde(alias = "Low", alias = "LOW")]
    Low,
    #[serde(alias = "Medium", alias = "MEDIUM")]
    Medium,
    #[serde(alias = "High", alias = "HIGH")]
    High,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// The PM's decision on FINISH (DESIGN.md#report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    pub choice: String,
    pub confidence: Confidence,
    /// What would make the meeting reconsider.
    #[serde(default)]
    pub revisit_if: String,
}

/// One cell of the options × evaluation-dimensions table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptionAssessment {
    pub option: String,
    pub dimension: String,
    /// A short verdict.
    pub assessment: String,
}

/// The optional structured fields of PMDecision (not strings: outside the PM config's
/// string-field rule).
pub(crate) const PM_DECISION_EXTRA_FIELDS: [&str; 4] = [
    "answered_questions",
    "decision",
    "option_assessments",
    "calls",
];

/// The fields of PMDecision, for the PM config compatibility rule.
pub(crate) const PM_DECISION_FIELDS: [&str; 5] = [
    "analysis",
    "next_action",
    "target_agent",
    "prompt_for_agent",
    "final_report",
];

fn blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|s| s.trim().is_empty())
}

/// Fewest letters or digits a required text of the PM needs to be more than a stand-in.
const MIN_REAL_CHARS: usize = 4;

/// Stock stand-ins a model writes where content should be (compared lower-case, letters and
/// digits only).
const FILLERS: [&str; 10] = [
    "tbd",
    "todo",
    "none",
    "null",
    "string",
    "text",
    "placeholder",
    "question",
    "report",
    "lorem ipsum",
];

/// Whether `text` only stands in for content: punctuation or an ellipsis, fewer than
/// `MIN_REAL_CHARS` letters or digits, a template slot (`<question>`), or a stock filler
/// ("TBD", "N/A", "string").
pub(crate) fn is_placeholder(text: &str) -> bool {
    let t = text.trim();
    let real: String = t
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ')
        .flat_map(char::to_lowercase)
        .collect();
    let real = real.split_whitespace().collect::<Vec<_>>().join(" ");
    // A CJK character is a word of its own: "选哪个？" is a real question.
    let count: usize = real
        .chars()
        .filter(|c| c.is_alphanumeric())
        .map(|c| if c.is_ascii() { 1 } else { 2 })
        .sum();
    count < MIN_REAL_CHARS
        || (t.starts_with('<') && t.ends_with('>') && !t[1..].contains('<'))
        || FILLERS.contains(&real.as_str())
}

impl PmDecision {
    /// The conditional rules (DESIGN.md#pm-round): CALL_AGENT needs a target and a real
    /// question; FINISH needs a report with both its parts (Executive Summary and
    /// Recommendation, read as the report reads them); a target or question beside it is
    /// ignored. A placeholder (`"..."`, `"TBD"`) is not content.
    pub fn validate(&self) -> Result<(), Invalid> {
        match self.next_action {
            NextAction::CallAgent => {
                if blank(&self.target_agent) {
                    return Err(Invalid::at(
                        "target_agent",
                        "is required (a participant name) when next_action is CALL_AGENT",
                    ));
                }
                if blank(&self.prompt_for_agent) {
                    return Err(Invalid::at(
                        "prompt_for_agent",
                        "is required (a specific question) when next_action is CALL_AGENT",
                    ));
                }
                let prompt = self.prompt_for_agent.as_deref().unwrap_or_default();
                if is_placeholder(prompt) {
                    return Err(Invalid::at(
                        "prompt_for_agent",
                        format!(
                            "{prompt:?} is a placeholder, not a question: write the specific question for the participant"
                        ),
                    ));
                }
            }
            NextAction::CallAgents => {
                if self.calls.is_empty() {
                    return Err(Invalid::at(
                        "calls",
                        "is required (2 or more {target_agent, prompt_for_agent}) when next_action is CALL_AGENTS",
                    ));
                }
                for (i, call) in self.calls.iter().enumerate() {
                    if call.target_agent.trim().is_empty() {
                        return Err(Invalid::at(
                            format!("calls[{i}].target_agent"),
                            "is required (a participant name)",
                        ));
                    }
                    let prompt = &call.prompt_for_agent;
                    if is_placeholder(prompt) {
                        return Err(Invalid::at(
                            format!("calls[{i}].prompt_for_agent"),
                            format!(
                                "{prompt:?} is a placeholder, not a question: write the specific question for the participant"
                            ),
                        ));
                    }
                }
            }
            NextAction::Finish => {
                // A target or question beside a FINISH is ignored, not refused: small models
                // fill every field, and the report says what was meant (a retry would only
                // cost a call).
                if blank(&self.final_report) {
                    return Err(Invalid::at(
                        "final_report",
                        "is required (Markdown with an executive summary and a recommendation) when next_action is FINISH",
                    ));
                }
                let report = self.final_report.as_deref().unwrap_or_default();
                let (summary, recommendation) = crate::final_report::labelled_parts(report);
                let missing: Vec<&str> = [
                    ("### Executive Summary", summary),
                    ("### Recommendation", recommendation),
                ]
                .into_iter()
                .filter(|(_, text)| is_placeholder(text))
                .map(|(label, _)| label)
                .collect();
                if !missing.is_empty() {
                    return Err(Invalid::at(
                        "final_report",
                        format!(
                            "lacks {}: write Markdown with two parts, \"### Executive Summary\" and \"### Recommendation\", each with its real content",
                            missing
                                .iter()
                                .map(|m| format!("its {m:?} part"))
                                .collect::<Vec<_>>()
                                .join(" and ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Board

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Running,
    Finishing,
    Finished,
    ForcedStop,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Finishing => "finishing",
            Status::Finished => "finished",
            Status::ForcedStop => "forced_stop",
            Status::Failed => "failed",
        }
    }
}

/// Meeting-wide LLM defaults (flags of `init-board`); per-agent `metadata` wins over them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    pub provider: String,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

/// The PM's routing decision waiting for `agent-turn`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PendingCall {
    pub target_agent: String,
    pub prompt: String,
    #[serde(default)]
    pub analysis: String,
    /// Under a token budget: the tokens the turn must leave for the PM's closing round
    /// (DESIGN.md#token-budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve_tokens: Option<u64>,
}

/// How a turn or a call ended: an agent turn (`last_turn.status`) and the `llm_call`,
/// `agent_result` and `agent_error` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    Ok,
    Error,
}

impl TurnStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Ok => "ok",
            TurnStatus::Error => "error",
        }
    }
}

/// The outcome of the last agent turn, waiting for `merge-board`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LastTurn {
    pub agent_name: String,
    pub status: TurnStatus,
    /// The PM's question this turn answered.
    #[serde(default)]
    pub prompt: String,
    #[serde(default)]
    pub result: Option<AgentTurnResult>,
    #[serde(default)]
    pub error: Option<String>,
}

/// One entry of the event log.
/// What an event records; serialised as its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// `init-board` created the board. (The default only serves struct-update syntax: every
    /// event is built with its own type.)
    #[default]
    MeetingStarted,
    /// `merge-board` folded a turn in.
    BoardMerged,
    /// One logical model call (usage, duration, status).
    LlmCall,
    /// The PM's decision: a question to an agent, or FINISH.
    PmDecision,
    /// A PM answer that was not valid JSON or not a valid decision.
    PmInvalidOutput,
    /// A PM answer that named an agent who is not a participant.
    PmRoutingError,
    /// A PM round ended without a usable decision.
    PmRoundFailed,
    /// The meeting must close now (loop budget spent, or a failed round).
    ForcedFinish,
    /// An agent answer was invalid and is asked again.
    AgentRetry,
    /// An agent turn ended with a checked answer.
    AgentResult,
    /// An agent turn ended without one.
    AgentError,
    /// The PM asked a participant nearly what it had asked it before (DESIGN.md#circles).
    PmRepeatedQuestion,
    /// Two agent turns in a row added nothing new to the whiteboard (DESIGN.md#circles).
    MeetingStalled,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::MeetingStarted => "meeting_started",
            EventType::BoardMerged => "board_merged",
            EventType::LlmCall => "llm_call",
            EventType::PmDecision => "pm_decision",
            EventType::PmInvalidOutput => "pm_invalid_output",
            EventType::PmRoutingError => "pm_routing_error",
            EventType::PmRoundFailed => "pm_round_failed",
            EventType::ForcedFinish => "forced_finish",
            EventType::AgentRetry => "agent_retry",
            EventType::AgentResult => "agent_result",
            EventType::AgentError => "agent_error",
            EventType::PmRepeatedQuestion => "pm_repeated_question",
            EventType::MeetingStalled => "meeting_stalled",
        }
    }
}

/// The kind of a message between participants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// The PM asks an agent.
    Task,
    /// An agent's answer (or its failure) back to the PM.
    Result,
    /// The runtime tells a participant its answer was unusable.
    Feedback,
    /// The meeting's own control flow (finish, forced finish, failed rounds).
    Control,
}

impl MessageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Task => "task",
            MessageKind::Result => "result",
            MessageKind::Feedback => "feedback",
            MessageKind::Control => "control",
        }
    }
}

/// One entry of the event log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Event {
    pub ts: String,
    pub trace_id: String,
    #[serde(rename = "loop")]
    pub loop_no: u32,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub caller: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// For messages between participants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MessageKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TurnStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Of `prompt_tokens`, read from the provider's prompt cache (set when not 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Of `prompt_tokens`, written to the provider's prompt cache (set when not 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Loops of the meeting the board's `flow` keeps (the report's diagram shows them).
pub const FLOW_LOOPS: u32 = 30;

/// The report's flow diagram in bounded form (DESIGN.md#events): the steps of the last
/// [`FLOW_LOOPS`] loops, and how many loops came before them. Kept by `events::push_at`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    /// Loops whose steps were dropped (the oldest first) to keep the board bounded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub loops_before: u32,
    #[serde(default)]
    pub steps: Vec<FlowStep>,
}

/// One step of the flow diagram, made from one event (`events::flow_step`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowStep {
    #[serde(rename = "loop")]
    pub loop_no: u32,
    pub kind: FlowKind,
    /// The specialist asked (`ask`) or answering (`answer`, `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// What the diagram writes on the step, already cut to the length it shows.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// What a flow step shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    /// The PM asks an agent (`pm_decision`, a task).
    Ask,
    /// An agent answers (`agent_result`).
    Answer,
    /// An agent turn failed (`agent_error`).
    Failed,
    /// The PM's FINISH.
    Finish,
    /// The meeting was made to close (`forced_finish`).
    ForcedFinish,
    /// A PM round ended without a usable decision.
    RoundFailed,
}

/// Token and call counts. `prompt_tokens` counts every input token, cached ones included, for
/// every provider (DESIGN.md#llm-layer); the cache counts are parts of it, written when not 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallerUsage {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cached_tokens: u64,
    /// Of `prompt_tokens`, written to the provider's prompt cache (Anthropic).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cache_creation_tokens: u64,
    #[serde(default)]
    pub duration_ms: u64,
    /// True when some counts were estimated from characters (the server returned none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// The largest `prompt_tokens` of one call the provider reported: a floor under the token
    /// budget's estimates (DESIGN.md#token-budget).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub max_prompt_tokens: u64,
}

/// Usage totals; `calls` is also the global call number that keys replay cassettes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cached_tokens: u64,
    /// Of `prompt_tokens`, written to the provider's prompt cache (Anthropic).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cache_creation_tokens: u64,
    #[serde(default)]
    pub by_caller: BTreeMap<String, CallerUsage>,
}

impl Usage {
    /// The model requests made, retries included: what the callers were charged. `calls`, the
    /// call counter, can be higher: a fan-out fixes its calls' numbers before sending and
    /// leaves the numbers a retry did not need unused (DESIGN.md#fan-out). A board whose
    /// callers were not counted (a user's stage): the counter.
    pub fn attempts(&self) -> u64 {
        match self.by_caller.values().map(|u| u.calls).sum() {
            0 => self.calls,
            charged => charged,
        }
    }
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// Where a question on the whiteboard came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuestionOrigin {
    /// The meeting file's `required_questions`.
    Required,
    /// Raised by an agent (or found on a board from before question tracking).
    Raised,
}

/// Who answered a question, with what, and when (DESIGN.md#questions).
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
    /// The PM marked answered a question that is not on the whiteboard.
    UnknownQuestion,
    /// The PM repeated a question, or answers stopped adding anything (DESIGN.md#circles).
    Circles,
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

/// The decision record kept beside the whiteboard for the report (DESIGN.md#report): every
/// part bounded. All of it optional, so a board from before it reads with it empty.
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
    /// agent's turn, so the agent sees the whiteboard the PM saw (DESIGN.md#questions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_answers: Vec<AnsweredQuestion>,
    /// Notes for the report's Process Note (the last 30).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub process: Vec<ProcessEntry>,
    /// Per caller (`pm`, agent names): who answered.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub callers: BTreeMap<String, CallerSource>,
    /// The PM's latest questions, with the answer each got (`circles::ASKED_CAP`): what a
    /// repeated question is compared with (DESIGN.md#circles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<AskedQuestion>,
    /// Agent turns in a row that added nothing new to the whiteboard (DESIGN.md#circles).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quiet_turns: u32,
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
    fn is_empty(&self) -> bool {
        self == &MeetingRecord::default()
    }
}

/// The whiteboard: the whole state of a meeting, passed from stage to stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Board {
    pub board_version: u32,
    pub trace_id: String,
    pub topic: String,
    /// Specialist names, in `--agents` order.
    pub participants: Vec<String>,
    /// Every participant's config, so a saved board replays without the agents folder.
    pub agents: BTreeMap<String, AgentConfig>,
    /// The PM's config, or null for the built-in PM.
    pub pm: Option<AgentConfig>,
    pub llm: LlmSettings,
    pub loop_count: u32,
    pub max_loops: u32,
    /// Most participants one CALL_AGENTS may ask at once (`--max-parallel`, DESIGN.md#fan-out);
    /// 1 (also a board from before fan-outs): the PM is not offered CALL_AGENTS.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub max_parallel: u32,
    /// The meeting's token budget (DESIGN.md#token-budget): prompt and completion tokens
    /// of every call together stay within it; absent: no budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    pub status: Status,
    pub summary: String,
    pub key_points: Vec<String>,
    pub open_questions: Vec<String>,
    pub decisions: Vec<String>,
    pub risks: Vec<String>,
    pub latest_agent_outputs: BTreeMap<String, AgentTurnResult>,
    /// Every validated citation of the meeting, in the order they were merged.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    pub pending_call: Option<PendingCall>,
    pub last_turn: Option<LastTurn>,
    /// A fan-out's calls waiting for `agent-turn`, in call order (DESIGN.md#fan-out); a
    /// single call stays in `pending_call`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_calls: Vec<PendingCall>,
    /// A fan-out's turns waiting for `merge-board`, in call order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_turns: Vec<LastTurn>,
    pub last_error: Option<String>,
    pub recent_errors: Vec<String>,
    pub final_report: Option<String>,
    pub process_note: Option<String>,
    /// The decision record for the report: questions, provenance, decision, process notes.
    #[serde(default, skip_serializing_if = "MeetingRecord::is_empty")]
    pub record: MeetingRecord,
    /// The events the stage that wrote this board produced, in order; the next stage replaces
    /// them. The whole history is the run folder's `events.jsonl` (DESIGN.md#events).
    pub new_events: Vec<Event>,
    /// Events recorded in the whole meeting, `new_events` included: how many lines
    /// `events.jsonl` holds up to this board (`--resume` cuts it there, DESIGN.md#resume).
    #[serde(default)]
    pub event_count: u64,
    /// The bounded record of the meeting's flow the report's diagram draws.
    #[serde(default)]
    pub flow: Flow,
    pub usage: Usage,
    pub meeting_input: MeetingInput,
    pub context_bundle: ContextBundle,
}

fn one() -> u32 {
    1
}
fn is_one(n: &u32) -> bool {
    *n == 1
}

/// Largest `--max-parallel`: each call is a thread and a loop.
pub const MAX_PARALLEL: u32 = 8;

impl Board {
    /// Whether an agent turn is waiting to be run: a single call or a fan-out.
    pub fn has_pending_calls(&self) -> bool {
        self.pending_call.is_some() || !self.pending_calls.is_empty()
    }

    /// Whether a turn (or a fan-out's turns) is waiting to be merged.
    pub fn has_turns(&self) -> bool {
        self.last_turn.is_some() || !self.last_turns.is_empty()
    }

    /// The calls waiting for `agent-turn`, in call order (one, or a fan-out's).
    pub fn pending(&self) -> Vec<&PendingCall> {
        self.pending_call
            .iter()
            .chain(&self.pending_calls)
            .collect()
    }

    /// Whether the PM's report is there (a blank one counts as none), the one test every
    /// stage uses to decide whether render-report or the forced pm-step runs next.
    pub(crate) fn has_final_report(&self) -> bool {
        self.final_report
            .as_deref()
            .is_some_and(|r| !r.trim().is_empty())
    }

    /// The 1-based loop an event of `pm-step` / `agent-turn` belongs to: the loop in progress
    /// (`loop_count` counts completed loops). Forced-finish events after the last loop stay in
    /// the last loop, so `[loop 7/6]` never appears.
    pub(crate) fn current_loop(&self) -> u32 {
        self.loop_count.saturating_add(1).min(self.max_loops.max(1))
    }

    /// Whether the meeting was made to close (a `forced_finish` is in its flow: it is always
    /// in the last loop, which the flow keeps).
    pub(crate) fn forced_finish_recorded(&self) -> bool {
        self.flow
            .steps
            .iter()
            .any(|s| s.kind == FlowKind::ForcedFinish)
    }
}

/// The caller name of every PM call (cassettes, usage per caller, events).
pub const PM_CALLER: &str = "pm";

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
}

/// Output of the `meeting` driver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingResult {
    pub status: Status,
    pub report_file: Option<String>,
    pub run_dir: Option<String>,
    pub trace_id: String,
    pub loops: u32,
    pub forced: bool,
    pub usage: Usage,
    /// Why the meeting failed (status `failed`: the report could not be saved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The requests made are what the callers were charged, not the call counter.
    #[test]
    fn attempts_are_the_callers_charges() {
        let mut usage = Usage {
            calls: 7,
            ..Usage::default()
        };
        assert_eq!(usage.attempts(), 7, "no caller counted: the counter");
        for (caller, calls) in [("pm", 2), ("biz", 4)] {
            let u = CallerUsage {
                calls,
                ..CallerUsage::default()
            };
            usage.by_caller.insert(caller.into(), u);
        }
        assert_eq!(usage.attempts(), 6);
    }

    #[test]
    fn safe_names() {
        assert!(is_safe_name("arch"));
        assert!(is_safe_name("a_b-C9"));
        assert!(!is_safe_name(""));
        assert!(!is_safe_name("../etc"));
        assert!(!is_safe_name("a b"));
        assert!(!is_safe_name(&"a".repeat(65)));
        assert!(is_safe_name(&"a".repeat(64)));
    }

    #[test]
    fn pm_decision_conditional_rules() {
        let call = |t: Option<&str>, p: Option<&str>| PmDecision {
            analysis: String::new(),
            next_action: NextAction::CallAgent,
            target_agent: t.map(str::to_string),
            prompt_for_agent: p.map(str::to_string),
            final_report: None,
            calls: vec![],
            answered_questions: vec![],
            decision: None,
            option_assessments: vec![],
        };
        assert!(call(Some("arch"), Some("How long?")).validate().is_ok());
        assert_eq!(
            call(None, Some("q")).validate().unwrap_err().path,
            "target_agent"
        );
        assert_eq!(
            call(Some("arch"), Some("  ")).validate().unwrap_err().path,
            "prompt_for_agent"
        );
        let fin = |r: Option<&str>| PmDecision {
            analysis: String::new(),
            next_action: NextAction::Finish,
            target_agent: None,
            prompt_for_agent: None,
            final_report: r.map(str::to_string),
            calls: vec![],
            answered_questions: vec![],
            decision: None,
            option_assessments: vec![],
        };
        let report =
            "### Executive Summary\nKeep Python.\n\n### Recommendation\nRevisit in 6 months.";
        assert!(fin(Some(report)).validate().is_ok());
        assert!(
            fin(Some("**摘要：** 保留 Python 方案\n**建议：** 半年后复查"))
                .validate()
                .is_ok()
        );
        assert_eq!(fin(None).validate().unwrap_err().path, "final_report");
    }

    /// A placeholder answer is not an answer (issue 10, item 8).
    #[test]
    fn pm_decision_placeholders_are_invalid() {
        for text in [
            "...",
            "…",
            " - ",
            "?",
            "TBD",
            "N/A",
            "<question>",
            "string",
            "Ok.",
        ] {
            assert!(is_placeholder(text), "{text:?}");
        }
        for text in [
            "Cost?",
            "What does the cluster cost?",
            "成本是多少？",
            "选哪个？",
            "Keep Python.",
        ] {
            assert!(!is_placeholder(text), "{text:?}");
        }
        let decision = |v: serde_json::Value| -> PmDecision { serde_json::from_value(v).unwrap() };
        let e = decision(json!({"next_action": "CALL_AGENT", "target_agent": "arch",
            "prompt_for_agent": "..."}))
        .validate()
        .unwrap_err();
        assert_eq!(e.path, "prompt_for_agent");
        assert!(e.message.contains("placeholder"), "{}", e.message);
        let e = decision(json!({"next_action": "FINISH", "target_agent": "...",
            "prompt_for_agent": "...", "final_report": "..."}))
        .validate()
        .unwrap_err();
        assert_eq!(e.path, "final_report");
        // A stray target or question beside a FINISH with its report is ignored.
        decision(json!({"next_action": "FINISH", "target_agent": "arch",
            "prompt_for_agent": "Why?",
            "final_report": "### Executive Summary\nKeep it.\n### Recommendation\nTune it."}))
        .validate()
        .unwrap();
        for (report, lacks) in [
            ("...", "### Recommendation"),
            ("We should keep Python for now.", "### Recommendation"),
            (
                "### Executive Summary\n...\n### Recommendation\nKeep Python.",
                "### Executive Summary",
            ),
            (
                "### Executive Summary\nKeep Python.\n### Recommendation\n…",
                "### Recommendation",
            ),
        ] {
            let e = decision(json!({"next_action": "FINISH", "target_agent": null,
                "final_report": report}))
            .validate()
            .unwrap_err();
            assert_eq!(e.path, "final_report");
            assert!(
                e.message.contains(&format!("its {lacks:?} part")),
                "{report:?}: {}",
                e.message
            );
        }
    }

    /// A decision's confidence is one of three words; a model's capitalised spelling is read,
    /// anything else is an invalid answer.
    #[test]
    fn confidence_is_a_closed_set() {
        for (word, c) in [
            ("low", Confidence::Low),
            ("Medium", Confidence::Medium),
            ("HIGH", Confidence::High),
        ] {
            let d: Decision =
                serde_json::from_value(json!({"choice": "B", "confidence": word})).unwrap();
            assert_eq!(d.confidence, c);
            assert_eq!(d.revisit_if, "");
        }
        assert!(serde_json::from_value::<Decision>(
            json!({"choice": "B", "confidence": "certain"})
        )
        .is_err());
        let d: PmDecision = serde_json::from_value(json!({"next_action": "FINISH",
            "final_report": "r", "answered_questions": [{"question": "Q1", "answer": "Yes."}]}))
        .unwrap();
        assert_eq!(d.answered_questions[0].by, Vec::<String>::new());
    }

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

    #[test]
    fn topic_mode_is_valid() {
        let m = MeetingInput::from_topic("Adopt Rust?");
        m.validate().unwrap();
        assert_eq!(m.decision_packet.decision_to_make, "Adopt Rust?");
        assert!(MeetingInput::from_topic(" ").validate().is_err());
    }
}
