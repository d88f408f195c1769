//! The settings a program runs with, resolved once (docs/design/agents-and-config.md#config):
//! the user's config file (`config`), the meeting's settings as the library owns them
//! ([`MeetingSettings`], what `cli::flags::BoardArgs` settles to), and the one resolver of the
//! settings that are not the LLM's — the loop limit, the budgets in tokens and dollars, the
//! council and the reviewers, the folders — each with where it came from, as the LLM resolver
//! gives its settings (`llm::resolve`). `init-board`, the `meeting` driver and `--show-config`
//! all ask it, so what they use and what they show cannot disagree ([`show`] prints them). The
//! stages below get the resolved values only: nothing under the edge reads a flag or the config
//! file.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::llm::LlmConfig;
use crate::llm::{Setting, Source};
use crate::model::MeetingInput;
use crate::stage::init_board::InitArgs;
use config::{user_agents_dir, Config, Loaded, CONFIG_ENV};
pub use options::MeetingOptions;

pub mod config;
pub mod options;

/// How the meetings of a pull (merge) request run, on either forge (`agent-meeting github`,
/// `agent-meeting gitlab`: docs/design/github.md).
#[derive(Debug, Clone)]
pub struct PullSettings {
    /// The program, as its lines on stderr name it (`agent-meeting github`).
    pub program: &'static str,
    /// Where the run folders are (inside the checkout: the meeting's documents must be).
    pub run_dir: PathBuf,
    /// The repository's settings file (default `.github/agent-meeting.yaml` when it exists).
    pub config: Option<PathBuf>,
    /// The meeting's options the flags give, over the repository file's.
    pub options: MeetingOptions,
    /// Given to `meeting` as they are (`--provider`, `--model`).
    pub meeting_args: Vec<String>,
    /// This executable, which runs `meeting`.
    pub exe: PathBuf,
    /// The job's summary page (`GITHUB_STEP_SUMMARY`), which gets the comment too.
    pub summary: Option<PathBuf>,
}

/// `--adr DIR`, `--supersedes N` and the deciders, as `meeting.json` keeps them
/// (docs/design/report.md#adr).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdrSettings {
    /// The folder of the decision records (absolute).
    pub dir: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// The people who decide (MADR's `decision-makers`), never the agents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deciders: Vec<String>,
}

/// The loop limit when neither a flag nor the config file gives one.
pub const DEFAULT_MAX_LOOPS: u32 = 6;

/// Most participants one CALL_AGENTS asks at once when not given.
pub const DEFAULT_MAX_PARALLEL: u32 = 3;

/// A meeting's options as given (the command line's flags, through `cli::flags`), kept in a
/// run's `meeting.json` (`board`): the options every surface shares, and what only a run has —
/// the agents' folder, the settled trace id. Resolved against the meeting file and the config
/// file by [`resolve`]; the decision record's options are `RunSettings::adr`'s.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MeetingSettings {
    #[serde(flatten)]
    pub options: MeetingOptions,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents_dir: Option<PathBuf>,
    #[serde(default)]
    pub trace_id: Option<String>,
    /// What the day's spending cap left this meeting when it started (`max_cost_per_day`
    /// less what the day's other meetings spent or may still spend): its dollar budget when
    /// lower than its own (docs/design/run-folder.md#a-spending-cap-per-day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day_left_usd: Option<f64>,
}

/// The panel of a meeting whose options name none (a command line without `--agents`, a
/// repository file without `agents`): an architect and a business analyst.
pub const DEFAULT_AGENTS: [&str; 2] = ["arch", "biz"];

/// A meeting's options resolved (docs/design/agents-and-config.md#config): each value with
/// where it came from. What init-board builds the board from, what `show-config` prints.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The participants: the ones given, else [`DEFAULT_AGENTS`].
    pub agents: Setting<Vec<String>>,
    pub max_loops: Setting<u32>,
    pub max_parallel: Setting<u32>,
    pub max_total_tokens: Setting<Option<u64>>,
    pub max_cost: Setting<Option<f64>>,
    /// What the meetings started on one UTC day may spend together (the given value > the
    /// config file's `budget.max_cost_per_day_usd`; none by default).
    pub max_cost_per_day: Setting<Option<f64>>,
    /// Who reviews the PM's draft, and how many rounds (None: no review).
    pub review: Setting<Option<crate::model::ReviewSettings>>,
    /// The council round (None: none).
    pub council: Setting<Option<crate::model::CouncilSettings>>,
}

