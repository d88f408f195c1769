//! One backend behind the [`Client`](super::Client) (docs/design/llm.md#llm-layer): the [`Provider`]
//! trait, what one attempt gives back ([`RawReply`]) and why it failed ([`AttemptError`]).

use super::{Options, Request, TokenUsage};

/// What one HTTP attempt (or one cassette line) gave back.
#[derive(Debug, Clone, PartialEq)]
pub struct RawReply {
    pub text: String,
    /// `None` when the server sent no usage.
    pub usage: Option<TokenUsage>,
    /// The model stopped at `max_tokens` (see [`Reply::truncated`](super::Reply::truncated)).
    pub truncated: bool,
}

/// Why one attempt failed; the [`Client`](super::Client) decides whether to retry.
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
    /// out is busy generating, not unreachable: it is not retried, and the call fails for good
    /// (docs/design/failure-policy.md#local-servers).
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
    /// said once (docs/design/prompts.md#prompt-layout).
    fn schema_in_prompt(&self) -> bool {
        self.wrapped().is_some_and(|p| p.schema_in_prompt())
    }
}
