//! The LLM layer (DESIGN.md#llm-layer): one interface for the rest of the code, several
//! providers behind it.
//!
//! Callers build a [`Request`] (system prompt, messages, optional expected JSON schema) and
//! [`Options`] (model, temperature, ...), and call [`Client::call`]. They never see provider
//! differences. Every *attempt* (including transport retries) takes the next global call
//! number, which is the board's `usage.calls`, so replay cassettes stay in step across the
//! separate processes of one meeting.
//!
//! The stages reach it through the ask loop (`crate::ask`), which validates answers; this layer
//! imports nothing above it (only the documents, errors and file reading it needs).
//!
//! Modules: `transport` (ureq, timeouts, error bodies), `openai` / `anthropic` (wire formats),
//! `replay` (cassettes, `--record`), `resume` (answers from an earlier run's log), `parse`
//! (tolerant JSON), `args` (flags and resolution).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::model::Tokens;
use serde_json::{json, Value};

pub mod anthropic;
pub mod args;
mod notation;
pub mod openai;
pub mod parse;
pub mod replay;
pub mod resolve;
pub mod resume;
pub mod transport;

pub use args::{client_for, client_for_caller, ConfigDefaults, LlmArgs};
pub use parse::parse_json_reply;
pub use resolve::{resolve, ProviderName, Resolved, Setting, Source};
pub use transport::Timeouts;

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
    /// `cache_control` (DESIGN.md#prompt-layout).
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

/// The `max_tokens` a caller sends when neither agent metadata, the board's defaults nor
/// `--max-tokens` set one (DESIGN.md#llm-layer). Without a limit a local server generates
/// until its context window is full; these leave room for a complete answer of each kind.
pub mod default_max_tokens {
    /// An agent turn: a short response, three short lists and a few citations with quotes.
    pub const AGENT_TURN: u32 = 1200;
    /// A PM round: usually a routing decision, but a normal-mode FINISH carries the report.
    pub const PM_STEP: u32 = 1500;
    /// The PM's closing round (forced finish): always the whole final report.
    pub const PM_CLOSING: u32 = 2000;
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

/// Token counts of one call (DESIGN.md#llm-layer). `prompt_tokens` is every input token the
/// model read, cached or not, for every provider, so totals and the budget compare across
/// providers: OpenAI's `prompt_tokens` as reported (it includes `cached_tokens`); Anthropic's
/// `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens` (its
/// `input_tokens` counts only the uncached rest).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// The counts, in the meeting's terms (`model::Tokens`).
    pub tokens: Tokens,
    /// The server returned no usage; counts were estimated from characters.
    pub estimated: bool,
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
        })
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
            NoJson::Invalid(e) => f.write_str(e),
            NoJson::Missing => f.write_str("the reply carried no JSON object"),
        }
    }
}

impl NoJson {
    /// What the reply was, after "the reply was" / "it was": cut off, or not valid JSON.
    pub(crate) fn what(&self) -> String {
        match self {
            NoJson::CutOff(_) => self.to_string(),
            _ => format!("not valid JSON ({self})"),
        }
    }

