//! What a call gives back (docs/design/llm.md#llm-layer): the [`Reply`] and its token counts, why a
//! reply holds no JSON ([`NoJson`]), and why a call failed ([`LlmError`]).

use crate::model::Tokens;
use serde_json::Value;

/// Token counts of one call (docs/design/llm.md#llm-layer). `prompt_tokens` is every input token the
/// model read, cached or not, for every provider, so totals and the budget compare across
/// providers: OpenAI's `prompt_tokens` as reported (it includes `cached_tokens`); Anthropic's
/// `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens` (its
/// `input_tokens` counts only the uncached rest).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TokenUsage {
    /// The counts, in the meeting's terms (`model::Tokens`).
    pub tokens: Tokens,
    /// The server returned no usage; counts were estimated from characters.
    pub estimated: bool,
    /// What a gateway said it billed for the call (US dollars), when it said.
    pub billed_usd: Option<f64>,
}

impl TokenUsage {
    /// Reported counts from a `usage` object under the provider's own key names; `None` when
    /// either is missing (the caller then estimates). Cache counts start at 0.
    pub(crate) fn reported(
        usage: &Value,
        prompt_key: &str,
        completion_key: &str,
    ) -> Option<TokenUsage> {
        Some(TokenUsage {
            tokens: Tokens {
                prompt_tokens: usage.get(prompt_key)?.as_u64()?,
                completion_tokens: usage.get(completion_key)?.as_u64()?,
                ..Tokens::default()
            },
            estimated: false,
            billed_usd: None,
        })
    }

    /// [`TokenUsage::reported`], with the cached part of the prompt read at `cached` (a JSON
    /// pointer; 0 when the server reports none): OpenAI's counts under either API's names
    /// (docs/design/llm.md#responses-api), whose input includes the cached tokens.
    pub(crate) fn reported_with_cache(
        usage: &Value,
        prompt_key: &str,
        completion_key: &str,
        cached: &str,
    ) -> Option<TokenUsage> {
        let cached = usage.pointer(cached).and_then(Value::as_u64).unwrap_or(0);
        let mut u = TokenUsage::reported(usage, prompt_key, completion_key)?;
        u.tokens.cached_tokens = cached.min(u.tokens.prompt_tokens);
        Some(u)
    }

    /// These counts with what a gateway billed for the call (the transport reads it).
    pub(crate) fn billed(self, usd: Option<f64>) -> TokenUsage {
        TokenUsage {
            billed_usd: usd,
            ..self
        }
    }

    /// The counts in the exchange log's and the cassettes' shape (`model::Tokens`).
    pub(crate) fn to_json(self) -> Value {
        serde_json::to_value(self.tokens).expect("token counts serialise")
    }

    /// Read back what [`TokenUsage::to_json`] wrote (the exchange log, on resume).
    pub(crate) fn from_json(usage: &Value) -> Option<TokenUsage> {
        let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        let mut u = TokenUsage::reported(usage, "prompt_tokens", "completion_tokens")?;
        u.tokens.cached_tokens = count("cached_tokens");
        u.tokens.cache_creation_tokens = count("cache_creation_tokens");
        Some(u)
    }
}

/// A successful call.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The model's raw text (for a forced tool call, the tool input serialised as JSON).
    pub text: String,
    /// With `expect`: the tolerant-parsed JSON value (fences stripped, outermost object,
    /// trailing commas dropped). NOT yet validated against the schema: see `crate::schema::validate`.
    /// `Err` carries a message that can be sent back to the model on a retry.
    pub json: Option<Result<Value, NoJson>>,
    pub usage: TokenUsage,
    pub duration_ms: u64,
    /// HTTP attempts this call took (1 when no transport retry happened).
    pub attempts: u32,
    /// The model stopped at `max_tokens` (OpenAI `finish_reason: length`, Anthropic
    /// `stop_reason: max_tokens`): the text is the head of a longer answer.
    pub truncated: bool,
}

/// How a reply cut at `max_tokens` that is not complete JSON is reported, to the user (in
/// `last_error`) and to the model (in the retry's correction).
pub const CUT_OFF: &str = "cut off at max_tokens";

/// Why a reply that should hold a JSON answer holds none. Whether it was cut off is a fact the
/// client knows (the provider's stop reason), so it is a variant here, not a text to search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoJson {
    /// The model stopped at `max_tokens` (the limit, when one was set) before the object was
    /// complete.
    CutOff(Option<u32>),
    /// The server stopped the reply before `max_tokens`, after `reply` tokens of a prompt of
    /// `prompt`: its context window was full (a local server's small context), so a larger
    /// `max_tokens` would not help.
    WindowFull { reply: u64, prompt: u64, limit: u32 },
    /// The text is not valid JSON: the parser's words.
    Invalid(String),
    /// No JSON object in the reply at all.
    Missing,
}

impl std::fmt::Display for NoJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoJson::CutOff(limit) => {
                let limit = limit.map(|n| format!(" ({n} tokens)")).unwrap_or_default();
                write!(
                    f,
                    "{CUT_OFF}{limit} before the JSON object was complete: raise --max-tokens, or answer more briefly"
                )
            }
            NoJson::WindowFull {
                reply,
                prompt,
                limit,
            } => write!(
                f,
                "cut off by the server's context window after {reply} of the {limit} reply tokens allowed (the prompt took {prompt}) before the JSON object was complete: give the model a larger context (Ollama: OLLAMA_CONTEXT_LENGTH or num_ctx; llama.cpp: --ctx-size) or send less (--max-context-chars, fewer documents)"
            ),
            NoJson::Invalid(e) => f.write_str(e),
            NoJson::Missing => f.write_str("the reply carried no JSON object"),
        }
    }
}

impl NoJson {
    /// What the reply was, after "the reply was" / "it was": cut off, or not valid JSON.
    pub(crate) fn what(&self) -> String {
        match self {
            NoJson::CutOff(_) | NoJson::WindowFull { .. } => self.to_string(),
            _ => format!("not valid JSON ({self})"),
        }
    }

    /// The same for the report's reader (docs/design/report.md#report: no instruction meant for a model).
    pub(crate) fn for_reader(&self) -> &'static str {
        match self {
            NoJson::CutOff(_) => "it was cut off at the token limit",
            NoJson::WindowFull { .. } => "it was cut off by the model's context window",
            _ => "it was not valid JSON",
        }
    }
}

/// Why a call failed, after the transport's retries were spent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// 401/403, model not found, other non-retryable 4xx, missing key, broken cassette:
    /// the program fails fast (exit 1) with this message.
    #[error("{0}")]
    Fatal(String),
    /// A cassette that does not answer this meeting: fatal, and not fixed by resuming.
    #[error("{0}")]
    OutOfStep(String),
    /// 429/5xx/timeouts/dropped connections after retries, context-length errors, empty
    /// replies: the meeting absorbs it (agent error turn, failed PM round); the ask loop never
    /// sends the same request again (docs/design/failure-policy.md#ask-loop).
    #[error("{message}")]
    Transient {
        message: String,
        attempts: u32,
        duration_ms: u64,
    },
}
