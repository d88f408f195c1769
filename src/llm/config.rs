//! The LLM configuration a program runs with (docs/design/llm.md#llm-layer): the library's own
//! type, settled at the edge from the flags (`cli::flags::LlmConfig`), the environment and the
//! config file, and kept in a run's `meeting.json`. What a caller gets from it is
//! [`super::resolve`]'s; building its client is [`super::build`]'s.

use std::path::PathBuf;

use crate::model::LlmSettings;

/// Seconds `--read-timeout` waits when not given (a local server's default is
/// [`super::resolve::local_default`]).
pub const DEFAULT_READ_TIMEOUT: f64 = 120.0;

/// The defaults, named once for the flags (`cli::flags`) and for [`LlmConfig::default`].
pub mod default {
    pub const CONNECT_TIMEOUT: f64 = 10.0;
    pub const MAX_ATTEMPTS: u32 = 3;
    pub const RETRY_BASE_MS: u64 = 500;
    pub const RETRY_MAX_SECS: f64 = 30.0;
}

/// The LLM settings of pm-step, agent-turn, agent-builder and meeting, kept in a run's
/// `meeting.json` (no secrets: keys stay in the environment). Each field is the flag of its
/// name (`cli::flags::LlmConfig`, whose help says what it does).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Provider: openai, anthropic, azure, ollama, gemini, replay or sample (default: from the board or
    /// agent metadata, else whichever of OPENAI_API_KEY / ANTHROPIC_API_KEY is set). `ollama`
    /// is Ollama's own API at OLLAMA_HOST, with a context sized to each prompt. `replay` and
    /// `sample` override everything; `sample` calls no model: the program answers from the
    /// meeting's own documents and questions, every answer marked [sample] (try a meeting with no
    /// key).
    pub provider: Option<String>,
    /// Model name (agent metadata and the board's defaults win over this)
    pub model: Option<String>,
    /// Sampling temperature (agent metadata and the board's defaults win over this)
    pub temperature: Option<f64>,
    /// Maximum tokens of a reply (default per call: agent turn 1200, PM step 1500, the PM's
    /// closing round 2000, agent-builder 2500; agent metadata and the board's defaults win over
    /// this)
    pub max_tokens: Option<u32>,
    /// Cassette to answer from with --provider replay
    pub cassette: Option<PathBuf>,
    /// Append every exchange with the real provider to this cassette (not with sample or replay)
    pub record: Option<PathBuf>,
    /// In replay, fail when a request differs from the recorded one (default: warn)
    pub strict_replay: bool,
    /// Do not use the provider's native structured output; describe the schema in the prompt
    pub no_native_schema: bool,
    /// Send no response_format at all (OpenAI-compatible servers that reject it); implies
    /// --no-native-schema
    pub no_response_format: bool,
    /// Which OpenAI API the openai and azure providers call (azure: chat unless told)
    // A run folder saved before this flag existed resumes as it ran: on auto.
    #[serde(default)]
    pub openai_api: OpenAiApi,
    /// An extra HTTP header on every request, 'Name: value' (repeatable; a gateway's key as
    /// 'X-Key: ${VAR}' is read from the environment, so it stays off the command line). Values
    /// are never shown; AGENT_MEETING_HEADERS holds one header per line
    #[serde(skip)]
    pub headers: Vec<String>,
    /// Seconds to wait for a connection
    pub connect_timeout: f64,
    /// Seconds to wait for the response (head, then body) [default: 120; 600 for a local
    /// server]
    pub read_timeout: Option<f64>,
    /// Attempts per call on 429, 5xx, timeouts and network errors
    pub max_attempts: u32,
    /// Most requests in flight to one provider across every meeting that sets it (a batch, a
    /// fan-out): each takes one of N slots (lock files in AGENT_MEETING_PACE_DIR), and a 429 or
    /// 503 seen by one makes all of them wait
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,
    /// Append every call's full prompt and raw response to this JSONL file
    pub llm_log: Option<PathBuf>,
    /// Milliseconds of the first retry backoff (doubles each retry)
    pub retry_base_ms: u64,
    /// Longest wait in seconds before a retry: backoff is capped by it, a provider's
    /// Retry-After up to it is honoured, and one above it fails the call at once
    pub retry_max_secs: f64,
    /// Answer call numbers that already completed from the --llm-log file instead of asking the
    /// provider again (the `meeting` driver sets this so a resumed meeting repeats no call)
    pub reuse_log: bool,
    /// The user's config file's LLM settings, below the flags and the environment; filled by
    /// the programs (the LLM layer reads no file of its own).
    #[serde(skip)]
    pub config: ConfigDefaults,
    /// The environment variables that gave these flags their values (`AGENT_MEETING_MODEL`,
    /// ...), filled by the programs that name sources (`meeting`): a setting's source names
    /// the variable, not the flag.
    #[serde(skip)]
    pub from_env: Vec<String>,
}

/// `--openai-api`: which OpenAI API a caller's requests take (docs/design/llm.md#responses-api);
/// [`super::resolve::openai_api`] settles `auto`. The variants' doc comments are the flag's
/// help (`cli::flags::OpenAiApiArg`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpenAiApi {
    /// The Responses API for a model the price table lists only there (gpt-5-pro, the -codex
    /// models), else chat
    #[default]
    Auto,
    /// Chat Completions
    Chat,
    /// The Responses API
    Responses,
}

/// The LLM settings of the user's config file (docs/design/agents-and-config.md#config).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigDefaults {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Model per caller (`pm` or an agent's name).
    pub models: std::collections::BTreeMap<String, String>,
    pub openai_base_url: Option<String>,
    pub anthropic_base_url: Option<String>,
    pub ollama_base_url: Option<String>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            provider: None,
            model: None,
            temperature: None,
            max_tokens: None,
            cassette: None,
            record: None,
            strict_replay: false,
            no_native_schema: false,
            no_response_format: false,
            openai_api: OpenAiApi::Auto,
            headers: Vec::new(),
            connect_timeout: default::CONNECT_TIMEOUT,
            read_timeout: None,
            max_attempts: default::MAX_ATTEMPTS,
            max_in_flight: None,
            llm_log: None,
            retry_base_ms: default::RETRY_BASE_MS,
            retry_max_secs: default::RETRY_MAX_SECS,
            reuse_log: false,
            config: ConfigDefaults::default(),
            from_env: Vec::new(),
        }
    }
}

impl LlmSettings {
    /// The meeting's defaults as `meeting` puts them on its board: its LLM settings.
    pub fn from_config(args: &LlmConfig) -> LlmSettings {
        LlmSettings {
            provider: args.provider.clone().unwrap_or_default(),
            model: args.model.clone(),
            temperature: args.temperature,
            max_tokens: args.max_tokens,
        }
    }
}
