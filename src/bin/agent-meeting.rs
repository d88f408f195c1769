//! `agent-meeting`: the nine programs in one executable, the way busybox and uutils ship theirs.
//! Run through a link named after a program (`make install` makes them), it is that program:
//! same flags, output, exit codes, `--help`, `--version` and `--generate`. Run under its own
//! name, it takes the program's name first (`agent-meeting pm-step --pretty`), or makes the
//! links (`--install-links DIR`). One executable instead of nine keeps the install small and
//! the release build short (BENCHMARKS.md#install-size-and-build-time); each program's source
//! stays its own `src/bin/<name>.rs`, built on its own as well (the tests run those).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agent_meeting::cli;

#[path = "agent-builder.rs"]
mod agent_builder;
#[path = "agent-turn.rs"]
mod agent_turn;
#[path = "collect-context.rs"]
mod collect_context;
#[path = "github.rs"]
mod github;
#[path = "gitlab.rs"]
mod gitlab;
#[path = "init-board.rs"]
mod init_board;
#[path = "mcp.rs"]
mod mcp;
#[path = "meeting.rs"]
mod meeting;
#[path = "merge-board.rs"]
mod merge_board;
#[path = "next-stage.rs"]
mod next_stage;
#[path = "pm-step.rs"]
mod pm_step;
#[path = "render-report.rs"]
mod render_report;

const ME: &str = "agent-meeting";

/// A program's `main`.
type Main = fn() -> ExitCode;

/// A program's command, as it parses its flags (its `--help`, man page and completions).
type Command = fn() -> clap::Command;

/// Every program, by the name it is run under, with its command.
const PROGRAMS: [(&str, Main, Command); 9] = [
    ("agent-builder", agent_builder::main, agent_builder::command),
    ("agent-turn", agent_turn::main, agent_turn::command),
    (
        "collect-context",
        collect_context::main,
        collect_context::command,
    ),
    ("init-board", init_board::main, init_board::command),
    ("meeting", meeting::main, meeting::command),
    ("merge-board", merge_board::main, merge_board::command),
    ("next-stage", next_stage::main, next_stage::command),
    ("pm-step", pm_step::main, pm_step::command),
    ("render-report", render_report::main, render_report::command),
];

/// The modes: parts of this executable with no link of their own (their names are other
/// tools'), run as `agent-meeting MODE`. The MCP server (docs/design/mcp.md) and a meeting on
/// a pull or merge request (docs/design/github.md).
const MODES: [(&str, Main, Command); 3] = [
    ("mcp", mcp::main, mcp::command),
    ("github", github::main, github::command),
    ("gitlab", gitlab::main, gitlab::command),
];

fn program(name: &str) -> Option<Main> {
    PROGRAMS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, main, _)| *main)
}

fn mode(name: &str) -> Option<Main> {
    MODES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, main, _)| *main)
}

/// `agent-meeting` as clap sees it, for its man page and completions (its `--help` is
/// [`help`]): each program and mode a subcommand with its own flags, so a shell completes the
/// program's or mode's name after `agent-meeting`, then its flags. A program's page is its own
/// (pm-step(1)), a mode's agent-meeting-MODE(1).
fn command() -> clap::Command {
    let programs = PROGRAMS
        .iter()
        .map(|(name, _, command)| command().display_name(*name));
    let modes = MODES
        .iter()
        .map(|(name, _, command)| command().name(*name).display_name(format!("{ME}-{name}")));
    let cmd = clap::Command::new(ME)
        .about("The agent-meeting programs in one executable")
        .long_about(
            "The agent-meeting programs in one executable. Run through a link named after a \
             program (make install makes them), it is that program: the same flags, output and \
             exit codes. Run under its own name, it takes the program's name first \
             (agent-meeting pm-step --pretty), or a mode's: mcp (an MCP server for coding \
             agents), github (a meeting on a pull request, posted as its comment), gitlab (the \
             same on a GitLab merge request).",
        )
        .after_help(format!(
            "Example:\n  cargo install --locked --path . --bin {ME} && {ME} --install-links ~/.cargo/bin"
        ))
        .disable_help_subcommand(true)
        // Its `-h` is its `--help` (no summary to point to).
        .disable_help_flag(true)
        .arg(
            clap::Arg::new("help")
                .short('h')
                .long("help")
                .action(clap::ArgAction::Help)
                .help("Print help"),
        )
        .subcommand_value_name("PROGRAM")
        .subcommand_help_heading("PROGRAMS AND MODES")
        .arg(
            clap::Arg::new("install-links")
                .long("install-links")
                .value_name("DIR")
                .value_hint(clap::ValueHint::DirPath)
                .help(INSTALL_LINKS_HELP),
        )
        .subcommands(programs.chain(modes));
    cli::program_command(cmd, ME)
}

/// What `--install-links` does, in the man page and the completions ([`help`] says it too).
const INSTALL_LINKS_HELP: &str =
    "Make a link named after each program in DIR, pointing to this executable (replacing a file or link of that name)";

