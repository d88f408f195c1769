//! `meeting`: run a whole meeting: the board through every stage, the run folder, the report.

use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli::{self, given, BoardArgs, ContextArgs, LlmArgs, OutputArgs};
use agent_meeting::driver::{self, MeetingSource, NewMeeting, Outcome, Request, ResumeChanges, Ui};
use agent_meeting::settings::config;
use agent_meeting::{io, loader, Error};
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
OPENAI_API_KEY=sk-... meeting -a arch,biz -m gpt-4o-mini \"Adopt Rust for ingest?\"\n  \
meeting -a arch,biz --provider sample \"Adopt Rust for ingest?\"   # no key, no model\n  \
echo \"Adopt Rust?\" | OPENAI_API_KEY=sk-... meeting -a arch,biz   # the topic on stdin\n  \
meeting --resume runs/demo      # go on with a stopped meeting\n  \
meeting --list-agents           # the agents you can name, and where each is"
)]
struct Args {
    /// Meeting file (.yaml, .yml or .json)
    #[arg(
        long,
        short = 'f',
        value_name = "FILE",
        value_hint = clap::ValueHint::FilePath,
        conflicts_with_all = ["topic", "topic_arg"],
        help_heading = "Input"
    )]
    meeting_file: Option<PathBuf>,
    /// Minimal mode: the decision to make, no documents (also the TOPIC argument, or stdin when
    /// it is not a terminal and neither is given)
    #[arg(
        long,
        value_name = "TOPIC",
        conflicts_with = "topic_arg",
        help_heading = "Input"
    )]
    topic: Option<String>,
    /// The decision to make, as --topic
    #[arg(value_name = "TOPIC", help_heading = "Input")]
    topic_arg: Option<String>,
    /// Continue a killed or stopped meeting from its run folder; it takes only the flags that do
    /// not change what the meeting is (the error for another names them; --otlp-endpoint exports
    /// a finished one). What the folder asks for that runs a command, writes a file or sends
    /// your key elsewhere (its --stage, --record, --llm-log, a config copy's base URL) must be
    /// given again, or --trust-run-dir
    #[arg(long, value_name = "DIR", group = "folder", help_heading = "Input")]
    resume: Option<PathBuf>,
    /// With --resume or --fork: use what the run folder asks for without it being given again,
    /// and read a folder another user owns or others may write (only for a folder you trust)
    #[arg(long, requires = "folder", help_heading = "Input")]
    trust_run_dir: bool,
    /// With --resume: the answer of the person the meeting waits for (status waiting, exit 4):
    /// one JSON object (an AgentTurnResult) or the run folder's answer.txt filled in; checked
    /// like any answer (an unusable one is sent back once, and the meeting waits again)
    #[arg(long, value_name = "FILE", requires = "resume", help_heading = "Input")]
    answer: Option<PathBuf>,
    /// Start a new meeting from this run folder's settings and documents, its calls before
    /// --at-loop answered from the folder's llm.jsonl (none sent again) and the rest live; it
    /// takes --model, --agents, --max-loops, --trace-id, --report-file (default: the parent's
    /// with -fork), --run-dir, --step and the output flags
    #[arg(
        long,
        value_name = "DIR",
        group = "folder",
        requires = "at_loop",
        conflicts_with = "resume",
        help_heading = "Input"
    )]
    fork: Option<PathBuf>,
    /// With --fork: the first loop asked live (1 asks every call again)
    #[arg(long, value_name = "N", requires = "fork", help_heading = "Input")]
    at_loop: Option<u32>,
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
    /// Also write the decision as a MADR record in this folder (docs/adr), numbered after the
    /// records there; a fallback report (no PM decision) writes none
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    adr: Option<PathBuf>,
    /// The number of the record in the --adr folder this decision supersedes (such as 0003;
    /// the meeting file's `supersedes:` says the same)
    #[arg(long, value_name = "N", requires = "adr", help_heading = "Output")]
    supersedes: Option<String>,
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
    /// Price the meeting's calls with this table (the shape of share/prices/prices.json)
    /// instead of the built-in subset of LiteLLM's
    #[arg(
        long,
        value_name = "FILE",
        env = "AGENT_MEETING_PRICES",
        help_heading = "Output"
    )]
    prices: Option<PathBuf>,
    /// No progress on stderr
    #[arg(long, short, help_heading = "Output")]
    quiet: bool,
    /// Print what changed between two run folders' meetings (a fork and its parent): the
    /// decision, its confidence, loops, LLM calls, cost, findings and questions answered, as
    /// Markdown
    #[arg(long, num_args = 2, value_names = ["A", "B"], exclusive = true, help_heading = "Output")]
    compare: Vec<PathBuf>,
    #[command(flatten)]
    human: cli::HumanArgs,
    #[command(flatten)]
    otlp: cli::OtlpArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// The flags `--resume` takes (clap ids): settings that do not change what the meeting is