    /// The same for the report's reader (DESIGN.md#report: no instruction meant for a model).
    pub(crate) fn for_reader(&self) -> &'static str {
        match self {
            NoJson::CutOff(_) => "it was cut off at the token limit",
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
    /// 429/5xx/timeouts/dropped connections after retries, context-length errors, empty
    /// replies: the meeting absorbs it (agent error turn, failed PM round); the ask loop never
    /// sends the same request again (DESIGN.md#ask-loop).
    #[error("{message}")]
    Transient {
        message: String,
        attempts: u32,
        duration_ms: u64,
    },
}

/// What one HTTP attempt (or one cassette line) gave back.
#[derive(Debug, Clone, PartialEq)]
pub struct RawReply {
    pub text: String,
    /// `None` when the server sent no usage.
    pub usage: Option<TokenUsage>,
    /// The model stopped at `max_tokens` (see [`Reply::truncated`]).
    pub truncated: bool,
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
    /// Connection reset/closed mid-body, non-JSON body.
    Network(String),
    /// No connection at all (refused, unknown host): retried, and when the attempts are
    /// spent the provider is unreachable — a runtime failure (exit 1), not a meeting event.
    Unreachable(String),
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
    /// The provider this one wraps (`--record`, resume from the log), which answers the
    /// questions below for it.
    fn wrapped(&self) -> Option<&dyn Provider> {
        None
    }
    /// Whether answers come from a cassette rather than a live model.
    fn replayed(&self) -> bool {
        self.wrapped().is_some_and(|p| p.replayed())
    }
    /// A label for people reading the report: the cassette line's `note` when replayed.
    fn note(&self) -> Option<String> {
        self.wrapped().and_then(|p| p.note())
    }
    /// Whether the last attempt was answered from an earlier run's log rather than asked
    /// (such attempts are not logged again).
    fn last_was_reused(&self) -> bool {
        false
    }
    /// Whether the server is on this machine (a loopback base URL). A local server that times
    /// out is busy generating, not unreachable: it gets one retry at most, not `--max-attempts`.
    fn is_local(&self) -> bool {
        self.wrapped().is_some_and(|p| p.is_local())
    }
    /// The system message exactly as this provider sends it for `req` (with the schema in
    /// words when native structured output is off), for the exchange log.
    fn system_text(&self, req: &Request) -> String {
        match self.wrapped() {
            Some(p) => p.system_text(req),
            None => req.system.clone(),
        }
    }
    /// Whether this provider appends the expected schema to the system message (native
    /// structured output off): the stages then leave out their field guide, so the format is
    /// said once (DESIGN.md#prompt-layout).
    fn schema_in_prompt(&self) -> bool {
        self.wrapped().is_some_and(|p| p.schema_in_prompt())
    }
}

/// Attempts a local server gets after a read timeout: the first and one retry.
const LOCAL_TIMEOUT_ATTEMPTS: u32 = 2;

/// How the [`Client`] retries failed attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per logical call, the first included (at least 1).
    pub max_attempts: u32,
    /// Backoff before the 2nd attempt; doubles each time, plus up to 50% jitter.
    pub base_delay: Duration,
    /// Cap on any single wait, including a server's `Retry-After`.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// No waiting at all: replay, where faults are simulated.
    pub fn immediate(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
        }
    }

    /// The wait after failed attempt number `attempt` (1-based).
    pub(crate) fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(ra) = retry_after {
            return ra.min(self.max_delay);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << (attempt.saturating_sub(1)).min(16));
        let jitter = exp.mul_f64(fastrand::f64() * 0.5);
        (exp + jitter).min(self.max_delay)
    }
}

/// The interface the stages use: retries, tolerant parsing, usage and the call counter.
pub struct Client {
    provider: Box<dyn Provider>,
    calls: u64,
    policy: RetryPolicy,
    log: Option<PathBuf>,
    /// One call of a fan-out (DESIGN.md#fan-out): `(base, index, of)`; `calls` then counts this
    /// client's attempts and attempt k (1-based) has call number `base + (k-1)*of + index + 1`.
    fan_out: Option<(u64, u64, u64)>,
    /// Every wait between two attempts, in order (see [`Client::waits`]).
    waits: Vec<Duration>,
}

impl Client {
    /// `calls` is the board's `usage.calls` before this stage's first call. A bare client
    /// makes ONE attempt per call (what scripted test fakes expect); [`client_for`] sets the
    /// retry policy from the flags (`--max-attempts`, backoff; no waiting in replay).
    pub fn new(provider: Box<dyn Provider>, calls: u64) -> Client {
        Client {
            provider,
            calls,
            policy: RetryPolicy::immediate(1),
            log: None,
            fan_out: None,
            waits: Vec::new(),
        }
    }

