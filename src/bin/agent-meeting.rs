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

/// The first line of a program's `--help`.
type About = fn() -> String;

/// Every program, by the name it is run under, with the first line of its `--help`.
const PROGRAMS: [(&str, Main, About); 9] = [
    ("agent-builder", agent_builder::main, agent_builder::about),
    ("agent-turn", agent_turn::main, agent_turn::about),
    (
        "collect-context",
        collect_context::main,
        collect_context::about,
    ),
    ("init-board", init_board::main, init_board::about),
    ("meeting", meeting::main, meeting::about),
    ("merge-board", merge_board::main, merge_board::about),
    ("next-stage", next_stage::main, next_stage::about),
    ("pm-step", pm_step::main, pm_step::about),
    ("render-report", render_report::main, render_report::about),
];

fn program(name: &str) -> Option<Main> {
    PROGRAMS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, main, _)| *main)
}

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
        // The MCP server: a mode of this executable, not a program with a link of its own.
        Some("mcp") => {
            cli::set_args(argv[1..].to_vec());
            mcp::main()
        }
        // A meeting on a pull request: a mode too (docs/design/github.md).
        Some("github") => {
            cli::set_args(argv[1..].to_vec());
            github::main()
        }
        Some("gitlab") => {
            cli::set_args(argv[1..].to_vec());
            gitlab::main()
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

/// The programs, a line each: the name, then what it does.
fn listed() -> String {
    PROGRAMS
        .iter()
        .map(|(n, _, about)| format!("{n:<16} {}", about()))
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
         -h, --help           Print help\n  \
         -V, --version        Print version\n\n\
         Example:\n  \
         cargo install --locked --path . --bin {ME} && {ME} --install-links ~/.cargo/bin\n",
        listed()
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
