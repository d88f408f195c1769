//! What every program shares at its edge: the exit-code mapping, stdout writing that treats a
//! broken pipe as success, colour detection, and the flag groups flattened into several programs.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use crate::error::Error;

/// `--pretty`, on every program that prints JSON.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OutputArgs {
    /// Indent the JSON written to stdout
    #[arg(long)]
    pub pretty: bool,
}

/// Run a program's body and turn its outcome into the documented exit code: 0 success, 2 bad
/// usage or input, 1 runtime failure. The message is one line, prefixed with the program name.
pub fn main_with(program: &str, body: impl FnOnce() -> anyhow::Result<()>) -> ExitCode {
    match body() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let code = e
                .chain()
                .find_map(|c| c.downcast_ref::<Error>())
                .map(Error::exit_code)
                .unwrap_or(1);
            let msg = format!("{e:#}").replace('\n', " ");
            let _ = writeln!(std::io::stderr(), "{program}: {msg}");
            ExitCode::from(code)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Write a whole document to stdout; a closed pipe is reported as `BrokenPipe` for `main_with`.
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Whether stderr should carry colour: a terminal, and `NO_COLOR` unset or empty.
pub fn stderr_color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

/// Parse the flags; a usage error is one line on stderr and exit 2 (`--help` and `--version`
/// print as usual and exit 0).
pub fn parse_args<T: clap::Parser>(program: &str) -> T {
    match T::try_parse() {
        Ok(args) => args,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            let _ = writeln!(
                std::io::stderr(),
                "{program}: {first} (see {program} --help)"
            );
            std::process::exit(2);
        }
    }
}
