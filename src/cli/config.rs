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
    /// Default provider: openai, anthropic or replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Default model of every caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model per caller (`pm` or an agent's name), over `model`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, String>,
    /// API base URLs (`openai`, `anthropic`), below OPENAI_BASE_URL / ANTHROPIC_BASE_URL.
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
    /// Default token budget of a meeting (below the meeting file's and `--max-total-tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
}

/// `base_urls` in the config file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BaseUrls {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anthropic: Option<String>,
}

impl BaseUrls {
    fn is_empty(&self) -> bool {
        self.openai.is_none() && self.anthropic.is_none()
    }
}

/// `budget` in the config file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub max_total_tokens: u64,
}

impl Config {
    /// The LLM settings, for [`crate::llm::LlmArgs::config`].
    pub fn llm_defaults(&self) -> crate::llm::ConfigDefaults {
        crate::llm::ConfigDefaults {
            provider: self.provider.clone(),
            model: self.model.clone(),
            models: self.models.clone(),
            openai_base_url: self.base_urls.openai.clone(),
            anthropic_base_url: self.base_urls.anthropic.clone(),
        }
    }
}

/// The LLM flags with the config file's settings below them.
pub fn with_config(mut llm: crate::llm::LlmArgs) -> Result<crate::llm::LlmArgs> {
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

/// Where `meeting` keeps run folders, and why: `--run-dir` > the config file's > `runs`.
pub fn run_dir(flag: Option<PathBuf>, cfg: &Config) -> (PathBuf, Source) {
    match (flag, &cfg.run_dir) {
        (Some(d), _) => (d, Source::Flag),
        (None, Some(d)) => (d.clone(), Source::ConfigFile(None)),
        (None, None) => (PathBuf::from("runs"), Source::Default),
    }
}

/// What the command line (or a flag's variable) gave, for [`show`].
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// The LLM flags, their `from_env` filled.
    pub llm: crate::llm::LlmArgs,
    pub agents_dir: Option<PathBuf>,
    pub run_dir: Option<PathBuf>,
    pub max_loops: Option<u32>,
    /// The built-in loop limit.
    pub default_max_loops: u32,
    pub max_total_tokens: Option<u64>,
    /// The meeting's model callers with their config metadata, PM first (empty without
    /// `--agents`): each gets rows of its own.
    pub callers: Vec<(String, serde_json::Map<String, serde_json::Value>)>,
}

/// One row of [`show`]: a setting, its value, where it came from.
type Row = (String, String, String);

/// The provider, model and `max_tokens` rows: for a caller with no metadata, then for each of
/// `callers`, as `llm::resolve` resolves them for a run.
fn caller_rows(
    llm: &crate::llm::LlmArgs,
    callers: &[(String, serde_json::Map<String, serde_json::Value>)],
) -> Result<Vec<Row>> {
    let mut rows: Vec<Row> = Vec::new();
    let mut row = |name: String, value: String, source: Source| {
        rows.push((name, value, source.to_string()));
    };
    let board_llm = crate::model::LlmSettings::from_flags(llm);
    let no_meta = serde_json::Map::new();
    let all = std::iter::once((String::new(), &no_meta))
        .chain(callers.iter().map(|(n, m)| (n.clone(), m)));
    for (caller, meta) in all {
        let prefix = if caller.is_empty() {
            String::new()
        } else {
            format!("{caller}.")
        };
        match crate::llm::resolve(llm, &board_llm, &caller, meta) {
            Ok(r) => {
                row(
                    format!("{prefix}provider"),
                    r.provider.value.to_string(),
                    r.provider.source,
                );
                row(format!("{prefix}model"), r.model.value, r.model.source);
                if caller.is_empty() {
                    let t = r.read_timeout;
                    row("read_timeout".into(), format!("{} s", t.value), t.source);
                }
                if !caller.is_empty() {
                    let (n, source) = match r.max_tokens.value {
                        Some(n) => (n, r.max_tokens.source),
                        None => (
                            crate::llm::default_max_tokens::of_caller(&caller),
                            Source::Default,
                        ),
                    };
                    row(format!("{prefix}max_tokens"), n.to_string(), source);
                }
            }
            Err(Error::Runtime(_)) => {
                row(format!("{prefix}provider"), "none".into(), Source::Default)
            }
            Err(e) => return Err(e),
        }
    }
    Ok(rows)
}

