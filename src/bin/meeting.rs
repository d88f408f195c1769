//! `meeting`: run a whole meeting by piping the board through the stage programs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli::{self, BoardArgs, ContextArgs, OutputArgs};
use agent_meeting::driver::{self, MeetingSource, NewMeeting, ResumeChanges, Started, Ui};
use agent_meeting::llm::LlmArgs;
use agent_meeting::model::Status;
use agent_meeting::stage::Stage;
use agent_meeting::{config, io, loader, Error};
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, Parser};

/// Run a decision meeting between LLM agents and write its Markdown report.
#[derive(Parser, Debug)]
#[command(
    name = "meeting",
    version,
    after_help = "Examples:\n  meeting --meeting-file meetings/demo.yaml --agents arch,biz \\\n    --provider replay --cassette meetings/demo.cassette.jsonl\n  OPENAI_API_KEY=... meeting --topic \"Adopt Rust for ingest?\" --agents arch,biz --model gpt-4o-mini\n  meeting --resume runs/<trace_id>"
)]
struct Args {
    /// Meeting file (.yaml, .yml or .json)
    #[arg(long, conflicts_with = "topic")]
    meeting_file: Option<PathBuf>,
    /// Minimal mode: the decision to make, no documents
    #[arg(long)]
    topic: Option<String>,
    #[command(flatten)]
    board: BoardArgs,
    /// Where to write the report (default reports/<meeting stem>.md or reports/<topic slug>.md)
    #[arg(long, value_name = "FILE")]
    report_file: Option<PathBuf>,
    /// Folder that holds the run folders [default: the config file's run_dir, else runs]
    #[arg(long, value_name = "DIR")]
    run_dir: Option<PathBuf>,
    /// Continue a killed or stopped meeting from its run folder; only --report-file,
    /// --connect-timeout, --read-timeout, --max-attempts, --stage, --quiet, --step and --pretty
    /// may be given with it
    #[arg(long, value_name = "RUN_FOLDER")]
    resume: Option<PathBuf>,
    /// Load and check everything, collect context, print the first PM input; no LLM call
    #[arg(long)]
    dry_run: bool,
    /// Pause before each stage until Enter (q stops, leaving a resumable run folder)
    #[arg(long)]
    step: bool,
    /// No progress on stderr
    #[arg(long, short)]
    quiet: bool,
    /// List the agents a meeting can use, with their role and where each is found, and exit
    #[arg(long)]
    list_agents: bool,
    /// Print the resolved settings and where each comes from (flag, environment, config file,
    /// built-in default), and exit; keys are never shown
    #[arg(long)]
    show_config: bool,
    /// Replace a stage with your own command speaking the same JSON (NAME=COMMAND, repeatable;
    /// NAME= restores the built-in program, e.g. with --resume)
    #[arg(long = "stage", value_name = "NAME=COMMAND")]
    stages: Vec<String>,
    #[command(flatten)]
    context: ContextArgs,
    /// Render the report with this minijinja template instead of the built-in one (see
    /// render-report --help)
    #[arg(long, value_name = "FILE")]
    template: Option<PathBuf>,
    #[command(flatten)]
    llm: LlmArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// The flags `--resume` takes (clap ids): settings that do not change what the meeting is
/// (DESIGN.md#resume). Everything else comes from the run folder's meeting.json.
const RESUME_TAKES: [&str; 9] = [
    "resume",
    "report_file",
    "connect_timeout",
    "read_timeout",
    "max_attempts",
    "stages",
    "quiet",
    "step",
    "pretty",
];

/// Refuse, naming it, a flag given on the command line with `--resume` that it does not take.
/// Defaults and environment variables (AGENT_MEETING_PROVIDER, MEETING_CASSETTE, ...) are not
/// given flags: the saved settings win over them silently.
fn refuse_with_resume(matches: &ArgMatches) -> Result<(), Error> {
    let cmd = Args::command();
    for id in matches.ids() {
        let Some(arg) = cmd.get_arguments().find(|a| a.get_id() == id) else {
            continue; // a group of flags, not a flag
        };
        if RESUME_TAKES.contains(&id.as_str())
            || matches.value_source(id.as_str()) != Some(ValueSource::CommandLine)
        {
            continue;
        }
        let flag = arg
            .get_long()
            .map_or_else(|| id.to_string(), |l| format!("--{l}"));
        return Err(Error::Usage(format!(
            "{flag} cannot be used with --resume: the run folder's meeting.json holds the meeting \
             (--resume takes --report-file, --connect-timeout, --read-timeout, --max-attempts, \
             --stage, --quiet, --step, --pretty)"
        )));
    }
    Ok(())
}

/// A value given on the command line (not a default, not from the environment).
fn given<T: Clone + Send + Sync + 'static>(matches: &ArgMatches, id: &str) -> Option<T> {
    (matches.value_source(id) == Some(ValueSource::CommandLine))
        .then(|| matches.get_one::<T>(id).cloned())
        .flatten()
}

