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
                  render-report, which tries again.\n\n\
                  Example:\n  \
# share/meeting.sh runs a whole meeting this way\n  \
                  collect-context --topic 'Adopt Rust?' | init-board --agents arch,biz | next-stage"
)]
struct Args {}

pub fn main() -> ExitCode {
    cli::main_with("next-stage", || {
        let _: Args = cli::parse_args("next-stage");
        let board = io::read_board_stdin()?;
        let next = board.next_stage().map_or("none", |s| s.program());
        cli::write_stdout(&format!("{next}\n"))
    })
}

/// The first line of this program's `--help`, for `agent-meeting --help`'s list.
#[allow(dead_code)]
pub fn about() -> String {
    let cmd = <Args as clap::CommandFactory>::command();
    let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
    about.lines().next().unwrap_or_default().to_string()
}
