//! agent-builder: generate an agent config from a plain-language description (DESIGN.md#agent-configs).

use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli::{main_with, write_stdout};
use agent_meeting::io::{write_atomic, Format};
use agent_meeting::llm::{client_for, LlmArgs};
use agent_meeting::model::{is_safe_name, LlmSettings};
use agent_meeting::stage::agent_builder::{build_agent, BuildSpec};
use agent_meeting::Error;
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
    /// What the agent should do, in plain language (default: read from stdin)
    #[arg(long, value_name = "TEXT", help_heading = "Input")]
    description: Option<String>,
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

/// The file must be one the loader will read as this agent (DESIGN.md#agent-configs): `.json`, `.yaml` or
/// `.yml`, a stem that is a safe name equal to `--name`, and no other file for that name.
fn check_output(out: &std::path::Path, name: Option<&str>, force: bool) -> Result<(), Error> {
    let shown = out.display();
    if Format::from_path(out).is_none() {
        return Err(Error::Usage(format!(
            "--output {shown}: agent configs end in .json, .yaml or .yml"
        )));
    }
    let stem = out.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    if !is_safe_name(stem) {
        return Err(Error::Usage(format!(
            "--output {shown}: the file name is the agent's name, so it must be 1-64 characters of A-Z a-z 0-9 _ -"
        )));
    }
    if let Some(n) = name.filter(|n| *n != stem) {
        return Err(Error::Usage(format!(
            "--output {shown}: the file name must equal --name {n:?} (the loader requires it)"
        )));
    }
    if out.exists() && !force {
        return Err(Error::Usage(format!(
            "{shown} exists; use --force to overwrite it"
        )));
    }
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if let Some(other) = ["json", "yaml", "yml"]
        .iter()
        .map(|ext| dir.join(format!("{stem}.{ext}")))
        .find(|p| p != out && p.exists())
    {
        return Err(Error::Usage(format!(
            "--output {shown}: {} already defines agent {stem:?} (two files for one name are refused by the loader)",
            other.display()
        )));
    }
    Ok(())
}

fn run(args: Args) -> anyhow::Result<()> {
    let description = match &args.description {
        Some(d) => d.clone(),
        None => agent_meeting::io::read_stdin("<stdin>")?,
    };
    if description.trim().is_empty() {
        return Err(Error::Usage("the description is empty".into()).into());
    }
    if let Some(n) = &args.name {
        if !is_safe_name(n) {
            return Err(Error::Usage(format!(
                "--name {n:?}: expected 1-64 characters of A-Z a-z 0-9 _ -"
            ))
            .into());
        }
    }
    if let Some(out) = &args.output {
        check_output(out, args.name.as_deref(), args.force)?;
    }
    let format = match (
        args.format,
        args.output.as_deref().and_then(Format::from_path),
    ) {
        (Some(OutFormat::Json), _) => Format::Json,
        (Some(OutFormat::Yaml), _) => Format::Yaml,
        (None, Some(f)) => f,
        (None, None) => Format::Json,
    };
    // The loader wants the file stem to equal the name, so the file name decides when the user
    // did not name the agent.
    let name = args.name.clone().or_else(|| {
        args.output
            .as_deref()
            .and_then(|p| p.file_stem())
            .and_then(|s| s.to_str())
            .filter(|s| is_safe_name(s))
            .map(str::to_string)
    });
    let spec = BuildSpec {
        description,
        name,
        role: args.role.clone(),
    };
    let llm = agent_meeting::config::with_config(args.llm.clone())?;
    let (mut client, opts) = client_for(&llm, &LlmSettings::default(), &serde_json::Map::new(), 0)?;
    let cfg = build_agent(&mut client, &opts, &spec)?;
    let text = match format {
        Format::Json => agent_meeting::io::to_json_line(&cfg, true),
        Format::Yaml => serde_yaml::to_string(&cfg)
            .map_err(|e| Error::Runtime(format!("cannot write YAML: {e}")))?,
    };
    match &args.output {
        None => write_stdout(&text),
        Some(path) => {
            write_atomic(path, text.as_bytes())?;
            let summary = serde_json::json!({
                "output": path.display().to_string(),
                "name": cfg.name,
                "format": if format == Format::Json { "json" } else { "yaml" },
                "calls": client.calls(),
            });
            write_stdout(&agent_meeting::io::to_json_line(&summary, false))
        }
    }
}