    /// Number this client's attempts as call `index` (0-based) of a fan-out of `of` calls that
    /// starts after call number `base` (DESIGN.md#fan-out): every call's numbers are fixed
    /// before any is sent, whatever order the answers arrive in — without retries the calls
    /// take `base+1 ..= base+of` in call order, the numbers a sequential meeting would give
    /// them. [`Client::calls`] then counts this client's attempts (from 0) and
    /// [`Client::last_seq`] is the highest number it used.
    pub fn in_fan_out(mut self, base: u64, index: u64, of: u64) -> Client {
        self.fan_out = Some((base, index, of.max(1)));
        self.calls = 0;
        self
    }

    /// The call number of attempt `k` (1-based counter value).
    fn seq_of(&self, k: u64) -> u64 {
        match self.fan_out {
            None => k,
            Some((base, index, of)) => base + (k - 1) * of + index + 1,
        }
    }

    /// The highest call number this client used (the counter itself outside a fan-out; the
    /// fan-out's base when a fan-out client made no attempt).
    pub fn last_seq(&self) -> u64 {
        match self.fan_out {
            Some((base, _, _)) if self.calls == 0 => base,
            _ => self.seq_of(self.calls),
        }
    }

    pub fn with_policy(mut self, policy: RetryPolicy) -> Client {
        self.policy = RetryPolicy {
            max_attempts: policy.max_attempts.max(1),
            ..policy
        };
        self
    }

    /// Append every attempt (full prompt, raw response or error, usage) to this JSONL file.
    pub fn with_log(mut self, path: Option<PathBuf>) -> Client {
        self.log = path;
        self
    }

    pub fn policy(&self) -> RetryPolicy {
        self.policy
    }

    /// The global call counter after the calls made so far (write it back to the board).
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The waits this client made between attempts so far, in order: backoff, or a server's
    /// `Retry-After` capped by the policy; none after the last attempt. Recorded so that a
    /// test can read the retry policy's decisions instead of timing them.
    pub fn waits(&self) -> &[Duration] {
        &self.waits
    }

    /// See [`Provider::schema_in_prompt`].
    pub fn schema_in_prompt(&self) -> bool {
        self.provider.schema_in_prompt()
    }

    pub fn provider_name(&self) -> &str {
        self.provider.name()
    }

    /// See [`Provider::replayed`] and [`Provider::note`].
    pub fn replayed(&self) -> bool {
        self.provider.replayed()
    }
    pub fn note(&self) -> Option<String> {
        self.provider.note()
    }

