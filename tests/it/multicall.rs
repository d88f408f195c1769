//! The multicall executable `agent-meeting` (what `make install` ships): run through a link
//! named after a program, or as `agent-meeting PROGRAM ARGS...`, it is that program — the same
//! `--help`, `--version`, `--generate` output, usage errors and stage output as the program
//! built on its own.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{bin, par_map, Cli, Workdir, PROGRAMS};

const MULTICALL: &str = env!("CARGO_BIN_EXE_agent-meeting");

/// A folder with a symbolic link per program name, each pointing to the multicall executable.
fn links() -> Workdir {
    let dir = Workdir::new();
    for p in PROGRAMS {
        std::os::unix::fs::symlink(MULTICALL, dir.join(p)).unwrap();
    }
    dir
}

/// What a program printed and how it ended, for comparing two ways of running it.
fn outcome(mut cli: Cli) -> (Option<i32>, String, String) {
    let run = cli.run();
    (run.code(), run.stdout(), run.stderr())
}

fn direct(program: &str) -> Cli {
    Cli::new(Command::new(bin(program)))
}

fn through_link(links: &Path, program: &str) -> Cli {
    Cli::new(Command::new(links.join(program)))
}

fn by_name(program: &str) -> Cli {
    let mut cli = Cli::new(Command::new(MULTICALL));
    cli.arg(program);
    cli
}

#[test]
fn a_link_and_a_named_program_behave_as_the_program() {
    let links = links();
    let cases: Vec<(&str, &[&str])> = PROGRAMS
        .iter()
        .flat_map(|p| {
            let args: [&[&str]; 5] = [
                &["--version"],
                &["--help"],
                &["--generate", "man"],
                &["--generate", "complete-bash"],
                &["--no-such-flag"],
            ];
            args.into_iter().map(move |a| (*p, a))
        })
        .collect();
    let failures: Vec<String> = par_map(&cases, 4, |(program, args)| {
        let want = outcome({
            let mut c = direct(program);
            c.args(*args);
            c
        });
        let mut bad = Vec::new();
        for (how, mut cli) in [
            ("link", through_link(links.path(), program)),
            ("agent-meeting PROGRAM", by_name(program)),
        ] {
            cli.args(*args);
            let got = outcome(cli);
            if got != want {
                bad.push(format!(
                    "{program} {args:?} ({how}):\n  want {want:?}\n  got  {got:?}"
                ));
            }
        }
        bad
    })
    .into_iter()
    .flatten()
    .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_stage_through_a_link_writes_the_same_board() {
    let links = links();
    let collected = direct("collect-context")
        .args(["--meeting-file", "meetings/demo.yaml"])
        .run();
    collected.success();
    let stdin = collected.output.stdout.clone();
    // init-board, then one PM round replayed from the demo's cassette.
    let run_on = |mut cli: Cli, args: &[&str], stdin: &[u8]| {
        cli.args(args)
            .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
            .stdin(stdin);
        cli.run()
    };
    let init = ["--agents", "arch,biz", "--trace-id", "multicall"];
    let board = run_on(direct("init-board"), &init, &stdin);
    board.success();
    run_on(through_link(links.path(), "init-board"), &init, &stdin)
        .success()
        .stdout_is(&board.stdout());

    let pm = [
        "--provider",
        "replay",
        "--cassette",
        "meetings/demo.cassette.jsonl",
    ];
    let run = |cli: Cli| run_on(cli, &pm, &board.output.stdout);
    let want = run(direct("pm-step"));
    want.success().stdout_has("pending_calls");
    let got = run(through_link(links.path(), "pm-step"));
    got.success().stderr_is(&want.stderr());
    assert_eq!(untimed(&got.stdout()), untimed(&want.stdout()));
    let got = run(by_name("pm-step"));
    got.success();
    assert_eq!(untimed(&got.stdout()), untimed(&want.stdout()));
}

/// A board with its measured call times set to 0: a replayed call may take a millisecond under
/// load, and the programs agree on everything else.
fn untimed(board: &str) -> String {
    regex::Regex::new(r#""duration_ms":\d+"#)
        .unwrap()
        .replace_all(board, r#""duration_ms":0"#)
        .into_owned()
}

#[test]
fn install_links_makes_a_working_link_per_program() {
    let dir = Workdir::new();
    let run = Cli::new(Command::new(MULTICALL))
        .arg("--install-links")
        .arg(dir.path())
        .run();
    run.success();
    for p in PROGRAMS {
        let link: PathBuf = dir.join(p);
        assert_eq!(
            std::fs::canonicalize(&link).unwrap(),
            std::fs::canonicalize(MULTICALL).unwrap(),
            "{p}\n{run}"
        );
    }
    // Made again over the existing links: replaced, not refused.
    Cli::new(Command::new(MULTICALL))
        .arg("--install-links")
        .arg(dir.path())
        .run()
        .success();
    through_link(dir.path(), "merge-board")
        .arg("--version")
        .run()
        .success()
        .stdout_has("merge-board ");
}

#[test]
fn an_unknown_program_is_a_usage_error() {
    Cli::new(Command::new(MULTICALL))
        .arg("no-such-program")
        .run()
        .exit(2)
        .stdout_is("")
        .stderr_has("agent-meeting: no program 'no-such-program'");
    Cli::new(Command::new(MULTICALL))
        .run()
        .success()
        .stdout_has("pm-step");
}

/// `agent-meeting --help` lists every program with the first line of its own `--help`.
#[test]
fn the_help_lists_each_program_with_what_it_does() {
    let help = Cli::new(Command::new(MULTICALL)).arg("--help").run();
    help.success();
    let text = help.stdout();
    for program in PROGRAMS {
        let own = direct(program).arg("--help").run().stdout();
        let first = own.lines().next().unwrap().trim();
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(program) && l.trim_end().ends_with(first)),
            "{program}: {first:?} not in\n{text}"
        );
    }
    assert!(text.contains("agent-meeting mcp"), "{text}");
}

/// Only our names on PATH: the package's programs are `agent-meeting` and the pipeline's
/// program names — never a mode (`github`, `gitlab`, `mcp`), whose names are other tools'.
#[test]
fn the_package_installs_only_our_program_names() {
    let package = crate::harness::cargo_package();
    let mut bins: Vec<String> = package["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"][0] == "bin")
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    bins.sort();
    let mut want: Vec<String> = PROGRAMS.iter().map(|p| p.to_string()).collect();
    want.push("agent-meeting".into());
    want.sort();
    assert_eq!(bins, want);
}
