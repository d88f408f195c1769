//! Which provider and model each caller of a meeting gets, said before anything runs: the
//! key check, the start line's `models:` line, `--show-config`'s callers and the warning for a
//! replay the environment chose (docs/design/run-folder.md#run-folder, docs/design/agents-and-config.md#config). Every answer comes
//! from the one resolver, `llm::resolve`.

use std::path::Path;

use crate::error::{Error, Result};
use crate::llm::{LlmConfig, ProviderName};
use crate::model::{AgentConfig, Board, ParticipantKind};

pub use crate::stage::Caller;

/// Resolve the provider of the PM and of every participant once, as the stages will. With
/// `allow_missing_keys` (a dry run) a missing key or no provider at all is not an error: what
/// a real run would stop on is returned, one line each; everything else is still checked.
pub(crate) fn check_llm_config(
    llm: &LlmConfig,
    board: &Board,
    allow_missing_keys: bool,
) -> Result<Vec<String>> {
    let mut missing: Vec<String> = Vec::new();
    // A malformed `--header` is refused even when no client is built (a dry run, no key).
    crate::llm::headers::specs(&llm.headers)?;
    for (name, meta) in callers(board) {
        if allow_missing_keys {
            let gap = match crate::llm::resolve(llm, &board.llm, &name, &meta) {
                // No provider at all; a name that is no provider is refused below.
                Err(e @ Error::Runtime(_)) => Some(e.to_string()),
                Err(_) => None,
                Ok(r) => {
                    let provider = r.provider.value;
                    crate::llm::build::missing_key(llm, provider).map(|var| {
                        format!(
                            "{var} is not set: a real meeting would stop here ({provider} needs it)"
                        )
                    })
                }
            };
            if let Some(gap) = gap {
                if !missing.contains(&gap) {
                    missing.push(gap);
                }
                continue;
            }
        }
        crate::llm::client_for_caller(llm, &board.llm, &name, &meta, 0)?;
    }
    Ok(missing)
}

/// The model callers of a meeting, PM first, with their metadata (a `kind: human` participant
/// calls no model: it needs no provider or key), then the reviewers who are no participants
/// (docs/design/review.md#settings).
pub(crate) fn callers(board: &Board) -> Vec<Caller> {
    let reviewers: Vec<String> = board
        .reviewers()
        .into_iter()
        .filter(|r| !board.participants.contains(r))
        .collect();
    let agents = board
        .participants
        .iter()
        .chain(&reviewers)
        .map(|n| (n, board.agents.get(n)));
    callers_of(board.pm.as_ref(), agents)
}

/// [`callers`] of a PM config and the participants' names with their configs.
fn callers_of<'a>(
    pm: Option<&AgentConfig>,
    agents: impl Iterator<Item = (&'a String, Option<&'a AgentConfig>)>,
) -> Vec<Caller> {
    let mut out = vec![(
        crate::model::PM_CALLER.to_string(),
        pm.map(|p| p.metadata.clone()).unwrap_or_default(),
    )];
    for (name, config) in agents {
        if config.is_some_and(|a| a.kind == ParticipantKind::Human) {
            continue;
        }
        out.push((
            name.clone(),
            config.map(|a| a.metadata.clone()).unwrap_or_default(),
        ));
    }
    out
}

/// The model callers `--agents` (and `--pm`) name, as [`callers`] lists them from the board,
/// for `--show-config`; none without `--agents`.
pub fn callers_of_agents(b: &crate::settings::MeetingSettings) -> Result<Vec<Caller>> {
    if b.options.agents.iter().all(|a| a.trim().is_empty()) {
        return Ok(Vec::new());
    }
    let search = crate::loader::AgentSearch::new(
        b.agents_dir.as_deref(),
        crate::settings::config::load()?.config.user_agents_dir(),
    );
    let pm_name = b.options.pm.as_deref().unwrap_or(crate::model::PM_CALLER);
    let (agents, pm) = crate::loader::load_meeting_agents(
        &search,
        &b.options.agents,
        pm_name,
        b.options.pm.is_some(),
    )?;
    Ok(callers_of(
        pm.as_ref(),
        agents.iter().map(|a| (&a.name, Some(a))),
    ))
}

fn is_human(board: &Board, name: &str) -> bool {
    board
        .agents
        .get(name)
        .is_some_and(|a| a.kind == ParticipantKind::Human)
}

