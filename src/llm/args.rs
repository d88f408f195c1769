//! The LLM flags shared by every program that calls a model (docs/design/llm.md#llm-layer): what
//! they are, their defaults, and the config file's LLM settings they carry. What a caller gets
//! from them is [`super::resolve`]'s; building its client is [`super::build`]'s.

use std::path::PathBuf;

use crate::model::LlmSettings;

/// Seconds `--read-timeout` waits when not given (a local server's default is
/// [`super::resolve::local_default`]).
pub const DEFAULT_READ_TIMEOUT: f64 = 120.0;

/// The flags' defaults, named once for clap and for [`LlmArgs::default`].
mod default {
    pub const CONNECT_TIMEOUT: f64 = 10.0;
    pub const MAX_ATTEMPTS: u32 = 3;
    pub const RETRY_BASE_MS: u64 = 500;
    pub const RETRY_MAX_SECS: f64 = 30.0;
}

/// LLM flags, flattened into pm-step, agent-turn, agent-builder and meeting, and kept in a
/// run's `meeting.json` (no secrets: keys stay in the environment).
#[derive(Debug, Clone, PartialEq, clap::Args, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmArgs {
    /// Provider: openai, anthropic, azure, ollama, gemini, replay or sample (default: from the board or
    /// agent metadata, else whichever of OPENAI_API_KEY / ANTHROPIC_API_KEY is set). `ollama`
    /// is Ollama's own API at OLLAMA_HOST, with a context sized to each prompt. `replay` and
    /// `sample` override everything; `sample` calls no model: the program answers from the
    /// meeting's own documents and questions, every answer marked [sample] (try a meeting with no
    /// key).
    #[arg(
        long,
        env = "AGENT_MEETING_PROVIDER",
        value_name = "NAME",
        value_parser = super::provider::AnyNamed::providers(),
        hide_possible_values = true,
        help_heading = "Model"
    )]
    pub provider: Option<String>,
    /// Model name (agent metadata and the board's defaults win over this)
    #[arg(
        long,
        short,
        env = "AGENT_MEETING_MODEL",
        value_name = "MODEL",
        help_heading = "Model"
    )]
    pub model: Option<String>,
    /// Sampling temperature (agent metadata and the board's defaults win over this)
    #[arg(long, value_name = "T", help_heading = "Model")]
    pub temperature: Option<f64>,
    /// Maximum tokens of a reply (default per call: agent turn 1200, PM step 1500, the PM's
    /// closing round 2000, agent-builder 2500; agent metadata and the board's defaults win over
    /// this)
    #[arg(long, value_name = "N", help_heading = "Model")]
    pub max_tokens: Option<u32>,
    /// Cassette to answer from with --provider replay
    #[arg(
        long,
        env = "MEETING_CASSETTE",
        value_name = "FILE",
        help_heading = "Model"
    )]
    pub cassette: Option<PathBuf>,
    /// Append every exchange with the real provider to this cassette (not with sample or replay)
    #[arg(long, value_name = "FILE", help_heading = "Model")]
    pub record: Option<PathBuf>,
    /// In replay, fail when a request differs from the recorded one (default: warn)
    #[arg(long, help_heading = "Model")]
    pub strict_replay: bool,
    /// Do not use the provider's native structured output; describe the schema in the prompt
    #[arg(long, help_heading = "Model")]
    pub no_native_schema: bool,
    /// Send no response_format at all (OpenAI-compatible servers that reject it); implies
    /// --no-native-schema
    #[arg(long, help_heading = "Model")]
    pub no_response_format: bool,
    /// Which OpenAI API the openai and azure providers call (azure: chat unless told)
    #[arg(
        long,
        value_enum,
        value_name = "API",
        default_value_t = OpenAiApi::Auto,
        help_heading = "Model"
    )]
    // A run folder saved before this flag existed resumes as it ran: on auto.
    #[serde(default)]
    pub openai_api: OpenAiApi,
    /// An extra HTTP header on every request, 'Name: value' (repeatable; a gateway's key as
    /// 'X-Key: ${VAR}' is read from the environment, so it stays off the command line). Values
    /// are never shown; AGENT_MEETING_HEADERS holds one header per line
    #[arg(
        long = "header",
        value_name = "NAME: VALUE",
        env = "AGENT_MEETING_HEADERS",
        value_delimiter = '\n',
        hide_env_values = true,
        help_heading = "Model"
    )]
    #[serde(skip)]
    pub headers: Vec<String>,
    /// Seconds to wait for a connection
    #[arg(long, value_name = "SECS", default_value_t = default::CONNECT_TIMEOUT, help_heading = "Transport")]
    pub connect_timeout: f64,
    /// Seconds to wait for the response (head, then body) [default: 120; 600 for a local
    /// server]
    #[arg(long, value_name = "SECS", help_heading = "Transport")]
    pub read_timeout: Option<f64>,
    /// Attempts per call on 429, 5xx, timeouts and network errors
    #[arg(long, value_name = "N", default_value_t = default::MAX_ATTEMPTS, value_parser = clap::value_parser!(u32).range(1..=20), help_heading = "Transport")]
    pub max_attempts: u32,
    /// Most requests in flight to one provider across every meeting that sets it (a batch, a
    /// fan-out): each takes one of N slots (lock files in AGENT_MEETING_PACE_DIR), and a 429 or
    /// 503 seen by one makes all of them wait
    #[arg(
        long,
        value_name = "N",
        env = "AGENT_MEETING_MAX_IN_FLIGHT",
        value_parser = clap::value_parser!(u32).range(1..),
        help_heading = "Transport"
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,
    /// Append every call's full prompt and raw response to this JSONL file
    #[arg(
        long,
        env = "MEETING_LLM_LOG",
        value_name = "FILE",
        help_heading = "Output"
    )]
    pub llm_log: Option<PathBuf>,
    /// Milliseconds of the first retry backoff (doubles each retry)
    #[arg(
        long,
        value_name = "MS",
        default_value_t = default::RETRY_BASE_MS,
        hide = true,
        env = "MEETING_RETRY_BASE_MS"
    )]
    pub retry_base_ms: u64,
    /// Longest wait in seconds before a retry: backoff is capped by it, a provider's
    /// Retry-After up to it is honoured, and one above it fails the call at once
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = default::RETRY_MAX_SECS,
        env = "MEETING_RETRY_MAX_SECS"
    )]
    pub retry_max_secs: f64,
    /// Answer call numbers that already completed from the --llm-log file instead of asking the
    /// provider again (the `meeting` driver sets this so a resumed meeting repeats no call)
    #[arg(long, hide = true, env = "MEETING_REUSE_LLM_LOG")]
    pub reuse_log: bool,
    /// The user's config file's LLM settings, below the flags and the environment; filled by
    /// the programs (the LLM layer reads no file of its own).
    #[arg(skip)]
    #[serde(skip)]
    pub config: ConfigDefaults,
    /// The environment variables that gave these flags their values (`AGENT_MEETING_MODEL`,
    /// ...), filled by the programs that name sources (`meeting`): a setting's source names
    /// the variable, not the flag.
    #[arg(skip)]
    #[serde(skip)]
    pub from_env: Vec<String>,
}

