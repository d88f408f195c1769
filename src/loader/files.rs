//! Agent config file names (docs/design/agents-and-config.md#agent-configs): the extensions, one file per agent name
//! in a folder, the names a folder defines, and where `agent-builder` may write a config so
//! that the loader reads it as that agent.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::Format;
use crate::model::{is_safe_name, AgentConfig};

/// The extensions of an agent config file, in the order a folder is searched.
const EXTENSIONS: [&str; 3] = ["json", "yaml", "yml"];

/// The config file of agent `name` in `dir`, if any; two files for one name are refused, and
/// so is a symbolic link that leads out of `dir`.
pub(super) fn find_agent_file(dir: &Path, name: &str) -> Result<Option<PathBuf>> {
    let found: Vec<PathBuf> = EXTENSIONS
        .iter()
        .map(|ext| dir.join(format!("{name}.{ext}")))
        .filter(|p| p.is_file())
        .collect();
    for path in &found {
        check_link(dir, path)?;
    }
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.into_iter().next()),
        _ => Err(Error::input(
            found[1].display().to_string(),
            "name",
            format!(
                "duplicate agent name {name:?}: also defined in {}",
                found[0].display()
            ),
        )),
    }
}

/// Refuse (exit 2) an agent config that is a symbolic link to anything but an agent config:
/// a link out of the folder to another file (`x.yaml -> ../token.txt`) would have a secret
/// parsed and quoted in the error (docs/design/agents-and-config.md#agent-lookup). A link is
/// followed to a file inside the folder, or to a file of its own name elsewhere (`arch.yaml ->
/// ../share/agents/arch.yaml`, how a folder shares configs).
fn check_link(dir: &Path, path: &Path) -> Result<()> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(());
    }
    let followed = match (dir.canonicalize(), path.canonicalize()) {
        (Ok(dir), Ok(target)) => target.starts_with(dir) || target.file_name() == path.file_name(),
        _ => false,
    };
    if followed {
        return Ok(());
    }
    Err(Error::input(
        path.display().to_string(),
        "",
        format!(
            "a symbolic link to a file of another name outside {} (an agent config links only to a config of its own name; copy the file there)",
            dir.display()
        ),
    ))
}

/// Names of the agent configs in `dir`, sorted.
pub(super) fn agent_names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| Format::from_path(p).is_some() && p.is_file())
        .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(str::to_string))
        .filter(|n| is_safe_name(n))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Check where `agent-builder --output` writes, so the loader will read the file as this agent:
/// `.json`, `.yaml` or `.yml`, a stem that is a safe name equal to `--name` (`name`), no other
/// file for that name beside it, and (without `force`) no file there yet.
pub fn check_agent_output(out: &Path, name: Option<&str>, force: bool) -> Result<()> {
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
        .unwrap_or(Path::new("."));
    if let Some(other) = EXTENSIONS
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

/// An agent config as the text of a file in `format` (JSON pretty-printed).
pub fn agent_config_text(cfg: &AgentConfig, format: Format) -> Result<String> {
    match format {
        Format::Json => Ok(crate::io::to_json_line(cfg, true)),
        Format::Yaml => serde_yaml::to_string(cfg)
            .map_err(|e| Error::Runtime(format!("cannot write YAML: {e}"))),
    }
}
