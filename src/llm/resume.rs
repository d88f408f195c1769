//! Reusing completed calls from a run's exchange log (`llm.jsonl`), so that a resumed meeting
//! never repeats an LLM call that had already completed before it was killed.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::{AttemptError, Options, Provider, RawReply, Request, TokenUsage};

/// Answers a call number from the log when the log holds a successful reply of the same
/// caller for it; otherwise asks the real provider.
pub(crate) struct FromLog {
    inner: Box<dyn Provider>,
    done: Arc<Done>,
    /// Call numbers answered from the log already: each is used once.
    used: HashSet<u64>,
    reused: bool,
}

/// The successful replies of a log, by call number (the first of each).
type Done = HashMap<u64, (String, RawReply)>;

impl FromLog {
    /// Read the log (a missing or partly written log simply reuses less).
    pub fn new(inner: Box<dyn Provider>, log: &Path) -> FromLog {
        FromLog {
            inner,
            done: with_parts(completed(log), log),
            used: HashSet::new(),
            reused: false,
        }
    }
}

/// Whether the log holds a successful reply of `caller` for call number `seq` (a person's
/// turn is then not asked again, even with no one there to ask).
pub(crate) fn has_reply(log: &Path, seq: u64, caller: &str) -> bool {
    with_parts(completed(log), log)
        .get(&seq)
        .is_some_and(|(c, _)| c == caller)
}

/// The side file beside `file` (the exchange log, or a `--record` cassette) that the fan-out
/// call whose first call number is `first_seq` writes its lines to while the calls run
/// concurrently (docs/design/agent-turn.md#fan-out): `llm.jsonl.12.part`. The stage appends the side files to
/// `file` in call order when the fan-out ends; a fan-out killed half-way leaves them, and
/// [`FromLog`] reads them too, so its finished calls are answered from them.
pub fn part_path(file: &Path, first_seq: u64) -> PathBuf {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.with_file_name(format!("{name}.{first_seq}.part"))
}

/// Append the side files `parts` (those that exist) to `file` in the order given, in one
/// write, then remove them. When `file` already ends with exactly those bytes — a kill landed
/// after the append and before the removal, and the resumed fan-out asked nothing new — they
/// are not appended twice.
pub fn absorb_parts(file: &Path, parts: &[PathBuf]) -> std::io::Result<()> {
    let bytes = read_parts(parts)?;
    if !bytes.is_empty() && !ends_with(file, &bytes)? {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)?;
        // Synced before the side files go: a crash must not lose the answers they hold
        // (docs/design/run-folder.md#resume).
        f.write_all(&bytes)?;
        f.sync_data()?;
    }
    remove_parts(parts)
}

/// Before a fan-out starts: remove side files a killed run had appended to `file` already (it
/// was killed before it removed them), while they are still exactly those lines — once the
/// resumed fan-out writes to one, the check in [`absorb_parts`] could no longer tell, and
/// they would be appended twice. Side files not yet appended stay: the fan-out's finished
/// calls are answered from them, and they are appended in call order when it ends.
pub fn drop_absorbed_parts(file: &Path, parts: &[PathBuf]) -> std::io::Result<()> {
    let bytes = read_parts(parts)?;
    if bytes.is_empty() || !ends_with(file, &bytes)? {
        return Ok(());
    }
    remove_parts(parts)
}

