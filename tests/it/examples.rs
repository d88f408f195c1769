//! Every example is runnable as written: each program's `--help` examples
//! and the README's `sh` blocks run, offline, in a scratch copy of the repository's
//! `meetings/`, `agents/` and `share/` with the programs on PATH. Skipped: a command with a
//! key placeholder (`sk-...`, it needs a real model) and a README block marked
//! `<!-- not run by the tests: why -->` (make, installs, a local model server).

use std::path::Path;
use std::process::Command;

use crate::harness::{every_case, root, Cli, Workdir, PROGRAMS};

/// A scratch folder holding what the examples read, links resolved, like a fresh checkout:
/// only the files git tracks there, so what a user added to their checkout (the guide's own
/// `agents/cost.yaml`, once they ran its example) changes nothing (without git, a copy of
/// the folders).
fn scratch() -> Workdir {
    let work = Workdir::new();
    let dirs = ["meetings", "agents", "share"];
    let tracked = Command::new("git")
        .arg("-C")
        .arg(root())
        .args(["ls-files", "-z", "--"])
        .args(dirs)
        .output()
        .ok()
        .filter(|o| o.status.success() && !o.stdout.is_empty());
    match tracked {
        Some(out) => {
            for rel in out.stdout.split(|b| *b == 0).filter(|r| !r.is_empty()) {
                let rel = Path::new(std::str::from_utf8(rel).unwrap());
                let to = work.join(rel);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                // `copy` follows a link: its target's content, as `cp -L` gives.
                std::fs::copy(root().join(rel), &to)
                    .unwrap_or_else(|e| panic!("copy {}: {e}", rel.display()));
            }
        }
        None => {
            for dir in dirs {
                let ok = Command::new("cp")
                    .arg("-RL")
                    .arg(root().join(dir))
                    .arg(work.path())
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "copy {dir}");
            }
        }
    }
    // A checkout's root: the context root of the demo's documents, as the cassette expects.
    std::fs::create_dir(work.join(".git")).unwrap();
    work
}

/// The commands of a text block: `\`-continued lines joined, those with a key placeholder
/// left out, one command per line.
fn runnable(lines: &[&str]) -> String {
    let mut commands: Vec<String> = Vec::new();
    let mut current = String::new();
    for line in lines {
        let line = line.trim();
        match line.strip_suffix('\\') {
            Some(head) => current.push_str(&format!("{head} ")),
            None => {
                current.push_str(line);
                commands.push(std::mem::take(&mut current));
            }
        }
    }
    commands
        .into_iter()
        .filter(|c| !c.trim().is_empty() && !c.contains("sk-..."))
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_script(work: &Path, script: &str, what: &str) {
    // The shell loop and the flows read boards with jq.
    let needs_jq = ["jq ", "share/meeting.sh", "share/flows/"]
        .iter()
        .any(|s| script.contains(s));
    if needs_jq && crate::harness::skip_without(crate::harness::Tool::Jq) {
        return;
    }
    let path = crate::harness::programs_path();
    let out = Cli::new(Command::new("sh"))
        .args(["-e", "-c", script])
        .current_dir(work)
        .env("PATH", path)
        .run();
    out.check(out.code() == Some(0), &format!("{what}:\n{script}"));
}

/// A program's examples: the indented lines after its `Example…:` heading, up to the
/// environment or exit codes.
fn help_examples(program: &str) -> String {
    let out = crate::harness::cli(program).arg("--help").run();
    let text = out.stdout();
    let start = text
        .find("\nExample")
        .unwrap_or_else(|| panic!("{program} --help has no example"));
    let lines: Vec<&str> = text[start + 1..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("Environment:") && !l.starts_with("Exit codes:"))
        .filter(|l| l.starts_with("  "))
        .collect();
    runnable(&lines)
}

#[test]
fn every_programs_help_examples_run() {
    every_case(
        PROGRAMS,
        |p| p.to_string(),
        |program| {
            let work = scratch();
            run_script(work.path(), &help_examples(program), program);
        },
    );
}

#[test]
fn the_user_docs_shell_examples_run() {
    let mut ran = 0;
    for (doc, text) in crate::fixtures::user_docs() {
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            if lines[i] != "```sh" {
                i += 1;
                continue;
            }
            let marked = i > 0 && lines[i - 1].starts_with("<!-- not run by the tests:");
            let end = i + 1 + lines[i + 1..].iter().position(|l| *l == "```").unwrap();
            if !marked {
                // Comments after a command are the shell's; whole comment lines are skipped.
                let block: Vec<&str> = lines[i + 1..end]
                    .iter()
                    .copied()
                    .filter(|l| !l.trim_start().starts_with('#'))
                    .collect();
                let work = scratch();
                run_script(
                    work.path(),
                    &runnable(&block),
                    &format!("{doc} line {}", i + 1),
                );
                ran += 1;
            }
            i = end + 1;
        }
    }
    assert!(ran >= 5, "only {ran} blocks ran");
}
