//! The user's config file (docs/design/agents-and-config.md#config): where it is (`AGENT_MEETING_CONFIG`, else
//! `<platform config dir>/agent-meeting/config.yaml`), what it may set, and how its values
//! rank: flag > environment > config file > built-in default. Each program loads it once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::{parse_doc, read_text_file, Format};

/// The variable naming the config file instead of the platform's place; set but empty, no
/// config file is read (the `meeting` driver's stages read the run folder's copy instead).
pub const CONFIG_ENV: &str = "AGENT_MEETING_CONFIG";

/// What the config file may set. Unknown keys are refused (exit 2, with the field path), so a
/// typo never passes silently, and there is no place for a key: keys stay in the environment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// A command run when a meeting waits for a person (`--on-waiting`; waiting.json on its
    /// stdin, docs/design/agent-turn.md#a-ping-when-a-person-is-needed). Read from the user's
    /// own file only, never from a run folder's copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_waiting: Option<String>,
    /// Default provider: openai, anthropic, azure, ollama, gemini, replay or sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Default model of every caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model per caller (`pm` or an agent's name), over `model`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, String>,
    /// API base URLs (`openai`, `anthropic`, `ollama`), below OPENAI_BASE_URL /
    /// ANTHROPIC_BASE_URL / OLLAMA_HOST.
    #[serde(default, skip_serializing_if = "BaseUrls::is_empty")]
    pub base_urls: BaseUrls,
    /// The user's agents folder (default `<config dir>/agents`); `~/` and paths relative to
    /// the config file's folder are resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents_dir: Option<PathBuf>,
    /// Where `meeting` keeps run folders (default `runs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<PathBuf>,
    /// Default loop limit (default 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_loops: Option<u32>,
    /// Default budget of a meeting (below the meeting file's, `--max-total-tokens` and `--max-cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// Who decides, for a decision record's `decision-makers` (people, never the agents; below
    /// `--decider`, over git's user.name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deciders: Vec<String>,
}

/// `base_urls` in the config file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BaseUrls {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anthropic: Option<String>,
    /// The Ollama server's root (`http://gpu-box:11434`), a URL as the others are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ollama: Option<String>,
}

impl BaseUrls {
    fn is_empty(&self) -> bool {
        self.openai.is_none() && self.anthropic.is_none() && self.ollama.is_none()
    }
}

/// `budget` in the config file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// US dollars a meeting may spend (docs/design/pm-round.md#cost-budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// US dollars the meetings started on one UTC day in the run folder may spend together
    /// (docs/design/run-folder.md#a-spending-cap-per-day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_per_day_usd: Option<f64>,
}

impl Config {
    /// The LLM settings, for [`crate::llm::LlmConfig::config`].
    pub fn llm_defaults(&self) -> crate::llm::ConfigDefaults {
        crate::llm::ConfigDefaults {
            provider: self.provider.clone(),
            model: self.model.clone(),
            models: self.models.clone(),
            openai_base_url: self.base_urls.openai.clone(),
            anthropic_base_url: self.base_urls.anthropic.clone(),
            ollama_base_url: self.base_urls.ollama.clone(),
        }
    }
}

/// The LLM flags with the config file's settings below them.
pub fn with_config(mut llm: crate::llm::LlmConfig) -> Result<crate::llm::LlmConfig> {
    llm.config = load()?.config.llm_defaults();
    Ok(llm)
}

/// The config file this process reads, and its settings (empty when there is none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// The file read, if one exists.
    pub file: Option<PathBuf>,
    /// Where the file is looked for (shown by `--show-config` when there is none).
    pub looked_at: Option<PathBuf>,
    pub config: Config,
}

/// `<platform config dir>/agent-meeting`, when the platform has one (no home folder: none).
pub fn config_dir() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("agent-meeting"))
}

/// Where the config file is: `AGENT_MEETING_CONFIG` (empty: none), else the platform's place.
pub fn config_path() -> Option<PathBuf> {
    match std::env::var_os(CONFIG_ENV) {
        Some(v) if v.is_empty() => None,
        Some(v) => Some(PathBuf::from(v)),
        None => config_dir().map(|d| d.join("config.yaml")),
    }
}

/// The config of this process, read once: a missing file at the default place is no config;
/// a file named by `AGENT_MEETING_CONFIG` must exist.
pub fn load() -> Result<&'static Loaded> {
    static LOADED: OnceLock<std::result::Result<Loaded, Error>> = OnceLock::new();
    LOADED
        .get_or_init(|| load_from(config_path(), std::env::var_os(CONFIG_ENV).is_some()))
        .as_ref()
        .map_err(Clone::clone)
}

/// The config of a run: the file its settings pinned (docs/design/agents-and-config.md#config), or none.
pub fn load_file(path: Option<&std::path::Path>) -> Result<Loaded> {
    load_from(path.map(std::path::Path::to_path_buf), true)
}

fn load_from(path: Option<PathBuf>, named: bool) -> Result<Loaded> {
    let Some(path) = path else {
        return Ok(Loaded::default());
    };
    if !named && !path.exists() {
        return Ok(Loaded {
            file: None,
            looked_at: Some(path),
            config: Config::default(),
        });
    }
    let text = read_text_file(&path)?;
    let label = path.display().to_string();
    let mut config: Config = if text.trim().is_empty() {
        Config::default()
    } else {
        parse_doc(&label, &text, Format::Yaml)?
    };
    for (field, url) in [
        ("base_urls.openai", &config.base_urls.openai),
        ("base_urls.anthropic", &config.base_urls.anthropic),
        ("base_urls.ollama", &config.base_urls.ollama),
    ] {
        if let Some(Err(expected)) = url.as_deref().map(crate::llm::transport::check_base_url) {
            return Err(Error::input(&label, field, expected));
        }
    }
    let base = path.parent().unwrap_or(Path::new("."));
    for p in [&mut config.agents_dir, &mut config.run_dir]
        .into_iter()
        .flatten()
    {
        *p = resolve_path(base, p);
    }
    Ok(Loaded {
        file: Some(path.clone()),
        looked_at: Some(path),
        config,
    })
}

/// `~/x` from the home folder, a relative path from the config file's folder.
fn resolve_path(base: &Path, p: &Path) -> PathBuf {
    if let Ok(rest) = p.strip_prefix("~") {
        if let Some(home) = dirs::home_dir() {
            return home.join(rest);
        }
    }
    base.join(p)
}

/// The user's agents folder: the config file's `agents_dir`, else `<config dir>/agents`.
pub fn user_agents_dir() -> Result<Option<PathBuf>> {
    Ok(load()?.config.user_agents_dir())
}

impl Config {
    /// The user's agents folder by this config: its `agents_dir`, else
    /// `<config dir>/agents`.
    pub fn user_agents_dir(&self) -> Option<PathBuf> {
        self.agents_dir
            .clone()
            .or_else(|| config_dir().map(|d| d.join("agents")))
    }
}

pub use crate::llm::Source;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_home_paths_resolve() {
        assert_eq!(
            resolve_path(Path::new("/cfg"), Path::new("agents")),
            PathBuf::from("/cfg/agents")
        );
        assert_eq!(
            resolve_path(Path::new("/cfg"), Path::new("/abs")),
            PathBuf::from("/abs")
        );
        if let Some(home) = dirs::home_dir() {
            assert_eq!(
                resolve_path(Path::new("/cfg"), Path::new("~/a")),
                home.join("a")
            );
        }
    }
}