    /// One logical call: attempts with retries on 429/5xx/timeouts/network errors, then
    /// tolerant parsing when `req.expect` is set. Every attempt takes the next call number.
    pub fn call(&mut self, req: &Request, opts: &Options) -> Result<Reply, LlmError> {
        let start = Instant::now();
        let name = self.provider.name().to_string();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            self.calls += 1;
            let seq = self.seq_of(self.calls);
            let t0 = Instant::now();
            let result = self.provider.attempt(seq, req, opts);
            let attempt_ms = t0.elapsed().as_millis() as u64;
            self.log_attempt(seq, attempt, req, opts, &result, attempt_ms);
            let elapsed = || start.elapsed().as_millis() as u64;
            let mut last_attempt = self.policy.max_attempts;
            let (message, retry_after) = match result {
                Ok(raw) => {
                    if req.expect.is_none() && raw.text.trim().is_empty() {
                        return Err(LlmError::Transient {
                            message: format!("{name}: the model returned an empty reply"),
                            attempts: attempt,
                            duration_ms: elapsed(),
                        });
                    }
                    let usage = raw.usage.unwrap_or_else(|| estimate_usage(req, &raw.text));
                    let json = req.expect.as_ref().map(|_| {
                        parse::parse_json_reply(&raw.text).map_err(|e| {
                            if raw.truncated {
                                NoJson::CutOff(opts.max_tokens)
                            } else {
                                NoJson::Invalid(e)
                            }
                        })
                    });
                    return Ok(Reply {
                        text: raw.text,
                        json,
                        usage,
                        duration_ms: elapsed(),
                        attempts: attempt,
                        truncated: raw.truncated,
                    });
                }
                Err(AttemptError::Fatal(m)) => return Err(LlmError::Fatal(format!("{name}: {m}"))),
                Err(AttemptError::Http {
                    status,
                    message,
                    retry_after,
                }) => {
                    let text = format!("{name}: HTTP {status}: {message}");
                    if status == 408 || status == 429 || status >= 500 {
                        (text, retry_after)
                    } else if transport::is_context_length(status, &message) {
                        return Err(LlmError::Transient {
                            message: text,
                            attempts: attempt,
                            duration_ms: elapsed(),
                        });
                    } else {
                        return Err(LlmError::Fatal(text));
                    }
                }
                Err(AttemptError::Timeout(m)) => {
                    // A local server that timed out is busy generating: one retry at most.
                    if self.provider.is_local() {
                        last_attempt = last_attempt.min(LOCAL_TIMEOUT_ATTEMPTS);
                    }
                    (format!("{name}: timeout: {m}"), None)
                }
                Err(AttemptError::Network(m)) => (format!("{name}: network error: {m}"), None),
                Err(AttemptError::Unreachable(m)) => {
                    if attempt >= self.policy.max_attempts {
                        return Err(LlmError::Fatal(format!(
                            "{name}: provider unreachable: {m} (gave up after {attempt} attempts; check OPENAI_BASE_URL / ANTHROPIC_BASE_URL and the network)"
                        )));
                    }
                    (format!("{name}: unreachable: {m}"), None)
                }
            };
            if attempt >= last_attempt {
                let ms = elapsed();
                return Err(LlmError::Transient {
                    message: format!("{message} (gave up after {attempt} attempts, {ms} ms)"),
                    attempts: attempt,
                    duration_ms: ms,
                });
            }
            let wait = self.policy.delay(attempt, retry_after);
            self.waits.push(wait);
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
        }
    }

    fn log_attempt(
        &self,
        seq: u64,
        attempt: u32,
        req: &Request,
        opts: &Options,
        result: &Result<RawReply, AttemptError>,
        duration_ms: u64,
    ) {
        let Some(path) = &self.log else { return };
        if self.provider.last_was_reused() {
            return;
        }
        let line = exchange_line(
            self.provider.as_ref(),
            seq,
            attempt,
            req,
            opts,
            result,
            duration_ms,
        );
        // A model's answer is what a crash must not lose: it is paid for, and every board is
        // derived from it (DESIGN.md#resume). A replayed one is in its cassette already, and a
        // failed attempt is asked again anyway.
        let paid = result.is_ok() && !self.provider.replayed();
        if let Err(e) = replay::append_line(path, &line.to_string(), paid) {
            crate::stage_warning!(
                "llm: warning: cannot write the exchange log {}: {}",
                path.display(),
                crate::io::os_error(&e)
            );
        }
    }
}

/// One line of the exchange log: everything needed to see what the model was asked and said.
/// Requests never carry credentials, so neither does this.
fn exchange_line(
    provider: &dyn Provider,
    seq: u64,
    attempt: u32,
    req: &Request,
    opts: &Options,
    result: &Result<RawReply, AttemptError>,
    duration_ms: u64,
) -> Value {
    let ts_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let messages: Vec<Value> = req.messages.iter().map(Message::to_json).collect();
    let (response, usage, error, truncated) = match result {
        Ok(raw) => (
            Some(raw.text.clone()),
            raw.usage.map(TokenUsage::to_json),
            None,
            raw.truncated,
        ),
        Err(e) => (None, None, Some(attempt_error_text(e)), false),
    };
    json!({
        "ts_ms": ts_ms,
        "seq": seq,
        "attempt": attempt,
        "caller": req.caller,
        "provider": provider.name(),
        "model": opts.model,
        "temperature": opts.temperature,
        "max_tokens": opts.max_tokens,
        // As sent: with the schema in words when the provider describes it in the prompt.
        "system": provider.system_text(req),
        "messages": messages,
        "schema": req.expect.as_ref().map(|e| json!({"name": e.name, "schema": e.schema})),
        "response": response,
        "truncated": truncated,
        "error": error,
        "usage": usage,
        "duration_ms": duration_ms,
    })
}