/// Remove the side files (those that exist).
fn remove_parts(parts: &[PathBuf]) -> std::io::Result<()> {
    for part in parts {
        match std::fs::remove_file(part) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// The side files that exist, one after another.
fn read_parts(parts: &[PathBuf]) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    for part in parts {
        match std::fs::read(part) {
            Ok(b) => bytes.extend(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(bytes)
}

/// Whether `file` ends with `tail` (a missing file ends with nothing).
fn ends_with(file: &Path, tail: &[u8]) -> std::io::Result<bool> {
    let mut f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let len = f.metadata()?.len();
    let n = tail.len() as u64;
    if len < n {
        return Ok(false);
    }
    f.seek(SeekFrom::Start(len - n))?;
    let mut end = Vec::with_capacity(tail.len());
    f.read_to_end(&mut end)?;
    Ok(end == tail)
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

/// The replies of the log and those of the side files a killed fan-out left beside it (read
/// whole: they exist only until that fan-out ends).
fn with_parts(done: Arc<Done>, log: &Path) -> Arc<Done> {
    let parts = parts(log);
    if parts.is_empty() {
        return done;
    }
    let mut all = (*done).clone();
    for part in parts {
        let text = std::fs::read(part).unwrap_or_default();
        for line in text.split(|&b| b == b'\n') {
            take_line(&mut all, line);
        }
    }
    Arc::new(all)
}

/// The successful replies in the log, by call number (the first of each); a torn last line is
/// left until it ends. Read once per client: the driver keeps one client per caller for the
/// run (`llm::Clients`), so a resumed meeting reads its log once per caller, not per stage.
fn completed(log: &Path) -> Arc<Done> {
    let Ok(text) = std::fs::read(log) else {
        return Arc::default();
    };
    let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut done = Done::new();
    for line in text[..whole].split(|&b| b == b'\n') {
        take_line(&mut done, line);
    }
    Arc::new(done)
}

/// Keep the reply of one log line, when it is a successful one (the first of its number).
fn take_line(done: &mut Done, line: &[u8]) {
    // Only the fields a reply needs: the prompt (most of each line) is skipped, not
    // built into a tree (BENCHMARKS.md, section "Bounded board").
    let Ok(logged) = serde_json::from_slice::<Logged>(line) else {
        return;
    };
    let (Some(seq), Some(caller), Some(response)) = (logged.seq, logged.caller, logged.response)
    else {
        return;
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
        match self.done.get(&seq) {
            Some((caller, reply)) if *caller == req.caller && self.used.insert(seq) => {
                self.reused = true;
                Ok(reply.clone())
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

    /// Side files are appended in the order given and removed; the resume reader sees them
    /// until then; appended once even when a kill left them after the append.
    #[test]
    fn side_files_join_the_log_in_call_order_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("llm.jsonl");
        std::fs::write(&log, "{\"seq\":1,\"caller\":\"pm\",\"response\":\"p\"}\n").unwrap();
        let (a, b) = (part_path(&log, 2), part_path(&log, 3));
        assert_eq!(b.file_name().unwrap(), "llm.jsonl.3.part");
        let line = |seq: u64, who: &str| {
            format!("{{\"seq\":{seq},\"caller\":\"{who}\",\"response\":\"r\"}}\n")
        };
        std::fs::write(&b, line(3, "biz")).unwrap();
        std::fs::write(&a, line(2, "arch")).unwrap();
        assert!(has_reply(&log, 3, "biz"), "read from its side file");
        absorb_parts(&log, &[a.clone(), b.clone()]).unwrap();
        let want = format!(
            "{{\"seq\":1,\"caller\":\"pm\",\"response\":\"p\"}}\n{}{}",
            line(2, "arch"),
            line(3, "biz")
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), want);
        assert!(!a.exists() && !b.exists());
        // A kill after the append, before the removal: the same side files again.
        std::fs::write(&a, line(2, "arch")).unwrap();
        std::fs::write(&b, line(3, "biz")).unwrap();
        absorb_parts(&log, &[a.clone(), b.clone()]).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), want, "not twice");
        absorb_parts(&log, &[a, b]).unwrap();
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
            facts: Default::default(),
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

    /// The log is read incrementally (one process drives many stages): what was appended since,
    /// a torn line once it is whole, and another file put at the same path are all seen.
    #[test]
    fn a_growing_log_is_read_from_where_the_last_read_stopped() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("llm.jsonl");
        let line = |seq: u64, text: &str| {
            format!("{{\"seq\":{seq},\"caller\":\"pm\",\"response\":\"{text}\"}}\n")
        };
        std::fs::write(&log, line(1, "one") + "{\"seq\":2,\"caller\":\"pm\",\"resp").unwrap();
        assert_eq!(completed(&log).len(), 1);
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(b"onse\":\"two\"}\n").unwrap();
        f.write_all(line(3, "three").as_bytes()).unwrap();
        let done = completed(&log);
        assert_eq!(
            done.get(&2).unwrap().1.text,
            "two",
            "the torn line, once whole"
        );
        assert_eq!(done.get(&3).unwrap().1.text, "three");
        // Another file at the same path (a copied run folder): read from its start.
        let other = dir.path().join("other.jsonl");
        std::fs::write(
            &other,
            line(7, "seven") + &line(8, "eight") + &line(9, "nine"),
        )
        .unwrap();
        std::fs::rename(&other, &log).unwrap();
        let done = completed(&log);
        assert_eq!(done.len(), 3);
        assert!(done.contains_key(&7) && !done.contains_key(&1));
    }

    /// A killed fan-out's side files already in the log are dropped before the resumed fan-out
    /// writes to them; side files not yet appended are kept.
    #[test]
    fn side_files_already_appended_are_dropped_before_a_fan_out() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("llm.jsonl");
        let parts = [part_path(&log, 4), part_path(&log, 5)];
        std::fs::write(&parts[0], "a\n").unwrap();
        std::fs::write(&parts[1], "b\n").unwrap();
        std::fs::write(&log, "x\n").unwrap();
        drop_absorbed_parts(&log, &parts).unwrap();
        assert!(parts.iter().all(|p| p.exists()), "not in the log yet: kept");
        std::fs::write(&log, "x\na\nb\n").unwrap();
        drop_absorbed_parts(&log, &parts).unwrap();
        assert!(parts.iter().all(|p| !p.exists()), "in the log: dropped");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "x\na\nb\n");
    }
}