/// The name a path runs under: its file name, without a Windows `.exe`.
fn run_name(arg0: &OsString) -> String {
    let name = Path::new(arg0)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.strip_suffix(".exe") {
        Some(stem) => stem.to_string(),
        None => name,
    }
}

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    // Through a link named after a program (argv[0] is the link's name, not the target's).
    if let Some(main) = argv.first().map(run_name).and_then(|n| program(&n)) {
        return main();
    }
    let first = argv.get(1).map(|a| a.to_string_lossy().into_owned());
    match first.as_deref() {
        Some(name) if program(name).is_some() => {
            // `agent-meeting PROGRAM ARGS...`: the program sees `PROGRAM ARGS...`.
            cli::set_args(argv[1..].to_vec());
            program(name).unwrap()()
        }
        Some(name) if mode(name).is_some() => {
            // A shell completes the word `agent-meeting`: a mode's completions are its.
            if let Some(Ok(kind)) = cli::generate_request(&argv[1..]) {
                if kind.starts_with("complete-") {
                    cli::print_generated(&mut command(), ME, Ok(kind));
                }
            }
            cli::set_args(argv[1..].to_vec());
            mode(name).unwrap()()
        }
        Some(flag) if flag == "--generate" || flag.starts_with("--generate=") => {
            let request = cli::generate_request(&argv).expect("a --generate flag");
            cli::print_generated(&mut command(), ME, request)
        }
        None | Some("-h" | "--help" | "help") => {
            print(&help());
            ExitCode::SUCCESS
        }
        Some("-V" | "--version") => {
            print(&format!("{ME} {}\n", cli::VERSION));
            ExitCode::SUCCESS
        }
        Some("--install-links") => match argv.get(2) {
            Some(dir) if argv.len() == 3 => cli::main_with(ME, || install_links(Path::new(dir))),
            _ => usage("--install-links takes one argument, the folder DIR"),
        },
        Some(other) => usage(&format!(
            "no program '{other}' [possible: {}]",
            names().join(", ")
        )),
    }
}

fn names() -> Vec<&'static str> {
    PROGRAMS.iter().map(|(n, _, _)| *n).collect()
}

/// The programs, a line each: the name, then what it does (the first line of its `--help`).
fn listed() -> String {
    PROGRAMS
        .iter()
        .map(|(n, _, command)| {
            let about = command().get_about().map(|a| a.to_string());
            let about = about.unwrap_or_default();
            format!("{n:<16} {}", about.lines().next().unwrap_or_default())
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

fn help() -> String {
    format!(
        "The agent-meeting programs in one executable.\n\n\
         Usage: {ME} PROGRAM [ARGS]...\n       \
         PROGRAM [ARGS]...            (through a link named after the program)\n       \
         {ME} --install-links DIR\n       \
         {ME} mcp                (an MCP server for coding agents: {ME} mcp --help)\n       \
         {ME} github             (a meeting on a pull request, posted as its comment)\n       \
         {ME} gitlab             (the same on a GitLab merge request)\n\n\
         Programs (each one's flags: {ME} PROGRAM --help):\n  {}\n\n\
         Options:\n  \
         --install-links DIR  Make a link named after each program in DIR, pointing to this\n                       \
         executable (replacing a file or link of that name)\n  \
         --generate KIND      Print a man page or a shell completion script (of the programs' and\n                       \
         modes' names and flags) to stdout and exit; KIND is one of\n                       \
         {}\n  \
         -h, --help           Print help\n  \
         -V, --version        Print version\n\n\
         Example:\n  \
         cargo install --locked --path . --bin {ME} && {ME} --install-links ~/.cargo/bin\n",
        listed(),
        cli::GENERATE_KINDS.join(", ")
    )
}

fn print(text: &str) {
    // A closed stdout (`agent-meeting --help | head -0`) is no failure.
    let _ = cli::write_stdout(text);
}

fn usage(msg: &str) -> ExitCode {
    agent_meeting::note!("{ME}: {msg} (see {ME} --help)");
    ExitCode::from(2)
}

/// Link each program's name in `dir` to this executable: by its file name when it sits in
/// `dir` itself (the links survive moving the folder), else by its absolute path.
fn install_links(dir: &Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot find this executable")?;
    let dir_real =
        std::fs::canonicalize(dir).with_context(|| format!("{}: no such folder", dir.display()))?;
    let target: PathBuf = match (exe.parent(), exe.file_name()) {
        (Some(parent), Some(file)) if parent == dir_real => PathBuf::from(file),
        _ => exe.clone(),
    };
    let mut out = String::new();
    for name in names() {
        let link = dir.join(name);
        if let Ok(meta) = std::fs::symlink_metadata(&link) {
            if meta.is_dir() {
                anyhow::bail!("{}: is a folder, not replaced", link.display());
            }
            std::fs::remove_file(&link).with_context(|| format!("{}", link.display()))?;
        }
        make_link(&target, &exe, &link).with_context(|| format!("{}", link.display()))?;
        out.push_str(&format!("{} -> {}\n", link.display(), target.display()));
    }
    cli::write_stdout(&out)
}

#[cfg(unix)]
fn make_link(target: &Path, _exe: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// No symbolic links without privileges on Windows: a hard link (or a copy across volumes).
#[cfg(not(unix))]
fn make_link(_target: &Path, exe: &Path, link: &Path) -> std::io::Result<()> {
    std::fs::hard_link(exe, link).or_else(|_| std::fs::copy(exe, link).map(|_| ()))
}
