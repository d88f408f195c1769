//! `agent-turn`: run the agent call a board's pending_call asks for; the board with
//! `last_turn` set goes to stdout.

use std::process::ExitCode;

use agent_meeting::{cli, events, io, turn};
use clap::Parser;

/// Ask the agent the PM chose and record its checked answer (or its failure) in last_turn.
#[derive(Parser)]
#[command(
    name = "agent-turn",
    version,
    after_help = "Reads a Board with a pending_call on stdin, writes the Board with last_turn set and\n\
                  pending_call cleared on stdout.\n\n\
                  Example:\n  \
                  agent-turn --provider replay --cassette meetings/demo.cassette.jsonl \\\n    \
                  < runs/<id>/0004-agent-turn.in.json | jq .last_turn"
)]
struct Args {
    #[command(flatten)]
    output: cli::OutputArgs,
    #[command(flatten)]
    llm: agent_meeting::llm::LlmArgs,
}

fn main() -> ExitCode {
    cli::main_with("agent-turn", || {
        let args: Args = cli::parse_args("agent-turn");
        let board = io::read_board_stdin()?;
        turn::check_turn(&board).map_err(|e| e.or_file("<stdin>"))?;
        let metadata = board
            .pending_call
            .as_ref()
            .and_then(|c| board.agents.get(&c.target_agent))
            .map(|a| a.metadata.clone())
            .unwrap_or_default();
        let (mut client, opts) =
            agent_meeting::llm::client_for(&args.llm, &board.llm, &metadata, board.usage.calls)?;
        let clock = events::clock_from_env();
        let board = turn::agent_turn(board, &mut client, &opts, clock.as_ref())
            .map_err(|e| e.or_file("<stdin>"))?;
        cli::write_stdout(&io::to_json_line(&board, args.output.pretty))
    })
}
