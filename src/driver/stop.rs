//! Ctrl-C and SIGTERM while a meeting drives its run folder (docs/design/run-folder.md#resume): the meeting
//! stops where it is — every file is written atomically, so the folder holds complete
//! checkpoints whatever the moment — stops the running `--stage` command, says how to continue,
//! and dies of the same signal, so a shell sees exit 130 / 143 as without the driver.
//!
//! The handlers (`signal-hook`) only wake a thread through a pipe, and that thread acts, so a
//! driver blocked in a stage or on `--step`'s prompt stops too. Once the drive is over a signal
//! takes its default action again (emulated: a handler cannot be uninstalled), and a signal the
//! process was started ignoring (`nohup`, a background job of a script) stays ignored.

use std::path::Path;

/// What the user reads after a stop: the command that continues the meeting.
pub fn hint(run_dir: &Path) -> String {
    format!(
        "stopped: continue with  meeting resume {}",
        run_dir.display()
    )
}

#[cfg(unix)]
pub(super) use unix::Watch;

#[cfg(unix)]
mod unix {
    use std::path::Path;
    use std::process::{Child, ExitStatus};
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};
    use std::thread::JoinHandle;
    use std::time::Duration;

    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::iterator::{Handle, Signals};

    const SIGNALS: [i32; 2] = [SIGINT, SIGTERM];

    /// The stop signals handled while it lives (the drive); dropped, they act as they would
    /// without the driver.
    pub(in crate::driver) struct Watch {
        handle: Option<Handle>,
        thread: Option<JoinHandle<Signals>>,
        /// The process of the `--stage` command now running, to be stopped with the meeting.
        child: Arc<Mutex<Option<u32>>>,
        hint: String,
        /// Set when the drive is over: the signals take their default action again.
        over: Arc<AtomicBool>,
    }

    impl Watch {
        /// Handle SIGINT and SIGTERM until the watch is dropped. A signal that cannot be
        /// handled (no pipe, no thread) keeps its default action: the meeting then ends
        /// without the hint, as after a SIGKILL.
        pub(in crate::driver) fn start(run_dir: &Path) -> Watch {
            let over = Arc::new(AtomicBool::new(false));
            let child = Arc::new(Mutex::new(None));
            let hint = super::hint(run_dir);
            let wanted: Vec<i32> = SIGNALS.into_iter().filter(|s| !ignored(*s)).collect();
            for sig in &wanted {
                // Registered first, so it runs before the pipe's action: after the drive, the
                // default action (docs/design/run-folder.md#resume).
                let _ = signal_hook::flag::register_conditional_default(*sig, over.clone());
            }
            let (mut handle, mut thread) = (None, None);
            if let Ok(mut signals) = Signals::new(&wanted) {
                handle = Some(signals.handle());
                let (child, hint) = (child.clone(), hint.clone());
                thread = std::thread::Builder::new()
                    .name("stop-signals".into())
                    .spawn(move || {
                        if let Some(sig) = signals.forever().next() {
                            stop_now(sig, &child, &hint);
                        }
                        signals
                    })
                    .ok();
            }
            Watch {
                handle,
                thread,
                child,
                hint,
                over,
            }
        }

        /// Start `cmd` as the running stage's process, marked so until the returned guard is
        /// dropped. The mark's lock is held across the start, and a stop holds it until the
        /// process exits: a stop either sees the new process and stops it, or comes first and
        /// no process starts (a stop landing between the start and the mark left it running).
        pub(in crate::driver) fn spawn(
            &self,
            cmd: &mut std::process::Command,
        ) -> std::io::Result<(Child, Running<'_>)> {
            let mut mark = self.child.lock().unwrap_or_else(|e| e.into_inner());
            let child = cmd.spawn()?;
            *mark = Some(child.id());
            Ok((child, Running(self)))
        }

        /// A stage that died of SIGINT/SIGTERM most likely got the terminal's Ctrl-C with the
        /// driver: give the driver's own signal a moment to arrive (it then ends the process),
        /// rather than report a failed stage at once.
        pub(in crate::driver) fn after_child(&self, status: &ExitStatus) {
            use std::os::unix::process::ExitStatusExt;
            if status.signal().is_some_and(|s| SIGNALS.contains(&s)) && self.thread.is_some() {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }

    /// While it lives, a stop also stops this stage's process.
    pub(in crate::driver) struct Running<'a>(&'a Watch);

    impl Drop for Running<'_> {
        fn drop(&mut self) {
            *self.0.child.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    impl Drop for Watch {
        /// The drive is over: a signal from now on acts as it would without the driver; one
        /// that came before still stops the meeting with its hint.
        fn drop(&mut self) {
            self.over.store(true, std::sync::atomic::Ordering::SeqCst);
            if let Some(handle) = self.handle.take() {
                handle.close();
            }
            let Some(thread) = self.thread.take() else {
                return;
            };
            if let Ok(mut signals) = thread.join() {
                if let Some(sig) = signals.pending().next() {
                    stop_now(sig, &self.child, &self.hint);
                }
            }
        }
    }

    /// End the process: stop the running stage, say how to continue, die of `sig`.
    fn stop_now(sig: i32, child: &Mutex<Option<u32>>, hint: &str) -> ! {
        // Held until the process exits: no stage starts after this (see `Watch::spawn`).
        let mark = child.lock().unwrap_or_else(|e| e.into_inner());
        let pid = *mark;
        if let Some(pid) = pid.and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
            // The stage leads its own process group: the group goes, its children with it.
            if rustix::process::kill_process_group(pid, rustix::process::Signal::TERM).is_err() {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
        }
        crate::note!("{hint}");
        let _ = signal_hook::low_level::emulate_default_handler(sig);
        std::process::exit(128 + sig);
    }

    /// Whether the process was started with `sig` ignored. Read from `/proc` (Linux), so no
    /// handler has to be swapped in to ask; elsewhere taken as not ignored.
    fn ignored(sig: i32) -> bool {
        if !cfg!(target_os = "linux") {
            return false;
        }
        let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
            return false;
        };
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .is_some_and(|mask| (mask >> (sig - 1)) & 1 == 1)
    }
}

/// Elsewhere signals keep their default action; the hint still follows a failed stage.
#[cfg(not(unix))]
pub(super) struct Watch;

#[cfg(not(unix))]
impl Watch {
    pub(super) fn start(_run_dir: &Path) -> Watch {
        Watch
    }
    pub(super) fn spawn(
        &self,
        cmd: &mut std::process::Command,
    ) -> std::io::Result<(std::process::Child, ())> {
        cmd.spawn().map(|c| (c, ()))
    }
    pub(super) fn after_child(&self, _status: &std::process::ExitStatus) {}
}
