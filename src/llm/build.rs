//! A caller's client (docs/design/llm.md#llm-layer): the provider the resolver chose, built
//! with its key, base URL, headers and timeouts, wrapped for recording or reuse from the log,
//! with the retry policy; and the checks the start makes before any call (a missing key,
//! the schema in the prompt).

use std::time::Duration;

use serde_json::{Map, Value};

use super::anthropic::Anthropic;
use super::config::LlmConfig;
use super::ollama::Ollama;
use super::openai::{Api, AzureForm, JsonMode, OpenAi};
use super::replay::{Recorder, Replay};
use super::resolve::{
    azure_form, base_url, env_non_empty, resolve, ProviderName, Source, AZURE_ENDPOINT,
};
use super::sample::Sample;
use super::transport::Timeouts;
use super::{Client, Options, Provider, RetryPolicy};
use crate::error::Error;
use crate::model::LlmSettings;

/// How to run with no key, said by every error about a missing one.
const OFFLINE: &str = "to run offline, use --provider sample (answers made from your own documents, no model) or --provider replay --cassette FILE";

fn seconds(flag: &str, v: f64) -> Result<Duration, Error> {
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(Error::Usage(format!(
            "{flag}: expected a number of seconds above 0, got {v}"
        )))
    }
}

/// The model clients of one meeting in one process, by caller (docs/design/llm.md#llm-layer).
/// The driver keeps each caller's client for the whole run ([`Clients::for_run`]), so a
/// cassette is parsed, the exchange log read and a server's connection opened once per
/// caller, not once per stage; a program builds the one its stage needs
/// ([`Clients::per_stage`]).
pub struct Clients {
    args: LlmConfig,
    keep: bool,
    kept: std::collections::BTreeMap<String, (Client, Options)>,
}

impl Clients {
    /// Clients built for each stage and dropped with it (one program, one stage).
    pub fn per_stage(args: &LlmConfig) -> Clients {
        Clients {
            args: args.clone(),
            keep: false,
            kept: Default::default(),
        }
    }

    /// Clients kept from stage to stage of one run, one per caller.
    pub fn for_run(args: LlmConfig) -> Clients {
        Clients {
            keep: true,
            ..Clients::per_stage(&args)
        }
    }

    /// The flags and config defaults the clients are built from.
    pub fn args(&self) -> &LlmConfig {
        &self.args
    }

    /// The client and options of `caller` (`metadata` its config's), numbering its calls
    /// after `calls` (the board's `usage.calls`): the kept one, else built as
    /// [`client_for_caller`] builds it. Give it back with [`Clients::put_back`].
    pub fn take(
        &mut self,
        board_llm: &LlmSettings,
        caller: &str,
        metadata: &Map<String, Value>,
        calls: u64,
    ) -> Result<(Client, Options), Error> {
        match self.kept.remove(caller) {
            Some((client, opts)) => Ok((client.after_call(calls), opts)),
            None => client_for_caller(&self.args, board_llm, caller, metadata, calls),
        }
    }

    /// Keep `caller`'s client for its next stage (when kept for the run).
    pub fn put_back(&mut self, caller: &str, client: Client, opts: Options) {
        if self.keep {
            self.kept.insert(caller.to_string(), (client, opts));
        }
    }
}

