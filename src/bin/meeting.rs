//! `meeting`: run a whole meeting: the board through every stage, the run folder, the report;
//! or one of its modes on run folders (resume, fork, compare) and settings (show-config,
//! list-agents), each a subcommand taking only its own flags.

use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli::modes::{
    CompareArgs, ForkArgs, ListAgentsArgs, ListArgs, ResumeArgs, ShowArgs, MODE_FLAGS, WHY_NOT,
};
use agent_meeting::cli::{self, BoardArgs, ContextArgs, LlmArgs, OutputArgs};
use agent_meeting::driver::{
    self, history, MeetingSource, NewMeeting, Outcome, Request, ResumeChanges, Ui,
};
use agent_meeting::settings::{config, MeetingOptions, MeetingSettings};
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
meeting --provider sample --doc meetings/demo/overview.md \"Adopt Rust?\"   # no key\n  \
echo \"Adopt Rust?\" | OPENAI_API_KEY=sk-... meeting -a arch,biz   # the topic on stdin\n  \
meeting resume runs/demo        # go on with a stopped meeting\n  \
meeting list                    # the meetings held here, newest first\n  \
meeting list-agents             # the agents you can name, and where each is\n\n\
The modes (resume, fork, compare, show-config, list-agents, list, show) are subcommands, each with its own\n\
--help; the flag spellings --resume DIR, --fork DIR, --compare A B, --show-config and\n\
--list-agents still work. A topic that is a mode's name is given with --topic.",
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
struct Args {
    #[command(subcommand)]
    mode: Option<Mode>,
    #[command(flatten)]
    run: RunArgs,
}

/// `meeting show-config`: the settings these flags resolve to, or those a run folder's
/// meeting resolved when it started.
#[derive(clap::Args, Debug)]
struct ShowConfigArgs {
    /// Print what this run folder's meeting resolved when it started (kept in its
    /// meeting.json), instead of what these flags resolve to now
    #[arg(long, value_name = "DIR", help_heading = "Input")]
    run_folder: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

/// A new meeting's flags (also what `show-config` reads, so a command line shows its settings
/// with `show-config` added).
#[derive(clap::Args, Debug)]
struct RunArgs {
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
    #[command(flatten)]
    context: ContextArgs,
    /// Every participant reads every document, cut to the context budget, even where they do
    /// not fit together [default: such documents are divided among the participants, each
    /// reading its share whole, the PM told who holds what]
    #[arg(long, help_heading = "Input")]
    share_docs: bool,
    #[command(flatten)]
    board: BoardArgs,
    /// The meeting's options as one JSON object, as an MCP tool or a batch line gives them
    /// ({"agents": ["arch", "biz"], "max_cost": 0.5, "reviewers": [...], ...}); a flag wins
    /// over it, a key no option has is refused
    #[arg(long, value_name = "JSON", help_heading = "Meeting")]
    options: Option<String>,
    /// Check everything that can be checked without a call (a missing key is only a warning),
    /// say which provider and model each caller would use, print the PM's first prompt as it
    /// would be sent; no LLM call, no run folder
    #[arg(long, help_heading = "Meeting")]
    dry_run: bool,
    /// Pause before each stage until Enter (q stops, leaving a resumable run folder)
    #[arg(long, help_heading = "Meeting")]
    step: bool,
    /// Replace a stage with your own command speaking the same JSON (NAME=COMMAND, repeatable;
    /// `meeting resume DIR --stage NAME=` restores the built-in program)
    #[arg(long = "stage", value_name = "NAME=COMMAND", help_heading = "Meeting")]
    stages: Vec<String>,
    #[command(flatten)]
    llm: LlmArgs,
    /// Where to write the report (default reports/<meeting stem>.md or reports/<topic slug>.md);
    /// `-`: the report on stdout instead of the MeetingResult (and saved at the default path)
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    report_file: Option<PathBuf>,
    #[command(flatten)]
    adr: cli::flags::AdrArgs,
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
    #[command(flatten)]
    human: cli::HumanArgs,
    #[command(flatten)]
    on_waiting: cli::flags::OnWaitingArg,
    #[command(flatten)]
    otlp: cli::OtlpArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// What `meeting` is asked besides a new meeting: a mode and its own flags. clap refuses a
/// flag a mode does not take (docs/design/run-folder.md#resume).
#[derive(clap::Subcommand, Debug)]
enum Mode {
    /// Go on with a killed or stopped meeting from its run folder (also --resume DIR)
    #[command(
        after_help = "Takes only the flags that do not change what the meeting is: the run \
folder's meeting.json holds the meeting. What the folder asks for that runs a command, writes a \
file or sends your key elsewhere (its --stage, --record, --llm-log, a config copy's base URL, a \
trace collector, a decision record still owed) must be given again, or --trust-run-dir.\n\n\
Examples:\n  meeting resume runs/demo\n  meeting resume runs/demo --answer answer.txt   # the person it waits for answered"
    )]
    Resume(ResumeArgs),
    /// Start a new meeting from a run folder's settings and documents, its calls before
    /// --at-loop answered from the folder's llm.jsonl and the rest live (also --fork DIR)
    #[command(
        after_help = "Example:\n  meeting fork runs/demo --at-loop 2 --model gpt-4o   # then: meeting compare runs/demo runs/<fork>"
    )]
    Fork(ForkArgs),
    /// Print what changed between two run folders' meetings (a fork and its parent): the
    /// decision, its confidence, loops, LLM calls, cost, findings and questions answered, as
    /// Markdown (also --compare A B)
    #[command(after_help = "Example:\n  meeting compare runs/demo runs/demo-fork")]
    Compare(CompareArgs),
    /// Print the resolved settings and where each comes from (flag, environment, config file,
    /// built-in default); keys are never shown (also --show-config)
    #[command(
        after_help = "Examples:\n  meeting show-config --agents arch,biz --provider openai\n  meeting show-config --run-folder runs/demo   # what that meeting resolved when it started"
    )]
    ShowConfig(Box<ShowConfigArgs>),
    /// List the agents a meeting can use, with their role and where each is found (also
    /// --list-agents)
    #[command(after_help = "Example:\n  meeting list-agents --agents-dir agents")]
    ListAgents(ListAgentsArgs),
    /// The meetings held in the run folder, newest first: when, status, loops, tokens, cost,
    /// topic and decision
    #[command(
        after_help = "Examples:\n  meeting list\n  meeting list --status waiting,stopped   # what can go on\n  meeting list --json | jq -r 'select(.status == \"finished\") | .decision'"
    )]
    List(ListArgs),
    /// Print a meeting's report (or its MeetingResult with --json), from its run folder
    #[command(
        after_help = "Examples:\n  meeting show 20261207134443-966619e3\n  meeting show runs/demo --json | jq .status"
    )]
    Show(ShowArgs),
}

