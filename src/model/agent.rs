//! Agent configs (docs/design/agents-and-config.md#agent-configs): a specialist or the PM, as loaded from its file.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use serde_json::{Map, Value};

use crate::error::Invalid;

/// One loadable agent: a specialist or the PM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Safe filename characters `[A-Za-z0-9_-]`, 1–64; equals the config file's stem.
    pub name: String,
    pub role: String,
    pub description: String,
    /// `llm` (the default) or `human`: a person answers at the terminal (docs/design/agents-and-config.md#agent-configs).
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
pub fn check_trace_id(id: &str) -> Result<String, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
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
}
