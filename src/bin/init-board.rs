//! `init-board`: MeetingPacket on stdin → a fresh Board on stdout.

use std::process::ExitCode;

use agent_meeting::cli::{self, BoardArgs, OutputArgs};
use agent_meeting::io;
use agent_meeting::llm::LlmConfig;
use agent_meeting::model::{MeetingPacket, PACKET_VERSION};
use agent_meeting::settings;
use agent_meeting::settings::config;
use agent_meeting::stage::init_board as board;
use clap::Parser;

/// Create the meeting's whiteboard from a collected MeetingPacket.
#[derive(Parser, Debug)]
#[command(
    name = "init-board",
    version,
    after_help = "Example:\n  collect-context --meeting-file meetings/demo.yaml \\\n    | init-board --agents arch,biz --max-loops 6 | jq '{status, participants, questions: .record.questions}'"
)]
struct Args {
    #[command(flatten)]
    board: BoardArgs,
    /// Default provider for the meeting: openai, anthropic, azure, ollama, gemini, replay or sample
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

pub fn main() -> ExitCode {
    cli::main_with("init-board", || {
        let (args, matches): (Args, clap::ArgMatches) = cli::parse_args_with_matches("init-board");
        let config = &config::load()?.config;
        let text = io::read_stdin("<stdin>")?;
        let packet: MeetingPacket =
            io::parse_versioned("<stdin>", &text, "packet_version", PACKET_VERSION)?;
        // The meeting's LLM defaults, over the config file's: the callers' models a dollar
        // budget is priced with.
        let llm = LlmConfig {
            provider: args.provider.filter(|p| !p.is_empty()),
            model: args.model,
            temperature: args.temperature,
            max_tokens: args.max_tokens,
            config: config.llm_defaults(),
            ..LlmConfig::default()
        };
        let init = settings::init_args(
            &args.board.settings(&matches),
            llm,
            config,
            &packet.meeting_input,
        );
        let board = board::run(packet, "<stdin>", init)?;
        cli::write_stdout(&io::to_json_line(&board, args.output.pretty))
    })
}

/// This program's command as it parses its flags, for `agent-meeting`'s `--help` list, man
/// page and completions.
#[allow(dead_code)]
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("init-board")
}
