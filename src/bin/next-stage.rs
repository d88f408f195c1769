//! `next-stage`: Board on stdin → the program that should run next on stdout (`none` when the
//! meeting is over). The one stage rule (`Board::next_stage`) for shell scripts.

use std::process::ExitCode;

use agent_meeting::{cli, io};
use clap::Parser;

/// Print which stage program a board is waiting for.
#[derive(Parser, Debug)]
#[command(
    name = "next-stage",
    version,
    after_help = "Prints one of pm-step, agent-turn, merge-board, render-report, or none (the meeting is\n\
                  over: status finished). A failed board (its report could not be saved) prints\n\
                  render-report, which tries again. With --run-folder, of a `meeting` run folder's\n\
                  newest board instead of stdin, and `waiting` when the meeting waits for a\n\
                  person's answer (meeting resume DIR --answer FILE).\n\n\
                  Example:\n  \
# share/meeting.sh runs a whole meeting this way\n  \
                  collect-context --topic 'Adopt Rust?' | init-board --agents arch,biz | next-stage"
)]
struct Args {
    /// Read the newest board of this `meeting` run folder instead of stdin; prints `waiting`
    /// when the meeting waits for a person's answer (its waiting.json)
    #[arg(long, value_name = "DIR")]
    run_folder: Option<std::path::PathBuf>,
}

pub fn main() -> ExitCode {
    cli::main_with("next-stage", || {
        let args: Args = cli::parse_args("next-stage");
        if let Some(dir) = args.run_folder {
            // The run folder's state: its newest board, and whether it waits for a person
            // (docs/design/agent-turn.md#waiting-for-a-person).
            let folder = agent_meeting::driver::Folder::open(&dir, "--run-folder")?;
            let board = agent_meeting::driver::final_board(&dir)?;
            let next = match folder.run.waiting()? {
                Some(_) if board.next_stage().is_some() => "waiting",
                _ => board.next_stage().map_or("none", |s| s.program()),
            };
            return cli::write_stdout(&format!("{next}\n"));
        }
        let board = io::read_board_stdin()?;
        let next = board.next_stage().map_or("none", |s| s.program());
        cli::write_stdout(&format!("{next}\n"))
    })
}

/// This program's command as it parses its flags, for `agent-meeting`'s `--help` list, man
/// page and completions.
#[allow(dead_code)]
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("next-stage")
}