fn attempt_error_text(e: &AttemptError) -> String {
    match e {
        AttemptError::Http {
            status, message, ..
        } => format!("HTTP {status}: {message}"),
        AttemptError::Timeout(m) => format!("timeout: {m}"),
        AttemptError::Network(m) => format!("network error: {m}"),
        AttemptError::Unreachable(m) => format!("unreachable: {m}"),
        AttemptError::Fatal(m) => m.clone(),
    }
}

/// About four characters per token: good enough for budgets when the server sends no usage.
pub(crate) fn estimate_usage(req: &Request, reply: &str) -> TokenUsage {
    let mut prompt_chars = req.system.chars().count();
    prompt_chars += req
        .messages
        .iter()
        .map(|m| m.content.chars().count())
        .sum::<usize>();
    if let Some(e) = &req.expect {
        prompt_chars += e.schema.to_string().chars().count();
    }
    let est = |n: usize| n.div_ceil(4) as u64;
    TokenUsage {
        tokens: Tokens {
            prompt_tokens: est(prompt_chars),
            completion_tokens: est(reply.chars().count()),
            ..Tokens::default()
        },
        estimated: true,
    }
}

/// A name OpenAI and Anthropic accept for a schema or tool: `[A-Za-z0-9_-]{1,64}`.
pub(crate) fn schema_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if s.is_empty() {
        "answer".to_string()
    } else {
        s
    }
}

/// The schema without `$schema` / `$id`, which some servers refuse in tool or format schemas.
pub(crate) fn without_meta_keys(schema: &Value) -> Value {
    let mut s = schema.clone();
    if let Some(m) = s.as_object_mut() {
        m.remove("$schema");
        m.remove("$id");
    }
    s
}

/// The system message as sent: `req.system`, plus the expected schema in words when it is
/// not sent natively (`describe_schema`). Both the request body and the exchange log use it.
pub(crate) fn system_text(req: &Request, describe_schema: bool) -> String {
    let mut system = req.system.clone();
    if let (Some(expect), true) = (&req.expect, describe_schema) {
        system.push_str(&schema_in_words(&without_meta_keys(&expect.schema)));
    }
    system
}

/// The schema spelled out in the system prompt, for servers without native structured output:
/// one compact block, the one place the format is stated in full, as a type where the notation
/// says all of it (`notation`), else as the JSON Schema on one line.
pub(crate) fn schema_in_words(schema: &Value) -> String {
    match notation::type_notation(schema) {
        Some(t) => format!("\n{SCHEMA_BLOCK_HEAD} this type:\n{t}"),
        None => format!("\n{SCHEMA_BLOCK_HEAD} this JSON Schema:\n{schema}"),
    }
}

