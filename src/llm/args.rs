//! The LLM flags shared by every program that calls a model, and the resolution of which
//! provider, model and options one caller gets (docs/design/llm.md#llm-layer).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use super::anthropic::Anthropic;
use super::openai::OpenAi;
use super::replay::{Recorder, Replay};
use super::resolve::{env_non_empty, non_empty, resolve, ProviderName, Setting, Source};
use super::sample::Sample;
use super::transport::Timeouts;
use super::{Client, Options, Provider, RetryPolicy};
use crate::error::Error;
use crate::model::LlmSettings;

/// How to run with no key, said by every error about a missing one.
const OFFLINE: &str = "to run offline, use --provider sample (answers made from your own documents, no model) or --provider replay --cassette FILE";

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
    /// Provider: openai, anthropic, azure, replay or sample (default: from the board or agent
    /// metadata, else whichever of OPENAI_API_KEY / ANTHROPIC_API_KEY is set). `replay` and
    /// `sample` override everything; `sample` calls no model: the program answers from the
    /// meeting's own documents and questions, every answer marked [sample] (try a meeting with no
    /// key).
    #[arg(
        long,
        env = "AGENT_MEETING_PROVIDER",
        value_name = "NAME",
        value_parser = super::resolve::AnyNamed::providers(),
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
    /// Append every exchange with the real provider to this cassette
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

/// The LLM settings of the user's config file (docs/design/agents-and-config.md#config).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigDefaults {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Model per caller (`pm` or an agent's name).
    pub models: std::collections::BTreeMap<String, String>,
    pub openai_base_url: Option<String>,
    pub anthropic_base_url: Option<String>,
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
            headers: Vec::new(),
            connect_timeout: default::CONNECT_TIMEOUT,
            read_timeout: None,
            max_attempts: default::MAX_ATTEMPTS,
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

fn seconds(flag: &str, v: f64) -> Result<Duration, Error> {
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(Error::Usage(format!(
            "{flag}: expected a number of seconds above 0, got {v}"
        )))
    }
}

/// [`client_for_caller`] for a caller whose name is not known (agent-builder, checks).
pub fn client_for(
    args: &LlmArgs,
    board_llm: &LlmSettings,
    metadata: &Map<String, Value>,
    calls: u64,
) -> Result<(Client, Options), Error> {
    client_for_caller(args, board_llm, "", metadata, calls)
}