/// The one place the precedence of a meeting's options is written: what was given (a flag, a
/// tool's argument, the repository file — `given`) > the meeting file (`input`: its `budget`,
/// `review`, `council`; None where no meeting file is known) > the config file > the built-in
/// default.
pub fn resolve(given: &MeetingOptions, input: Option<&MeetingInput>, config: &Config) -> Settings {
    fn setting<T>(value: T, source: Source) -> Setting<T> {
        Setting { value, source }
    }
    let max_parallel = match given.max_parallel {
        Some(n) => setting(n, Source::Flag),
        None => setting(DEFAULT_MAX_PARALLEL, Source::Default),
    };
    let names = |l: &[String]| -> Vec<String> {
        l.iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect()
    };
    let file_review = input.and_then(|i| i.review.clone());
    let reviewers = names(&given.reviewers);
    // Given reviewers or rounds win over the file's, each on its own (the file's rounds with
    // given reviewers, else one; given rounds by the file's reviewers, else the built-in one).
    let review = match (
        reviewers.is_empty() && given.review_rounds.is_none(),
        file_review,
    ) {
        (false, file) => setting(
            Some(crate::model::ReviewSettings {
                by: match reviewers.is_empty() {
                    true => file.as_ref().map(|r| r.by.clone()).unwrap_or_default(),
                    false => reviewers,
                },
                rounds: given.review_rounds.or(file.map(|r| r.rounds)).unwrap_or(1),
            }),
            Source::Flag,
        ),
        (true, Some(file)) => setting(Some(file), Source::MeetingFile),
        (true, None) => setting(None, Source::Default),
    };
    let file_council = input
        .and_then(|i| i.council.as_ref())
        .and_then(|c| c.settings());
    let models = names(&given.council_models);
    let council = if given.council || given.council_adaptive || !models.is_empty() {
        let mut c = file_council.unwrap_or_default();
        if !models.is_empty() {
            c.models = models;
        }
        c.adaptive |= given.council_adaptive;
        setting(Some(c), Source::Flag)
    } else {
        match file_council {
            Some(c) => setting(Some(c), Source::MeetingFile),
            None => setting(None, Source::Default),
        }
    };
    let agents = match given.agents.is_empty() {
        false => setting(given.agents.clone(), Source::Flag),
        true => setting(
            DEFAULT_AGENTS.iter().map(|a| a.to_string()).collect(),
            Source::Default,
        ),
    };
    Settings {
        agents,
        max_loops: max_loops(given.max_loops, DEFAULT_MAX_LOOPS, config),
        max_parallel,
        max_total_tokens: max_total_tokens(given.max_total_tokens, input, config),
        max_cost: max_cost_usd(given.max_cost, input, config),
        max_cost_per_day: budget_setting(
            given.max_cost_per_day,
            None,
            config,
            |_| None,
            |b| b.max_cost_per_day_usd,
        ),
        review,
        council,
    }
}

/// `max_loops`: the flag (when given) > the config file > the built-in default.
pub fn max_loops(flag: Option<u32>, default: u32, config: &Config) -> Setting<u32> {
    match (flag, config.max_loops) {
        (Some(n), _) => Setting {
            value: n,
            source: Source::Flag,
        },
        (None, Some(n)) => Setting {
            value: n,
            source: Source::ConfigFile(None),
        },
        (None, None) => Setting {
            value: default,
            source: Source::Default,
        },
    }
}

/// `budget.max_total_tokens`: the flag > the meeting file's `budget` > the config file's;
/// none by default. `meeting_file` is `None` where no meeting file is known (`--show-config`
/// without one).
pub fn max_total_tokens(
    flag: Option<u64>,
    meeting_file: Option<&MeetingInput>,
    config: &Config,
) -> Setting<Option<u64>> {
    budget_setting(
        flag,
        meeting_file,
        config,
        |b| b.max_total_tokens,
        |b| b.max_total_tokens,
    )
}