/// The words that open the schema block (tests count them: at most one per request). The
/// system message it follows already asks for one JSON object only (the meeting's, the
/// builder's), so the head says only what the block is.
pub const SCHEMA_BLOCK_HEAD: &str = "The JSON object must match";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
        };
        let d1 = p.delay(1, None);
        assert!(
            d1 >= Duration::from_millis(100) && d1 <= Duration::from_millis(150),
            "{d1:?}"
        );
        let d2 = p.delay(2, None);
        assert!(
            d2 >= Duration::from_millis(200) && d2 <= Duration::from_millis(300),
            "{d2:?}"
        );
        assert_eq!(p.delay(4, None), Duration::from_millis(350));
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(60))),
            Duration::from_millis(350)
        );
        assert_eq!(p.delay(1, Some(Duration::ZERO)), Duration::ZERO);
    }

    /// Records the call number of every attempt; fails all but every third with a 503.
    struct Seqs(std::rc::Rc<std::cell::RefCell<Vec<u64>>>);

    impl Provider for Seqs {
        fn name(&self) -> &str {
            "seqs"
        }
        fn attempt(
            &mut self,
            seq: u64,
            _: &Request,
            _: &Options,
        ) -> Result<RawReply, AttemptError> {
            self.0.borrow_mut().push(seq);
            Err(AttemptError::Http {
                status: 503,
                message: "busy".into(),
                retry_after: None,
            })
        }
    }

    /// A fan-out client's attempts take `base + k*of + index + 1` (DESIGN.md#fan-out), transport
    /// retries included; `calls()` counts its own attempts and `last_seq()` the highest number.
    #[test]
    fn fan_out_call_numbers_are_fixed_in_advance() {
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut c = Client::new(Box::new(Seqs(seen.clone())), 99)
            .with_policy(RetryPolicy::immediate(3))
            .in_fan_out(10, 1, 3);
        assert_eq!((c.calls(), c.last_seq()), (0, 10), "nothing used yet");
        let req = Request {
            caller: "a".into(),
            system: String::new(),
            messages: vec![],
            expect: None,
        };
        let opts = Options {
            model: "m".into(),
            temperature: None,
            max_tokens: None,
        };
        assert!(c.call(&req, &opts).is_err());
        assert_eq!(*seen.borrow(), [12, 15, 18]);
        assert_eq!((c.calls(), c.last_seq()), (3, 18));
        let mut plain = Client::new(Box::new(Seqs(seen.clone())), 4);
        assert!(plain.call(&req, &opts).is_err());
        assert_eq!((plain.calls(), plain.last_seq()), (5, 5));
    }

    /// Fails every attempt with the same error, counting the attempts.
    struct Always(AttemptError, std::rc::Rc<std::cell::Cell<u32>>);

    impl Provider for Always {
        fn name(&self) -> &str {
            "always"
        }
        fn attempt(&mut self, _: u64, _: &Request, _: &Options) -> Result<RawReply, AttemptError> {
            self.1.set(self.1.get() + 1);
            Err(self.0.clone())
        }
    }

    /// A 429 on the last attempt gives up at once: waiting out its Retry-After would only
    /// delay the failure (DESIGN.md#failure-policy). Earlier waits honour Retry-After, capped.
    #[test]
    fn retry_after_is_capped_and_the_last_attempt_does_not_wait() {
        let rate_limited = |secs| AttemptError::Http {
            status: 429,
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(secs)),
        };
        let req = Request {
            caller: "pm".into(),
            system: String::new(),
            messages: vec![Message::user("q")],
            expect: None,
        };
        let opts = Options {
            model: "m".into(),
            temperature: None,
            max_tokens: None,
        };
        // (attempts, Retry-After in seconds, the policy's cap, the waits made)
        let cases = [
            (1, 2, Duration::from_secs(30), vec![]),
            (
                2,
                60,
                Duration::from_millis(50),
                vec![Duration::from_millis(50)],
            ),
            (
                3,
                60,
                Duration::from_millis(5),
                vec![Duration::from_millis(5); 2],
            ),
        ];
        for (max_attempts, retry_after, max_delay, waits) in cases {
            let n = std::rc::Rc::new(std::cell::Cell::new(0));
            let provider = Always(rate_limited(retry_after), n.clone());
            let mut client = Client::new(Box::new(provider), 0).with_policy(RetryPolicy {
                max_attempts,
                base_delay: Duration::from_millis(1),
                max_delay,
            });
            let e = client.call(&req, &opts).unwrap_err();
            assert!(
                matches!(e, LlmError::Transient { attempts, .. } if attempts == max_attempts),
                "{e:?}"
            );
            assert_eq!(n.get(), max_attempts);
            assert_eq!(client.waits(), waits, "{max_attempts} attempts");
        }
    }

    #[test]
    fn estimate_is_chars_over_four() {
        let req = Request {
            caller: "pm".into(),
            system: "abcd".into(),
            messages: vec![Message::user("efgh1")],
            expect: None,
        };
        let u = estimate_usage(&req, "123456789");
        assert_eq!(
            (
                u.tokens.prompt_tokens,
                u.tokens.completion_tokens,
                u.estimated
            ),
            (3, 3, true)
        );
    }
}
