//! The shared test harness, in the spirit of xsv's `Workdir`: a temporary work folder, the
//! programs run with a clean environment, and assertions that print the command, its exit
//! status, stdout and stderr when they fail. Also the parallel runner of the table tests
//! (`bad_inputs`, `faults`, ...) with their `CASE=<name>` filter, [`every_case`] for tables that
//! report every failing case at once, one golden-file helper, a readiness poll for tests that
//! signal a process ([`wait_for`]), and a way for a test that changes the process environment
//! to run in a process of its own, and [`skip_without`] for tests that need a tool beyond the
//! Rust toolchain (jq, GNU parallel).
//!
//! No test asserts on wall-clock time: a program that runs longer than [`HANG_GUARD`] is
//! killed and its run fails as hung, which guards against hangs, not slowness.

use std::ffi::OsStr;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The nine programs, by name.
pub const PROGRAMS: [&str; 9] = [
    "agent-builder",
    "agent-turn",
    "collect-context",
    "init-board",
    "meeting",
    "merge-board",
    "next-stage",
    "pm-step",
    "render-report",
];

/// A program run still going after this long is hung: it is killed and its run fails. Not a
/// speed bound: a loaded machine has taken over 10 s to start a debug binary.
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// How long a test waits for a readiness sign (a file, a request at the fake server) before it
/// fails.
pub const READY_GUARD: Duration = Duration::from_secs(60);

/// The repository root: the demo meeting, shipped agents and test corpora live there.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// This package as `cargo metadata --no-deps` describes it (its targets, features, metadata).
pub fn cargo_package() -> serde_json::Value {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    meta["packages"][0].clone()
}

/// The path of one of the programs, as built for this test run.
pub fn bin(program: &str) -> PathBuf {
    PathBuf::from(match program {
        "agent-builder" => env!("CARGO_BIN_EXE_agent-builder"),
        "agent-turn" => env!("CARGO_BIN_EXE_agent-turn"),
        "collect-context" => env!("CARGO_BIN_EXE_collect-context"),
        "init-board" => env!("CARGO_BIN_EXE_init-board"),
        "meeting" => env!("CARGO_BIN_EXE_meeting"),
        "merge-board" => env!("CARGO_BIN_EXE_merge-board"),
        "next-stage" => env!("CARGO_BIN_EXE_next-stage"),
        "pm-step" => env!("CARGO_BIN_EXE_pm-step"),
        "render-report" => env!("CARGO_BIN_EXE_render-report"),
        other => panic!("no program {other:?}"),
    })
}

/// The folder holding the programs (the shell loop and stage overrides find them on PATH).
pub fn bin_dir() -> PathBuf {
    bin("meeting").parent().unwrap().to_path_buf()
}

/// `PATH` with the built programs first: what a script (the shell loop, the README's examples)
/// finds them by.
pub fn programs_path() -> String {
    format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A tool some tests need beyond the Rust toolchain: the shell flows read boards with jq, the
/// batch recipe runs under GNU parallel, the quality benchmark's harness is Python 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Jq,
    GnuParallel,
    Python3,
    Bash,
    Man,
    Make,
    /// util-linux's `script`, for a pseudo-terminal.
    Script,
    /// `check-jsonschema` (PyPI), with GitHub's and GitLab's schemas vendored.
    CheckJsonschema,
    /// `zizmor` (PyPI), GitHub Actions' static analysis.
    Zizmor,
    Curl,
}

impl Tool {
    const ALL: [Tool; 10] = [
        Tool::Jq,
        Tool::GnuParallel,
        Tool::Python3,
        Tool::Bash,
        Tool::Man,
        Tool::Make,
        Tool::Script,
        Tool::CheckJsonschema,
        Tool::Zizmor,
        Tool::Curl,
    ];