/// [`client_for_caller`] for a caller whose name is not known (agent-builder, checks).
pub fn client_for(
    args: &LlmConfig,
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
    args: &LlmConfig,
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
    // The OpenAI API this caller's requests take (docs/design/llm.md#responses-api).
    let api = resolved.api.as_ref().map_or(Api::Chat, |a| a.value);
    if let (ProviderName::Replay | ProviderName::Sample, Some(path)) = (provider, &args.record) {
        // Said, not silently skipped: a recording keeps a model's answers only.
        return Err(Error::Usage(format!(
            "--record {}: --provider {provider} makes no model call to record (record with a \
             model's provider; every run folder's llm.jsonl keeps its exchanges anyway)",
            path.display()
        )));
    }
    let real: Box<dyn Provider> = match provider {
        ProviderName::Replay => {
            let Some(path) = &args.cassette else {
                return Err(Error::Usage(
                    "--provider replay needs a cassette: --cassette FILE (or MEETING_CASSETTE)"
                        .to_string(),
                ));
            };
            let replay = Replay::open(path, args.strict_replay)?.with_read_timeout(timeouts.read);
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
            let openai = openai(args, &key("OPENAI_API_KEY"), timeouts).with_api(api);
            Box::new(openai.with_headers(headers()?))
        }
        ProviderName::Azure => {
            if resolved.model.source == Source::Default {
                return Err(Error::Usage(AZURE_NEEDS_DEPLOYMENT.to_string()));
            }
            if let (Api::Responses, AzureForm::Deployment { .. }) = (api, azure_form().value) {
                return Err(Error::Usage(AZURE_RESPONSES_NEED_V1.to_string()));
            }
            let azure = azure(args, &key("AZURE_OPENAI_API_KEY"), timeouts).with_api(api);
            Box::new(azure.with_headers(headers()?))
        }
        ProviderName::Anthropic => {
            Box::new(anthropic(args, &key("ANTHROPIC_API_KEY"), timeouts).with_headers(headers()?))
        }
        ProviderName::Gemini => {
            Box::new(gemini(args, &key("GEMINI_API_KEY"), timeouts).with_headers(headers()?))
        }
        ProviderName::Ollama => {
            if resolved.model.source == Source::Default {
                return Err(Error::Usage(OLLAMA_NEEDS_MODEL.to_string()));
            }
            let floor = super::ollama::context_floor().map_err(Error::Usage)?;
            let ollama = ollama(args, &key(super::ollama::KEY_VAR), floor, timeouts);
            Box::new(ollama.with_headers(headers()?))
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
    let pace = match args.max_in_flight {
        Some(n) => {
            let url = super::resolve::base_url(args, provider).value;
            let pace = super::pace::Pace::new(provider.as_str(), &url, n, retry_max);
            Some(pace.map_err(Error::Usage)?)
        }
        None => None,
    };
    let client = Client::new(provider_box, calls)
        .with_policy(policy)
        .with_log(args.llm_log.clone())
        .with_pace(pace);
    Ok((client, options))
}

/// The provider and model one caller will use (`replay` answers from the cassette: its model
/// is the one recorded). Fails as [`client_for_caller`] would when no provider is chosen.
pub fn provider_and_model(
    args: &LlmConfig,
    board_llm: &LlmSettings,
    caller: &str,
    metadata: &Map<String, Value>,
) -> Result<(ProviderName, String), Error> {
    let r = resolve(args, board_llm, caller, metadata)?;
    Ok((r.provider.value, r.model.value))
}

/// Whether the flags ask for the provider's native structured output.
fn native(args: &LlmConfig) -> bool {
    !args.no_native_schema && !args.no_response_format
}

/// How the flags ask for a JSON answer: natively, JSON mode (`--no-native-schema`) or nothing
/// but the prompt (`--no-response-format`).
fn json_mode(args: &LlmConfig) -> JsonMode {
    if args.no_response_format {
        JsonMode::Prompt
    } else if args.no_native_schema {
        JsonMode::Object
    } else {
        JsonMode::Schema
    }
}

/// The OpenAI provider as the flags configure it, at `name`'s base URL (the OpenAI-compatible
/// providers are this one).
fn openai_at(name: ProviderName, args: &LlmConfig, api_key: &str, timeouts: Timeouts) -> OpenAi {
    OpenAi::new(&base_url(args, name).value, api_key, native(args), timeouts)
        .with_mode(json_mode(args))
}

fn openai(args: &LlmConfig, api_key: &str, timeouts: Timeouts) -> OpenAi {
    openai_at(ProviderName::OpenAi, args, api_key, timeouts)
}

/// Gemini's OpenAI-compatible endpoint, its schemas in the subset Gemini takes
/// (docs/design/llm.md#gemini).
fn gemini(args: &LlmConfig, api_key: &str, timeouts: Timeouts) -> OpenAi {
    openai_at(ProviderName::Gemini, args, api_key, timeouts).gemini()
}

const OLLAMA_NEEDS_MODEL: &str = "provider ollama needs a model, one the server has pulled: \
--model NAME (or OLLAMA_MODEL, AGENT_MEETING_MODEL, the agent's metadata.model, the config file's \
model); `ollama list` shows the models pulled";

/// The Ollama provider as the flags configure it, sending contexts of at least `floor` tokens.
fn ollama(args: &LlmConfig, api_key: &str, floor: u32, timeouts: Timeouts) -> Ollama {
    Ollama::new(
        &base_url(args, ProviderName::Ollama).value,
        api_key,
        json_mode(args),
        floor,
        timeouts,
    )
}

const AZURE_NEEDS_DEPLOYMENT: &str = "provider azure needs the deployment's name as the model: \
--model DEPLOYMENT (or AGENT_MEETING_MODEL, the agent's metadata.model, the config file's model)";

/// Azure's Responses API is on its v1 form only (docs/design/llm.md#azure).
const AZURE_RESPONSES_NEED_V1: &str = "--openai-api responses: provider azure serves the \
Responses API on its v1 endpoint only: set AZURE_OPENAI_ENDPOINT to https://RESOURCE.openai.azure.com/openai/v1 \
(or OPENAI_API_VERSION=v1), or use --openai-api chat";

/// The Azure OpenAI provider: the OpenAI one on the endpoint's deployment path or its v1 base.
fn azure(args: &LlmConfig, api_key: &str, timeouts: Timeouts) -> OpenAi {
    openai_at(ProviderName::Azure, args, api_key, timeouts).azure(azure_form().value)
}

/// The Anthropic provider as the flags configure it.
fn anthropic(args: &LlmConfig, api_key: &str, timeouts: Timeouts) -> Anthropic {
    Anthropic::new(
        &base_url(args, ProviderName::Anthropic).value,
        api_key,
        native(args),
        timeouts,
    )
}

/// The variable holding `provider`'s API key when a call would need it and it is not set. A
/// local OpenAI-compatible server (loopback base URL) needs none, nor does Ollama (its key is
/// sent when set, for a hosted or proxied server).
pub fn missing_key(args: &LlmConfig, provider: ProviderName) -> Option<&'static str> {
    if provider == ProviderName::Ollama {
        return None;
    }
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
pub fn schema_in_prompt(args: &LlmConfig, provider: ProviderName) -> bool {
    let timeouts = Timeouts {
        connect: Duration::from_secs(1),
        read: Duration::from_secs(1),
    };
    match provider {
        ProviderName::OpenAi => openai(args, "", timeouts).schema_in_prompt(),
        ProviderName::Anthropic => anthropic(args, "", timeouts).schema_in_prompt(),
        ProviderName::Gemini => gemini(args, "", timeouts).schema_in_prompt(),
        ProviderName::Azure => azure(args, "", timeouts).schema_in_prompt(),
        ProviderName::Ollama => {
            let floor = super::ollama::CONTEXT_STEP;
            ollama(args, "", floor, timeouts).schema_in_prompt()
        }
        ProviderName::Replay | ProviderName::Sample => false,
    }
}

/// With `--reuse-log`, calls that completed in an earlier (killed) run come from the log.
fn reuse_completed(args: &LlmConfig, provider: Box<dyn Provider>) -> Box<dyn Provider> {
    match (&args.llm_log, args.reuse_log) {
        (Some(log), true) => Box::new(super::resume::FromLog::new(provider, log)),
        _ => provider,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The driver's clients are kept from stage to stage, one per caller, each numbering its
    /// calls after the board's count; a program's are built for the stage (the cassette is
    /// read again each time: gone, it is an error).
    #[test]
    fn a_run_keeps_one_client_per_caller() {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("c.jsonl");
        let line = |seq: u64, caller: &str| {
            format!("{{\"seq\":{seq},\"caller\":\"{caller}\",\"response\":\"r{seq}\"}}\n")
        };
        std::fs::write(&cassette, line(1, "pm") + &line(2, "arch") + &line(3, "pm")).unwrap();
        let args = LlmConfig {
            provider: Some("replay".into()),
            cassette: Some(cassette.clone()),
            ..LlmConfig::default()
        };
        let board = LlmSettings::default();
        let none = Map::new();
        let ask = |client: &mut Client, caller: &str, opts: &Options| {
            let req = super::super::Request {
                caller: caller.into(),
                messages: vec![super::super::Message::user("q")],
                ..Default::default()
            };
            client.call(&req, opts).map(|r| r.text)
        };
        let mut run = Clients::for_run(args.clone());
        let (mut pm, opts) = run.take(&board, "pm", &none, 0).unwrap();
        assert_eq!(ask(&mut pm, "pm", &opts).unwrap(), "r1");
        run.put_back("pm", pm, opts);
        std::fs::remove_file(&cassette).unwrap();
        // arch was never asked: its client is built now, and the cassette is gone.
        assert!(run.take(&board, "arch", &none, 1).is_err());
        let (mut pm, opts) = run.take(&board, "pm", &none, 2).unwrap();
        assert_eq!(
            ask(&mut pm, "pm", &opts).unwrap(),
            "r3",
            "call 3, after the board's 2"
        );
        assert_eq!(pm.calls(), 3);
        let mut stage = Clients::per_stage(&args);
        assert!(stage.take(&board, "pm", &none, 0).is_err(), "built again");
    }
}
