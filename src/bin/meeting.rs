//! `meeting`: run a whole meeting by piping the board through the stage programs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli::{self, BoardArgs, OutputArgs};
use agent_meeting::driver::{self, RunDir, RunSettings, Ui};
use agent_meeting::llm::LlmArgs;
use agent_meeting::model::{Board, MeetingPacket, ReportResult, Status, PACKET_VERSION};
use agent_meeting::stage::{init_board, pm_step, Stage};
use agent_meeting::{events, io, Error};
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
    #[arg(long)]
    report_file: Option<String>,
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
        let (run, settings, board, step, _lock) = match &args.resume {
            Some(dir) => resume(dir)?,
            None => {
                let Some(start) = start(&args, ui)? else {
                    return Ok(());
                };
                start
            }
        };
        let result = driver::drive(&run, &settings, board, step, ui)?;
        if result.status == Status::Failed {
            cli::write_stdout(&io::to_json_line(&result, args.output.pretty))?;
            return Err(Error::Runtime(format!(
                "the meeting failed: {} ({}); fix it and run: meeting --resume {}",
                result
                    .last_error
                    .as_deref()
                    .unwrap_or("its report could not be saved"),
                settings.report_file,
                run.path.display()
            ))
            .into());
        }
        if !ui.quiet && result.status == Status::Finished {
            eprintln!("{}", driver::final_line(&result, ui));
        }
        cli::write_stdout(&io::to_json_line(&result, args.output.pretty))
    })
}

/// A new meeting: collect, init (in memory, so bad input leaves no run folder), then save.
/// A run ready to drive: its folder (locked by `std::fs::File` for the process), settings,
/// the board to continue from and the next stage file number.
type Run = (RunDir, RunSettings, Board, u32, std::fs::File);

fn start(args: &Args, ui: Ui) -> anyhow::Result<Option<Run>> {
    let mut overrides = parse_overrides(&args.stages)?;
    let mut collect_args = Vec::new();
    match (&args.meeting_file, &args.topic) {
        (Some(f), None) => {
            collect_args.extend(["--meeting-file".to_string(), f.display().to_string()])
        }
        (None, Some(t)) => collect_args.extend(["--topic".to_string(), t.clone()]),
        _ => {
            return Err(Error::Usage(
                "one of --meeting-file F or --topic T is required (or --resume DIR)".into(),
            )
            .into())
        }
    }
    if args.allow_sensitive {
        collect_args.push("--allow-sensitive".into());
    }
    if args.board.agents.iter().all(|a| a.trim().is_empty()) {
        return Err(Error::Usage(
            "--agents: at least one agent is required (e.g. --agents arch,biz)".into(),
        )
        .into());
    }
    let now = events::clock_from_env().now();
    let trace_id = init_board::trace_id_or_new(args.board.trace_id.as_deref(), &now)?;
    let mut init_args = args.board.init_board_args(&trace_id);
    init_args.extend(args.llm.init_board_args());
    let quiet_ui = Ui {
        ticker: false,
        ..ui
    };
    let packet_out = driver::run_stage(
        Stage::CollectContext,
        &collect_args,
        &overrides,
        b"",
        quiet_ui,
    )?;
    let packet_text = String::from_utf8_lossy(&packet_out.stdout).into_owned();
    let packet: MeetingPacket = io::parse_versioned(
        "collect-context output",
        &packet_text,
        "packet_version",
        PACKET_VERSION,
    )?;
    let board_out = driver::run_stage(
        Stage::InitBoard,
        &init_args,
        &overrides,
        packet_text.as_bytes(),
        quiet_ui,
    )?;
    let board_text = String::from_utf8_lossy(&board_out.stdout).into_owned();
    let board: Board = io::parse_board("init-board output", &board_text)?;
    // A missing key or a broken cassette is found now, before any run folder exists.
    check_llm_config(&args.llm, &board)?;
    if args.dry_run {
        let input = pm_step::pm_input(&board);
        cli::write_stdout(&io::to_json_line(&input, args.output.pretty))?;
        return Ok(None);
    }
    let report_file = args.report_file.clone().unwrap_or_else(|| {
        driver::default_report_file(args.meeting_file.as_deref(), &packet.meeting_input.topic)
    });
    // meeting.json keeps absolute paths, so `--resume` works from any folder.
    let report_file = absolute(std::path::Path::new(&report_file))
        .display()
        .to_string();
    if std::path::Path::new(&report_file).is_dir() {
        return Err(Error::Usage(format!(
            "--report-file: {report_file} is a folder (expected a Markdown file path)"
        ))
        .into());
    }
    let run = RunDir {
        path: args.run_dir.join(&board.trace_id),
    };
    let lock = run.lock()?;
    if run.path.join("meeting.json").exists() {
        return Err(Error::Usage(format!(
            "{} already holds a meeting; use --resume {} or another --trace-id",
            run.path.display(),
            run.path.display()
        ))
        .into());
    }
    overrides.retain(|k, _| !matches!(k, Stage::CollectContext | Stage::InitBoard));
    // The run's exchange log doubles as a cache of completed calls, so a resumed meeting
    // repeats none of them.
    let mut llm = args.llm.clone();
    llm.llm_log = Some(absolute(&run.path.join("llm.jsonl")));
    llm.reuse_log = true;
    llm.cassette = llm.cassette.as_deref().map(absolute);
    llm.record = llm.record.as_deref().map(absolute);
    let settings = RunSettings {
        trace_id: board.trace_id.clone(),
        report_file,
        collect_args,
        init_args,
        llm_args: llm.stage_args(),
        stage_overrides: overrides,
    };
    run.write(
        &run.path.join("meeting.json"),
        io::to_json_line(&settings, true).as_bytes(),
    )?;
    run.write(
        &run.file(1, Stage::CollectContext, "out"),
        packet_text.as_bytes(),
    )?;
    run.write(&run.file(2, Stage::InitBoard, "in"), packet_text.as_bytes())?;
    run.write(&run.file(2, Stage::InitBoard, "out"), board_text.as_bytes())?;
    run.save_events(&board)?;
    if !ui.quiet {
        eprintln!(
            "meeting {}: {} documents, participants {}, max {} loops, run folder {}",
            board.trace_id,
            board.context_bundle.documents.len(),
            board.participants.join(", "),
            board.max_loops,
            run.path.display()
        );
    }
    Ok(Some((run, settings, board, 3, lock)))
}

