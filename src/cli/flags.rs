//! The flag groups several programs flatten, and the one step from each to the library's own
//! type (ripgrep's low-level args → HiArgs): [`LlmArgs`] → [`LlmConfig`], [`BoardArgs`] →
//! [`MeetingSettings`] (the meeting's options, [`MeetingOptions`]), [`OtlpArgs`] → the traces' target. No type of this file is used below
//! `cli/` (`tests/it/layers.rs` keeps it so): the library sees what they settle to.

use std::path::PathBuf;

use crate::llm::config::default as llm_default;
use crate::llm::{LlmConfig, OpenAiApi};
use crate::settings::{MeetingOptions, MeetingSettings};

/// The LLM flags, flattened into pm-step, agent-turn, agent-builder and meeting; settled into
/// the library's [`LlmConfig`] by [`LlmArgs::into_config`].
#[derive(Debug, Clone, PartialEq, clap::Args)]
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
        value_parser = AnyNamed::providers(),
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
        default_value_t = OpenAiApiArg::Auto,
        help_heading = "Model"
    )]
    pub openai_api: OpenAiApiArg,
    #[command(flatten)]
    pub header: HeaderArgs,
    /// Seconds to wait for a connection
    #[arg(long, value_name = "SECS", default_value_t = llm_default::CONNECT_TIMEOUT, help_heading = "Transport")]
    pub connect_timeout: f64,
    /// Seconds to wait for the response (head, then body) [default: 120; 600 for a local
    /// server]
    #[arg(long, value_name = "SECS", help_heading = "Transport")]
    pub read_timeout: Option<f64>,
    /// Attempts per call on 429, 5xx, timeouts and network errors
    #[arg(long, value_name = "N", default_value_t = llm_default::MAX_ATTEMPTS, value_parser = clap::value_parser!(u32).range(1..=20), help_heading = "Transport")]
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
        default_value_t = llm_default::RETRY_BASE_MS,
        hide = true,
        env = "MEETING_RETRY_BASE_MS"
    )]
    pub retry_base_ms: u64,
    /// Longest wait in seconds before a retry: backoff is capped by it, a provider's
    /// Retry-After up to it is honoured, and one above it fails the call at once
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = llm_default::RETRY_MAX_SECS,
        env = "MEETING_RETRY_MAX_SECS"
    )]
    pub retry_max_secs: f64,
    /// Answer call numbers that already completed from the --llm-log file instead of asking the
    /// provider again (the `meeting` driver sets this so a resumed meeting repeats no call)
    #[arg(long, hide = true, env = "MEETING_REUSE_LLM_LOG")]
    pub reuse_log: bool,
}

/// `--header`, in the LLM flags and in `meeting resume` (headers are not kept in the run
/// folder: given again to every resume, like keys).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct HeaderArgs {
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
    pub headers: Vec<String>,
}

/// The decision record's flags, in `meeting`, `meeting resume` and `render-report`; settled by
/// [`AdrArgs::settings`] (docs/design/report.md#adr).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct AdrArgs {
    /// Also write the decision as a MADR 4 record in this folder (docs/decisions), numbered
    /// after the records there (a fallback report, no PM decision, writes none); on a resume,
    /// or finish writing the one owed
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    pub adr: Option<PathBuf>,
    /// The number of the record in the --adr folder this decision supersedes (such as 0003;
    /// the meeting file's `supersedes:` says the same)
    #[arg(long, value_name = "N", requires = "adr", help_heading = "Output")]
    pub supersedes: Option<String>,
    /// Who decides: the record's decision-makers, people (repeatable or comma-separated; the
    /// agents are listed as consulted) [default: the config file's deciders, else git's
    /// user.name]
    #[arg(
        long,
        value_name = "NAME",
        value_delimiter = ',',
        requires = "adr",
        help_heading = "Output"
    )]
    pub decider: Vec<String>,
}

impl AdrArgs {
    /// The record's settings: `None` without `--adr`. The deciders are `--decider`, else the
    /// config file's `deciders` (`configured`, read only when needed: a resume reads no user
    /// config file), else `git config user.name` (none when git has none).
    pub fn settings(
        &self,
        configured: impl FnOnce() -> crate::Result<Vec<String>>,
    ) -> crate::Result<Option<crate::settings::AdrSettings>> {
        let Some(dir) = self.adr.clone() else {
            return Ok(None);
        };
        let given: Vec<String> = self
            .decider
            .iter()
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
            .collect();
        let deciders = match given.is_empty() {
            false => given,
            true => match configured()? {
                c if !c.is_empty() => c,
                _ => git_user_name().into_iter().collect(),
            },
        };
        Ok(Some(crate::settings::AdrSettings {
            dir,
            supersedes: self.supersedes.clone(),
            deciders,
        }))
    }
}