/// `--openai-api`: which OpenAI API a caller's requests take (docs/design/llm.md#responses-api);
/// [`super::resolve::openai_api`] settles `auto`.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
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

impl Default for LlmArgs {
    fn default() -> Self {
        LlmArgs {
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
    /// The meeting's defaults as `meeting` puts them on its board: its LLM flags.
    pub fn from_flags(args: &LlmArgs) -> LlmSettings {
        LlmSettings {
            provider: args.provider.clone().unwrap_or_default(),
            model: args.model.clone(),
            temperature: args.temperature,
            max_tokens: args.max_tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Args as _;

    /// `--help` states the default `max_tokens` of every call kind, and says what wins over
    /// the flag; the numbers are the ones the stages send (docs/design/llm.md#llm-layer).
    #[test]
    fn help_states_the_default_max_tokens() {
        let help = LlmArgs::augment_args(clap::Command::new("x"))
            .render_long_help()
            .to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        use super::super::default_max_tokens::*;
        for (kind, n) in [
            ("agent turn", AGENT_TURN),
            ("PM step", PM_STEP),
            ("the PM's closing round", PM_CLOSING),
            ("agent-builder", BUILDER),
        ] {
            assert!(help.contains(&format!("{kind} {n}")), "{kind} {n}: {help}");
        }
        assert!(help.contains("agent metadata and the board's defaults win"));
    }
}
