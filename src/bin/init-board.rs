//! `init-board`: MeetingPacket on stdin → a fresh Board on stdout.

use std::process::ExitCode;

use agent_meeting::cli::{self, BoardArgs, OutputArgs};
use agent_meeting::model::{LlmSettings, MeetingPacket, PACKET_VERSION};
use agent_meeting::stage::init_board::{self as board, InitOptions};
use agent_meeting::{config, events, io, loader};
use clap::Parser;

/// Create the meeting's whiteboard from a collected MeetingPacket.
#[derive(Parser, Debug)]
#[command(
    name = "init-board",
    version,
    after_help = "Example:\n  collect-context --meeting-file meetings/demo.yaml \\\n    | init-board --agents arch,biz --max-loops 6 | jq '{status, participants, open_questions}'"
)]
struct Args {
    #[command(flatten)]
    board: BoardArgs,
    /// Default provider for the meeting: openai, anthropic or replay
    #[arg(
        long,
        env = "AGENT_MEETING_PROVIDER",
        value_name = "NAME",
        help_heading = "Model"
    )]
    provider: Option<String>,
    /// Default model for the meeting
    #[arg(
        long,
        env = "AGENT_MEETING_MODEL",
        value_name = "MODEL",
        help_heading = "Model"
    )]
    model: Option<String>,
    /// Default sampling temperature
    #[arg(long, value_name = "T", help_heading = "Model")]
    temperature: Option<f64>,
    /// Default completion token limit per call
    #[arg(long, value_name = "N", help_heading = "Model")]
    max_tokens: Option<u32>,
    #[command(flatten)]
    output: OutputArgs,
}

fn main() -> ExitCode {
    cli::main_with("init-board", || {
        let (args, matches): (Args, clap::ArgMatches) = cli::parse_args_with_matches("init-board");
        let config = &config::load()?.config;
        let text = io::read_stdin("<stdin>")?;
        let packet: MeetingPacket =
            io::parse_versioned("<stdin>", &text, "packet_version", PACKET_VERSION)?;
        packet
            .meeting_input
            .validate()
            .map_err(|e| e.under("meeting_input").in_file("<stdin>"))?;
        let b = &args.board;
        let pm_name = b.pm.as_deref().unwrap_or("pm");
        let search = loader::AgentSearch::new(b.agents_dir.as_deref(), config::user_agents_dir()?);
        let (agents, pm) =
            loader::load_meeting_agents(&search, &b.agents, pm_name, b.pm.is_some())?;
        let clock = events::clock_from_env();
        let now = clock.now();
        let trace_id = b
            .trace_id
            .clone()
            .unwrap_or_else(|| board::new_trace_id(&now));
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
            // Flag > config file > built-in default (DESIGN.md#config); the budget: flag >
            // meeting file > config file.
            max_loops: match matches.value_source("max_loops") {
                Some(clap::parser::ValueSource::CommandLine) => b.max_loops,
                _ => config.max_loops.unwrap_or(b.max_loops),
            },
            max_parallel: b.max_parallel,
            max_total_tokens: b.max_total_tokens.or_else(|| {
                let in_file = packet
                    .meeting_input
                    .budget
                    .as_ref()
                    .and_then(|b| b.max_total_tokens);
                in_file.or(config.budget.as_ref().map(|b| b.max_total_tokens))
            }),
            trace_id,
        };
        let board = board::init(packet, opts, &now)?;
        cli::write_stdout(&io::to_json_line(&board, args.output.pretty))
    })
}
