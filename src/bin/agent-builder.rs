//! agent-builder: generate an agent config from a plain-language description (docs/design/agents-and-config.md#agent-configs).

use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli::LlmArgs;
use agent_meeting::cli::{main_with, write_stdout};
use agent_meeting::io::{write_atomic, Format};
use agent_meeting::llm::client_for;
use agent_meeting::model::{is_safe_name, LlmSettings};
use agent_meeting::stage::agent_builder::{build_agent, BuildSpec};
use agent_meeting::{loader, Error};
use clap::{Parser, ValueEnum};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OutFormat {
    Json,
    Yaml,
}

/// Generate an agent config (JSON or YAML) from a plain-language description
#[derive(Parser)]
#[command(
    name = "agent-builder",
    version,
    after_help = "Examples:\n  \
# with a key; then offline, in the repository, from its builder cassette\n  \
OPENAI_API_KEY=sk-... agent-builder --output agents/cost.yaml \\\n    \
--description 'Estimates build and run costs of each option'\n  \
agent-builder --provider replay --cassette meetings/builder.cassette.jsonl \\\n    \
--output agents/cost.yaml --description 'Estimates build and run costs of each option'"
)]
struct Args {
    /// What the agent should do, in plain language (also the DESCRIPTION argument; default:
    /// read from stdin)
    #[arg(
        long,
        value_name = "TEXT",
        conflicts_with = "description_arg",
        help_heading = "Input"
    )]
    description: Option<String>,
    /// What the agent should do, as --description
    #[arg(value_name = "DESCRIPTION", help_heading = "Input")]
    description_arg: Option<String>,
    /// Agent name (wins over the model's; default: the output file's stem)
    #[arg(long, value_name = "NAME", help_heading = "Input")]
    name: Option<String>,
    /// Agent role (wins over the model's)
    #[arg(long, value_name = "ROLE", help_heading = "Input")]
    role: Option<String>,
    /// Output format (default: from the output file's extension, else json)
    #[arg(long, value_enum, value_name = "FORMAT", help_heading = "Output")]
    format: Option<OutFormat>,
    /// File to write (default: stdout); written atomically, never half-written
    #[arg(long, short, value_name = "FILE", help_heading = "Output")]
    output: Option<PathBuf>,
    /// Overwrite an existing output file
    #[arg(long, help_heading = "Output")]
    force: bool,
    #[command(flatten)]
    llm: LlmArgs,
}

pub fn main() -> ExitCode {
    let args: Args = agent_meeting::cli::parse_args("agent-builder");
    main_with("agent-builder", || run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    let description = match args.description.as_ref().or(args.description_arg.as_ref()) {
        Some(d) => d.clone(),
        None => agent_meeting::io::read_stdin("<stdin>")?,
    };
    if description.trim().is_empty() {
        return Err(Error::Usage("the description is empty".into()).into());
    }
    if let Some(n) = args.name.as_ref().filter(|n| !is_safe_name(n)) {
        return Err(Error::Usage(format!(
            "--name {n:?}: expected 1-64 characters of A-Z a-z 0-9 _ -"
        ))
        .into());
    }
    let out = args.output.as_deref();
    if let Some(out) = out {
        loader::check_agent_output(out, args.name.as_deref(), args.force)?;
    }
    let format = match (args.format, out.and_then(Format::from_path)) {
        (Some(OutFormat::Json), _) => Format::Json,
        (Some(OutFormat::Yaml), _) => Format::Yaml,
        (None, Some(f)) => f,
        (None, None) => Format::Json,
    };
    // The loader wants the file stem to equal the name (checked above), so the file name
    // decides when the user did not name the agent.
    let stem = out.and_then(|p| p.file_stem()).and_then(|s| s.to_str());
    let spec = BuildSpec {
        description,
        name: args.name.clone().or_else(|| stem.map(str::to_string)),
        role: args.role.clone(),
    };
    let llm = agent_meeting::settings::config::with_config(args.llm.clone().into_config())?;
    let (mut client, opts) = client_for(&llm, &LlmSettings::default(), &serde_json::Map::new(), 0)?;
    let cfg = build_agent(&mut client, &opts, &spec)?;
    let text = loader::agent_config_text(&cfg, format)?;
    let Some(path) = out else {
        return write_stdout(&text);
    };
    write_atomic(path, text.as_bytes())?;
    let summary = serde_json::json!({
        "output": path.display().to_string(),
        "name": cfg.name,
        "format": if format == Format::Json { "json" } else { "yaml" },
        "calls": client.calls(),
    });
    write_stdout(&agent_meeting::io::to_json_line(&summary, false))
}

/// This program's command as it parses its flags, for `agent-meeting`'s `--help` list, man
/// page and completions.
#[allow(dead_code)]
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("agent-builder")
}