    /// How the closing summary names it: what is missing and how to get it.
    fn missing(self) -> &'static str {
        match self {
            Tool::Jq => "jq not found — apt-get install jq (or brew install jq)",
            Tool::GnuParallel => {
                "GNU parallel not found — apt-get install parallel (or brew install parallel)"
            }
            Tool::Python3 => "python3 not found — apt-get install python3 (or brew install python)",
            Tool::Bash => "bash not found — apt-get install bash",
            Tool::Man => "man not found — apt-get install man-db",
            Tool::Make => "make not found — apt-get install make",
            Tool::Script => {
                "script (a pseudo-terminal) not found — apt-get install bsdutils (util-linux)"
            }
            Tool::CheckJsonschema => "check-jsonschema not found — pip install check-jsonschema",
            Tool::Zizmor => "zizmor not found — pip install zizmor",
            Tool::Curl => "curl not found — apt-get install curl",
        }
    }

    /// Whether it runs here (asked once per test process).
    fn runs(self) -> bool {
        let version = |program: &str, says: &str| {
            Command::new(program)
                .arg("--version")
                .stdin(Stdio::null())
                .output()
                .is_ok_and(|o| {
                    o.status.success() && String::from_utf8_lossy(&o.stdout).contains(says)
                })
        };
        match self {
            Tool::Jq => version("jq", "jq"),
            Tool::GnuParallel => version("parallel", "GNU parallel"),
            Tool::Python3 => version("python3", "Python 3"),
            Tool::Bash => version("bash", "bash"),
            Tool::Man => version("man", ""),
            Tool::Make => version("make", "Make"),
            Tool::Script => Command::new("script")
                .args(["-qec", "test -t 0", "/dev/null"])
                .stdin(Stdio::null())
                .output()
                .is_ok_and(|o| o.status.success()),
            Tool::CheckJsonschema => version("check-jsonschema", "check-jsonschema"),
            Tool::Zizmor => version("zizmor", "zizmor"),
            Tool::Curl => version("curl", "curl"),
        }
    }

    fn found(self) -> bool {
        static FOUND: std::sync::OnceLock<Vec<bool>> = std::sync::OnceLock::new();
        FOUND.get_or_init(|| Tool::ALL.iter().map(|t| t.runs()).collect())[self as usize]
    }
}

/// The file the skipped tests are listed in, one `test<TAB>reason` line each: `make test` prints
/// them in one closing summary line.
pub fn skipped_list() -> PathBuf {
    std::env::var_os("SKIPPED_TESTS_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests"))
}

/// Whether the calling test must be skipped because `tool` is not installed; the skip is listed
/// by the test's name for the closing summary. With `CI` set, a missing tool fails the test
/// instead, naming the tool: CI runs every test.
pub fn skip_without(tool: Tool) -> bool {
    if tool.found() {
        return false;
    }
    assert!(
        std::env::var_os("CI").is_none_or(|v| v.is_empty()),
        "{} (CI is set: every test must run)",
        tool.missing()
    );
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let line = format!("{test}\t{}\n", tool.missing());
    let list = skipped_list();
    let _ = std::fs::create_dir_all(list.parent().unwrap_or(Path::new(".")));
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&list)
    {
        let _ = f.write_all(line.as_bytes());
    }
    true
}

/// Prefixes of variables the programs read (provider, keys, model, cassette, retry timing,
/// prompts, clock, blessing): a developer's shell must not change what a test sees.
const SCRUBBED_PREFIXES: [&str; 8] = [
    "AGENT_MEETING_",
    "GITHUB_",
    "MEETING_",
    "OPENAI_",
    "ANTHROPIC_",
    "OTEL_EXPORTER_OTLP_",
    "AZURE_OPENAI_",
    "OLLAMA_",
];
/// Single variables with the same effect (colour; the shell loop's inputs).
const SCRUBBED: [&str; 4] = ["NO_COLOR", "CLICOLOR_FORCE", "TRACE_ID", "BOARD_OUT"];

