//! The shared test harness: the repository root, one golden-file helper, and a way for a test
//! that changes the process environment to run in a process of its own.

use std::path::PathBuf;
use std::process::Command;

/// The repository root: the demo meeting, shipped agents and test corpora live there.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
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
    let out = Command::new(std::env::current_exe().unwrap())
        .env(MARK, test)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("test result: ok. 1 passed"),
        "{test} in its own process:\n{text}"
    );
    false
}
