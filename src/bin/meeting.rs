//! `meeting`: run a whole meeting by piping the board through the stage programs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli::{self, BoardArgs, OutputArgs};
use agent_meeting::driver::{self, MeetingSource, NewMeeting, Started, Ui};
use agent_meeting::llm::LlmArgs;
use agent_meeting::model::Status;
use agent_meeting::stage::Stage;
use agent_meeting::{io, Error};
use clap::Parser;

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
    /// Folder that holds the run folders
    #[arg(long, default_value = "runs")]
    run_dir: PathBuf,
    /// Continue a killed or stopped meeting from its run folder
    #[arg(long, conflicts_with_all = [
        "meeting_file", "topic", "agents", "agents_dir", "pm", "max_loops", "trace_id",
        "report_file", "run_dir", "stages", "dry_run", "allow_sensitive",
    ])]
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
    /// Replace a stage with your own command speaking the same JSON (NAME=COMMAND, repeatable)
    #[arg(long = "stage", value_name = "NAME=COMMAND")]
    stages: Vec<String>,
    /// Collect-context: allow likely secrets (.env, *.pem, ...)
    #[arg(long)]
    allow_sensitive: bool,
    #[command(flatten)]
    llm: LlmArgs,
    #[command(flatten)]
    output: OutputArgs,
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
    cli::main_with("meeting", || {
        let args: Args = cli::parse_args("meeting");
        let ui = Ui {
            quiet: args.quiet,
            step: args.step,
            color: cli::stderr_color(),
            ticker: !args.quiet && driver::stderr_is_tty(),
        };
        let run = match args.resume {
            Some(dir) => driver::resume(&dir)?,
            None => {
                let source =
                    match (args.meeting_file, args.topic) {
                        (Some(f), None) => MeetingSource::MeetingFile(f),
                        (None, Some(t)) => MeetingSource::Topic(t),
                        _ => return Err(Error::Usage(
                            "one of --meeting-file F or --topic T is required (or --resume DIR)"
                                .into(),
                        )
                        .into()),
                    };
                let new = NewMeeting {
                    source,
                    allow_sensitive: args.allow_sensitive,
                    board: args.board,
                    llm: args.llm,
                    report_file: args.report_file,
                    run_dir: args.run_dir,
                    stage_overrides: parse_overrides(&args.stages)?,
                };
                match driver::start(new, args.dry_run, ui)? {
                    Started::Run(run) => *run,
                    Started::DryRun(pm_input) => {
                        return cli::write_stdout(&io::to_json_line(&pm_input, args.output.pretty))
                    }
                }
            }
        };
        let result = driver::drive(&run, ui)?;
        if result.status == Status::Failed {
            cli::write_stdout(&io::to_json_line(&result, args.output.pretty))?;
            return Err(Error::Runtime(format!(
                "the meeting failed: {} ({}); fix it and run: meeting --resume {}",
                result
                    .last_error
                    .as_deref()
                    .unwrap_or("its report could not be saved"),
                run.settings.report_file.display(),
                run.dir.path.display()
            ))
            .into());
        }
        if !ui.quiet && result.status == Status::Finished {
            eprintln!("{}", driver::final_line(&result, ui));
        }
        cli::write_stdout(&io::to_json_line(&result, args.output.pretty))
    })
}
