//! `--dry-run` (docs/design/github.md#dry-run): a forge that is the local checkout. The
//! request's title and description come from the event (or the pipeline's variables), its
//! diff and changed files from `git` between a base and `HEAD`, and the comment is printed on
//! stdout instead of posted. No API is called and no token is read: the meeting is built and
//! run as the real run builds and runs it ([`super::hold`]).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use super::{api::MAX_DIFF_BYTES, Diff, Forge, Pull};
use crate::error::{Error, Result};

/// What `upsert` says instead of a URL.
pub const NOT_POSTED: &str = "dry run: printed on stdout, not posted";

/// The local checkout as a forge.
pub struct Offline {
    pull: Pull,
    /// The commit the diff starts from (a merge base), or the empty tree.
    base: String,
    /// From the checkout's folder to its top (`git rev-parse --show-cdup`): the changed
    /// files' paths are the top's.
    cdup: String,
    answer_hint: &'static str,
}

impl Offline {
    /// The checkout of the current folder as the forge of `pull`. Its diff starts from
    /// [`base`]`(given, candidates)`. A usage error where the folder is no git checkout with a
    /// commit, or `given` names no commit.
    pub fn new(
        pull: Pull,
        given: Option<&str>,
        candidates: &[String],
        answer_hint: &'static str,
    ) -> Result<Offline> {
        let needs = "--dry-run reads the request's diff from the git checkout it runs in";
        let cdup = git(&["rev-parse", "--show-cdup"]).map_err(|why| {
            Error::Usage(format!(
                "{needs}: {why} (run it in the checkout, on the request's branch)"
            ))
        })?;
        git(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
            .map_err(|_| Error::Usage(format!("{needs}: it has no commit yet")))?;
        let base = base(given, candidates)?;
        Ok(Offline {
            pull,
            base,
            cdup,
            answer_hint,
        })
    }
}

/// Where the diff starts (docs/design/github.md#dry-run): the merge base of `HEAD` and the
/// first of these that names a commit — `given` (`--base`: refused when it names none), then
/// each of `candidates` (the event's base, `origin/<base branch>`) and `origin/HEAD`, passing
/// over one `HEAD` already holds whole (the checkout is on it: nothing to diff) — else
/// `HEAD~1`, else (`HEAD` is the first commit) the empty tree. Run in the checkout.
pub fn base(given: Option<&str>, candidates: &[String]) -> Result<String> {
    if let Some(rev) = given {
        return merge_base(rev).ok_or_else(|| {
            Error::Usage(format!(
                "--base {rev}: not a commit of this checkout (a branch, tag or commit git knows)"
            ))
        });
    }
    let head = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    let found = candidates
        .iter()
        .map(String::as_str)
        .chain(["origin/HEAD"])
        .filter(|c| !c.trim().is_empty() && !c.starts_with('-'))
        .filter_map(merge_base)
        .find(|b| *b != head);
    if let Some(b) = found {
        return Ok(b);
    }
    if let Ok(parent) = git(&["rev-parse", "--verify", "--quiet", "HEAD~1^{commit}"]) {
        return Ok(parent);
    }
    // The empty tree of the repository's hash: the first commit's diff is its whole tree.
    git(&["hash-object", "-t", "tree", "--stdin"]).map_err(Error::Runtime)
}

/// The merge base of `rev` and `HEAD`, when `rev` names a commit.
fn merge_base(rev: &str) -> Option<String> {
    if rev.starts_with('-') {
        return None;
    }
    let commit = format!("{rev}^{{commit}}");
    git(&["rev-parse", "--verify", "--quiet", &commit]).ok()?;
    git(&["merge-base", rev, "HEAD"])
        .ok()
        .filter(|b| !b.is_empty())
}

/// `git ARGS` in the current folder: its stdout, trimmed, or why it failed.
fn git(args: &[&str]) -> std::result::Result<String, String> {
    git_raw(args).map(|out| out.trim().to_string())
}

/// [`git`], its stdout as it is.
fn git_raw(args: &[&str]) -> std::result::Result<String, String> {
    let out = Command::new("git")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {}", crate::io::os_error(&e)))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        let said = said.lines().next().unwrap_or("").trim();
        return Err(match said {
            "" => format!("git {} failed", args.join(" ")),
            said => format!("git: {said}"),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl Forge for Offline {
    fn pull(&self, number: u64) -> Result<Pull> {
        Ok(Pull {
            number,
            ..self.pull.clone()
        })
    }

    /// `git diff BASE HEAD`: its first [`MAX_DIFF_BYTES`], as the API's is read.
    fn diff(&self, _number: u64) -> Result<Diff> {
        let failed = |e: String| Error::Runtime(format!("git diff {} HEAD: {e}", self.base));
        let mut child = Command::new("git")
            .args(["diff", "--no-color", "--no-ext-diff", &self.base, "HEAD"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| failed(crate::io::os_error(&e)))?;
        let mut bytes = Vec::new();
        let read = child
            .stdout
            .take()
            .expect("piped")
            .take(MAX_DIFF_BYTES + 1)
            .read_to_end(&mut bytes);
        let cut = bytes.len() as u64 > MAX_DIFF_BYTES;
        if cut {
            // The rest is not read: git would wait on a full pipe.
            let _ = child.kill();
        }
        let status = child.wait().map_err(|e| failed(crate::io::os_error(&e)))?;
        read.map_err(|e| failed(crate::io::os_error(&e)))?;
        if !cut && !status.success() {
            return Err(failed(format!("exited with {status}")));
        }
        bytes.truncate(MAX_DIFF_BYTES as usize);
        Ok(Diff {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            cut,
        })
    }

    /// The files the diff adds or changes, as paths from the current folder.
    fn files(&self, _number: u64) -> Result<Vec<String>> {
        let names = git_raw(&[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--diff-filter=d",
            &self.base,
            "HEAD",
        ])
        .map_err(Error::Runtime)?;
        Ok(names
            .split('\0')
            .filter(|n| !n.is_empty())
            .map(|n| Path::new(&self.cdup).join(n).display().to_string())
            .collect())
    }

    /// Print `body` on stdout: nothing is posted.
    fn upsert(&self, _number: u64, body: &str) -> Result<String> {
        let mut out = std::io::stdout().lock();
        let text = format!("{}\n", body.trim_end_matches('\n'));
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => Ok(NOT_POSTED.to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(NOT_POSTED.to_string()),
            Err(e) => Err(Error::Runtime(format!(
                "stdout: {}",
                crate::io::os_error(&e)
            ))),
        }
    }

    fn answer_hint(&self) -> &'static str {
        self.answer_hint
    }
}
