//! `collect-context`: MeetingInput (stdin, `--meeting-file` or `--topic`) → MeetingPacket.

use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli::{self, ContextArgs, OutputArgs};
use agent_meeting::context::{self, InputFrom};
use agent_meeting::io;
use agent_meeting::Error;
use clap::Parser;

const PROGRAM: &str = "collect-context";

/// Collect a meeting's background documents into a MeetingPacket (JSON on stdout).
#[derive(Debug, Parser)]
#[command(
    name = PROGRAM,
    version,
    after_help = "Input: a MeetingInput as JSON or YAML on stdin, or --meeting-file F, or --topic T.\n\
Paths in a meeting file resolve against the file's folder; paths read from stdin against --base-dir.\n\
Directory sources leave out what .gitignore and .ignore files exclude (respect_gitignore: false opts out) and the tool's own runs/ and reports/.\n\
Every skipped path (not found, outside the root, symlink, sensitive, binary, ...) gets a warning on stderr.\n\
Secrets inside collected documents are replaced by [REDACTED:<kind>] and counted (a warning per document on stderr).\n\n\
Example:\n  collect-context --meeting-file meetings/demo.yaml | jq '.context_bundle.documents[].document_id'\n  \
collect-context --topic 'Adopt Rust for the CLI?' --pretty"
)]
struct Args {
    /// Meeting file (.json, .yaml or .yml) to read instead of stdin
    #[arg(long, value_name = "FILE", help_heading = "Input")]
    meeting_file: Option<PathBuf>,

    /// Build a minimal meeting whose decision is TOPIC (no context sources)
    #[arg(long, value_name = "TOPIC", help_heading = "Input")]
    topic: Option<String>,

    /// Folder that source paths of stdin input resolve against [default: working directory]
    #[arg(long, value_name = "DIR", help_heading = "Input")]
    base_dir: Option<PathBuf>,

    #[command(flatten)]
    context: ContextArgs,

    #[command(flatten)]
    output: OutputArgs,
}

pub fn main() -> ExitCode {
    let args: Args = cli::parse_args("collect-context");
    cli::main_with(PROGRAM, || run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    // Checked here rather than with clap's `conflicts_with` so the error stays on one line.
    if args.topic.is_some() && args.meeting_file.is_some() {
        return Err(
            Error::Usage("--topic and --meeting-file are mutually exclusive".into()).into(),
        );
    }
    if args.meeting_file.is_some() && args.base_dir.is_some() {
        return Err(Error::Usage(
            "--base-dir applies to stdin input only; paths in a meeting file resolve against its folder"
                .into(),
        )
        .into());
    }
    let from = match (args.topic, args.meeting_file) {
        (Some(topic), _) => InputFrom::Topic(topic),
        (None, Some(file)) => InputFrom::MeetingFile(file),
        (None, None) => InputFrom::Document {
            label: "<stdin>".into(),
            text: io::read_stdin("<stdin>")?,
        },
    };
    let settings = args.context.into_settings();
    let (packet, notes) = context::packet(from, args.base_dir, |base| settings.options(base))?;
    // Best effort: a closed stderr must not stop the packet.
    for line in &notes {
        agent_meeting::note!("{PROGRAM}: {line}");
    }
    cli::write_stdout(&io::to_json_line(&packet, args.output.pretty))
}

/// This program's command as it parses its flags, for `agent-meeting`'s `--help` list, man
/// page and completions.
#[allow(dead_code)]
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("collect-context")
}