/// Where the `--header`s came from: the flag or `AGENT_MEETING_HEADERS`.
fn headers_source(llm: &crate::llm::LlmArgs) -> Source {
    let var = crate::llm::headers::HEADERS_VAR;
    if llm.from_env.iter().any(|v| v == var) {
        Source::Env(var.into())
    } else {
        Source::Flag
    }
}

/// What `--show-config` prints: each setting, its value and where it came from, in the
/// precedence flag > environment > config file > built-in default; the provider, model and
/// `max_tokens` of each caller as a run would resolve them (`crate::llm::resolve`, the
/// resolver the clients use). No key is printed, only whether it is set.
pub fn show(given: &Given, loaded: &Loaded) -> Result<String> {
    let cfg = &loaded.config;
    let mut rows: Vec<Row> = Vec::new();
    let mut llm = given.llm.clone();
    llm.config = cfg.llm_defaults();
    rows.extend(caller_rows(&llm, &given.callers)?);
    let mut row = |name: &str, value: String, source: Source| {
        rows.push((name.to_string(), value, source.to_string()));
    };
    for (caller, m) in &cfg.models {
        row(
            &format!("models.{caller}"),
            m.clone(),
            Source::ConfigFile(None),
        );
    }
    for p in [
        crate::llm::ProviderName::OpenAi,
        crate::llm::ProviderName::Anthropic,
    ] {
        let url = crate::llm::resolve::base_url(&llm, p);
        let shown = crate::llm::transport::masked_url(&url.value);
        row(&format!("base_urls.{p}"), shown, url.source);
    }
    let azure = crate::llm::resolve::base_url(&llm, crate::llm::ProviderName::Azure);
    let shown = crate::llm::transport::masked_url(&azure.value);
    let shown = if shown.is_empty() {
        "not set".into()
    } else {
        shown
    };
    row("azure endpoint", shown, azure.source);
    let version = crate::llm::resolve::azure_api_version();
    row("azure api-version", version.value, version.source);
    for h in crate::llm::headers::specs(&llm.headers)? {
        row(
            &format!("header {}", h.name),
            h.shown_value(),
            headers_source(&llm),
        );
    }
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "AZURE_OPENAI_API_KEY",
    ] {
        let set = match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => "set",
            _ => "not set",
        };
        row(var, set.into(), Source::Env(var.into()));
    }
    let (agents_dir, source) = match (&given.agents_dir, &cfg.agents_dir) {
        (Some(d), _) => (d.display().to_string(), Source::Flag),
        (None, Some(d)) => (d.display().to_string(), Source::ConfigFile(None)),
        (None, None) => (
            user_agents_dir()?.map_or_else(|| "-".into(), |d| d.display().to_string()),
            Source::Default,
        ),
    };
    let name = if given.agents_dir.is_some() {
        "agents_dir (--agents-dir)"
    } else {
        "agents_dir (user agents folder)"
    };
    row(name, agents_dir, source);
    let (run, source) = run_dir(given.run_dir.clone(), cfg);
    row("run_dir", run.display().to_string(), source);
    let (loops, source) = match (given.max_loops, cfg.max_loops) {
        (Some(n), _) => (n, Source::Flag),
        (None, Some(n)) => (n, Source::ConfigFile(None)),
        (None, None) => (given.default_max_loops, Source::Default),
    };
    row("max_loops", loops.to_string(), source);
    let (budget, source) = match (given.max_total_tokens, &cfg.budget) {
        (Some(n), _) => (n.to_string(), Source::Flag),
        (None, Some(b)) => (b.max_total_tokens.to_string(), Source::ConfigFile(None)),
        (None, None) => (
            "none (or the meeting file's budget)".into(),
            Source::Default,
        ),
    };
    row("budget.max_total_tokens", budget, source);
    let mut out = match (&loaded.file, &loaded.looked_at) {
        (Some(f), _) => format!("# config file: {}\n", f.display()),
        (None, Some(p)) => format!("# config file: none ({} does not exist)\n", p.display()),
        (None, None) => format!("# config file: none ({} is empty)\n", CONFIG_ENV),
    };
    let w0 = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    for (name, value, source) in rows {
        out.push_str(&format!("{name:w0$}  {value:w1$}  {source}\n"));
    }
    Ok(out)
}

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