/// Resolve the provider of the PM and of every participant once, as the stages will.
fn check_llm_config(llm: &LlmArgs, board: &Board) -> Result<(), Error> {
    let pm_meta = board
        .pm
        .as_ref()
        .map(|p| p.metadata.clone())
        .unwrap_or_default();
    agent_meeting::llm::client_for(llm, &board.llm, &pm_meta, 0)?;
    for agent in board.agents.values() {
        agent_meeting::llm::client_for(llm, &board.llm, &agent.metadata, 0)?;
    }
    Ok(())
}

fn absolute(p: &std::path::Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Continue from the last complete output in the run folder.
fn resume(dir: &std::path::Path) -> anyhow::Result<Run> {
    let label = dir.join("meeting.json").display().to_string();
    let text = io::read_text_file(&dir.join("meeting.json"))?;
    let mut settings: RunSettings = io::parse_doc(&label, &text, io::Format::Json)?;
    let run = RunDir {
        path: dir.to_path_buf(),
    };
    let lock = run.lock()?;
    // The exchange log is the one of this run folder, wherever it has been moved or copied.
    if let Some(i) = settings.llm_args.iter().position(|a| a == "--llm-log") {
        if let Some(v) = settings.llm_args.get_mut(i + 1) {
            *v = absolute(&dir.join("llm.jsonl")).display().to_string();
        }
    }
    let Some((step, stage, path)) = run.last_output()? else {
        return Err(Error::Usage(format!(
            "--resume: {} holds no stage output to continue from",
            dir.display()
        ))
        .into());
    };
    let text = io::read_text_file(&path)?;
    let label = path.display().to_string();
    let board: Board = if stage == Stage::RenderReport {
        io::parse_doc::<ReportResult>(&label, &text, io::Format::Json)?.board
    } else if stage == Stage::CollectContext {
        return Err(Error::Usage(format!(
            "--resume: {} stopped before init-board; start the meeting again",
            dir.display()
        ))
        .into());
    } else {
        io::parse_board(&label, &text)?
    };
    Ok((run, settings, board, step + 1, lock))
}
