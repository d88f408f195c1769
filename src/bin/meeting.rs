//! `meeting`: run a whole meeting: the board through every stage, the run folder, the report.

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
    after_help = "Examples:\n  \
# in the repository, offline; then with a key\n  \
meeting --meeting-file meetings/demo.yaml --agents arch,biz \\\n    \
--provider replay --cassette meetings/demo.cassette.jsonl --trace-id demo\n  \
OPENAI_API_KEY=sk-... meeting --topic \"Adopt Rust for ingest?\" \\\n    \
--agents arch,biz --model gpt-4o-mini\n  \
meeting --resume runs/demo      # go on with a stopped meeting\n  \
meeting --list-agents           # the agents you can name, and where each is"
)]
struct Args {
    /// Meeting file (.yaml, .yml or .json)
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "topic",
        help_heading = "Input"
    )]
    meeting_file: Option<PathBuf>,
    /// Minimal mode: the decision to make, no documents
    #[arg(long, value_name = "TOPIC", help_heading = "Input")]
    topic: Option<String>,
    /// Continue a killed or stopped meeting from its run folder; only --report-file,
    /// --connect-timeout, --read-timeout, --max-attempts, --stage, --quiet, --step and --pretty
    /// may be given with it
    #[arg(long, value_name = "DIR", help_heading = "Input")]
    resume: Option<PathBuf>,
    #[command(flatten)]
    context: ContextArgs,
    #[command(flatten)]
    board: BoardArgs,
    /// Check everything that can be checked without a call (a missing key is only a warning),
    /// say which provider and model each caller would use, print the PM's first prompt as it
    /// would be sent; no LLM call, no run folder
    #[arg(long, help_heading = "Meeting")]
    dry_run: bool,
    /// Pause before each stage until Enter (q stops, leaving a resumable run folder)
    #[arg(long, help_heading = "Meeting")]
    step: bool,
    /// List the agents a meeting can use, with their role and where each is found, and exit
    #[arg(long, help_heading = "Meeting")]
    list_agents: bool,
    /// Print the resolved settings and where each comes from (flag, environment, config file,
    /// built-in default), and exit; keys are never shown
    #[arg(long, help_heading = "Meeting")]
    show_config: bool,
    /// Replace a stage with your own command speaking the same JSON (NAME=COMMAND, repeatable;
    /// NAME= restores the built-in program, e.g. with --resume)
    #[arg(long = "stage", value_name = "NAME=COMMAND", help_heading = "Meeting")]
    stages: Vec<String>,
    #[command(flatten)]
    llm: LlmArgs,
    /// Where to write the report (default reports/<meeting stem>.md or reports/<topic slug>.md)
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    report_file: Option<PathBuf>,
    /// Folder that holds the run folders [default: the config file's run_dir, else runs]
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    run_dir: Option<PathBuf>,
    /// Render the report with this minijinja template instead of the built-in one (see
    /// render-report --help)
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    template: Option<PathBuf>,
    /// With --dry-run: print the PM's input document (JSON) instead of its prompt
    #[arg(long, requires = "dry_run", help_heading = "Output")]
    json: bool,
    /// No progress on stderr
    #[arg(long, short, help_heading = "Output")]
    quiet: bool,
    #[command(flatten)]
    human: cli::HumanArgs,
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

pub fn main() -> ExitCode {
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
    if args.show_config {
        let given = config::Given {
            llm: args.llm.clone(),
            provider: flag_source(&matches, "provider").zip(args.llm.provider.clone()),
            model: flag_source(&matches, "model").zip(args.llm.model.clone()),
            agents_dir: args.board.agents_dir.clone(),
            run_dir: args.run_dir.clone(),
            max_loops: given(&matches, "max_loops"),
            default_max_loops: args.board.max_loops,
            max_total_tokens: args.board.max_total_tokens,
        };
        return cli::write_stdout(&config::show(&given, config::load()?)?);
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
            // A resumed meeting reads its run folder's copy of the config, not the user's.
            let loaded = config::load()?;
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
                run_dir: config::run_dir(args.run_dir, &loaded.config).0,
                stage_overrides,
                llm_from_env: from_env(&matches),
                human_answers: args.human.human_answers,
            };
            match driver::start(new, args.dry_run, ui)? {
                Started::Run(run) => *run,
                Started::DryRun(dry) => {
                    return cli::write_stdout(&if args.json {
                        io::to_json_line(&dry.pm_input, args.output.pretty)
                    } else {
                        dry.prompt
                    })
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