/// `git config user.name`, when git is there and has one.
fn git_user_name() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["config", "user.name"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !name.is_empty()).then_some(name)
}

/// The flags of a meeting on a pull or merge request, in `agent-meeting github` and
/// `agent-meeting gitlab`; settled by [`PullArgs::settings`] (docs/design/github.md).
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct PullArgs {
    /// Folder that holds the run folders (in the checkout; keep it between runs, so a re-run
    /// resumes instead of paying twice)
    #[arg(long, value_name = "DIR", default_value = "runs")]
    pub run_dir: PathBuf,
    /// The repository's settings [default: .github/agent-meeting.yaml when there]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A request labelled so starts a meeting on its title
    #[arg(long, value_name = "NAME", default_value = "decide")]
    pub label: String,
    /// The specialists, in speaking order [default: the settings file's, else arch,biz]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub agents: Vec<String>,
    /// The meeting's budget in US dollars (over the settings file's)
    #[arg(long, value_name = "USD", value_parser = positive_dollars)]
    pub max_cost: Option<f64>,
    /// What the meetings started today (UTC) in the run folder may spend together (over the
    /// settings file's `max_cost_per_day`); once spent, the comment says so
    #[arg(long, value_name = "USD", value_parser = positive_dollars)]
    pub max_cost_per_day: Option<f64>,
    /// Given to meeting as --provider
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Given to meeting as --model
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
}

impl PullArgs {
    /// The library's settings of `program`'s meetings, run by `exe`.
    pub fn settings(
        self,
        program: &'static str,
        exe: PathBuf,
        summary: Option<PathBuf>,
    ) -> crate::settings::PullSettings {
        let mut meeting_args = Vec::new();
        if let Some(p) = self.provider {
            meeting_args.extend(["--provider".to_string(), p]);
        }
        if let Some(m) = self.model {
            meeting_args.extend(["--model".to_string(), m]);
        }
        crate::settings::PullSettings {
            program,
            run_dir: self.run_dir,
            config: self.config,
            options: MeetingOptions {
                agents: self.agents,
                max_cost: self.max_cost,
                max_cost_per_day: self.max_cost_per_day,
                ..Default::default()
            },
            meeting_args,
            exe,
            summary,
        }
    }
}

/// `--openai-api`'s values, as [`OpenAiApi`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OpenAiApiArg {
    /// The Responses API for a model the price table lists only there (gpt-5-pro, the -codex
    /// models), else chat
    #[default]
    Auto,
    /// Chat Completions
    Chat,
    /// The Responses API
    Responses,
}

impl LlmArgs {
    /// The library's LLM configuration from these flags; the config file's LLM defaults and
    /// the variables that gave values are the caller's to add (`settings::config::with_config`,
    /// `from_env`).
    pub fn into_config(self) -> LlmConfig {
        LlmConfig {
            provider: self.provider,
            model: self.model,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            cassette: self.cassette,
            record: self.record,
            strict_replay: self.strict_replay,
            no_native_schema: self.no_native_schema,
            no_response_format: self.no_response_format,
            openai_api: match self.openai_api {
                OpenAiApiArg::Auto => OpenAiApi::Auto,
                OpenAiApiArg::Chat => OpenAiApi::Chat,
                OpenAiApiArg::Responses => OpenAiApi::Responses,
            },
            headers: self.header.headers,
            connect_timeout: self.connect_timeout,
            read_timeout: self.read_timeout,
            max_attempts: self.max_attempts,
            max_in_flight: self.max_in_flight,
            llm_log: self.llm_log,
            retry_base_ms: self.retry_base_ms,
            retry_max_secs: self.retry_max_secs,
            reuse_log: self.reuse_log,
            config: Default::default(),
            from_env: Vec::new(),
        }
    }
}

