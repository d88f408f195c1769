//! `init-board`: MeetingPacket on stdin → a fresh Board on stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::board::{self, InitOptions};
use agent_meeting::cli::{self, OutputArgs};
use agent_meeting::model::{LlmSettings, MeetingPacket, PACKET_VERSION};
use agent_meeting::{events, io, loader, Error};
use clap::Parser;

/// Create the meeting's whiteboard from a collected MeetingPacket.
#[derive(Parser, Debug)]
#[command(
    name = "init-board",
    version,
    after_help = "Example:\n  collect-context --meeting-file meetings/demo.yaml \\\n    | init-board --agents arch,biz --max-loops 6 | jq '{status, participants, open_questions}'"
)]
struct Args {
    /// Specialists taking part, in speaking-list order (comma-separated)
    #[arg(long, value_delimiter = ',', required = true)]
    agents: Vec<String>,
    /// Folder holding <name>.yaml|.yml|.json agent configs
    #[arg(long, default_value = "agents")]
    agents_dir: PathBuf,
    /// The PM's config name in the agents folder (built-in PM prompt when `pm` is absent)
    #[arg(long)]
    pm: Option<String>,
    /// Hard limit of agent turns before the PM must close the meeting
    #[arg(long, default_value_t = 6)]
    max_loops: u32,
    /// Default provider for the meeting: openai, anthropic or replay
    #[arg(long, env = "AGENT_MEETING_PROVIDER")]
    provider: Option<String>,
    /// Default model for the meeting
    #[arg(long, env = "AGENT_MEETING_MODEL")]
    model: Option<String>,
    /// Default sampling temperature
    #[arg(long)]
    temperature: Option<f64>,
    /// Default completion token limit per call
    #[arg(long)]
    max_tokens: Option<u32>,
    /// Fix the trace id (reproducible runs); default: time plus random bits
    #[arg(long)]
    trace_id: Option<String>,
    #[command(flatten)]
    output: OutputArgs,
}

fn main() -> ExitCode {
    cli::main_with("init-board", || {
        let args: Args = cli::parse_args("init-board");
        let text = io::read_stdin("<stdin>")?;
        let packet: MeetingPacket =
            io::parse_versioned("<stdin>", &text, "packet_version", PACKET_VERSION)?;
        packet
            .meeting_input
            .validate()
            .map_err(|e| e.under("meeting_input").in_file("<stdin>"))?;
        let pm_name = args.pm.as_deref().unwrap_or("pm");
        let (agents, pm) = loader::load_meeting_agents(
            &args.agents_dir,
            &args.agents,
            pm_name,
            args.pm.is_some(),
        )?;
        let clock = events::clock_from_env();
        let now = clock.now();
        let trace_id = match args.trace_id {
            Some(t) if board::is_valid_trace_id(&t) => t,
            Some(t) => {
                return Err(Error::Usage(format!(
                    "--trace-id: {t:?} must be 1-64 characters of A-Z a-z 0-9 _ -"
                ))
                .into())
            }
            None => board::new_trace_id(&now),
        };
        let llm = LlmSettings {
            provider: args.provider.unwrap_or_default(),
            model: args.model,
            temperature: args.temperature,
            max_tokens: args.max_tokens,
        };
        let opts = InitOptions {
            agents,
            pm,
            llm,
            max_loops: args.max_loops,
            trace_id,
        };
        let board = board::init(packet, opts, &now)?;
        cli::write_stdout(&io::to_json_line(&board, args.output.pretty))
    })
}
