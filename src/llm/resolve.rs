//! The one resolver of a caller's LLM settings (docs/design/llm.md#llm-layer): which provider, model,
//! temperature and `max_tokens` one caller (the PM, an agent, the PM's closing round) gets,
//! each with where it came from. The clients, the budget's look-ahead, `meeting --dry-run`'s
//! model line and `meeting --show-config` all ask it, so what they say cannot disagree.
//!
//! Precedence: `--provider replay` or `sample` (flag or variable) over everything, so a whole meeting runs
//! offline; then the caller's own `metadata`; then the meeting's defaults (the board's `llm`,
//! which `meeting` fills from its flags); then the flags and their variables; then the
//! provider's own variables (`OPENAI_MODEL`, a key that is set, `OPENAI_BASE_URL`); then the
//! config file (`models.<caller>` over `model`); then the built-in defaults.

use std::fmt;

use serde_json::{Map, Value};

use super::config::{LlmConfig, OpenAiApi};
use super::openai::{Api, AzureForm};
pub use super::provider::ProviderName;
use crate::error::Error;
use crate::model::LlmSettings;

/// The defaults for a server on this machine (a loopback base URL), which is likely a model on
/// a CPU (docs/design/llm.md#local-servers). The flag wins.
pub mod local_default {
    /// Seconds to wait for a reply: the largest default reply (the closing round's 2000 tokens)
    /// at about 3.5 tokens a second, after the prompt is read.
    pub const READ_TIMEOUT: f64 = 600.0;
}

/// Whether `provider`, as the flags configure it, is a server on this machine.
pub fn is_local_server(args: &LlmConfig, provider: ProviderName) -> bool {
    !provider.offline() && super::transport::is_loopback(&base_url(args, provider).value)
}

/// Where one setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Flag,
    /// The environment variable that set it.
    Env(String),
    /// A provider chosen because its variable (a key, a base URL) is set.
    EnvSet(String),
    /// The caller's config `metadata` (the PM's or the named agent's).
    Metadata(String),
    /// The board's `llm` (`init-board --provider/--model/...`).
    Board,
    /// The config file; `Some(key)` for a per-caller key such as `models.pm`.
    ConfigFile(Option<String>),
    /// A default for a server on this machine (docs/design/llm.md#local-servers).
    LocalServer,
    /// The meeting file (its `budget`, for instance).
    MeetingFile,
    /// The price table's endpoints for the model (docs/design/llm.md#responses-api).
    PriceTable,
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag => write!(f, "flag"),
            Source::Env(v) => write!(f, "environment ({v})"),
            Source::EnvSet(v) => write!(f, "environment ({v} is set)"),
            Source::Metadata(who) => write!(f, "metadata of {who}"),
            Source::Board => write!(f, "the board's llm (init-board)"),
            Source::ConfigFile(None) => write!(f, "config file"),
            Source::ConfigFile(Some(key)) => write!(f, "config file ({key})"),
            Source::LocalServer => write!(f, "local server default"),
            Source::MeetingFile => write!(f, "meeting file"),
            Source::PriceTable => {
                write!(f, "price table (the model is served only by /v1/responses)")
            }
            Source::Default => write!(f, "built-in default"),
        }
    }
}

/// A resolved value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting<T> {
    pub value: T,
    pub source: Source,
}

impl<T> Setting<T> {
    fn new(value: T, source: Source) -> Self {
        Setting { value, source }
    }
}

/// What one caller gets. `temperature` and `max_tokens` are `None` when nobody set them (the
/// provider's default; each stage's own `max_tokens` default, [`super::default_max_tokens`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub provider: Setting<ProviderName>,
    pub model: Setting<String>,
    pub temperature: Setting<Option<f64>>,
    pub max_tokens: Setting<Option<u32>>,
    /// Seconds to wait for a reply: the flag, else the default (longer for a local server).
    pub read_timeout: Setting<f64>,
    /// Which OpenAI API the requests take; `None` for a provider that is not OpenAI's.
    pub api: Option<Setting<Api>>,
}