/// Who takes part and how long the meeting may run: flattened into `init-board` and `meeting`;
/// settled into the library's [`MeetingSettings`] by [`BoardArgs::settings`].
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
#[command(next_help_heading = "Meeting")]
pub struct BoardArgs {
    /// Specialists taking part, in speaking-list order (comma-separated)
    #[arg(long, short, value_delimiter = ',', value_name = "NAMES",
          value_parser = agent_names(), hide_possible_values = true)]
    pub agents: Vec<String>,
    /// Folder searched first for <name>.yaml|.yml|.json agent configs; then ./agents, the user's
    /// agents folder, the built-in agents (see --list-agents)
    #[arg(long, value_name = "DIR")]
    pub agents_dir: Option<std::path::PathBuf>,
    /// The PM's config name, looked up like the agents (built-in PM prompt when `pm` is found
    /// nowhere)
    #[arg(long, value_name = "NAME")]
    pub pm: Option<String>,
    /// Hard limit of agent turns before the PM must close the meeting
    #[arg(long, value_name = "N", default_value_t = crate::settings::DEFAULT_MAX_LOOPS)]
    pub max_loops: u32,
    /// Most participants the PM may ask at once (CALL_AGENTS, answered concurrently, one loop
    /// each); 1: one at a time
    #[arg(long, value_name = "N", default_value_t = crate::settings::DEFAULT_MAX_PARALLEL,
        value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::model::MAX_PARALLEL)))]
    pub max_parallel: u32,
    /// Token budget of the whole meeting (prompt + completion, every call); the PM closes the
    /// meeting in time to write its report inside it. Wins over the meeting file's
    /// `budget.max_total_tokens`
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_total_tokens: Option<u64>,
    /// Dollars the whole meeting may spend, at the price table's prices (`--prices`); the PM
    /// closes the meeting in time to write its report inside it. Wins over the meeting file's
    /// `budget.max_cost_usd`
    #[arg(long, value_name = "USD", value_parser = positive_dollars)]
    pub max_cost: Option<f64>,
    /// Dollars the meetings started today (UTC) in the run folder may spend together: once
    /// spent, a new meeting is refused (exit 5); else it may spend at most what is left (an
    /// unpriced model is refused, as under --max-cost). Over the config file's
    /// `budget.max_cost_per_day_usd`
    #[arg(long, value_name = "USD", value_parser = positive_dollars)]
    pub max_cost_per_day: Option<f64>,
    /// Reviewers of the PM's draft before the report is final (comma-separated; the built-in
    /// `devils-advocate` is one); wins over the meeting file's `review.by`
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub review_by: Vec<String>,
    /// How many of the PM's drafts are reviewed (1 to 5; the built-in devil's advocate when
    /// no reviewer is named); wins over the meeting file's `review.rounds`
    #[arg(long, value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::model::MAX_REVIEW_ROUNDS)))]
    pub review_rounds: Option<u32>,
    /// Open with a council round: before the PM routes anyone, every participant who is a model
    /// votes blind for one of the decision packet's options, then ranks the others' answers,
    /// anonymized; the PM sees the aggregate and the report gains a Council section. Also
    /// `council: true` in the meeting file
    #[arg(long)]
    pub council: bool,
    /// The council members' models, one per participant in order (comma-separated
    /// provider:model or provider, e.g. openai:gpt-4o-mini,ollama:llama3.2); a participant left
    /// out keeps its own. Implies --council; wins over the meeting file's `council.models`
    #[arg(long, value_delimiter = ',', value_name = "MODELS")]
    pub council_models: Vec<String>,
    /// An adaptive council: two members of different model families vote first, the rest
    /// only when those two disagree or either is unsure (no ranking round when they agree).
    /// Implies --council; also `council: {adaptive: true}` in the meeting file
    #[arg(long)]
    pub council_adaptive: bool,
    /// Fix the trace id (names the run folder; reproducible runs); default: time + random bits
    #[arg(long, value_name = "ID", value_parser = crate::model::check_trace_id)]
    pub trace_id: Option<String>,
}

/// `--agents`' values: any name (the loader checks it), the built-in agents completed.
fn agent_names() -> AnyNamed {
    AnyNamed(|| {
        crate::loader::BUILTIN_AGENTS
            .iter()
            .map(|(n, _)| *n)
            .collect()
    })
}

/// `--max-cost`'s value: dollars above 0 (`0.50`, `$2`).
fn positive_dollars(v: &str) -> Result<f64, String> {
    let usd: f64 = v
        .trim()
        .trim_start_matches('$')
        .parse()
        .map_err(|_| format!("{v:?} is not a number of dollars (expected e.g. 0.50)"))?;
    if usd.is_finite() && usd > 0.0 {
        Ok(usd)
    } else {
        Err(format!("{v} (expected more than 0 dollars)"))
    }
}

impl BoardArgs {
    /// The library's meeting settings from these flags, as given (`matches` tells a flag given
    /// from its default; the precedence is `settings::resolve`'s to apply).
    pub fn settings(&self, matches: &clap::ArgMatches) -> MeetingSettings {
        MeetingSettings {
            options: meeting_options(self, &AdrArgs::default(), matches),
            agents_dir: self.agents_dir.clone(),
            trace_id: self.trace_id.clone(),
            day_left_usd: None,
        }
    }
}

/// The meeting's options as this command line gives them (`matches`: what tells a flag given
/// from its default): the board's flags and the decision record's, mapped onto the one type
/// every surface shares ([`MeetingOptions`]).
pub fn meeting_options(
    board: &BoardArgs,
    adr: &AdrArgs,
    matches: &clap::ArgMatches,
) -> MeetingOptions {
    let given_u32 = |id: &str| super::given::<u32>(matches, id);
    MeetingOptions {
        agents: board.agents.clone(),
        pm: board.pm.clone(),
        max_loops: given_u32("max_loops"),
        max_parallel: given_u32("max_parallel"),
        max_total_tokens: board.max_total_tokens,
        max_cost: board.max_cost,
        max_cost_per_day: board.max_cost_per_day,
        reviewers: board.review_by.clone(),
        review_rounds: board.review_rounds,
        council: board.council,
        council_adaptive: board.council_adaptive,
        council_models: board.council_models.clone(),
        adr: adr.adr.clone(),
        supersedes: adr.supersedes.clone(),
        deciders: adr.decider.clone(),
    }
}

