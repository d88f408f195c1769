//! A shared pace for many meetings against one provider (docs/design/llm.md#pace): with
//! `--max-in-flight N` (`AGENT_MEETING_MAX_IN_FLIGHT`), every request to a live provider, from
//! every process and thread that sets it, takes one of N slots first — lock files in one
//! folder per provider, so a batch's meetings and a fan-out's calls together keep at most N
//! requests in flight. A rate limit (429) or an overloaded server (503) seen by one of them
//! makes all of them wait: the wait goes into the folder's `cooldown` file, and a request
//! waits it out before it is sent. The folder is one per provider *and* base URL (a server on
//! another port is another server), the wait is capped on both sides — written and read — by
//! `--retry-max-secs` and [`MAX_COOLDOWN`], and a folder that is not this user's own is
//! refused, as ssh refuses a `~/.ssh` others could write.
//!
//! The locks are `flock`s on open files: a process that dies lets go of its slot at once, so a
//! killed meeting never leaves the batch short of one.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How soon a request with every slot taken tries again.
const RETRY: Duration = Duration::from_millis(20);

/// The variable naming the folder of the slots (one subfolder per provider and base URL).
pub const PACE_DIR_ENV: &str = "AGENT_MEETING_PACE_DIR";

/// The longest shared wait, whatever a server or the folder says: a `Retry-After` of a year
/// would stop every meeting of the provider.
pub const MAX_COOLDOWN: Duration = Duration::from_secs(600);

/// The slots of one provider.
#[derive(Debug, Clone)]
pub struct Pace {
    dir: PathBuf,
    slots: u32,
    /// The longest cooldown written or waited: `--retry-max-secs`, at most [`MAX_COOLDOWN`].
    max_wait: Duration,
}

/// A slot held for one request; dropping it lets the next request go.
#[derive(Debug)]
pub struct Slot {
    _file: File,
}

impl Pace {
    /// The pace of the requests to `provider` at `base_url` with `slots` in flight at most and
    /// no shared wait longer than `max_wait` (`--retry-max-secs`), in `AGENT_MEETING_PACE_DIR`
    /// (default: a folder of this user's in the runtime or temporary directory). A folder
    /// another user owns, or others may write to, is refused: they could hold every slot or
    /// plant a wait.
    pub fn new(
        provider: &str,
        base_url: &str,
        slots: u32,
        max_wait: Duration,
    ) -> Result<Pace, String> {
        let base = std::env::var_os(PACE_DIR_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(default_dir);
        let dir = base.join(folder_name(provider, base_url));
        create_private(&dir).map_err(|e| {
            format!(
                "the pace folder {}: {e}; set XDG_RUNTIME_DIR or {PACE_DIR_ENV} to a folder of your own",
                dir.display()
            )
        })?;
        Ok(Pace {
            dir,
            slots: slots.max(1),
            max_wait: max_wait.min(MAX_COOLDOWN),
        })
    }

    /// Wait for a free slot, then for the shared cooldown to pass; hold the slot until the
    /// request is answered.
    pub fn acquire(&self) -> Result<Slot, String> {
        let open = |i: u32| {
            let path = self.dir.join(format!("slot-{i}"));
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| format!("{}: {e}", path.display()))
        };
        // Every slot is tried, then tried again a moment later: a request takes whichever is
        // let go first (a blocking lock on one slot could wait behind a long request while
        // another slot is free).
        loop {
            for i in 0..self.slots {
                let file = open(i)?;
                if file.try_lock().is_ok() {
                    return Ok(self.after_cooldown(file));
                }
            }
            std::thread::sleep(RETRY);
        }
    }

    /// The slot of `file`, once the shared cooldown has passed.
    fn after_cooldown(&self, file: File) -> Slot {
        if let Some(wait) = self.cooldown_left() {
            std::thread::sleep(wait);
        }
        Slot { _file: file }
    }

    /// Every request of this provider waits `wait` from now (a 429's Retry-After, or the
    /// backoff). A later end already set is kept.
    pub fn cool_down(&self, wait: Duration) {
        let wait = wait.min(self.max_wait);
        let until = now_ms().saturating_add(wait.as_millis() as u64);
        if self.cooldown_until().is_some_and(|t| t >= until) {
            return;
        }
        let file = self.dir.join("cooldown");
        let tmp = self.dir.join(format!("cooldown.{}", std::process::id()));
        // Written then renamed: a reader never sees half a number.
        if std::fs::write(&tmp, until.to_string()).is_ok() {
            let _ = std::fs::rename(&tmp, &file);
        }
    }

