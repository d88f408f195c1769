//! `pm-step`: one PM round on a board read from stdin; the updated board goes to stdout.

use std::process::ExitCode;

use agent_meeting::cli;
use agent_meeting::stage::pm_step as pm;
use clap::Parser;

/// Ask the PM for the next step of the meeting and apply its decision to the board.
#[derive(Parser)]
#[command(
    name = "pm-step",
    version,
    after_help = "Reads a Board on stdin, writes the Board with the PM's decision applied (pending_calls:\n\
                  one call, or a fan-out's, final_report, or the forced-finish outcome) on stdout.\n\n\
                  Example:\n  \
# in the repository\n  \
                  collect-context --meeting-file meetings/demo.yaml | init-board --agents arch,biz \\\n    \
                  | pm-step --provider replay --cassette meetings/demo.cassette.jsonl | jq '.pending_calls[0]'"
)]
struct Args {
    #[command(flatten)]
    output: cli::OutputArgs,
    #[command(flatten)]
    llm: agent_meeting::cli::LlmArgs,
}

pub fn main() -> ExitCode {
    cli::main_with("pm-step", || {
        let args: Args = cli::parse_args("pm-step");
        let llm = agent_meeting::settings::config::with_config(args.llm.into_config())?;
        let board = agent_meeting::io::read_board_stdin()?;
        cli::write_stage_board(
            pm::run(board, &mut agent_meeting::llm::Clients::per_stage(&llm)),
            &args.output,
        )
    })
}

/// This program's command as it parses its flags, for `agent-meeting`'s `--help` list, man
/// page and completions.
#[allow(dead_code)]
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("pm-step")
}