/// `meeting`'s trace flags.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct OtlpArgs {
    /// Export the meeting as OpenTelemetry traces (OTLP/HTTP protobuf) to this collector;
    /// /v1/traces is added (also OTEL_EXPORTER_OTLP_ENDPOINT, or
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT used as it is; headers from
    /// OTEL_EXPORTER_OTLP_HEADERS). A failed export is a warning
    #[arg(long, value_name = "URL", help_heading = "Output")]
    pub otlp_endpoint: Option<String>,
    /// Put prompts, answers and error texts in the traces (off: names, models, tokens, times)
    #[arg(long, help_heading = "Output")]
    pub otlp_content: bool,
}

impl OtlpArgs {
    /// The flag, else the environment; None: no export. A bad URL is a usage error.
    pub fn target(&self) -> crate::Result<Option<crate::otlp::OtlpSettings>> {
        crate::otlp::target(self.otlp_endpoint.as_deref(), self.otlp_content)
    }
}

/// A flag's value that may be any string (the program checks it and suggests the closest
/// name), with the names `0` gives as possible values for shell completions: `--provider`'s
/// (the providers) and `--agents`' (the built-in agents; a user's own are not known when the
/// completion script is generated).
#[derive(Clone, Copy)]
pub struct AnyNamed(pub fn() -> Vec<&'static str>);

impl AnyNamed {
    /// `--provider`'s: an empty value means unset; `llm::resolve` checks the name.
    pub fn providers() -> AnyNamed {
        AnyNamed(|| {
            crate::llm::ProviderName::ALL
                .map(crate::llm::ProviderName::as_str)
                .to_vec()
        })
    }
}

impl clap::builder::TypedValueParser for AnyNamed {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            (self.0)()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
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
        use crate::llm::default_max_tokens::*;
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

    /// What [`MeetingOptions::to_args`] writes for a spawned meeting is what the command line
    /// reads back as the same options: every option set, each flag spelled as `meeting`
    /// spells it (a flag renamed, or an option the writer forgets, fails here).
    #[test]
    fn the_options_writer_speaks_the_flags() {
        #[derive(clap::Parser)]
        struct Both {
            #[command(flatten)]
            board: BoardArgs,
            #[command(flatten)]
            adr: AdrArgs,
        }
        let all = MeetingOptions {
            agents: vec!["arch".into(), "biz".into()],
            pm: Some("pm-lite".into()),
            max_loops: Some(4),
            max_parallel: Some(2),
            max_total_tokens: Some(9000),
            max_cost: Some(0.25),
            max_cost_per_day: Some(2.5),
            reviewers: vec!["devils-advocate".into()],
            review_rounds: Some(2),
            council: true,
            council_adaptive: true,
            council_models: vec!["openai:gpt-4o-mini".into(), "ollama:llama3.2".into()],
            adr: Some("docs/decisions".into()),
            supersedes: Some("0003".into()),
            deciders: vec!["Ana".into(), "Bo".into()],
        };
        // Every field of the type is set above (its schema lists them all).
        let set = serde_json::to_value(&all).unwrap();
        let schema = schemars::schema_for!(MeetingOptions).to_value();
        let fields = schema["properties"].as_object().unwrap();
        for field in fields.keys() {
            assert!(set.get(field).is_some(), "{field} is not set in the test");
        }
        let argv = std::iter::once("meeting".to_string()).chain(all.to_args());
        let matches = <Both as clap::CommandFactory>::command()
            .try_get_matches_from(argv)
            .unwrap();
        let both = <Both as clap::FromArgMatches>::from_arg_matches(&matches).unwrap();
        assert_eq!(meeting_options(&both.board, &both.adr, &matches), all);
        let none = MeetingOptions::default();
        assert!(none.to_args().is_empty());
    }
}

/// `--on-waiting`: taken by a new meeting and a resume (never kept in the run folder).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct OnWaitingArg {
    /// When the meeting stops for a person, run CMD once with `sh -c` (the run folder's
    /// waiting.json on stdin, the folder in AGENT_MEETING_RUN_DIR, at most 30 s; its failure
    /// is a warning) — a webhook, a mail; over the config file's `on_waiting`
    #[arg(long, value_name = "CMD", help_heading = "Meeting")]
    pub on_waiting: Option<String>,
}