/// A resume's changes, as the driver takes them.
fn resume_request(a: ResumeArgs) -> Result<Request, Error> {
    let changes = ResumeChanges {
        report_file: a.report_file,
        connect_timeout: a.connect_timeout,
        read_timeout: a.read_timeout,
        max_attempts: a.max_attempts,
        stage_overrides: driver::parse_stage_overrides(&a.stages)?,
        otlp: a.otlp.target()?,
        headers: a.header.headers,
        trust_run_dir: a.trust_run_dir,
        adr: a.adr.settings(|| Ok(Vec::new()))?,
        answer: a.answer,
        answer_for: a.answer_for,
        template: a.template,
        human_answers: a.human.human_answers,
        on_waiting: a.on_waiting.on_waiting,
    };
    Ok(Request::Resume {
        dir: a.dir,
        changes,
    })
}

/// A fork's changes, as the driver takes them.
fn fork_request(a: ForkArgs) -> Request {
    let changes = driver::ForkChanges {
        at_loop: a.at_loop,
        model: a.model,
        agents: a.agents,
        max_loops: a.max_loops,
        trace_id: a.trace_id,
        report_file: a.report_file,
        run_dir: a.run_dir,
        trust_run_dir: a.trust_run_dir,
    };
    Request::Fork {
        parent: a.dir,
        changes,
    }
}

/// The meeting's options as this command line gives them: its flags over `--options`, and
/// the decision record's flags (the options' `adr`, `supersedes`, `deciders` under them).
fn board_of(
    args: &RunArgs,
    matches: &ArgMatches,
) -> Result<(MeetingSettings, cli::flags::AdrArgs), Error> {
    let mut board = args.board.settings(matches);
    let mut adr = args.adr.clone();
    if let Some(text) = &args.options {
        let json: MeetingOptions =
            agent_meeting::settings::options::parse_strict("--options", text, io::Format::Json)?;
        adr.adr = adr.adr.or(json.adr.clone());
        adr.supersedes = adr.supersedes.or(json.supersedes.clone());
        if adr.decider.is_empty() {
            adr.decider = json.deciders.clone();
        }
        let json = MeetingOptions {
            adr: None,
            supersedes: None,
            deciders: Vec::new(),
            ..json
        };
        board.options = std::mem::take(&mut board.options).over(json);
    }
    Ok((board, adr))
}