/// Build the client and options for one caller (`caller` names the agent or PM whose
/// `metadata` this is, for errors), as [`super::resolve`] resolves it. `calls` is the board's
/// `usage.calls`. A missing key is a runtime error (exit 1); bad flags are usage errors (exit
/// 2). A `max_tokens` nobody set stays `None`: each stage then sends its own default
/// ([`super::default_max_tokens`]).
pub fn client_for_caller(
    args: &LlmArgs,
    board_llm: &LlmSettings,
    caller: &str,
    metadata: &Map<String, Value>,
    calls: u64,
) -> Result<(Client, Options), Error> {
    let resolved = resolve(args, board_llm, caller, metadata)?;
    let provider = resolved.provider.value;
    let options = resolved.options();
    let timeouts = Timeouts {
        connect: seconds("--connect-timeout", args.connect_timeout)?,
        read: seconds("--read-timeout", resolved.read_timeout.value)?,
    };
    if let Some(var) = missing_key(args, provider) {
        return Err(Error::Runtime(match resolved.provider.source {
            Source::Metadata(_) | Source::Board => format!(
                "{}, or set {var} in the environment; {OFFLINE}",
                resolved.explain_provider(provider.as_str())
            ),
            _ => format!(
                "provider {provider} needs {var} in the environment (or choose another with --provider); {OFFLINE}"
            ),
        }));
    }
    if !provider.offline() {
        let url = base_url(args, provider);
        if let Err(expected) = super::transport::check_base_url(&url.value) {
            return Err(Error::Usage(match url.source {
                Source::Env(var) => format!("{var}: {expected}"),
                source => format!("the {provider} base URL ({source}): {expected}"),
            }));
        }
    }
    let key = |var: &str| env_non_empty(var).unwrap_or_default();
    // Checked for every provider, read from the environment only for the real ones.
    super::headers::specs(&args.headers)?;
    let headers = || super::headers::expanded(&args.headers);
    let real: Box<dyn Provider> = match provider {
        ProviderName::Replay => {
            let Some(path) = &args.cassette else {
                return Err(Error::Usage(
                    "--provider replay needs a cassette: --cassette FILE (or MEETING_CASSETTE)"
                        .to_string(),
                ));
            };
            let replay = Replay::open(path, args.strict_replay)?;
            let client = Client::new(reuse_completed(args, Box::new(replay)), calls)
                .with_policy(RetryPolicy::immediate(args.max_attempts))
                .with_log(args.llm_log.clone());
            return Ok((client, options));
        }
        ProviderName::Sample => {
            let client = Client::new(reuse_completed(args, Box::new(Sample)), calls)
                .with_policy(RetryPolicy::immediate(args.max_attempts))
                .with_log(args.llm_log.clone());
            return Ok((client, options));
        }
        ProviderName::OpenAi => {
            Box::new(openai(args, &key("OPENAI_API_KEY"), timeouts).with_headers(headers()?))
        }
        ProviderName::Azure => {
            if resolved.model.source == Source::Default {
                return Err(Error::Usage(AZURE_NEEDS_DEPLOYMENT.to_string()));
            }
            let azure = azure(args, &key("AZURE_OPENAI_API_KEY"), timeouts);
            Box::new(azure.with_headers(headers()?))
        }
        ProviderName::Anthropic => {
            Box::new(anthropic(args, &key("ANTHROPIC_API_KEY"), timeouts).with_headers(headers()?))
        }
    };
    let provider_box: Box<dyn Provider> = match &args.record {
        Some(path) => Box::new(Recorder::new(real, path)),
        None => real,
    };
    let provider_box = reuse_completed(args, provider_box);
    let retry_max = seconds(
        "--retry-max-secs",
        args.retry_max_secs.max(f64::MIN_POSITIVE),
    )?;
    let policy = RetryPolicy {
        max_attempts: args.max_attempts,
        base_delay: Duration::from_millis(args.retry_base_ms),
        max_delay: retry_max,
    };
    let client = Client::new(provider_box, calls)
        .with_policy(policy)
        .with_log(args.llm_log.clone());
    Ok((client, options))
}

/// The provider and model one caller will use (`replay` answers from the cassette: its model
/// is the one recorded). Fails as [`client_for_caller`] would when no provider is chosen.
pub fn provider_and_model(
    args: &LlmArgs,
    board_llm: &LlmSettings,
    caller: &str,
    metadata: &Map<String, Value>,
) -> Result<(ProviderName, String), Error> {
    let r = resolve(args, board_llm, caller, metadata)?;
    Ok((r.provider.value, r.model.value))
}

/// Whether the flags ask for the provider's native structured output.
fn native(args: &LlmArgs) -> bool {
    !args.no_native_schema && !args.no_response_format
}

/// The OpenAI provider as the flags configure it.
fn openai(args: &LlmArgs, api_key: &str, timeouts: Timeouts) -> OpenAi {
    let openai = OpenAi::new(
        &base_url(args, ProviderName::OpenAi).value,
        api_key,
        native(args),
        timeouts,
    );
    if args.no_response_format {
        openai.with_mode(super::openai::JsonMode::Prompt)
    } else {
        openai
    }
}

const AZURE_NEEDS_DEPLOYMENT: &str = "provider azure needs the deployment's name as the model: \
--model DEPLOYMENT (or AGENT_MEETING_MODEL, the agent's metadata.model, the config file's model)";

/// The `api-version` an Azure OpenAI request carries when `OPENAI_API_VERSION` names none: the
/// GA version with structured outputs (docs/design/llm.md#azure).
pub const AZURE_API_VERSION: &str = "2024-10-21";

/// Azure OpenAI's `api-version` and its source: `OPENAI_API_VERSION`, as the Azure SDKs read
/// it, else [`AZURE_API_VERSION`].
pub fn azure_api_version() -> Setting<String> {
    const VAR: &str = "OPENAI_API_VERSION";
    match env_non_empty(VAR) {
        Some(v) => Setting {
            value: v.trim().to_string(),
            source: Source::Env(VAR.to_string()),
        },
        None => Setting {
            value: AZURE_API_VERSION.to_string(),
            source: Source::Default,
        },
    }
}