/// (docs/design/run-folder.md#resume). Everything else comes from the run folder's meeting.json.
const RESUME_TAKES: [&str; 16] = [
    "resume",
    "trust_run_dir",
    "answer",
    "adr",
    "supersedes",
    "headers",
    "report_file",
    "connect_timeout",
    "read_timeout",
    "max_attempts",
    "stages",
    "quiet",
    "step",
    "pretty",
    "otlp_endpoint",
    "otlp_content",
];

/// The flags `--fork` takes (clap ids): what the fork changes of its parent, and the output.
const FORK_TAKES: [&str; 12] = [
    "fork",
    "at_loop",
    "trust_run_dir",
    "model",
    "agents",
    "max_loops",
    "trace_id",
    "report_file",
    "run_dir",
    "quiet",
    "step",
    "pretty",
];

/// What the flags ask: resume a run folder, or start (or dry-run) a meeting. With `--resume`,
/// a flag given on the command line that it does not take is refused, naming it; defaults and
/// environment variables (AGENT_MEETING_PROVIDER, MEETING_CASSETTE, ...) are not given flags:
/// the saved settings win over them silently.
fn request(args: Args, matches: &ArgMatches) -> Result<Request, Error> {
    if let Some(parent) = args.fork {
        if let Some(flag) = cli::given_outside(&Args::command(), matches, &FORK_TAKES) {
            return Err(Error::Usage(format!(
                "{flag} cannot be used with --fork: the parent's meeting.json holds the meeting \
                 (--fork takes --at-loop, --trust-run-dir, --model, --agents, --max-loops, --trace-id, --report-file, --run-dir, --quiet, --step, --pretty)"
            )));
        }
        let changes = driver::ForkChanges {
            at_loop: args.at_loop.unwrap_or(1),
            model: given(matches, "model"),
            agents: (matches.value_source("agents")
                == Some(clap::parser::ValueSource::CommandLine))
            .then(|| args.board.agents.clone()),
            max_loops: given(matches, "max_loops"),
            trace_id: args.board.trace_id.clone(),
            report_file: args.report_file,
            run_dir: args.run_dir,
            trust_run_dir: args.trust_run_dir,
        };
        return Ok(Request::Fork { parent, changes });
    }
    if let Some(dir) = args.resume {
        let command = Args::command();
        if let Some(flag) = cli::given_outside(&command, matches, &RESUME_TAKES) {
            // The list is the one --resume takes, named as on the command line.
            let takes: Vec<String> = RESUME_TAKES[1..]
                .iter()
                .filter_map(|id| command.get_arguments().find(|a| a.get_id() == *id))
                .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
                .collect();
            return Err(Error::Usage(format!(
                "{flag} cannot be used with --resume: the run folder's meeting.json holds the meeting \
                 (--resume takes {})",
                takes.join(", ")
            )));
        }
        let changes = ResumeChanges {
            report_file: given(matches, "report_file"),
            connect_timeout: given(matches, "connect_timeout"),
            read_timeout: given(matches, "read_timeout"),
            max_attempts: given(matches, "max_attempts"),
            stage_overrides: driver::parse_stage_overrides(&args.stages)?,
            otlp: args.otlp.target()?,
            headers: args.llm.headers,
            trust_run_dir: args.trust_run_dir,
            adr: adr_of(&args.adr, &args.supersedes),
            answer: args.answer,
        };
        return Ok(Request::Resume { dir, changes });
    }
    let topic = match args.topic.or(args.topic_arg) {
        None if args.meeting_file.is_none() && !args.step => stdin_topic()?,
        topic => topic,
    };
    let source = match (args.meeting_file, topic) {
        (Some(f), None) => MeetingSource::MeetingFile(f),
        (None, Some(t)) => MeetingSource::Topic(t),
        _ => {
            return Err(Error::Usage(
                "one of --meeting-file F or a topic (TOPIC, --topic T or on stdin) is required (or --resume DIR)".into(),
            ))
        }
    };
    let new = NewMeeting {
        source,
        context: args.context.into_settings(),
        template: args.template,
        board: args.board.into_settings(),
        max_loops_given: given::<u32>(matches, "max_loops").is_some(),
        llm: agent_meeting::llm::LlmConfig {
            from_env: cli::env_sources(&Args::command(), matches),
            ..args.llm.into_config()
        },
        report_file: args.report_file,
        run_dir: args.run_dir,
        stage_overrides: driver::parse_stage_overrides(&args.stages)?
            .into_iter()
            .filter(|(_, cmd)| !cmd.trim().is_empty())
            .collect(),
        human_answers: args.human.human_answers,
        otlp: args.otlp.target()?,
        adr: adr_of(&args.adr, &args.supersedes),
    };
    Ok(if args.dry_run {
        Request::DryRun(new)
    } else {
        Request::Start(new)
    })
}

