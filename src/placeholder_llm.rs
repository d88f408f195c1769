//! WIRE: replace with llm::client_for + LlmArgs at merge (then delete this file and the
//! `#[path]` module lines in src/bin/pm-step.rs and src/bin/agent-turn.rs).
//!
//! A stand-in for the LLM layer's client builder so the two LLM stages run end to end before
//! the providers land: only `--provider replay` with a `--cassette` in the SPEC §7 format.

use std::collections::BTreeMap;
use std::path::PathBuf;

use agent_meeting::error::{Error, Result};
use agent_meeting::llm::{AttemptError, Client, Options, Provider, RawReply, Request, TokenUsage};
use agent_meeting::model::LlmSettings;
use serde_json::{Map, Value};

/// LLM flags shared by the LLM stages.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LlmArgs {
    /// Provider (overrides the board's llm.provider; agent metadata.provider wins over both)
    #[arg(long, env = "MEETING_PROVIDER")]
    pub provider: Option<String>,
    /// Model name (agent metadata.model wins)
    #[arg(long, env = "MEETING_MODEL")]
    pub model: Option<String>,
    /// Cassette file for the replay provider
    #[arg(long, env = "MEETING_CASSETTE")]
    pub cassette: Option<PathBuf>,
}

pub fn client_for(
    args: &LlmArgs,
    board_llm: &LlmSettings,
    metadata: &Map<String, Value>,
    calls: u64,
) -> Result<(Client, Options)> {
    let provider = metadata
        .get("provider")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| args.provider.clone())
        .unwrap_or_else(|| board_llm.provider.clone());
    let model = metadata
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| args.model.clone())
        .or_else(|| board_llm.model.clone())
        .unwrap_or_else(|| "replay".into());
    let opts = Options {
        model,
        temperature: metadata
            .get("temperature")
            .and_then(Value::as_f64)
            .or(board_llm.temperature),
        max_tokens: metadata
            .get("max_tokens")
            .and_then(Value::as_u64)
            .map(|n| n as u32)
            .or(board_llm.max_tokens),
    };
    if provider != "replay" {
        return Err(Error::Usage(format!(
            "provider {provider:?} is not available in this build (only replay)"
        )));
    }
    let Some(path) = &args.cassette else {
        return Err(Error::Usage(
            "--provider replay needs --cassette F (or MEETING_CASSETTE)".into(),
        ));
    };
    let text = agent_meeting::io::read_text_file(path)?;
    let mut lines = BTreeMap::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(line).map_err(|e| {
            Error::input(
                path.display().to_string(),
                format!("line {}", i + 1),
                e.to_string(),
            )
        })?;
        let seq = v.get("seq").and_then(Value::as_u64).ok_or_else(|| {
            Error::input(
                path.display().to_string(),
                format!("line {}: seq", i + 1),
                "expected an integer",
            )
        })?;
        lines.insert(seq, v);
    }
    Ok((Client::new(Box::new(Replay { lines }), calls), opts))
}

struct Replay {
    lines: BTreeMap<u64, Value>,
}

impl Provider for Replay {
    fn name(&self) -> &str {
        "replay"
    }

    fn attempt(
        &mut self,
        seq: u64,
        req: &Request,
        _opts: &Options,
    ) -> std::result::Result<RawReply, AttemptError> {
        let Some(line) = self.lines.get(&seq) else {
            return Err(AttemptError::Fatal(format!(
                "cassette out of step at call {seq}: no such line"
            )));
        };
        let caller = line
            .get("caller")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if caller != req.caller {
            return Err(AttemptError::Fatal(format!(
                "cassette out of step at call {seq}: expected caller {:?}, cassette has {caller:?}",
                req.caller
            )));
        }
        if let Some(err) = line.get("error") {
            return Err(match err.get("kind").and_then(Value::as_str) {
                Some("timeout") => AttemptError::Timeout("injected timeout".into()),
                _ => AttemptError::Http {
                    status: err.get("status").and_then(Value::as_u64).unwrap_or(500) as u16,
                    message: "injected fault".into(),
                    retry_after: None,
                },
            });
        }
        let usage = line.get("usage").map(|u| TokenUsage {
            prompt_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
            completion_tokens: u
                .get("completion_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            estimated: false,
        });
        Ok(RawReply {
            text: line
                .get("response")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            usage,
        })
    }
}