/// `budget.max_cost_usd`, found as [`max_total_tokens`] is.
pub fn max_cost_usd(
    flag: Option<f64>,
    meeting_file: Option<&MeetingInput>,
    config: &Config,
) -> Setting<Option<f64>> {
    budget_setting(
        flag,
        meeting_file,
        config,
        |b| b.max_cost_usd,
        |b| b.max_cost_usd,
    )
}

/// One budget limit: the flag > the meeting file's `budget` > the config file's; none by
/// default.
fn budget_setting<T: Copy>(
    flag: Option<T>,
    meeting_file: Option<&MeetingInput>,
    config: &Config,
    in_file: impl Fn(&crate::model::MeetingBudget) -> Option<T>,
    in_config: impl Fn(&config::Budget) -> Option<T>,
) -> Setting<Option<T>> {
    let file = meeting_file
        .and_then(|m| m.budget.as_ref())
        .and_then(in_file);
    let cfg = config.budget.as_ref().and_then(in_config);
    let (value, source) = match (flag, file, cfg) {
        (Some(n), _, _) => (Some(n), Source::Flag),
        (None, Some(n), _) => (Some(n), Source::MeetingFile),
        (None, None, Some(n)) => (Some(n), Source::ConfigFile(None)),
        (None, None, None) => (None, Source::Default),
    };
    Setting { value, source }
}

/// What `init-board` is given: the meeting's settings as given (`board`) resolved against the
/// meeting file (`input`) and the config file, the meeting's LLM defaults.
pub fn init_args(
    board: &MeetingSettings,
    llm: LlmConfig,
    config: &Config,
    input: &MeetingInput,
) -> InitArgs {
    let o = &board.options;
    let resolved = resolve(o, Some(input), config);
    InitArgs {
        agents: resolved.agents.value,
        pm: o.pm.clone(),
        agents_dir: board.agents_dir.clone(),
        user_agents_dir: config.user_agents_dir(),
        review: resolved.review.value,
        council: resolved.council.value,
        trace_id: board.trace_id.clone(),
        llm,
        max_loops: resolved.max_loops.value,
        max_parallel: resolved.max_parallel.value,
        max_total_tokens: resolved.max_total_tokens.value,
        // The day's cap lowers the meeting's own budget, never raises it.
        max_cost_usd: match (resolved.max_cost.value, board.day_left_usd) {
            (Some(own), Some(left)) => Some(own.min(left)),
            (own, left) => own.or(left),
        },
    }
}

/// The command run when a meeting waits for a person: `--on-waiting`, else the user's own
/// config file's `on_waiting` — never a run folder's copy (a folder restores no command,
/// docs/design/agent-turn.md#a-ping-when-a-person-is-needed). A broken user config gives none
/// here: the start has already refused it, and a resume must not stop on it.
pub fn on_waiting(flag: Option<String>) -> Option<String> {
    flag.or_else(|| {
        config::load()
            .ok()
            .and_then(|l| l.config.on_waiting.clone())
    })
}

/// The folder `--agents-dir` names, if any (kept apart for `--show-config`'s row).
pub fn agents_dir(flag: Option<&PathBuf>, config: &Config) -> Option<Setting<PathBuf>> {
    match (flag, &config.agents_dir) {
        (Some(d), _) => Some(Setting {
            value: d.clone(),
            source: Source::Flag,
        }),
        (None, Some(d)) => Some(Setting {
            value: d.clone(),
            source: Source::ConfigFile(None),
        }),
        (None, None) => None,
    }
}

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
    pub llm: LlmConfig,
    /// The meeting's options and folders as given.
    pub board: MeetingSettings,
    pub run_dir: Option<PathBuf>,
    /// The meeting's model callers with their config metadata, PM first (empty without
    /// `--agents`): each gets rows of its own.
    pub callers: Vec<(String, serde_json::Map<String, serde_json::Value>)>,
}

/// One row of [`show`]: a setting, its value, where it came from.
type Row = (String, String, String);

/// One resolved setting as a run keeps it in `meeting.json` (`resolved`) and `show-config`
/// prints it: its name, its value and where that came from (flag, environment, meeting file,
/// config file, default).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resolved {
    pub name: String,
    pub value: String,
    pub source: String,
}

