//! The LLM layer (SPEC §7): one interface for the rest of the code, several providers behind it.
//!
//! Callers build a [`Request`] (system prompt, messages, optional expected JSON schema) and
//! [`Options`] (model, temperature, ...), and call [`Client::call`]. They never see provider
//! differences. Every *attempt* (including transport retries) takes the next global call
//! number, which is the board's `usage.calls`, so replay cassettes stay in step across the
//! separate processes of one meeting.
//!
//! INTERFACE CONTRACT (shared by pm, turn, agent-builder): the public items below keep these
//! names and shapes; implementations may add items.

use serde_json::Value;

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
}

impl Message {
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
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
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `pm`, an agent name, or `builder`; checked against replay cassettes.
    pub caller: String,
    pub system: String,
    /// Starts with a user message; a retry appends the model's reply and the correction.
    pub messages: Vec<Message>,
    /// `None` for a plain-text call.
    pub expect: Option<ExpectedJson>,
}

/// Per-call model options, already resolved (agent metadata > board defaults > flags/env).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub model: String,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
}

/// Token counts of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The server returned no usage; counts were estimated from characters.
    pub estimated: bool,
}

/// A successful call.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The model's raw text (for a forced tool call, the tool input serialised as JSON).
    pub text: String,
    /// With `expect`: the tolerant-parsed JSON value (fences stripped, outermost object,
    /// trailing commas dropped). NOT yet validated against the schema: see [`validate`].
    /// `Err` carries a message that can be sent back to the model on a retry.
    pub json: Option<Result<Value, String>>,
    pub usage: TokenUsage,
    pub duration_ms: u64,
    /// HTTP attempts this call took (1 when no transport retry happened).
    pub attempts: u32,
}

/// Why a call failed, after the transport's retries were spent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// 401/403, model not found, other non-retryable 4xx, missing key, broken cassette:
    /// the program fails fast (exit 1) with this message.
    #[error("{0}")]
    Fatal(String),
    /// 429/5xx/timeouts/dropped connections after retries, context-length errors, empty
    /// replies: the meeting absorbs it (agent error turn, failed PM attempt).
    #[error("{message}")]
    Transient {
        message: String,
        attempts: u32,
        duration_ms: u64,
    },
}

/// Validate a parsed value against a JSON Schema; the error lists every violation with its
/// JSON path, in words a model can act on.
pub fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    let validator =
        jsonschema::validator_for(schema).map_err(|e| format!("invalid schema: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                format!("{e}")
            } else {
                format!("at {path}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// What one HTTP attempt (or one cassette line) gave back.
#[derive(Debug, Clone, PartialEq)]
pub struct RawReply {
    pub text: String,
    /// `None` when the server sent no usage.
    pub usage: Option<TokenUsage>,
}

/// Why one attempt failed; the [`Client`] decides whether to retry.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptError {
    /// An HTTP error status with the provider's own error text.
    Http {
        status: u16,
        message: String,
        retry_after: Option<std::time::Duration>,
    },
    Timeout(String),
    /// Connection refused/reset/closed mid-body, non-JSON body.
    Network(String),
    /// Not retryable and not the model's fault (missing key, cassette out of step).
    Fatal(String),
}

/// One backend: OpenAI, Anthropic, replay, or a test fake. `seq` is the global call number of
/// this attempt (1-based: the board's `usage.calls` + 1 for the first call of a stage).
pub trait Provider {
    /// `openai`, `anthropic`, `replay`, ... used in error messages.
    fn name(&self) -> &str;
    fn attempt(
        &mut self,
        seq: u64,
        req: &Request,
        opts: &Options,
    ) -> Result<RawReply, AttemptError>;
}

/// The interface the stages use: retries, tolerant parsing, usage and the call counter.
pub struct Client {
    provider: Box<dyn Provider>,
    calls: u64,
}

impl Client {
    /// `calls` is the board's `usage.calls` before this stage's first call.
    pub fn new(provider: Box<dyn Provider>, calls: u64) -> Client {
        Client { provider, calls }
    }

    /// The global call counter after the calls made so far (write it back to the board).
    pub fn calls(&self) -> u64 {
        self.calls
    }

    pub fn provider_name(&self) -> &str {
        self.provider.name()
    }

    /// One logical call. PLACEHOLDER: a single attempt; the LLM-layer work replaces this with
    /// the retrying transport policy and tolerant parsing.
    pub fn call(&mut self, req: &Request, opts: &Options) -> Result<Reply, LlmError> {
        let start = std::time::Instant::now();
        self.calls += 1;
        match self.provider.attempt(self.calls, req, opts) {
            Ok(raw) => {
                let json = req
                    .expect
                    .as_ref()
                    .map(|_| serde_json::from_str(&raw.text).map_err(|e| e.to_string()));
                Ok(Reply {
                    usage: raw.usage.unwrap_or_default(),
                    text: raw.text,
                    json,
                    duration_ms: start.elapsed().as_millis() as u64,
                    attempts: 1,
                })
            }
            Err(AttemptError::Fatal(m)) => Err(LlmError::Fatal(m)),
            Err(e) => Err(LlmError::Transient {
                message: format!("{e:?}"),
                attempts: 1,
                duration_ms: 0,
            }),
        }
    }
}