impl Resolved {
    /// The start line's word on a local server's default, when it applies: "local server:
    /// read timeout 600 s, max_tokens ...".
    pub fn local_note(&self) -> Option<String> {
        if self.read_timeout.source != Source::LocalServer {
            return None;
        }
        let tokens = match self.max_tokens.value {
            Some(n) => format!("{n} ({})", self.max_tokens.source),
            None => {
                use super::default_max_tokens::{AGENT_TURN, PM_CLOSING, PM_STEP};
                format!("{AGENT_TURN} per agent turn, {PM_STEP} per PM step, {PM_CLOSING} for the closing round")
            }
        };
        Some(format!(
            "local server: read timeout {} s (the default for a model on this machine; --read-timeout wins), max_tokens {tokens}",
            self.read_timeout.value
        ))
    }

    /// The start line's word on the API, when it is not the usual one: " via the Responses API".
    pub fn api_note(&self) -> &'static str {
        match self.api.as_ref().map(|a| a.value) {
            Some(Api::Responses) => " via the Responses API",
            Some(Api::Chat) | None => "",
        }
    }

    /// The options a request of this caller carries.
    pub fn options(&self) -> super::Options {
        super::Options {
            model: self.model.value.clone(),
            temperature: self.temperature.value,
            max_tokens: self.max_tokens.value,
        }
    }

    /// What chose the provider, and what to change instead of a flag that cannot override it
    /// (for the errors about it).
    pub(super) fn explain_provider(&self, name: &str) -> String {
        explain(&self.provider.source, name)
    }
}

fn explain(source: &Source, provider: &str) -> String {
    match source {
        Source::Metadata(who) => format!(
            "provider {provider} is set by {who} in its config's metadata.provider, which --provider cannot override; change or remove that metadata.provider"
        ),
        Source::Board => format!(
            "provider {provider} is the board's llm.provider (init-board --provider), which --provider cannot override; start the meeting with another provider"
        ),
        _ => format!("provider {provider}"),
    }
}

pub(super) const NO_PROVIDER: &str = "no LLM provider configured: set OPENAI_API_KEY (for --provider openai) or \
ANTHROPIC_API_KEY (for --provider anthropic), or choose one with --provider / AGENT_MEETING_PROVIDER; \
to run offline, use --provider sample (answers made from your own documents, no model) or --provider replay --cassette FILE";

