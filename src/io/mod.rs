//! What every program shares for its input and output: stderr notes (`note!`, `stage_warning!`,
//! `note_inline!`), reading stdin and input files (size limit, UTF-8, a terminal on stdin
//! refused with a hint), and writing files atomically (docs/design/run-folder.md#run-folder). Stderr is written
//! best-effort; every writer goes through a temporary file in the target folder and a rename,
//! so a failure never leaves a half-written file. Reading a document is `doc`; the bound on what
//! a YAML document may expand to is `yaml_budget`.

use std::io::{Read, Write};
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};

mod doc;
mod yaml_budget;
pub(crate) use doc::{kind_of, parse_board, refuse_bom};
pub use doc::{parse_doc, parse_versioned, Format};

/// `eprintln!` that cannot fail: progress, hints and warnings on stderr are best-effort, so a
/// closed stderr (`meeting … 2>&1 | head -3`, a parent that stopped reading) never stops a
/// program. The only way this crate writes to stderr (clippy's `print_stderr` is denied), and
/// the terminal's one gate: the line is sanitised ([`write_note`]), so no model, document or
/// provider text can send the terminal an escape sequence.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {{
        $crate::io::write_note(&format!($($arg)*), true);
    }};
}

/// A stage's warning (a replay drift, an exchange log it cannot write): [`note!`] unless
/// `meeting --quiet` runs the stage in its own process, as it held back a stage program's
/// stderr ([`hold_stage_warnings`]).
#[macro_export]
macro_rules! stage_warning {
    ($($arg:tt)*) => {{
        if !$crate::io::stage_warnings_held() {
            $crate::note!($($arg)*);
        }
    }};
}

static HOLD_STAGE_WARNINGS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Whether [`stage_warning!`] stays silent in this process (`meeting --quiet`); so does the
/// report of a panic in a stage (its message still ends the driver's error line).
pub fn hold_stage_warnings(hold: bool) {
    HOLD_STAGE_WARNINGS.store(hold, std::sync::atomic::Ordering::Relaxed);
    static QUIET_PANICS: std::sync::Once = std::sync::Once::new();
    if hold {
        QUIET_PANICS.call_once(|| {
            let report = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if !stage_warnings_held() {
                    report(info);
                }
            }));
        });
    }
}

#[doc(hidden)]
pub fn stage_warnings_held() -> bool {
    HOLD_STAGE_WARNINGS.load(std::sync::atomic::Ordering::Relaxed)
}

/// [`note!`] without the newline, flushed: a question that waits on the same line (a `--step`
/// prompt). A line redrawn in place is [`redraw_note`].
#[macro_export]
macro_rules! note_inline {
    ($($arg:tt)*) => {{
        $crate::io::write_note(&format!($($arg)*), false);
    }};
}

/// What [`note!`] and [`note_inline!`] write: `text` sanitised for the terminal (every control
/// and escape sequence but `\n`, `\t` and our own colours removed,
/// docs/design/report.md#sanitising), then a newline when `newline`. Best-effort.
#[doc(hidden)]
pub fn write_note(text: &str, newline: bool) {
    let text = crate::text::sanitise_for_terminal(text);
    let mut err = std::io::stderr().lock();
    let _ = if newline {
        writeln!(err, "{text}")
    } else {
        write!(err, "{text}").and_then(|()| err.flush())
    };
}

/// Redraw the current stderr line in place with `text` (sanitised like [`note!`]), or wipe it
/// with `None`: the elapsed-time ticker. The carriage return and the erase-line sequence are
/// written here, never taken from the text.
pub(crate) fn redraw_note(text: Option<&str>) {
    let text = crate::text::sanitise_for_terminal(text.unwrap_or_default());
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K{text}").and_then(|()| err.flush());
}

/// Largest input document accepted (boards with 200 loops are a few MB).
pub(crate) const MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// The program reading stdin, named by `cli::parse_args` ([`set_program`]); it picks the hint a
/// terminal on stdin gets.
static PROGRAM: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Name the program whose stdin [`read_stdin`] and [`read_board_stdin`] read: a terminal on
/// stdin then gets that program's hint ([`stdin_hint`]). `cli::parse_args` calls it.
pub fn set_program(program: &'static str) {
    let _ = PROGRAM.set(program);
}