/// A new meeting (or its dry run), from the run flags.
fn start_request(args: RunArgs, matches: &ArgMatches) -> Result<Request, Error> {
    let (board, adr) = board_of(&args, matches)?;
    let topic = match args.topic.or(args.topic_arg) {
        None if args.meeting_file.is_none() && !args.step => stdin_topic()?,
        topic => topic,
    };
    let source = match (args.meeting_file, topic) {
        (Some(f), None) => MeetingSource::MeetingFile(f),
        (None, Some(t)) => MeetingSource::Topic(t),
        _ => {
            return Err(Error::Usage(
                "one of --meeting-file F or a topic (TOPIC, --topic T or on stdin) is required (or meeting resume DIR)".into(),
            ))
        }
    };
    let new = NewMeeting {
        source,
        context: args.context.into_settings(),
        share_docs: args.share_docs,
        template: args.template,
        board,
        llm: agent_meeting::llm::LlmConfig {
            from_env: cli::env_sources(&Args::command(), matches),
            ..args.llm.into_config()
        },
        // `-` is stdout: the report is saved where it would be by default, and printed.
        report_file: args.report_file.filter(|f| f.as_os_str() != "-"),
        run_dir: args.run_dir,
        stage_overrides: driver::parse_stage_overrides(&args.stages)?
            .into_iter()
            .filter(|(_, cmd)| !cmd.trim().is_empty())
            .collect(),
        human_answers: args.human.human_answers,
        otlp: args.otlp.target()?,
        adr: adr.settings(cli::config_deciders)?,
        on_waiting: args.on_waiting.on_waiting,
    };
    Ok(if args.dry_run {
        Request::DryRun(new)
    } else {
        Request::Start(new)
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
    let (args, matches): (Args, ArgMatches) = cli::parse_args_rewritten(
        "meeting",
        |argv| cli::mode_flags_to_subcommands(argv, &MODE_FLAGS),
        &WHY_NOT,
    );
    let mut report_to_stdout = false;
    let (request, ui, pretty, json) = match args.mode {
        Some(Mode::ShowConfig(a)) => {
            if let Some(dir) = &a.run_folder {
                return cli::write_stdout(&driver::resolved_settings(dir)?);
            }
            let a = a.run;
            let sub = matches
                .subcommand_matches("show-config")
                .unwrap_or(&matches);
            let command = Args::command();
            let (board, _) = board_of(&a, sub)?;
            let llm = agent_meeting::llm::LlmConfig {
                from_env: cli::env_sources(
                    command.find_subcommand("show-config").unwrap_or(&command),
                    sub,
                ),
                ..a.llm.into_config()
            };
            let given = agent_meeting::settings::Given {
                callers: driver::callers_of_agents(&board)?,
                llm,
                board,
                run_dir: a.run_dir,
            };
            return cli::write_stdout(&agent_meeting::settings::show(&given, config::load()?)?);
        }
        Some(Mode::ListAgents(a)) => {
            let search =
                loader::AgentSearch::new(a.agents_dir.as_deref(), config::user_agents_dir()?);
            return cli::write_stdout(&loader::list_agents(&search));
        }
        Some(Mode::Compare(a)) => return cli::write_stdout(&driver::compare(&a.a, &a.b)?),
        Some(Mode::List(a)) => return list(a),
        Some(Mode::Show(a)) => {
            let runs = runs_folder(a.run_dir)?;
            let dir = history::find(&runs, &a.id)?;
            return cli::write_stdout(&if a.json {
                io::to_json_line(&history::result(&dir)?, a.output.pretty)
            } else {
                history::report(&dir)?
            });
        }
        Some(Mode::Resume(a)) => {
            a.prices.use_it()?;
            let ui = Ui::new(a.ui.quiet, a.ui.step);
            let pretty = a.ui.output.pretty;
            (resume_request(a)?, ui, pretty, false)
        }
        Some(Mode::Fork(a)) => {
            a.prices.use_it()?;
            let ui = Ui::new(a.ui.quiet, a.ui.step);
            let pretty = a.ui.output.pretty;
            (fork_request(a), ui, pretty, false)
        }
        None => {
            let args = args.run;
            if let Some(file) = &args.prices {
                // Before any stage prices a call: one table for the whole run.
                agent_meeting::llm::prices::use_table(file)?;
            }
            let ui = Ui::new(args.quiet, args.step);
            let (json, pretty) = (args.json, args.output.pretty);
            report_to_stdout = args.report_file.as_deref() == Some(std::path::Path::new("-"));
            (start_request(args, &matches)?, ui, pretty, json)
        }
    };
    match driver::meeting(request, ui)? {
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
            // hide the meeting's outcome. With `--report-file -`, the report instead (when
            // there is one: the exit code and stderr tell the rest).
            match (&result.report_file, report_to_stdout) {
                (Some(path), true) => cli::write_stdout(
                    &std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{path}: {e}"))?,
                )?,
                (None, true) => {}
                (_, false) => cli::write_stdout(&io::to_json_line(&result, pretty))?,
            }
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

/// The folder holding run folders: the flag, else the config file's, else `runs`.
fn runs_folder(flag: Option<PathBuf>) -> Result<PathBuf, Error> {
    Ok(agent_meeting::settings::run_dir(flag, &config::load()?.config).0)
}

/// `meeting list`: the table, or one JSON object per line; a note of the folders that could
/// not be read.
fn list(a: ListArgs) -> anyhow::Result<()> {
    let states = a
        .status
        .iter()
        .map(|s| history::RunState::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let (rows, unreadable) = history::list(&runs_folder(a.run_dir)?, &states, a.limit)?;
    if unreadable > 0 {
        agent_meeting::note!(
            "meeting list: {} not readable as run folders, left out",
            agent_meeting::text::plural(unreadable as u64, "folder")
        );
    }
    cli::write_stdout(&if a.json {
        rows.iter().map(|r| io::to_json_line(r, false)).collect()
    } else {
        history::table(&rows)
    })
}

/// This program's command as it parses its flags, for `agent-meeting`'s `--help` list, man
/// page and completions.
#[allow(dead_code)]
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("meeting")
}