pub(super) fn non_empty(s: Option<&str>) -> Option<String> {
    s.map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

pub(super) fn env_non_empty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Who a caller is, for the sources and errors: the PM's config or agent `name`'s.
fn who(caller: &str) -> String {
    match caller {
        "" => "the caller".to_string(),
        crate::model::PM_CALLER => "the PM".to_string(),
        name => format!("agent {name:?}"),
    }
}

/// A flag's source: its variable when the program read it from there, else the command line.
fn flag_source(args: &LlmConfig, var: &str) -> Source {
    if args.from_env.iter().any(|v| v == var) {
        Source::Env(var.to_string())
    } else {
        Source::Flag
    }
}

/// A provider name, or the usage error naming what gave it.
fn provider_named(name: &str, source: &Source) -> Result<ProviderName, Error> {
    ProviderName::parse(name).ok_or_else(|| {
        let why = match source {
            Source::Metadata(_) | Source::Board => format!("; {}", explain(source, name)),
            _ => String::new(),
        };
        let near = crate::text::closest(name.trim(), ProviderName::ALL.map(ProviderName::as_str))
            .map(|p| format!("; did you mean {p}?"))
            .unwrap_or_default();
        let names = ProviderName::ALL.map(ProviderName::as_str);
        let (last, rest) = names.split_last().expect("providers");
        Error::Usage(format!(
            "unknown provider {name:?} (expected {} or {last}){near}{why}",
            rest.join(", ")
        ))
    })
}

/// Resolve one caller (`caller` names the agent, or `pm`; `metadata` is its config's). Fails
/// with a runtime error when no provider is chosen at all, with a usage error for a provider
/// name that is not one.
pub fn resolve(
    args: &LlmConfig,
    board_llm: &LlmSettings,
    caller: &str,
    metadata: &Map<String, Value>,
) -> Result<Resolved, Error> {
    let provider = resolve_provider(args, board_llm, caller, metadata)?;
    let p = provider.value;
    let meta_str = |k: &str| non_empty(metadata.get(k).and_then(Value::as_str));
    let metadata_source = || Source::Metadata(who(caller));
    // The meeting copies its flags onto the board: a board value equal to the flag's is the
    // flag's, and is named after it.
    let board_or_flag = |board: bool, var: &str| {
        if board {
            Source::Board
        } else {
            flag_source(args, var)
        }
    };
    let flag_model = non_empty(args.model.as_deref());
    let model = if let Some(m) = meta_str("model") {
        Setting::new(m, metadata_source())
    } else if let Some(m) = non_empty(board_llm.model.as_deref()) {
        let from_board = flag_model.as_deref() != Some(m.as_str());
        Setting::new(m, board_or_flag(from_board, "AGENT_MEETING_MODEL"))
    } else if let Some(m) = flag_model {
        Setting::new(m, flag_source(args, "AGENT_MEETING_MODEL"))
    } else if let Some((m, var)) = p
        .model_var()
        .and_then(|var| env_non_empty(var).map(|m| (m, var)))
    {
        Setting::new(m, Source::Env(var.to_string()))
    } else if let Some(m) = non_empty(args.config.models.get(caller).map(String::as_str)) {
        Setting::new(m, Source::ConfigFile(Some(format!("models.{caller}"))))
    } else if let Some(m) = non_empty(args.config.model.as_deref()) {
        Setting::new(m, Source::ConfigFile(None))
    } else {
        Setting::new(
            p.default_model().unwrap_or(p.as_str()).to_string(),
            Source::Default,
        )
    };
    let temperature = if let Some(t) = metadata.get("temperature").and_then(Value::as_f64) {
        Setting::new(Some(t), metadata_source())
    } else if let Some(t) = board_llm.temperature {
        Setting::new(Some(t), board_or_flag(args.temperature != Some(t), ""))
    } else if let Some(t) = args.temperature {
        Setting::new(Some(t), Source::Flag)
    } else {
        Setting::new(None, Source::Default)
    };
    let max_tokens = resolve_max_tokens(args, board_llm, caller, metadata);
    let read_timeout = match args.read_timeout {
        Some(t) => Setting::new(t, Source::Flag),
        None if is_local_server(args, p) => {
            Setting::new(local_default::READ_TIMEOUT, Source::LocalServer)
        }
        None => Setting::new(super::config::DEFAULT_READ_TIMEOUT, Source::Default),
    };
    let api = openai_api(args, p, &model.value);
    Ok(Resolved {
        provider,
        model,
        temperature,
        max_tokens,
        read_timeout,
        api,
    })
}

/// The OpenAI API a caller of `provider` on `model` uses (docs/design/llm.md#responses-api):
/// the one `--openai-api` names; on `auto`, for `openai`, the Responses API when the price
/// table in use lists it and not Chat Completions among the model's endpoints; else Chat
/// Completions (also on azure, whose model is a deployment's name, not the model's). `None`
/// for a provider that is not OpenAI's wire format.
pub fn openai_api(args: &LlmConfig, provider: ProviderName, model: &str) -> Option<Setting<Api>> {
    if !matches!(provider, ProviderName::OpenAi | ProviderName::Azure) {
        return None;
    }
    Some(match args.openai_api {
        OpenAiApi::Chat => Setting::new(Api::Chat, Source::Flag),
        OpenAiApi::Responses => Setting::new(Api::Responses, Source::Flag),
        OpenAiApi::Auto
            if provider == ProviderName::OpenAi
                && super::prices::Prices::current()
                    .of(provider.as_str(), model)
                    .is_some_and(super::prices::Price::responses_only) =>
        {
            Setting::new(Api::Responses, Source::PriceTable)
        }
        OpenAiApi::Auto => Setting::new(Api::Chat, Source::Default),
    })
}

/// A caller's `max_tokens` (metadata, the board's, the flag; `None`: the stage's default),
/// which needs no provider: the token budget prices agents' replies with it.
pub fn resolve_max_tokens(
    args: &LlmConfig,
    board_llm: &LlmSettings,
    caller: &str,
    metadata: &Map<String, Value>,
) -> Setting<Option<u32>> {
    let meta_max = metadata
        .get("max_tokens")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok());
    if let Some(n) = meta_max {
        Setting::new(Some(n), Source::Metadata(who(caller)))
    } else if let Some(n) = board_llm.max_tokens {
        let source = if args.max_tokens == Some(n) {
            Source::Flag
        } else {
            Source::Board
        };
        Setting::new(Some(n), source)
    } else if let Some(n) = args.max_tokens {
        Setting::new(Some(n), Source::Flag)
    } else {
        Setting::new(None, Source::Default)
    }
}