/// What `program` reads on stdin and an example, for a user who ran it at a terminal: one line
/// after `program: ` (the program exits 2).
pub fn stdin_hint(program: &str) -> String {
    let (reads, example) = match program {
        "collect-context" => (
            "a MeetingInput (a meeting file, JSON or YAML) on stdin, or --meeting-file FILE or --topic TOPIC",
            "collect-context --meeting-file meetings/demo.yaml | init-board --agents arch,biz",
        ),
        "init-board" => (
            "a MeetingPacket (collect-context's output) on stdin",
            "collect-context --meeting-file m.yaml | init-board --agents arch,biz",
        ),
        "pm-step" => (
            "a Board (init-board's or merge-board's output) on stdin",
            "init-board --agents arch,biz < packet.json | pm-step",
        ),
        "agent-turn" => (
            "a Board with pending_calls (pm-step's output) on stdin",
            "pm-step < board.json | agent-turn",
        ),
        "merge-board" => (
            "a Board with last_turns (agent-turn's output) on stdin",
            "agent-turn < board.json | merge-board",
        ),
        "render-report" => (
            "a finishing or forced_stop Board (pm-step's output) on stdin",
            "pm-step < board.json | render-report --report-file report.md",
        ),
        "next-stage" => (
            "a Board on stdin and prints the stage it waits for",
            "next-stage < runs/<id>/0004-pm-step.out.json",
        ),
        "agent-builder" => (
            "the agent's description on stdin, or --description TEXT",
            "echo 'Estimates build and run costs' | agent-builder --output agents/cost.yaml",
        ),
        _ => ("its input document on stdin", "see --help"),
    };
    let me = if program.is_empty() { "it" } else { program };
    format!("stdin is a terminal, and {me} reads {reads}; e.g. {example} (see --help)")
}

/// The program's name for [`stdin_hint`]: as set by [`set_program`], else the executable's
/// file name.
fn program() -> String {
    if let Some(p) = PROGRAM.get() {
        return (*p).to_string();
    }
    std::env::args_os()
        .next()
        .and_then(|a| {
            Path::new(&a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_default()
}

/// Refuse a terminal on stdin with the program's hint (exit 2) instead of waiting silently
/// for a document nobody is going to type.
fn refuse_terminal(is_terminal: bool) -> Result<()> {
    if is_terminal {
        return Err(Error::Usage(stdin_hint(&program())));
    }
    Ok(())
}

/// Read all of stdin as UTF-8 text; `label` names it in errors (usually `<stdin>`). A terminal
/// on stdin is refused with the program's hint ([`set_program`]).
pub fn read_stdin(label: &str) -> Result<String> {
    use std::io::IsTerminal;
    refuse_terminal(std::io::stdin().is_terminal())?;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::input(label, "", format!("cannot read: {e}")))?;
    bytes_to_text(label, bytes)
}

/// Read a whole input file as UTF-8 text; a missing or unreadable file is bad input (exit 2).
pub(crate) fn read_text_file(path: &Path) -> Result<String> {
    let label = path.display().to_string();
    let file = std::fs::File::open(path)
        .map_err(|e| Error::input(&label, "", format!("cannot open: {}", os_error(&e))))?;
    // Refused before reading, so a huge file costs neither time nor memory.
    if file
        .metadata()
        .is_ok_and(|m| m.is_file() && m.len() > MAX_INPUT_BYTES)
    {
        return Err(too_large(&label));
    }
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::input(&label, "", format!("cannot read: {}", os_error(&e))))?;
    bytes_to_text(&label, bytes)
}

fn bytes_to_text(label: &str, bytes: Vec<u8>) -> Result<String> {
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_large(label));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::input(
            label,
            "",
            format!("not valid UTF-8 (at byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

fn too_large(label: &str) -> Error {
    Error::input(
        label,
        "",
        format!("input is larger than {} MiB", MAX_INPUT_BYTES / 1024 / 1024),
    )
}

/// A file of our own run folder (an exchange log), whole; `None` when it is not there yet.
pub(crate) fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Runtime(format!(
            "{}: {}",
            path.display(),
            os_error(&e)
        ))),
    }
}

