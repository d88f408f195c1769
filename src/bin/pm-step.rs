//! `pm-step`: one PM round on a board read from stdin; the updated board goes to stdout.

use std::process::ExitCode;

use agent_meeting::{cli, events, io, pm};
use clap::Parser;

/// Ask the PM for the next step of the meeting and apply its decision to the board.
#[derive(Parser)]
#[command(
    name = "pm-step",
    version,
    after_help = "Reads a Board on stdin, writes the Board with the PM's decision applied (pending_call,\n\
                  final_report, or the forced-finish outcome) on stdout.\n\n\
                  Example:\n  \
                  pm-step --provider replay --cassette meetings/demo.cassette.jsonl \\\n    \
                  < runs/<id>/0003-pm-step.in.json | jq .pending_call"
)]
struct Args {
    #[command(flatten)]
    output: cli::OutputArgs,
    #[command(flatten)]
    llm: agent_meeting::llm::LlmArgs,
}

fn main() -> ExitCode {
    cli::main_with("pm-step", || {
        let args: Args = cli::parse_args("pm-step");
        let board = io::read_board_stdin()?;
        pm::check_turn(&board).map_err(|e| e.or_file("<stdin>"))?;
        let metadata = board
            .pm
            .as_ref()
            .map(|p| p.metadata.clone())
            .unwrap_or_default();
        let (mut client, opts) =
            agent_meeting::llm::client_for(&args.llm, &board.llm, &metadata, board.usage.calls)?;
        let clock = events::clock_from_env();
        let board = pm::pm_step(board, &mut client, &opts, clock.as_ref())
            .map_err(|e| e.or_file("<stdin>"))?;
        cli::write_stdout(&io::to_json_line(&board, args.output.pretty))
    })
}