    fn cooldown_until(&self) -> Option<u64> {
        std::fs::read_to_string(self.dir.join("cooldown"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// What is left of the shared wait, never more than `max_wait`: the file is only as
    /// trustworthy as the folder, and a wait planted a year ahead is no reason to stop.
    fn cooldown_left(&self) -> Option<Duration> {
        let left = self.cooldown_until()?.checked_sub(now_ms())?;
        (left > 0).then(|| Duration::from_millis(left).min(self.max_wait))
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The folder of one provider at one base URL: `openai-<12 hex digits of the URL's SHA-256>`.
fn folder_name(provider: &str, base_url: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(base_url.trim_end_matches('/').as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{provider}-{hex}")
}

/// `$XDG_RUNTIME_DIR/agent-meeting-pace`, else `agent-meeting-pace-$USER` in the temporary
/// directory.
fn default_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        Some(run) => PathBuf::from(run).join("agent-meeting-pace"),
        None => {
            let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
            std::env::temp_dir().join(format!("agent-meeting-pace-{user}"))
        }
    }
}

/// The folder, made for this user only when missing; one that is a link, that another user
/// owns or that others may write to is refused.
fn create_private(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        // The folder and the one above it (ours too), unless that is the temporary directory
        // itself, world-writable but sticky. Read without following a link: a link planted
        // where the folder goes is refused, not followed.
        let parent = dir.parent().filter(|p| *p != std::env::temp_dir());
        for d in std::iter::once(dir).chain(parent) {
            let meta = std::fs::symlink_metadata(d)?;
            let why = if meta.file_type().is_symlink() {
                Some("is a symbolic link".to_string())
            } else if meta.uid() != me {
                Some(format!("is owned by another user (uid {})", meta.uid()))
            } else if meta.mode() & 0o022 != 0 {
                Some(format!(
                    "may be written by others (mode {:o})",
                    meta.mode() & 0o777
                ))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(std::io::Error::other(format!("{} {why}", d.display())));
            }
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pace(dir: &Path, slots: u32) -> Pace {
        let dir = dir.join("openai");
        create_private(&dir).unwrap();
        Pace {
            dir,
            slots,
            max_wait: MAX_COOLDOWN,
        }
    }

    /// N slots are N requests: the N+1th waits until one is let go.
    #[test]
    fn slots_hold_requests_back() {
        let tmp = tempfile::tempdir().unwrap();
        let p = pace(tmp.path(), 2);
        let a = p.acquire().unwrap();
        let _b = p.acquire().unwrap();
        let waiting = {
            let p = p.clone();
            std::thread::spawn(move || p.acquire().map(|_| ()))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !waiting.is_finished(),
            "a third request went with two slots taken"
        );
        drop(a);
        waiting.join().unwrap().unwrap();
    }

    /// A cooldown is shared through the folder, and a shorter one does not cut a longer.
    #[test]
    fn a_cooldown_is_seen_by_every_pace_of_the_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let (p, q) = (pace(tmp.path(), 1), pace(tmp.path(), 1));
        assert_eq!(q.cooldown_left(), None);
        p.cool_down(Duration::from_secs(60));
        p.cool_down(Duration::from_secs(1));
        let left = q.cooldown_left().expect("q sees p's cooldown");
        assert!(left > Duration::from_secs(50), "{left:?}");
    }

    /// A wait is capped when it is written and when it is read: a Retry-After of a year, or
    /// one planted in the folder, is waited `max_wait` at most.
    #[test]
    fn a_cooldown_is_capped_on_both_sides() {
        let tmp = tempfile::tempdir().unwrap();
        let p = Pace {
            max_wait: Duration::from_secs(5),
            ..pace(tmp.path(), 1)
        };
        p.cool_down(Duration::from_secs(31_536_000));
        let written = p.cooldown_until().unwrap() - now_ms();
        assert!(written <= 5_000, "{written} ms written");
        let year = now_ms() + 31_536_000_000;
        std::fs::write(p.dir.join("cooldown"), year.to_string()).unwrap();
        assert_eq!(p.cooldown_left(), Some(Duration::from_secs(5)));
    }

    /// One folder per provider and base URL: a server on another port is paced apart.
    #[test]
    fn each_base_url_has_its_own_folder() {
        let a = folder_name("openai", "http://127.0.0.1:8001/v1");
        let b = folder_name("openai", "http://127.0.0.1:8002/v1");
        assert_ne!(a, b);
        assert_eq!(a, folder_name("openai", "http://127.0.0.1:8001/v1/"));
        assert!(
            a.starts_with("openai-") && a.len() == "openai-".len() + 12,
            "{a}"
        );
    }

    /// A folder that is a link, or that another user owns, is refused.
    #[cfg(unix)]
    #[test]
    fn a_folder_not_our_own_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, tmp.path().join("link")).unwrap();
        let err = create_private(&tmp.path().join("link")).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        // Only root can hand a folder to another user.
        if unsafe { libc::geteuid() } == 0 {
            let theirs = tmp.path().join("theirs");
            std::fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
            let err = create_private(&theirs).unwrap_err();
            assert!(err.to_string().contains("owned by another user"), "{err}");
        }
    }

    /// A folder others may write to is refused.
    #[cfg(unix)]
    #[test]
    fn a_shared_folder_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = create_private(&open.join("openai")).unwrap_err();
        assert!(
            err.to_string().contains("may be written by others"),
            "{err}"
        );
    }
}