/// `--adr DIR` with its `--supersedes N`.
fn adr_of(dir: &Option<PathBuf>, supersedes: &Option<String>) -> Option<driver::AdrSettings> {
    dir.clone().map(|dir| driver::AdrSettings {
        dir,
        supersedes: supersedes.clone(),
    })
}

/// The topic piped in (`echo "..." | meeting --agents arch,biz`): read only when stdin is not
/// a terminal and neither a meeting file nor a topic is given, and not with --step (which reads
/// its answers there); an empty stdin (/dev/null) gives none (docs/design/agents-and-config.md#habits).
fn stdin_topic() -> Result<Option<String>, Error> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Ok(None);
    }
    let text = io::read_stdin("<stdin>")?;
    Ok(Some(text.trim().to_string()).filter(|t| !t.is_empty()))
}

pub fn main() -> ExitCode {
    // Set when the meeting stopped or ended owing something a resume can finish.
    let mut after: Option<String> = None;
    let code = cli::main_with("meeting", || run(&mut after));
    if let Some(hint) = after {
        // After the error line: the last thing read says how to go on (docs/design/run-folder.md#resume).
        agent_meeting::note!("{hint}");
    }
    code
}

fn run(after: &mut Option<String>) -> anyhow::Result<()> {
    let (args, matches): (Args, ArgMatches) = cli::parse_args_with_matches("meeting");
    if args.show_config {
        let given = agent_meeting::settings::Given {
            callers: driver::callers_of_agents(&args.board.clone().into_settings())?,
            llm: agent_meeting::llm::LlmConfig {
                from_env: cli::env_sources(&Args::command(), &matches),
                ..args.llm.clone().into_config()
            },
            agents_dir: args.board.agents_dir.clone(),
            run_dir: args.run_dir.clone(),
            max_loops: given(&matches, "max_loops"),
            default_max_loops: args.board.max_loops,
            max_total_tokens: args.board.max_total_tokens,
            max_cost_usd: args.board.max_cost,
        };
        return cli::write_stdout(&agent_meeting::settings::show(&given, config::load()?)?);
    }
    if let [a, b] = args.compare.as_slice() {
        return cli::write_stdout(&driver::compare(a, b)?);
    }
    if args.list_agents {
        let search =
            loader::AgentSearch::new(args.board.agents_dir.as_deref(), config::user_agents_dir()?);
        return cli::write_stdout(&loader::list_agents(&search));
    }
    if let Some(file) = &args.prices {
        // Before any stage prices a call: one table for the whole run.
        agent_meeting::llm::prices::use_table(file)?;
    }
    let ui = Ui::new(args.quiet, args.step);
    let (json, pretty) = (args.json, args.output.pretty);
    match driver::meeting(request(args, &matches)?, ui)? {
        Outcome::DryRun(dry) => cli::write_stdout(&if json {
            io::to_json_line(&dry.pm_input, pretty)
        } else {
            dry.prompt
        }),
        Outcome::Ended {
            result,
            failure,
            hint,
        } => {
            // The result even when the decision record could not be written: that does not
            // hide the meeting's outcome.
            cli::write_stdout(&io::to_json_line(&result, pretty))?;
            *after = hint;
            failure.map_or(Ok(()), |e| Err(e.into()))
        }
        Outcome::Stopped { error, run_dir } => {
            // A cassette that does not fit the meeting is not fixed by resuming: its error
            // says what can help instead.
            if !matches!(error, Error::NotResumable(_)) {
                *after = Some(driver::resume_hint(&run_dir));
            }
            Err(error.into())
        }
    }
}

/// The first line of this program's `--help`, for `agent-meeting --help`'s list.
#[allow(dead_code)]
pub fn about() -> String {
    let cmd = <Args as clap::CommandFactory>::command();
    let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
    about.lines().next().unwrap_or_default().to_string()
}
