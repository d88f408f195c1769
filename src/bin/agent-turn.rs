//! `agent-turn`: run the agent calls a board's pending_calls ask for; the board with their
//! turns in `last_turns` goes to stdout.

use std::process::ExitCode;

use agent_meeting::cli;
use agent_meeting::stage::agent_turn as turn;
use clap::Parser;

/// Ask the agent the PM chose and record its checked answer (or its failure) in last_turns.
#[derive(Parser)]
#[command(
    name = "agent-turn",
    version,
    after_help = "Reads a Board with pending_calls on stdin, writes the Board with their turns in\n\
                  last_turns and pending_calls cleared on stdout; a fan-out's calls run concurrently,\n\
                  their turns in call order. A `kind: human` agent answers in\n\
                  $VISUAL/$EDITOR or on the terminal, or from --human-answers; with no one\n\
                  there it prints what the person is asked (waiting.json) and exits 4.\n\n\
                  Example:\n  \
# in the repository; the stages take the replay settings from the environment\n  \
                  export AGENT_MEETING_PROVIDER=replay MEETING_CASSETTE=meetings/demo.cassette.jsonl\n  \
                  collect-context --meeting-file meetings/demo.yaml | init-board --agents arch,biz \\\n    \
                  | pm-step | agent-turn | jq '.last_turns[0]'"
)]
struct Args {
    #[command(flatten)]
    output: cli::OutputArgs,
    #[command(flatten)]
    llm: agent_meeting::cli::LlmArgs,
    #[command(flatten)]
    human: cli::HumanArgs,
}

pub fn main() -> ExitCode {
    cli::main_with("agent-turn", || {
        let args: Args = cli::parse_args("agent-turn");
        let llm = agent_meeting::settings::config::with_config(args.llm.into_config())?;
        let board = agent_meeting::io::read_board_stdin()?;
        let answers = args.human.human_answers.as_deref();
        let turned = turn::run(
            board,
            &mut agent_meeting::llm::Clients::per_stage(&llm),
            answers,
            None,
        );
        // No one there to answer: stdout carries what the person is asked (waiting.json),
        // and the exit code is 4 (docs/design/agent-turn.md#waiting-for-a-person).
        if let Err(agent_meeting::Error::Waiting { document, .. }) = &turned {
            cli::write_stdout(&format!("{document}\n"))?;
        }
        cli::write_stage_board(turned, &args.output)
    })
}

/// This program's command as it parses its flags, for `agent-meeting`'s `--help` list, man
/// page and completions.
#[allow(dead_code)]
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("agent-turn")
}
