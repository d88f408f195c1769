//! `agent-meeting mcp`: serve meetings as MCP tools on stdin/stdout (docs/design/mcp.md).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli;
use clap::Parser;

/// Serve decision meetings as tools of the Model Context Protocol (MCP) on stdin and stdout,
/// for coding agents (Claude Code, Cursor, Codex).
///
/// Tools: meeting_run, meeting_start, meeting_status, meeting_result, list_agents. Provider,
/// model and keys come from this process's environment and config file, never from a tool
/// call. Logs go to stderr.
#[derive(Parser, Debug)]
#[command(
    name = "agent-meeting mcp",
    version = cli::VERSION,
    after_help = "Example (Claude Code):\n  claude mcp add agent-meeting -- agent-meeting mcp\n\nMeetings run in the current folder: agents from ./agents, run folders in ./runs (or the\nconfig file's run_dir), reports in ./reports."
)]
struct Args {
    /// Run as if started in DIR (as `git -C`): its ./agents, ./runs, ./reports and context
    /// root — for a client that cannot set the server's folder (Claude Desktop's bundle)
    #[arg(short = 'C', long = "directory", value_name = "DIR")]
    directory: Option<PathBuf>,
    /// Folder holding the run folders [default: the config file's run_dir, else runs]
    #[arg(long, value_name = "DIR")]
    run_dir: Option<PathBuf>,
    /// Documents named by a tool call must be below DIR [default: nearest ancestor of the
    /// current folder holding .git, else the current folder]
    #[arg(long, value_name = "DIR")]
    context_root: Option<PathBuf>,
}

pub fn main() -> ExitCode {
    cli::main_with("agent-meeting mcp", || {
        let args: Args = cli::parse_args("agent-meeting mcp");
        if let Some(dir) = &args.directory {
            std::env::set_current_dir(dir).map_err(|e| {
                agent_meeting::Error::Usage(format!("--directory: {}: {}", dir.display(), e.kind()))
            })?;
        }
        if std::io::stdin().is_terminal() {
            agent_meeting::note!(
                "agent-meeting mcp: waiting for an MCP client on stdin (see --help); Ctrl-D ends"
            );
        }
        let place = agent_meeting::mcp::place(args.run_dir, args.context_root)?;
        agent_meeting::mcp::serve(std::io::stdin().lock(), Box::new(std::io::stdout()), place)?;
        Ok(())
    })
}

/// This mode's command as it parses its flags, for `agent-meeting`'s man page and completions.
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("agent-meeting mcp")
}
