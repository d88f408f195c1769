//! Adds the git commit to `--version` (`meeting 0.1.0 (abc1234)`) when built from a checkout
//! with git available; anything else (a crates.io tarball, no git) silently gives the plain
//! version. The result is `AGENT_MEETING_COMMIT_SUFFIX`, read by `src/cli/mod.rs`.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let suffix = if Path::new(".git").exists() {
        watch_git();
        git(&["rev-parse", "--short", "HEAD"])
            .map(|c| format!(" ({c})"))
            .unwrap_or_default()
    } else {
        String::new()
    };
    println!("cargo:rustc-env=AGENT_MEETING_COMMIT_SUFFIX={suffix}");
}

/// Rebuild when HEAD moves: HEAD itself (a checkout), the branch it names (a commit) and
/// packed-refs. `--git-path` finds them in a worktree too (where `.git` is a file). Only
/// files that exist are named: cargo reruns on every build for a missing one.
fn watch_git() {
    let mut paths = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        paths.push(branch);
    }
    for p in paths {
        if let Some(path) = git(&["rev-parse", "--git-path", &p]) {
            if Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}

/// One line of git's output, or `None` when git is missing or fails.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let line = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}