fn resolve_provider(
    args: &LlmConfig,
    board_llm: &LlmSettings,
    caller: &str,
    metadata: &Map<String, Value>,
) -> Result<Setting<ProviderName>, Error> {
    const VAR: &str = "AGENT_MEETING_PROVIDER";
    let flag = non_empty(args.provider.as_deref());
    let named = |name: String, source: Source| -> Result<Setting<ProviderName>, Error> {
        Ok(Setting::new(provider_named(&name, &source)?, source))
    };
    if let Some(name) = &flag {
        if ProviderName::parse(name).is_some_and(ProviderName::offline) {
            return named(name.clone(), flag_source(args, VAR));
        }
    }
    if let Some(name) = non_empty(metadata.get("provider").and_then(Value::as_str)) {
        return named(name, Source::Metadata(who(caller)));
    }
    if let Some(name) = non_empty(Some(&board_llm.provider)) {
        let from_board = flag.as_deref().map(str::to_lowercase) != Some(name.to_lowercase());
        let source = if from_board {
            Source::Board
        } else {
            flag_source(args, VAR)
        };
        return named(name, source);
    }
    if let Some(name) = flag {
        return named(name, flag_source(args, VAR));
    }
    if let Some(name) = non_empty(args.config.provider.as_deref()) {
        return named(name, Source::ConfigFile(None));
    }
    // A key, else a base URL, that is set chooses its provider.
    for (var, p) in [
        ("OPENAI_API_KEY", ProviderName::OpenAi),
        ("ANTHROPIC_API_KEY", ProviderName::Anthropic),
        ("AZURE_OPENAI_API_KEY", ProviderName::Azure),
        ("OPENAI_BASE_URL", ProviderName::OpenAi),
    ] {
        if env_non_empty(var).is_some() {
            return Ok(Setting::new(p, Source::EnvSet(var.to_string())));
        }
    }
    Err(Error::Runtime(NO_PROVIDER.to_string()))
}

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

/// The variable naming an Azure OpenAI resource's endpoint, as the Azure SDKs read it.
pub const AZURE_ENDPOINT: &str = "AZURE_OPENAI_ENDPOINT";

/// Which URL shape Azure OpenAI requests take, and what chose it (docs/design/llm.md#azure):
/// the v1 form when `AZURE_OPENAI_ENDPOINT` ends in `/openai/v1` or `OPENAI_API_VERSION` is
/// `v1`, else the deployment form with [`azure_api_version`].
pub fn azure_form() -> Setting<AzureForm> {
    let endpoint = env_non_empty(AZURE_ENDPOINT).unwrap_or_default();
    let version = azure_api_version();
    let form = AzureForm::of(&endpoint, &version.value);
    let source = match (&form, AzureForm::of(&endpoint, "")) {
        (AzureForm::V1, AzureForm::V1) => Source::Env(AZURE_ENDPOINT.to_string()),
        _ => version.source,
    };
    Setting::new(form, source)
}