/// The environment variables that gave a flag its value (clap's value source).
fn from_env(matches: &ArgMatches) -> Vec<String> {
    let cmd = Args::command();
    cmd.get_arguments()
        .filter(|a| matches.value_source(a.get_id().as_str()) == Some(ValueSource::EnvVariable))
        .filter_map(|a| a.get_env().map(|v| v.to_string_lossy().into_owned()))
        .collect()
}

/// Where run folders go: flag > config file > `runs`.
fn run_dir(flag: Option<PathBuf>, loaded: &config::Loaded) -> PathBuf {
    flag.or_else(|| loaded.config.run_dir.clone())
        .unwrap_or_else(|| PathBuf::from("runs"))
}

/// Where a flag's value came from: the command line, its environment variable, else `None`.
fn flag_source(matches: &ArgMatches, id: &str) -> Option<config::Source> {
    let cmd = Args::command();
    match matches.value_source(id)? {
        ValueSource::CommandLine => Some(config::Source::Flag),
        ValueSource::EnvVariable => {
            let arg = cmd.get_arguments().find(|a| a.get_id() == id)?;
            let var = arg.get_env()?.to_string_lossy().into_owned();
            Some(config::Source::Env(var))
        }
        _ => None,
    }
}

/// What `--show-config` prints: each setting, its value and where it came from, in the
/// precedence flag > environment > config file > built-in default. No key is printed, only
/// whether it is set.
fn show_config(
    args: &Args,
    matches: &ArgMatches,
    loaded: &config::Loaded,
) -> anyhow::Result<String> {
    use config::Source;
    let cfg = &loaded.config;
    let mut rows: Vec<(String, String, String)> = Vec::new();
    let mut row = |name: &str, value: String, source: Source| {
        rows.push((name.to_string(), value, source.to_string()));
    };
    let llm = config::with_config(args.llm.clone())?;
    let env = |v: &str| std::env::var(v).ok().filter(|s| !s.trim().is_empty());
    // provider
    let (provider, source) = match (flag_source(matches, "provider"), &args.llm.provider) {
        (Some(s), Some(p)) => (p.clone(), s),
        _ => match &cfg.provider {
            Some(p) => (p.clone(), Source::ConfigFile),
            None => match (env("OPENAI_API_KEY"), env("ANTHROPIC_API_KEY")) {
                (Some(_), _) => ("openai".into(), Source::Env("OPENAI_API_KEY is set".into())),
                (None, Some(_)) => (
                    "anthropic".into(),
                    Source::Env("ANTHROPIC_API_KEY is set".into()),
                ),
                _ => ("none".into(), Source::Default),
            },
        },
    };
    row("provider", provider.clone(), source);
    // model: the PM's, as the stages resolve it; then the per-caller ones of the config file.
    let model = match (flag_source(matches, "model"), &args.llm.model) {
        (Some(s), Some(m)) => Some((m.clone(), s)),
        _ => None,
    };
    let model = model
        .or_else(|| match provider.as_str() {
            "openai" => env("OPENAI_MODEL").map(|m| (m, Source::Env("OPENAI_MODEL".into()))),
            "anthropic" => {
                env("ANTHROPIC_MODEL").map(|m| (m, Source::Env("ANTHROPIC_MODEL".into())))
            }
            _ => None,
        })
        .or_else(|| cfg.model.clone().map(|m| (m, Source::ConfigFile)))
        .unwrap_or_else(|| {
            let m = agent_meeting::llm::args::default_model(&provider);
            (m.unwrap_or("-").to_string(), Source::Default)
        });
    row("model", model.0, model.1);
    for (caller, m) in &cfg.models {
        // A --model (or AGENT_MEETING_MODEL) wins over the per-caller models too.
        let shadowed = flag_source(matches, "model").is_some();
        row(
            &format!("models.{caller}"),
            if shadowed {
                format!("{m} (not used: --model wins)")
            } else {
                m.clone()
            },
            Source::ConfigFile,
        );
    }
    for (p, var) in [
        ("openai", "OPENAI_BASE_URL"),
        ("anthropic", "ANTHROPIC_BASE_URL"),
    ] {
        let url = agent_meeting::llm::args::base_url(&llm, p);
        let source = if env(var).is_some() {
            Source::Env(var.into())
        } else if (p == "openai" && cfg.base_urls.openai.is_some())
            || (p == "anthropic" && cfg.base_urls.anthropic.is_some())
        {
            Source::ConfigFile
        } else {
            Source::Default
        };
        row(&format!("base_urls.{p}"), url, source);
    }
    for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
        let set = if env(var).is_some() { "set" } else { "not set" };
        row(var, set.into(), Source::Env(var.into()));
    }
    let (agents_dir, source) = match (&args.board.agents_dir, &cfg.agents_dir) {
        (Some(d), _) => (d.display().to_string(), Source::Flag),
        (None, Some(d)) => (d.display().to_string(), Source::ConfigFile),
        (None, None) => (
            config::user_agents_dir()?.map_or_else(|| "-".into(), |d| d.display().to_string()),
            Source::Default,
        ),
    };
    let name = if args.board.agents_dir.is_some() {
        "agents_dir (--agents-dir)"
    } else {
        "agents_dir (user agents folder)"
    };
    row(name, agents_dir, source);
    let (run, source) = match (&args.run_dir, &cfg.run_dir) {
        (Some(d), _) => (d.clone(), Source::Flag),
        (None, Some(d)) => (d.clone(), Source::ConfigFile),
        (None, None) => (PathBuf::from("runs"), Source::Default),
    };
    row("run_dir", run.display().to_string(), source);
    let (loops, source) = match (given::<u32>(matches, "max_loops"), cfg.max_loops) {
        (Some(n), _) => (n, Source::Flag),
        (None, Some(n)) => (n, Source::ConfigFile),
        (None, None) => (args.board.max_loops, Source::Default),
    };
    row("max_loops", loops.to_string(), source);
    let (budget, source) = match (args.board.max_total_tokens, &cfg.budget) {
        (Some(n), _) => (n.to_string(), Source::Flag),
        (None, Some(b)) => (b.max_total_tokens.to_string(), Source::ConfigFile),
        (None, None) => (
            "none (or the meeting file's budget)".into(),
            Source::Default,
        ),
    };
    row("budget.max_total_tokens", budget, source);
    let mut out = match (&loaded.file, &loaded.looked_at) {
        (Some(f), _) => format!("# config file: {}\n", f.display()),
        (None, Some(p)) => format!("# config file: none ({} does not exist)\n", p.display()),
        (None, None) => format!("# config file: none ({} is empty)\n", config::CONFIG_ENV),
    };
    let w0 = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    for (name, value, source) in rows {
        out.push_str(&format!("{name:w0$}  {value:w1$}  {source}\n"));
    }
    Ok(out)
}

