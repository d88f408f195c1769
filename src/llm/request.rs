//! What a call sends (docs/design/llm.md#llm-layer): the conversation ([`Message`]), the expected JSON,
//! the [`Request`] and its [`Options`], and each caller's default `max_tokens`.

use serde_json::{json, Value};

/// Who speaks a message in the conversation sent to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// How many leading bytes of `content` are the meeting's stable block (the same bytes in
    /// every call of the meeting: brief, documents, citable ids), 0 when none. Every provider
    /// sends the same text; Anthropic requests also mark the end of this block with
    /// `cache_control` (docs/design/prompts.md#prompt-layout).
    pub stable_prefix: usize,
}

impl Message {
    /// `{"role": "user"|"assistant", "content": ...}`, as both providers (and the logs) take it.
    pub(crate) fn to_json(&self) -> Value {
        let role = match self.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        json!({"role": role, "content": self.content})
    }

    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: content.into(),
            stable_prefix: 0,
        }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            content: content.into(),
            stable_prefix: 0,
        }
    }

    /// A user message whose first part, `stable`, is the same in every call of the meeting,
    /// followed by the part that changes from call to call.
    pub fn user_with_stable_prefix(stable: impl Into<String>, rest: &str) -> Message {
        let mut content = stable.into();
        let stable_prefix = content.len();
        content.push_str(rest);
        Message {
            role: Role::User,
            content,
            stable_prefix,
        }
    }

    /// `(stable block, the rest)`; the stable block is empty when none is marked.
    pub fn split_stable(&self) -> (&str, &str) {
        let at = if self.content.is_char_boundary(self.stable_prefix) {
            self.stable_prefix
        } else {
            0
        };
        self.content.split_at(at)
    }
}

/// The JSON a caller expects back: a name (for OpenAI `json_schema` / the Anthropic tool) and
/// the JSON Schema itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedJson {
    pub name: String,
    pub schema: Value,
}

/// One logical call: "send these messages, expect JSON matching this schema".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    /// `pm`, an agent name, or `builder`; checked against replay cassettes.
    pub caller: String,
    pub system: String,
    /// Starts with a user message; a retry appends the model's reply and the correction.
    pub messages: Vec<Message>,
    /// `None` for a plain-text call.
    pub expect: Option<ExpectedJson>,
    /// What the meeting's prompt was rendered from, for `--provider sample`; never sent, logged
    /// or hashed (docs/design/llm.md#sample-provider).
    pub facts: Facts,
}

/// The structured input a meeting call's prompt is rendered from, so `--provider sample`
/// answers from the meeting itself, not by reading the prompt text back (a template edit or
/// `AGENT_MEETING_PROMPTS` changes no sample answer). Empty for a call outside a meeting round.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub topic: String,
    pub options: Vec<String>,
    pub dimensions: Vec<String>,
    pub required_questions: Vec<String>,
    /// `(id, text)` of the whiteboard's open questions.
    pub open_questions: Vec<(String, String)>,
    pub key_points: Vec<String>,
    /// `(who said it first, text)` of the whiteboard's key points.
    pub heard: Vec<(String, String)>,
    pub documents: Vec<FactDocument>,
    /// Whether a participant has spoken yet.
    pub spoken: bool,
    /// The loops left, in a PM's normal round only.
    pub remaining_loops: Option<u64>,
    /// The PM's question, in an agent's turn.
    pub question: Option<String>,
    /// The whiteboard's risks.
    pub risks: Vec<String>,
    /// `(name, role and description)` of each participant, for the one best placed to answer
    /// a question no document answers.
    pub roles: Vec<(String, String)>,
    /// What every objection a reviewer raised so far is about, in order (reviewer mode).
    pub objections: Vec<String>,
    /// A valid answer of this call's kind, for a call outside a meeting round (agent-builder:
    /// a shipped agent's config), which the sample answers with, its free texts marked.
    pub example: Option<serde_json::Value>,
}

/// A citable document as the meeting's block lists it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FactDocument {
    pub document_id: String,
    pub source_path: String,
    /// Its excerpt, whitespace folded within lines as the prompt fences it.
    pub excerpt: String,
}

/// Per-call model options, already resolved (agent metadata > board defaults > flags/env).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub model: String,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
}

/// The `max_tokens` a caller sends when neither agent metadata, the board's defaults nor
/// `--max-tokens` set one (docs/design/llm.md#llm-layer). Without a limit a local server generates
/// until its context window is full; these leave room for a complete answer of each kind.
pub mod default_max_tokens {
    /// An agent turn: a short response, three short lists and a few citations with quotes.
    pub const AGENT_TURN: u32 = 1200;
    /// A PM round: usually a routing decision, but a normal-mode FINISH carries the report.
    pub const PM_STEP: u32 = 1500;
    /// The PM's closing round (forced finish): always the whole final report.
    pub const PM_CLOSING: u32 = 2000;
    /// A council member's vote: a choice, a confidence, a few reasons and citations.
    pub const COUNCIL_VOTE: u32 = 800;
    /// A council member's ranking of the others' anonymous answers: a list of labels.
    pub const COUNCIL_RANK: u32 = 300;
    /// agent-builder: a whole AgentConfig, role prompt and both schemas.
    pub const BUILDER: u32 = 2500;

    /// A caller's default in a meeting round: the PM's step or an agent's turn.
    pub fn of_caller(caller: &str) -> u32 {
        if caller == crate::model::PM_CALLER {
            PM_STEP
        } else {
            AGENT_TURN
        }
    }
}

impl Options {
    /// These options with `max_tokens` set to `n` when nothing set it.
    pub fn or_max_tokens(&self, n: u32) -> Options {
        Options {
            max_tokens: self.max_tokens.or(Some(n)),
            ..self.clone()
        }
    }
}