/// A provider's API base URL and its source: its environment variable, else the config
/// file's, else the provider's own (`replay` has none: the OpenAI one is shown; `azure` has
/// none: `AZURE_OPENAI_ENDPOINT` names the resource; `ollama`'s variable, `OLLAMA_HOST`, may
/// be `host:port` as Ollama reads it: [`super::ollama::host_url`]).
pub fn base_url(args: &LlmConfig, provider: ProviderName) -> Setting<String> {
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
        ProviderName::Ollama => (
            super::ollama::HOST_VAR,
            &args.config.ollama_base_url,
            super::ollama::DEFAULT_BASE_URL,
        ),
        ProviderName::Gemini => ("GEMINI_BASE_URL", &None, super::openai::GEMINI_BASE_URL),
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
            value: match provider {
                ProviderName::Ollama => super::ollama::host_url(&url),
                _ => url,
            },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_round_trip_in_any_case() {
        for p in ProviderName::ALL {
            assert_eq!(ProviderName::parse(p.as_str()), Some(p));
            assert_eq!(
                ProviderName::parse(&format!(" {} ", p.as_str().to_uppercase())),
                Some(p)
            );
        }
        assert_eq!(ProviderName::parse("openia"), None);
    }

    fn board(provider: &str, model: Option<&str>, max_tokens: Option<u32>) -> LlmSettings {
        LlmSettings {
            provider: provider.into(),
            model: model.map(Into::into),
            temperature: None,
            max_tokens,
        }
    }

    /// Every setting comes with the source that won, in the documented precedence (these
    /// cases set no environment variable the resolver reads).
    #[test]
    fn each_setting_names_its_source() {
        let meta: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "provider": "anthropic", "model": "meta-model", "max_tokens": 700
        }))
        .unwrap();
        let args = LlmConfig {
            provider: Some("openai".into()),
            model: Some("flag-model".into()),
            max_tokens: Some(900),
            ..LlmConfig::default()
        };
        let r = resolve(&args, &board("", None, None), "arch", &meta).unwrap();
        assert_eq!(r.provider.value, ProviderName::Anthropic);
        assert_eq!(r.provider.source, Source::Metadata("agent \"arch\"".into()));
        assert_eq!(r.model.value, "meta-model");
        assert_eq!(r.max_tokens.value, Some(700));
        // No metadata: the flags, named as flags.
        let r = resolve(&args, &board("", None, None), "pm", &Map::new()).unwrap();
        assert_eq!(
            (r.provider.value, r.provider.source.clone()),
            (ProviderName::OpenAi, Source::Flag)
        );
        assert_eq!(r.model.value, "flag-model");
        assert_eq!(r.max_tokens, Setting::new(Some(900), Source::Flag));
        // A board value that differs from the flag's is the board's, and wins.
        let r = resolve(
            &args,
            &board("anthropic", Some("b"), Some(5)),
            "pm",
            &Map::new(),
        )
        .unwrap();
        assert_eq!(r.provider.source, Source::Board);
        assert_eq!(r.model, Setting::new("b".to_string(), Source::Board));
        assert_eq!(r.max_tokens, Setting::new(Some(5), Source::Board));
        // A value read from a flag's variable is named after the variable.
        let args = LlmConfig {
            from_env: vec!["AGENT_MEETING_MODEL".into()],
            ..args
        };
        let r = resolve(
            &args,
            &board("openai", Some("flag-model"), None),
            "pm",
            &Map::new(),
        )
        .unwrap();
        assert_eq!(r.model.source, Source::Env("AGENT_MEETING_MODEL".into()));
        assert_eq!(r.provider.source, Source::Flag);
        // Replay by flag wins over metadata.
        let replay = LlmConfig {
            provider: Some("Replay".into()),
            ..LlmConfig::default()
        };
        let r = resolve(&replay, &board("", None, None), "arch", &meta).unwrap();
        assert_eq!(r.provider.value, ProviderName::Replay);
        // An unknown name in metadata is a usage error naming what set it.
        let bad: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"provider": "openia"})).unwrap();
        let e = resolve(&LlmConfig::default(), &board("", None, None), "arch", &bad).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("metadata.provider"), "{e}");
    }

    #[test]
    fn the_config_files_per_caller_model_comes_before_its_model() {
        let mut args = LlmConfig {
            provider: Some("openai".into()),
            ..LlmConfig::default()
        };
        args.config.model = Some("all".into());
        args.config.models.insert("pm".into(), "pm-model".into());
        let empty = board("", None, None);
        let pm = resolve(&args, &empty, "pm", &Map::new()).unwrap();
        let arch = resolve(&args, &empty, "arch", &Map::new()).unwrap();
        if env_non_empty("OPENAI_MODEL").is_none() {
            assert_eq!(
                pm.model,
                Setting::new(
                    "pm-model".to_string(),
                    Source::ConfigFile(Some("models.pm".into()))
                )
            );
            assert_eq!(
                arch.model,
                Setting::new("all".to_string(), Source::ConfigFile(None))
            );
        }
    }
}
