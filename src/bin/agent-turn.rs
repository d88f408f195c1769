//! `agent-turn`: run the agent call a board's pending_call asks for; the board with
//! `last_turn` set goes to stdout.

use std::process::ExitCode;

use agent_meeting::cli;
use agent_meeting::model::Board;
use agent_meeting::stage::agent_turn as turn;
use clap::Parser;
use serde_json::{Map, Value};

/// Ask the agent the PM chose and record its checked answer (or its failure) in last_turn.
#[derive(Parser)]
#[command(
    name = "agent-turn",
    version,
    after_help = "Reads a Board with a pending_call on stdin, writes the Board with last_turn set and\n\
                  pending_call cleared on stdout.\n\n\
                  Example:\n  \
# in the repository; the stages take the replay settings from the environment\n  \
                  export AGENT_MEETING_PROVIDER=replay MEETING_CASSETTE=meetings/demo.cassette.jsonl\n  \
                  collect-context --meeting-file meetings/demo.yaml | init-board --agents arch,biz \\\n    \
                  | pm-step | agent-turn | jq .last_turn"
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
        cli::run_llm_stage(
            &args.llm,
            &args.output,
            turn::check_turn,
            agent_caller,
            turn::agent_turn,
        )
    })
}

/// The called agent's own provider/model settings.
/// Who calls the model, and the metadata that may choose its provider and model.
fn agent_caller(board: &Board) -> (String, Map<String, Value>) {
    let agent = board
        .pending_call
        .as_ref()
        .and_then(|c| board.agents.get(&c.target_agent));
    match agent {
        Some(a) => (a.name.clone(), a.metadata.clone()),
        None => (String::new(), Map::new()),
    }
}
