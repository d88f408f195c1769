//! `collect-context`: MeetingInput (stdin, `--meeting-file` or `--topic`) → MeetingPacket.

use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli::{self, ContextArgs, OutputArgs};
use agent_meeting::context::{self, CollectOptions};
use agent_meeting::io::{self, Format};
use agent_meeting::model::{MeetingInput, MeetingPacket, PACKET_VERSION};
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

fn main() -> ExitCode {
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
    let cwd = || PathBuf::from(".");
    let (input, base_dir) = if let Some(topic) = &args.topic {
        let input = MeetingInput::from_topic(topic);
        input
            .validate()
            .map_err(|e| Error::Usage(format!("--topic: {}", e.message)))?;
        (input, args.base_dir.clone().unwrap_or_else(cwd))
    } else if let Some(file) = &args.meeting_file {
        let input = context::load_meeting_file(file)?;
        let dir = match file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => cwd(),
        };
        (input, dir)
    } else {
        let label = "<stdin>";
        let text = io::read_stdin(label)?;
        // JSON is tried as JSON so its errors read like JSON errors; anything else is YAML.
        let format = if text.trim_start().starts_with('{') {
            Format::Json
        } else {
            Format::Yaml
        };
        let input: MeetingInput = io::parse_doc(label, &text, format)?;
        input.validate().map_err(|e| e.in_file(label))?;
        (input, args.base_dir.clone().unwrap_or_else(cwd))
    };
    let opts = CollectOptions {
        base_dir,
        context_root: args.context.context_root.clone(),
        allow_sensitive: args.context.allow_sensitive,
        max_context_chars: args.context.max_context_chars,
        redact: !args.context.no_redact,
    };
    let (bundle, notes) = context::collect_with_notes(&input, &opts)?;
    // Best effort: a closed stderr must not stop the packet.
    for line in &notes.skipped {
        agent_meeting::note!("{PROGRAM}: {line}");
    }
    for r in &notes.redactions {
        agent_meeting::note!("{PROGRAM}: {}: {}", r.document_id, r.describe());
    }
    let packet = MeetingPacket {
        packet_version: PACKET_VERSION,
        meeting_input: input,
        context_bundle: bundle,
    };
    cli::write_stdout(&io::to_json_line(&packet, args.output.pretty))
}