/// Remove every variable a program reads from `cmd`'s environment, and turn colour off.
pub fn clean_env(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if SCRUBBED_PREFIXES.iter().any(|p| k.starts_with(p)) || SCRUBBED.contains(&&*k) {
            cmd.env_remove(&*k);
        }
    }
    // The user's own config file and agents folder must not leak into a test: the config
    // folder is one that does not exist (a test that needs one sets its own).
    // Nor the machine's git identity (a decision record's default decider).
    cmd.env("XDG_CONFIG_HOME", no_config_home())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("NO_COLOR", "1")
}

/// A config folder that does not exist.
pub fn no_config_home() -> PathBuf {
    std::env::temp_dir().join("agent-meeting-tests-no-config-home")
}

/// A temporary work folder, removed when dropped.
pub struct Workdir {
    dir: tempfile::TempDir,
}

impl Workdir {
    pub fn new() -> Workdir {
        Workdir {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Write a file, creating its folders.
    pub fn write(&self, rel: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        p
    }

    pub fn read(&self, rel: impl AsRef<Path>) -> String {
        let p = self.join(rel);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// Copies of the shipped agents (`agents/*.yaml`) in `rel`.
    pub fn copy_agents(&self, rel: &str) -> PathBuf {
        let dir = self.join(rel);
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["arch.yaml", "biz.yaml", "pm.yaml"] {
            std::fs::copy(root().join("agents").join(f), dir.join(f)).unwrap();
        }
        dir
    }

    /// `program`, run from this folder.
    pub fn cli(&self, program: &str) -> Cli {
        let mut c = cli(program);
        c.current_dir(self.path());
        c
    }
}

/// `program` with a clean environment, run from the repository root.
pub fn cli(program: &str) -> Cli {
    Cli::new(Command::new(bin(program)))
}

/// A command being built: arguments, environment, stdin.
pub struct Cli {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

impl Cli {
    /// Wrap any command (`sh`, a program); the environment is cleaned, the folder is the root.
    pub fn new(mut cmd: Command) -> Cli {
        clean_env(&mut cmd).current_dir(root());
        Cli { cmd, stdin: None }
    }

    pub fn arg(&mut self, a: impl AsRef<OsStr>) -> &mut Cli {
        self.cmd.arg(a);
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Cli
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    pub fn env(&mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> &mut Cli {
        self.cmd.env(k, v);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Cli {
        self.cmd.current_dir(dir);
        self
    }

    /// Bytes fed on stdin; without it stdin is empty (/dev/null).
    pub fn stdin(&mut self, input: impl Into<Vec<u8>>) -> &mut Cli {
        self.stdin = Some(input.into());
        self
    }

    /// Run to the end and capture everything; a run past [`HANG_GUARD`] is killed (`hung`).
    pub fn run(&mut self) -> Run {
        let shown = describe(&self.cmd);
        let mut child = self
            .cmd
            .stdin(match self.stdin {
                None => Stdio::null(),
                Some(_) => Stdio::piped(),
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{shown}: {e}"));
        // The program may stop reading early; a broken pipe here is expected, and a thread
        // keeps a big input from blocking against a full stdout pipe.
        let writer = child.stdin.take().map(|mut stdin| {
            let input = self.stdin.clone().unwrap_or_default();
            std::thread::spawn(move || {
                let _ = stdin.write_all(&input);
            })
        });
        let (output, hung) = wait_guarded(child);
        if let Some(w) = writer {
            let _ = w.join();
        }
        Run {
            cmd: shown.clone(),
            output: output.unwrap_or_else(|e| panic!("{shown}: {e}")),
            hung,
        }
    }

    /// Run with stderr closed before the program writes to it (like `prog 2>&1 | head -0`):
    /// progress and warnings are best-effort and must not stop it. Stdout is captured.
    pub fn run_with_stderr_closed(&mut self) -> Run {
        let shown = format!("{} 2>&-(closed pipe)", describe(&self.cmd));
        let mut child = self
            .cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{shown}: {e}"));
        drop(child.stderr.take());
        let mut stdin = child.stdin.take().unwrap();
        let input = self.stdin.clone().unwrap_or_default();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let (out, hung) = wait_guarded(child);
        let _ = writer.join();
        Run {
            cmd: shown.clone(),
            output: out.unwrap_or_else(|e| panic!("{shown}: {e}")),
            hung,
        }
    }

    /// Start in the background with no stdin and output discarded.
    pub fn spawn(&mut self) -> Child {
        self.cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }
}

/// Wait for `child` and collect its output; past [`HANG_GUARD`] kill it (SIGKILL). The
/// output, and whether it was killed as hung.
fn wait_guarded(child: Child) -> (std::io::Result<Output>, bool) {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(HANG_GUARD) {
        Ok(out) => (out, false),
        Err(_) => {
            // SAFETY: kill(2) on our own child, not yet reaped (its waiter is still waiting).
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            (rx.recv().expect("the waiter reports"), true)
        }
    }
}

/// Poll `ready` until it holds (every few milliseconds, at most [`READY_GUARD`]): the
/// readiness sign a test waits for before it signals or kills a process. Panics, naming
/// `what`, when the sign never comes.
#[track_caller]
pub fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < READY_GUARD,
            "waited {READY_GUARD:?} for {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn describe(cmd: &Command) -> String {
    let mut s = String::new();
    if let Some(dir) = cmd.get_current_dir() {
        s.push_str(&format!("(cd {}) ", dir.display()));
    }
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            s.push_str(&format!("{}={} ", k.to_string_lossy(), v.to_string_lossy()));
        }
    }
    s.push_str(&cmd.get_program().to_string_lossy());
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// A finished run. Assertions print the whole run (command, exit status, stdout, stderr).
pub struct Run {
    pub cmd: String,
    pub output: Output,
    /// Killed after running past [`HANG_GUARD`].
    pub hung: bool,
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        // Long outputs (a 20 MB board echoed back) would drown the message.
        let cut = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            match s.char_indices().nth(4000) {
                Some((i, _)) => format!("{}… ({} bytes)", &s[..i], b.len()),
                None => s.into_owned(),
            }
        };
        let hung = match self.hung {
            true => format!(" (hung: killed after {HANG_GUARD:?})"),
            false => String::new(),
        };
        write!(
            f,
            "--- command ---\n{}\n--- status ---\n{}{hung}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.cmd,
            self.output.status,
            cut(&self.output.stdout),
            cut(&self.output.stderr)
        )
    }
}

impl Run {
    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// stdout parsed as JSON (a board, a result).
    #[track_caller]
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> T {
        serde_json::from_slice(&self.output.stdout)
            .unwrap_or_else(|e| panic!("stdout is not the expected JSON: {e}\n{self}"))
    }

    #[track_caller]
    pub fn check(&self, ok: bool, what: &str) -> &Run {
        assert!(ok, "{what}\n{self}");
        self
    }

    #[track_caller]
    pub fn success(&self) -> &Run {
        self.exit(0)
    }

    #[track_caller]
    pub fn exit(&self, code: i32) -> &Run {
        self.check(self.code() == Some(code), &format!("expected exit {code}"))
    }

    #[track_caller]
    pub fn stdout_is(&self, want: &str) -> &Run {
        self.check(self.stdout() == want, &format!("expected stdout {want:?}"))
    }

    #[track_caller]
    pub fn stdout_has(&self, part: &str) -> &Run {
        self.check(
            self.stdout().contains(part),
            &format!("stdout lacks {part:?}"),
        )
    }

    #[track_caller]
    pub fn stderr_is(&self, want: &str) -> &Run {
        self.check(self.stderr() == want, &format!("expected stderr {want:?}"))
    }

    #[track_caller]
    pub fn stderr_has(&self, part: &str) -> &Run {
        self.check(
            self.stderr().contains(part),
            &format!("stderr lacks {part:?}"),
        )
    }

    #[track_caller]
    pub fn stderr_lacks(&self, part: &str) -> &Run {
        self.check(
            !self.stderr().contains(part),
            &format!("stderr has {part:?}"),
        )
    }

    #[track_caller]
    pub fn stderr_starts_with(&self, prefix: &str) -> &Run {
        self.check(
            self.stderr().starts_with(prefix),
            &format!("stderr does not start with {prefix:?}"),
        )
    }

    /// The error contract of every program: exactly one line on stderr.
    #[track_caller]
    pub fn one_stderr_line(&self) -> &Run {
        self.check(
            self.stderr().trim().lines().count() == 1,
            "expected one stderr line",
        )
    }
}

/// Compare `actual` with tests/golden/<name>; `AGENT_MEETING_BLESS=1` rewrites the file.
#[track_caller]
pub fn golden(name: &str, actual: &str) {
    let path = root().join("tests/golden").join(name);
    if std::env::var_os("AGENT_MEETING_BLESS").is_some_and(|v| !v.is_empty()) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing golden file {}; run with AGENT_MEETING_BLESS=1",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{} differs from the rendered text (AGENT_MEETING_BLESS=1 rewrites it):\n--- actual ---\n{actual}",
        path.display()
    );
}

/// The value of `CASE` in the environment: run only the table cases whose name contains it.
pub fn case_filter() -> Option<String> {
    std::env::var("CASE").ok().filter(|s| !s.is_empty())
}

/// The cases of a table selected by `CASE` (all of them without it). A filter that matches
/// nothing fails, so a typo does not pass silently.
#[track_caller]
pub fn select<T>(cases: Vec<T>, name: impl Fn(&T) -> String) -> Vec<T> {
    let Some(filter) = case_filter() else {
        return cases;
    };
    let total = cases.len();
    let picked: Vec<T> = cases
        .into_iter()
        .filter(|c| name(c).contains(&filter))
        .collect();
    assert!(
        !picked.is_empty(),
        "CASE={filter:?} matches none of the {total} cases of this table"
    );
    eprintln!("CASE={filter:?}: {} of {total} cases", picked.len());
    picked
}

/// Run `f` over `items` on `threads` threads; the results come back in the items' order.
/// The table tests use it: each case is a program run, mostly waiting on the process.
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                results.lock().unwrap()[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

/// Run `check` on every case of a table and fail once at the end, listing every failing case
/// by its `name` with its message, instead of stopping at the first.
#[track_caller]
pub fn every_case<T>(
    cases: impl IntoIterator<Item = T>,
    name: impl Fn(&T) -> String,
    check: impl Fn(T),
) {
    let mut failures = Vec::new();
    let mut total = 0;
    for case in cases {
        total += 1;
        let label = name(&case);
        if let Err(message) = caught(|| check(case)) {
            failures.push(format!("{label}: {message}"));
        }
    }
    report_failures(&failures, total);
}

/// [`every_case`] on `threads` threads, for cases that mostly wait on a program.
#[track_caller]
pub fn every_case_par<T: Sync>(
    cases: &[T],
    threads: usize,
    name: impl Fn(&T) -> String + Sync,
    check: impl Fn(&T) + Sync,
) {
    let failures: Vec<String> = par_map(cases, threads, |case| {
        caught(|| check(case))
            .err()
            .map(|message| format!("{}: {message}", name(case)))
    })
    .into_iter()
    .flatten()
    .collect();
    report_failures(&failures, cases.len());
}

/// Run `f`; a panic becomes its message.
fn caught(f: impl FnOnce()) -> Result<(), String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panicked".into())
    })
}

#[track_caller]
fn report_failures(failures: &[String], total: usize) {
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Whether this is the run of `test` (its full path, `module::name`) in a process of its own.
/// A test that changes the process environment calls it first and returns when it is false:
/// in one test binary, `set_var` would race with every other test starting a program. The
/// outer call runs the binary again with only that test and fails if the test fails there.
#[track_caller]
pub fn in_own_process(test: &str) -> bool {
    const MARK: &str = "AGENT_MEETING_IT_OWN_PROCESS";
    if std::env::var_os(MARK).is_some_and(|v| v == test) {
        return true;
    }
    Cli::new(Command::new(std::env::current_exe().unwrap()))
        .env(MARK, test)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .run()
        .success()
        .stdout_has("test result: ok. 1 passed");
    false
}
