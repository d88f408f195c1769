//! One backend behind the [`Client`](super::Client) (docs/design/llm.md#llm-layer): the [`Provider`]
//! trait, what one attempt gives back ([`RawReply`]) and why it failed ([`AttemptError`]).

use std::fmt;

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
    /// Not retryable and not the model's fault (missing key, an unwritable recording).
    Fatal(String),
    /// A cassette that does not answer this meeting (out of step, too short): fatal, and
    /// resuming the meeting would meet it again.
    OutOfStep(String),
    /// A person's provider had no one there to answer: nothing was asked, so nothing is
    /// logged; the call fails like `Fatal`, and the person's turn waits
    /// (docs/design/agent-turn.md#waiting-for-a-person).
    NoOneThere(String),
}

/// One backend: OpenAI, Anthropic, replay, or a test fake. `seq` is the global call number of
/// this attempt (1-based: the board's `usage.calls` + 1 for the first call of a stage).
pub trait Provider {
    /// `openai`, `anthropic`, `ollama`, `replay`, ... used in error messages.
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
    /// Whether the prompt counts of its replies are a live server's own, which the client
    /// checks for a prompt the server cut (docs/design/llm.md#truncation); a replayed or made
    /// answer carries whatever counts it was given.
    fn counts_prompts(&self) -> bool {
        self.wrapped().is_some_and(|p| p.counts_prompts()) && !self.replayed()
    }
    /// Whether this provider appends the expected schema to the system message (native
    /// structured output off): the stages then leave out their field guide, so the format is
    /// said once (docs/design/prompts.md#prompt-layout).
    fn schema_in_prompt(&self) -> bool {
        self.wrapped().is_some_and(|p| p.schema_in_prompt())
    }
}

/// The providers a caller may name (`--provider`, `metadata.provider`, the config file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderName {
    OpenAi,
    Anthropic,
    /// Azure OpenAI: OpenAI's wire format on a deployment path (docs/design/llm.md#azure).
    Azure,
    /// Ollama's native chat API, which takes a context size per request (docs/design/llm.md#ollama).
    Ollama,
    /// Google's Gemini API on its OpenAI-compatible endpoint, its schemas in the subset Gemini
    /// takes (docs/design/llm.md#gemini).
    Gemini,
    Replay,
    /// Answers made by the program from the request, no model (docs/design/llm.md#sample-provider).
    Sample,
}

impl ProviderName {
    pub const ALL: [ProviderName; 7] = [
        ProviderName::OpenAi,
        ProviderName::Anthropic,
        ProviderName::Azure,
        ProviderName::Ollama,
        ProviderName::Gemini,
        ProviderName::Replay,
        ProviderName::Sample,
    ];

    /// The name users write (lowercase).
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderName::OpenAi => "openai",
            ProviderName::Anthropic => "anthropic",
            ProviderName::Azure => "azure",
            ProviderName::Ollama => "ollama",
            ProviderName::Gemini => "gemini",
            ProviderName::Replay => "replay",
            ProviderName::Sample => "sample",
        }
    }

    /// A name as users write it: trimmed, any case.
    pub fn parse(name: &str) -> Option<ProviderName> {
        let name = name.trim();
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(name))
    }

    /// The variable holding the provider's API key (`replay` and `sample` need none; Ollama's
    /// is optional, for a hosted or proxied server: [`super::build::missing_key`]).
    pub fn key_var(self) -> Option<&'static str> {
        match self {
            ProviderName::OpenAi => Some("OPENAI_API_KEY"),
            ProviderName::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderName::Azure => Some("AZURE_OPENAI_API_KEY"),
            ProviderName::Ollama => Some(super::ollama::KEY_VAR),
            ProviderName::Gemini => Some("GEMINI_API_KEY"),
            ProviderName::Replay | ProviderName::Sample => None,
        }
    }

    /// Whether the provider's calls are paid by the token, so a price table can price them
    /// (docs/design/llm.md#prices): a replay, the sample and an Ollama model are not (a local
    /// model is paid for by its machine, a hosted Ollama by subscription).
    pub fn paid_by_token(self) -> bool {
        matches!(
            self,
            ProviderName::OpenAi
                | ProviderName::Anthropic
                | ProviderName::Azure
                | ProviderName::Gemini
        )
    }

    /// Whether no model answers: the whole meeting runs offline, so this provider, named by
    /// flag or variable, wins over every caller's metadata and the board.
    pub fn offline(self) -> bool {
        matches!(self, ProviderName::Replay | ProviderName::Sample)
    }

    /// The variable naming the provider's default model.
    pub(super) fn model_var(self) -> Option<&'static str> {
        match self {
            ProviderName::OpenAi => Some("OPENAI_MODEL"),
            ProviderName::Anthropic => Some("ANTHROPIC_MODEL"),
            ProviderName::Ollama => Some(super::ollama::MODEL_VAR),
            ProviderName::Gemini => Some("GEMINI_MODEL"),
            ProviderName::Azure | ProviderName::Replay | ProviderName::Sample => None,
        }
    }

    /// The model the provider gets when nothing names one (`replay` has none: the cassette
    /// answers; `sample` has none: the program answers; `azure` has none: the model is the
    /// user's deployment; `ollama` has none: the model is one the user pulled).
    pub fn default_model(self) -> Option<&'static str> {
        match self {
            ProviderName::OpenAi => Some(super::openai::DEFAULT_MODEL),
            ProviderName::Anthropic => Some(super::anthropic::DEFAULT_MODEL),
            ProviderName::Gemini => Some(super::openai::GEMINI_DEFAULT_MODEL),
            ProviderName::Azure
            | ProviderName::Ollama
            | ProviderName::Replay
            | ProviderName::Sample => None,
        }
    }
}

impl fmt::Display for ProviderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
