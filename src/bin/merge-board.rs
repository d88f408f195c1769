//! `merge-board`: Board with `last_turns` on stdin → Board with them merged on stdout.

use std::process::ExitCode;

use agent_meeting::cli::{self, OutputArgs};
use agent_meeting::io;
use agent_meeting::meeting::events;
use agent_meeting::stage::merge_board;
use clap::Parser;

/// Merge the last agent turn into the whiteboard (deterministic, no LLM).
#[derive(Parser, Debug)]
#[command(
    name = "merge-board",
    version,
    after_help = "Example:\n  \
# in the repository\n  \
export AGENT_MEETING_PROVIDER=replay MEETING_CASSETTE=meetings/demo.cassette.jsonl\n  \
collect-context --meeting-file meetings/demo.yaml | init-board --agents arch,biz \\\n    \
| pm-step | agent-turn | merge-board | jq '{loop_count, findings: .record.findings, questions: .record.questions}'"
)]
struct Args {
    #[command(flatten)]
    output: OutputArgs,
}

pub fn main() -> ExitCode {
    cli::main_with("merge-board", || {
        let args: Args = cli::parse_args("merge-board");
        let input = io::read_board_stdin()?;
        let merged = merge_board::merge(input, &events::clock_from_env().now());
        cli::write_stage_board(merged, &args.output)
    })
}

/// This program's command as it parses its flags, for `agent-meeting`'s `--help` list, man
/// page and completions.
#[allow(dead_code)]
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("merge-board")
}