/// An OS error without Rust's `(os error N)` suffix noise.
pub(crate) fn os_error(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The Board every stage reads on stdin; a terminal on stdin is refused with the program's
/// hint ([`set_program`]).
pub fn read_board_stdin() -> Result<crate::model::Board> {
    parse_board("<stdin>", &read_stdin("<stdin>")?)
}

/// Serialise to one line of JSON (or indented with `pretty`), newline-terminated.
pub fn to_json_line<T: Serialize>(value: &T, pretty: bool) -> String {
    let mut s = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .expect("our types serialise to JSON");
    s.push('\n');
    s
}

/// Prove that a file of a few KiB can be written in `dir` before anything is paid for
/// (docs/design/run-folder.md#run-folder): a folder that is missing counts by its nearest
/// existing ancestor (it is made when the output is written); that ancestor must be a folder,
/// writable, with room. Nothing is left behind. `Err` is the reason, for a usage error that
/// names the flag.
pub fn prove_writable_dir(dir: &Path) -> std::result::Result<(), String> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let existing = dir
        .ancestors()
        .find(|a| a.as_os_str().is_empty() || std::fs::symlink_metadata(a).is_ok())
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .unwrap_or(Path::new("/"));
    if !existing.is_dir() {
        return Err(format!("{} is not a folder", existing.display()));
    }
    let fail = |e: std::io::Error| {
        format!(
            "cannot write a file in {}: {}",
            existing.display(),
            os_error(&e)
        )
    };
    let mut probe = tempfile::Builder::new()
        .prefix(".agent-meeting-check")
        .tempfile_in(existing)
        .map_err(fail)?;
    // A report or a record takes a few KiB: a full disk refuses them now, not after the meeting.
    probe
        .write_all(&[0u8; 8192])
        .and_then(|()| probe.as_file().sync_all())
        .map_err(fail)?;
    probe.close().map_err(fail)
}

/// Write `contents` to `path` through a temporary file in the same folder and a rename.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    write_replacing(path, contents, true)
}

/// [`write_atomic`] without the sync: a killed process still never leaves half a file, but a
/// crash of the machine may lose the file. For what can be derived again: the run folder's
/// boards, which `--resume` rebuilds from the synced exchange log (docs/design/run-folder.md#resume).
pub fn write_atomic_unsynced(path: &Path, contents: &[u8]) -> Result<()> {
    write_replacing(path, contents, false)
}

fn write_replacing(path: &Path, contents: &[u8], sync: bool) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let fail = |what: &str, e: std::io::Error| {
        Error::Runtime(format!(
            "{}: cannot {what}: {}",
            path.display(),
            os_error(&e)
        ))
    };
    std::fs::create_dir_all(&dir).map_err(|e| fail("create its folder", e))?;
    // A uniquely named temporary file in the same folder (so the rename cannot cross file
    // systems); dropped, and so removed, on any failure before the rename.
    let mut builder = tempfile::Builder::new();
    builder.prefix(".tmp-");
    // tempfile creates 0600 files; a report or config is an ordinary file: 0666 less the
    // umask, as `File::create` makes it.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(&dir).map_err(|e| fail("write", e))?;
    tmp.write_all(contents)
        .and_then(|()| {
            if sync {
                tmp.as_file().sync_all()
            } else {
                Ok(())
            }
        })
        .map_err(|e| fail("write", e))?;
    tmp.persist(path).map_err(|e| fail("write", e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    #[test]
    fn atomic_writes_get_the_permissions_of_an_ordinary_new_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let atomic = dir.path().join("sub/report.md");
        super::write_atomic(&atomic, b"x").unwrap();
        super::write_atomic(&atomic, b"y").unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&atomic), mode(&plain));
        assert_eq!(std::fs::read(&atomic).unwrap(), b"y");
        let names: Vec<_> = std::fs::read_dir(atomic.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["report.md"], "no temporary file left behind");
    }

    use super::*;

    #[test]
    fn a_terminal_on_stdin_is_refused_with_the_hint() {
        assert!(refuse_terminal(false).is_ok());
        let e = refuse_terminal(true).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().starts_with("stdin is a terminal, and "),
            "{e}"
        );
        assert_eq!(
            stdin_hint("init-board"),
            "stdin is a terminal, and init-board reads a MeetingPacket (collect-context's output) \
             on stdin; e.g. collect-context --meeting-file m.yaml | init-board --agents arch,biz \
             (see --help)"
        );
        assert!(stdin_hint("").starts_with("stdin is a terminal, and it reads"));
    }

    #[test]
    fn atomic_write_replaces() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/x.md");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(std::fs::read_dir(d.path().join("sub")).unwrap().count(), 1);
    }
}