/// The Azure OpenAI provider: the OpenAI one on the endpoint's deployment path.
fn azure(args: &LlmArgs, api_key: &str, timeouts: Timeouts) -> OpenAi {
    let openai = OpenAi::new(
        &base_url(args, ProviderName::Azure).value,
        api_key,
        native(args),
        timeouts,
    )
    .azure(&azure_api_version().value);
    if args.no_response_format {
        openai.with_mode(super::openai::JsonMode::Prompt)
    } else {
        openai
    }
}

/// The Anthropic provider as the flags configure it.
fn anthropic(args: &LlmArgs, api_key: &str, timeouts: Timeouts) -> Anthropic {
    Anthropic::new(
        &base_url(args, ProviderName::Anthropic).value,
        api_key,
        native(args),
        timeouts,
    )
}

/// The variable holding `provider`'s API key when a call would need it and it is not set. A
/// local OpenAI-compatible server (loopback base URL) needs none.
pub fn missing_key(args: &LlmArgs, provider: ProviderName) -> Option<&'static str> {
    if provider == ProviderName::OpenAi
        && super::transport::is_loopback(&base_url(args, provider).value)
    {
        return None;
    }
    // An Azure resource has no default endpoint: it is as needed as the key.
    if provider == ProviderName::Azure && env_non_empty(AZURE_ENDPOINT).is_none() {
        return Some(AZURE_ENDPOINT);
    }
    let var = provider.key_var()?;
    env_non_empty(var).is_none().then_some(var)
}

/// Whether `provider`, as the flags configure it, wants the reply schema described in the
/// prompt (no native structured output): asked of the provider itself, built without a key
/// (`--dry-run` shows the prompt exactly as it would be sent).
pub fn schema_in_prompt(args: &LlmArgs, provider: ProviderName) -> bool {
    let timeouts = Timeouts {
        connect: Duration::from_secs(1),
        read: Duration::from_secs(1),
    };
    match provider {
        ProviderName::OpenAi => openai(args, "", timeouts).schema_in_prompt(),
        ProviderName::Anthropic => anthropic(args, "", timeouts).schema_in_prompt(),
        ProviderName::Azure => azure(args, "", timeouts).schema_in_prompt(),
        ProviderName::Replay | ProviderName::Sample => false,
    }
}

/// The variable naming an Azure OpenAI resource's endpoint, as the Azure SDKs read it.
pub const AZURE_ENDPOINT: &str = "AZURE_OPENAI_ENDPOINT";

/// A provider's API base URL and its source: its environment variable, else the config
/// file's, else the provider's own (`replay` has none: the OpenAI one is shown; `azure` has
/// none: `AZURE_OPENAI_ENDPOINT` names the resource).
pub fn base_url(args: &LlmArgs, provider: ProviderName) -> Setting<String> {
    if provider == ProviderName::Azure {
        return Setting {
            value: env_non_empty(AZURE_ENDPOINT).unwrap_or_default(),
            source: Source::Env(AZURE_ENDPOINT.to_string()),
        };
    }
    let (var, config, default) = match provider {
        ProviderName::Anthropic => (
            "ANTHROPIC_BASE_URL",
            &args.config.anthropic_base_url,
            super::anthropic::DEFAULT_BASE_URL,
        ),
        ProviderName::OpenAi
        | ProviderName::Azure
        | ProviderName::Replay
        | ProviderName::Sample => (
            "OPENAI_BASE_URL",
            &args.config.openai_base_url,
            super::openai::DEFAULT_BASE_URL,
        ),
    };
    if let Some(url) = env_non_empty(var) {
        Setting {
            value: url,
            source: Source::Env(var.to_string()),
        }
    } else if let Some(url) = non_empty(config.as_deref()) {
        Setting {
            value: url,
            source: Source::ConfigFile(None),
        }
    } else {
        Setting {
            value: default.to_string(),
            source: Source::Default,
        }
    }
}

/// With `--reuse-log`, calls that completed in an earlier (killed) run come from the log.
fn reuse_completed(args: &LlmArgs, provider: Box<dyn Provider>) -> Box<dyn Provider> {
    match (&args.llm_log, args.reuse_log) {
        (Some(log), true) => Box::new(super::resume::FromLog::new(provider, log)),
        _ => provider,
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