/// The provider, model and `max_tokens` rows: for a caller with no metadata, then for each of
/// `callers`, as `llm::resolve` resolves them for a run.
fn caller_rows(
    llm: &LlmConfig,
    callers: &[(String, serde_json::Map<String, serde_json::Value>)],
) -> Result<Vec<Row>> {
    let mut rows: Vec<Row> = Vec::new();
    let mut row = |name: String, value: String, source: Source| {
        rows.push((name, value, source.to_string()));
    };
    let board_llm = crate::model::LlmSettings::from_config(llm);
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
                if let Some(api) = r.api {
                    let value = api.value.as_str().to_string();
                    row(format!("{prefix}openai_api"), value, api.source);
                }
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
fn headers_source(llm: &LlmConfig) -> Source {
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
    let rows = resolve_all(given, loaded, None)?;
    Ok(render(&config_line(loaded), &rows))
}

/// The first line of `show-config`: which config file was read.
pub fn config_line(loaded: &Loaded) -> String {
    match (&loaded.file, &loaded.looked_at) {
        (Some(f), _) => format!("# config file: {}\n", f.display()),
        (None, Some(p)) => format!("# config file: none ({} does not exist)\n", p.display()),
        (None, None) => format!("# config file: none ({} is empty)\n", CONFIG_ENV),
    }
}

/// `head`, then the rows in three aligned columns.
pub fn render(head: &str, rows: &[Resolved]) -> String {
    let mut out = head.to_string();
    let w0 = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    let w1 = rows
        .iter()
        .map(|r| r.value.chars().count())
        .max()
        .unwrap_or(0);
    for r in rows {
        let (name, value, source) = (&r.name, &r.value, &r.source);
        out.push_str(&format!("{name:w0$}  {value:w1$}  {source}\n"));
    }
    out
}

/// Every setting [`show`] prints, resolved as a run resolves it; with the meeting's `input`
/// (a run knows its meeting file), the budgets as that file sets them too.
pub fn resolve_all(
    given: &Given,
    loaded: &Loaded,
    input: Option<&MeetingInput>,
) -> Result<Vec<Resolved>> {
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
        crate::llm::ProviderName::Ollama,
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
    let form = crate::llm::resolve::azure_form();
    let version = match form.value {
        crate::llm::openai::AzureForm::Deployment { api_version } => api_version,
        crate::llm::openai::AzureForm::V1 => "none (the v1 endpoint)".to_string(),
    };
    row("azure api-version", version, form.source);
    // Gemini's endpoint is set by its variable only (no config key, unlike base_urls.*).
    let gemini = crate::llm::resolve::base_url(&llm, crate::llm::ProviderName::Gemini);
    let shown = crate::llm::transport::masked_url(&gemini.value);
    row("gemini endpoint", shown, gemini.source);
    for h in crate::llm::headers::specs(&llm.headers)? {
        row(
            &format!("header {}", h.name),
            h.shown_value(),
            headers_source(&llm),
        );
    }
    // Every provider's key, from the one list that names them.
    let keys = crate::llm::ProviderName::ALL
        .into_iter()
        .filter_map(|p| p.key_var());
    for var in keys {
        let set = match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => "set",
            _ => "not set",
        };
        row(var, set.into(), Source::Env(var.into()));
    }
    let flag_dir = given.board.agents_dir.as_ref();
    let (agents_dir, source) = match agents_dir(flag_dir, cfg) {
        Some(d) => (d.value.display().to_string(), d.source),
        None => (
            user_agents_dir()?.map_or_else(|| "-".into(), |d| d.display().to_string()),
            Source::Default,
        ),
    };
    let name = if flag_dir.is_some() {
        "agents_dir (--agents-dir)"
    } else {
        "agents_dir (user agents folder)"
    };
    row(name, agents_dir, source);
    let (run, source) = run_dir(given.run_dir.clone(), cfg);
    row("run_dir", run.display().to_string(), source);
    let resolved = resolve(&given.board.options, input, cfg);
    let loops = resolved.max_loops;
    row("max_loops", loops.value.to_string(), loops.source);
    let none = match input {
        Some(_) => "none",
        None => "none (or the meeting file's budget)",
    };
    let budget = resolved.max_total_tokens;
    let shown = budget.value.map_or_else(|| none.into(), |n| n.to_string());
    row("budget.max_total_tokens", shown, budget.source);
    let cost = resolved.max_cost;
    let shown = cost
        .value
        .map_or_else(|| none.into(), crate::llm::prices::dollars);
    row("budget.max_cost_usd", shown, cost.source);
    let day = resolved.max_cost_per_day;
    let shown = day
        .value
        .map_or_else(|| "none".into(), crate::llm::prices::dollars);
    row("budget.max_cost_per_day_usd", shown, day.source);
    let parallel = resolved.max_parallel;
    row("max_parallel", parallel.value.to_string(), parallel.source);
    // Without a meeting file: none given (a meeting file's `review:` or `council:` may add one).
    let off = "none";
    let review = resolved.review;
    let shown = review.value.map_or_else(
        || off.into(),
        |r| match r.by.is_empty() {
            true => format!("devils-advocate (built-in), {} round(s)", r.rounds),
            false => format!("{}, {} round(s)", r.by.join(", "), r.rounds),
        },
    );
    row("review", shown, review.source);
    let council = resolved.council;
    let shown = council.value.map_or_else(
        || off.into(),
        |c| {
            let kind = if c.adaptive { "adaptive" } else { "on" };
            match c.models.is_empty() {
                true => kind.to_string(),
                false => format!("{kind}, models {}", c.models.join(", ")),
            }
        },
    );
    row("council", shown, council.source);
    Ok(rows
        .into_iter()
        .map(|(name, value, source)| Resolved {
            name,
            value,
            source,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CouncilSetting, CouncilSettings, ReviewSettings};

    fn file(review: Option<ReviewSettings>, council: Option<CouncilSetting>) -> MeetingInput {
        let mut input = MeetingInput::from_topic("Adopt a warehouse?");
        input.review = review;
        input.council = council;
        input.budget = Some(crate::model::MeetingBudget {
            max_total_tokens: Some(5000),
            max_cost_usd: None,
        });
        input
    }

    /// The one precedence: what was given > the meeting file > the config file > the
    /// default, each value with its source; reviewers and their rounds each on their own.
    #[test]
    fn given_options_win_over_the_meeting_file_and_the_config_file() {
        let config = Config {
            max_loops: Some(9),
            ..Default::default()
        };
        let review = ReviewSettings {
            by: vec!["sre".into()],
            rounds: 3,
        };
        let input = file(Some(review.clone()), Some(CouncilSetting::On(true)));
        let none = resolve(&MeetingOptions::default(), Some(&input), &config);
        assert_eq!(
            (none.max_loops.value, none.max_loops.source),
            (9, Source::ConfigFile(None))
        );
        assert_eq!(none.max_total_tokens.value, Some(5000));
        assert_eq!(none.max_total_tokens.source, Source::MeetingFile);
        assert_eq!(none.review.value.as_ref(), Some(&review));
        assert_eq!(none.council.value, Some(CouncilSettings::default()));
        assert_eq!(none.max_parallel.value, DEFAULT_MAX_PARALLEL);
        let given = MeetingOptions {
            max_loops: Some(2),
            max_total_tokens: Some(100),
            review_rounds: Some(1),
            council_adaptive: true,
            ..Default::default()
        };
        let r = resolve(&given, Some(&input), &config);
        assert_eq!((r.max_loops.value, r.max_loops.source), (2, Source::Flag));
        assert_eq!(r.max_total_tokens.value, Some(100));
        // Given rounds keep the file's reviewers.
        let want = ReviewSettings {
            by: vec!["sre".into()],
            rounds: 1,
        };
        assert_eq!(r.review.value, Some(want));
        assert!(r.council.value.is_some_and(|c| c.adaptive));
        // Given reviewers keep the file's rounds; rounds alone turn the review on.
        let given = MeetingOptions {
            reviewers: vec!["devils-advocate".into()],
            ..Default::default()
        };
        let r = resolve(&given, Some(&input), &config);
        assert_eq!(
            r.review.value.map(|r| (r.by, r.rounds)),
            Some((vec!["devils-advocate".into()], 3))
        );
        let given = MeetingOptions {
            review_rounds: Some(2),
            ..Default::default()
        };
        let r = resolve(&given, Some(&file(None, None)), &Config::default());
        assert_eq!(r.review.value.map(|r| (r.by.len(), r.rounds)), Some((0, 2)));
        assert_eq!(r.council.value, None);
    }
}