/// The start line's second line: which provider and model each caller uses, callers that
/// share both named together (`models: openai gpt-4o-mini: pm, arch; anthropic ...: biz`);
/// a replayed meeting names its cassette instead of a model.
pub(crate) fn models_line(llm: &LlmConfig, board: &Board) -> Result<String> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut local = None;
    for (name, meta) in callers(board) {
        let Ok(r) = crate::llm::resolve(llm, &board.llm, &name, &meta) else {
            // No provider at all: only a dry run gets this far.
            return Ok("models: none (no provider configured)".to_string());
        };
        local = local.or_else(|| r.local_note());
        let what = if r.provider.value == ProviderName::Replay {
            let cassette = llm.cassette.as_deref().unwrap_or(Path::new("?"));
            format!("replay of {}", cassette.display())
        } else if r.provider.value == ProviderName::Sample {
            "sample answers, no model".to_string()
        } else {
            format!("{} {}{}", r.provider.value, r.model.value, r.api_note())
        };
        match groups.iter_mut().find(|(w, _)| *w == what) {
            Some((_, names)) => names.push(name),
            None => groups.push((what, vec![name])),
        }
    }
    let people: Vec<String> = board
        .participants
        .iter()
        .filter(|n| is_human(board, n))
        .cloned()
        .collect();
    if !people.is_empty() {
        groups.push((crate::model::HUMAN_PROVIDER.to_string(), people));
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(what, names)| format!("{what} ({})", names.join(", ")))
        .collect();
    let local = local.map(|n| format!("\n{n}")).unwrap_or_default();
    let carries = carries_line(llm, board)
        .map(|l| format!("\n{l}"))
        .unwrap_or_default();
    Ok(format!("models: {}{local}{carries}", parts.join("; ")))
}

/// What each call carries before the whiteboard and the question — the brief and the
/// documents, the same bytes in every call of a caller — in characters, tokens and, where the
/// caller's model is priced, dollars a call (docs/design/context.md#context-budget). None
/// without documents.
fn carries_line(llm: &LlmConfig, board: &Board) -> Option<String> {
    if board.context_bundle.documents.is_empty() {
        return None;
    }
    use crate::meeting::prompts::{meeting_brief, pm_brief, pm_index_brief, PmReads};
    let reads = PmReads::from_env().ok()?;
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (name, meta) in callers(board) {
        let price = crate::llm::resolve(llm, &board.llm, &name, &meta)
            .ok()
            .and_then(|r| {
                crate::llm::prices::Prices::current()
                    .of(&r.provider.value.to_string(), &r.model.value)
            });
        let size = |brief: &str| {
            let tokens = crate::meeting::budget::estimate_tokens(brief);
            let usd = price
                .as_ref()
                .map(|p| match p.input * tokens as f64 {
                    u if u < 0.0001 => ", under $0.0001 a call".to_string(),
                    u => format!(", {} a call", crate::llm::prices::dollars(u)),
                })
                .unwrap_or_default();
            format!(
                "{} characters (about {} tokens{usd})",
                crate::text::thousands(brief.chars().count() as u64),
                crate::text::thousands(tokens)
            )
        };
        // The PM's later rounds may carry an index in place of the documents' text
        // (docs/design/context.md#what-the-pm-reads).
        let what = if name == crate::model::PM_CALLER {
            let first = pm_brief(board, reads).ok()?;
            let later = match reads {
                PmReads::All => first.clone(),
                _ => pm_index_brief(board).ok()?,
            };
            if later == first {
                size(&first)
            } else {
                format!("{} on its first call, then {}", size(&first), size(&later))
            }
        } else {
            let reader = board.agents.contains_key(&name).then_some(name.as_str());
            size(&meeting_brief(board, reader).ok()?)
        };
        match groups.iter_mut().find(|(w, _)| *w == what) {
            Some((_, names)) => names.push(name),
            None => groups.push((what, vec![name])),
        }
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(what, names)| format!("{} {what}", names.join(", ")))
        .collect();
    Some(format!(
        "each call carries the brief and documents: {}",
        parts.join("; ")
    ))
}

/// A visible warning when the environment, not a flag, made this meeting a replay: a variable
/// left over from the README's offline example must not pass for a real meeting.
pub(crate) fn replay_from_env_warning(llm: &LlmConfig) -> Option<String> {
    let from_env = &llm.from_env;
    let replay =
        llm.provider.as_deref().and_then(ProviderName::parse) == Some(ProviderName::Replay);
    let var = from_env.iter().find(|v| *v == "AGENT_MEETING_PROVIDER")?;
    replay.then(|| {
        format!(
            "meeting: warning: replaying a recording, no model is asked: {var}=replay is set in the environment{}; unset it (or pass --provider) for a real meeting",
            if from_env.iter().any(|v| v == "MEETING_CASSETTE") {
                " (and the cassette comes from MEETING_CASSETTE)"
            } else {
                ""
            }
        )
    })
}