fn parse_overrides(stages: &[String]) -> Result<BTreeMap<Stage, String>, Error> {
    let mut map = BTreeMap::new();
    for s in stages {
        let Some((name, cmd)) = s.split_once('=') else {
            return Err(Error::Usage(format!("--stage: {s:?} is not NAME=COMMAND")));
        };
        let Some(stage) = Stage::from_program(name) else {
            let all: Vec<&str> = Stage::ALL.iter().map(|s| s.program()).collect();
            return Err(Error::Usage(format!(
                "--stage: unknown stage {name:?} (one of {})",
                all.join(", ")
            )));
        };
        map.insert(stage, cmd.to_string());
    }
    Ok(map)
}

fn main() -> ExitCode {
    // Set when the meeting stopped on a failure with its run folder resumable.
    let mut stopped_in: Option<PathBuf> = None;
    let code = cli::main_with("meeting", || run(&mut stopped_in));
    if let Some(dir) = stopped_in {
        // After the error line: the last thing read says how to go on (DESIGN.md#resume).
        agent_meeting::note!("{}", driver::resume_hint(&dir));
    }
    code
}

fn run(stopped_in: &mut Option<PathBuf>) -> anyhow::Result<()> {
    let (args, matches): (Args, ArgMatches) = cli::parse_args_with_matches("meeting");
    let loaded = config::load()?;
    if args.show_config {
        return cli::write_stdout(&show_config(&args, &matches, loaded)?);
    }
    if args.list_agents {
        let search =
            loader::AgentSearch::new(args.board.agents_dir.as_deref(), config::user_agents_dir()?);
        return cli::write_stdout(&driver::list_agents(&search));
    }
    let ui = Ui {
        quiet: args.quiet,
        step: args.step,
        color: cli::stderr_color(),
        ticker: !args.quiet && driver::stderr_is_tty(),
    };
    let run = match args.resume {
        Some(dir) => {
            refuse_with_resume(&matches)?;
            let changes = ResumeChanges {
                report_file: given(&matches, "report_file"),
                connect_timeout: given(&matches, "connect_timeout"),
                read_timeout: given(&matches, "read_timeout"),
                max_attempts: given(&matches, "max_attempts"),
                stage_overrides: parse_overrides(&args.stages)?,
            };
            driver::resume(&dir, changes)?
        }
        None => {
            let source = match (args.meeting_file, args.topic) {
                (Some(f), None) => MeetingSource::MeetingFile(f),
                (None, Some(t)) => MeetingSource::Topic(t),
                _ => {
                    return Err(Error::Usage(
                        "one of --meeting-file F or --topic T is required (or --resume DIR)".into(),
                    )
                    .into())
                }
            };
            let mut stage_overrides = parse_overrides(&args.stages)?;
            stage_overrides.retain(|_, cmd| !cmd.trim().is_empty());
            let new = NewMeeting {
                source,
                context: args.context,
                template: args.template,
                board: BoardArgs {
                    // Flag > config file > built-in default (DESIGN.md#config).
                    max_loops: given(&matches, "max_loops")
                        .or(loaded.config.max_loops)
                        .unwrap_or(args.board.max_loops),
                    ..args.board
                },
                llm: config::with_config(args.llm)?,
                report_file: args.report_file,
                run_dir: run_dir(args.run_dir, loaded),
                stage_overrides,
                llm_from_env: from_env(&matches),
            };
            match driver::start(new, args.dry_run, ui)? {
                Started::Run(run) => *run,
                Started::DryRun(pm_input) => {
                    return cli::write_stdout(&io::to_json_line(&pm_input, args.output.pretty))
                }
            }
        }
    };
    let result = match driver::drive(&run, ui) {
        Ok(result) => result,
        Err(e) => {
            *stopped_in = Some(run.dir.path.clone());
            return Err(e.into());
        }
    };
    cli::write_stdout(&io::to_json_line(&result, args.output.pretty))?;
    if result.status != Status::Failed {
        return Ok(());
    }
    let why = result.last_error.as_deref();
    Err(Error::Runtime(match &result.report_file {
        // Saved, but no model contributed to it (DESIGN.md#failure-policy).
        Some(report) => format!(
            "the meeting failed: {}; the fallback report is {report}",
            why.unwrap_or("no model call returned a usable answer")
        ),
        None => format!(
            "the meeting failed: {} ({}); fix it and run: meeting --resume {}",
            why.unwrap_or("its report could not be saved"),
            run.settings.report_file.display(),
            run.dir.path.display()
        ),
    })
    .into())
}
