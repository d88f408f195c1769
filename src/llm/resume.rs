//! Reusing completed calls from a run's exchange log (`llm.jsonl`), so that a resumed meeting
//! never repeats an LLM call that had already completed before it was killed.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{AttemptError, Options, Provider, RawReply, Request, TokenUsage};

/// Answers a call number from the log when the log holds a successful reply of the same
/// caller for it; otherwise asks the real provider.
pub(crate) struct FromLog {
    inner: Box<dyn Provider>,
    done: HashMap<u64, (String, RawReply)>,
    reused: bool,
}

impl FromLog {
    /// Read the log (a missing or partly written log simply reuses less).
    pub fn new(inner: Box<dyn Provider>, log: &Path) -> FromLog {
        FromLog {
            inner,
            done: completed(log),
            reused: false,
        }
    }
}

/// Whether the log holds a successful reply of `caller` for call number `seq` (a person's
/// turn is then not asked again, even with no one there to ask).
pub(crate) fn has_reply(log: &Path, seq: u64, caller: &str) -> bool {
    completed(log).get(&seq).is_some_and(|(c, _)| c == caller)
}

/// The side file beside `file` (the exchange log, or a `--record` cassette) that the fan-out
/// call whose first call number is `first_seq` writes its lines to while the calls run
/// concurrently (DESIGN.md#fan-out): `llm.jsonl.12.part`. The stage appends the side files to
/// `file` in call order when the fan-out ends; a fan-out killed half-way leaves them, and
/// [`FromLog`] reads them too, so its finished calls are answered from them.
pub fn part_path(file: &Path, first_seq: u64) -> PathBuf {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.with_file_name(format!("{name}.{first_seq}.part"))
}

/// Append the side file `part` to `file` and remove it (nothing when there is none).
pub fn absorb_part(file: &Path, part: &Path) -> std::io::Result<()> {
    let bytes = match std::fs::read(part) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !bytes.is_empty() {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)?;
        f.write_all(&bytes)?;
        f.sync_data()?;
    }
    std::fs::remove_file(part)
}

/// The side files left beside `log` ([`part_path`]), by call number.
fn parts(log: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (log.parent(), log.file_name()) else {
        return Vec::new();
    };
    let prefix = format!("{}.", name.to_string_lossy());
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let seq = n
                .strip_prefix(&prefix)?
                .strip_suffix(".part")?
                .parse()
                .ok()?;
            Some((seq, e.path()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// The successful replies in the log and its side files, by call number (the first of each).
fn completed(log: &Path) -> HashMap<u64, (String, RawReply)> {
    let mut done = HashMap::new();
    let mut text = std::fs::read_to_string(log).unwrap_or_default();
    for part in parts(log) {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&std::fs::read_to_string(part).unwrap_or_default());
    }
    for line in text.lines() {
        // Only the fields a reply needs: the prompt (most of each line) is skipped, not
        // built into a tree; every stage of a meeting reads the whole log
        // (DESIGN.md#resume, BENCHMARKS.md#bounded-board-issue-15).
        let Ok(logged) = serde_json::from_str::<Logged>(line) else {
            continue;
        };
        let (Some(seq), Some(caller), Some(response)) =
            (logged.seq, logged.caller, logged.response)
        else {
            continue;
        };
        let usage = TokenUsage::from_json(&logged.usage);
        done.entry(seq).or_insert((
            caller,
            RawReply {
                text: response,
                usage,
                truncated: logged.truncated == Value::Bool(true),
            },
        ));
    }
    done
}

/// The fields of an exchange-log line a reused reply needs; any other is skipped.
#[derive(serde::Deserialize)]
struct Logged {
    seq: Option<u64>,
    caller: Option<String>,
    response: Option<String>,
    #[serde(default)]
    usage: Value,
    #[serde(default)]
    truncated: Value,
}

impl Provider for FromLog {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn wrapped(&self) -> Option<&dyn Provider> {
        Some(self.inner.as_ref())
    }

    fn attempt(
        &mut self,
        seq: u64,
        req: &Request,
        opts: &Options,
    ) -> Result<RawReply, AttemptError> {
        match self.done.remove(&seq) {
            Some((caller, reply)) if caller == req.caller => {
                self.reused = true;
                Ok(reply)
            }
            _ => {
                self.reused = false;
                self.inner.attempt(seq, req, opts)
            }
        }
    }

    fn last_was_reused(&self) -> bool {
        self.reused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting(u32);
    impl Provider for Counting {
        fn name(&self) -> &str {
            "counting"
        }
        fn attempt(&mut self, _: u64, _: &Request, _: &Options) -> Result<RawReply, AttemptError> {
            self.0 += 1;
            Ok(RawReply {
                text: "fresh".into(),
                usage: None,
                truncated: false,
            })
        }
    }

    #[test]
    fn completed_calls_come_from_the_log_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("llm.jsonl");
        std::fs::write(
            &log,
            "{\"seq\":1,\"caller\":\"pm\",\"response\":\"logged\",\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\
             {\"seq\":2,\"caller\":\"arch\",\"response\":null,\"error\":\"timeout\"}\n{\"seq\":3,\"cal",
        )
        .unwrap();
        let mut p = FromLog::new(Box::new(Counting(0)), &log);
        let req = |caller: &str| Request {
            caller: caller.into(),
            system: String::new(),
            messages: vec![],
            expect: None,
        };
        let opts = Options {
            model: "m".into(),
            temperature: None,
            max_tokens: None,
        };
        assert_eq!(p.attempt(1, &req("pm"), &opts).unwrap().text, "logged");
        assert!(p.last_was_reused());
        assert_eq!(
            p.attempt(2, &req("arch"), &opts).unwrap().text,
            "fresh",
            "failed attempts are retried for real"
        );
        assert_eq!(
            p.attempt(3, &req("arch"), &opts).unwrap().text,
            "fresh",
            "a torn last line is ignored"
        );
        assert_eq!(
            p.attempt(1, &req("pm"), &opts).unwrap().text,
            "fresh",
            "used once"
        );
    }
}
