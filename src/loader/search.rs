//! Finding agent configs (docs/design/agents-and-config.md#agent-lookup): the places and their order, the built-in
//! agents, `--list-agents`, and loading the meeting's specialists and PM.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::Format;
use crate::model::AgentConfig;
use crate::text::one_line;

use super::files::{agent_names_in, find_agent_file};
use super::rules::{load_agent_file, load_agent_text, AgentKind};

/// The agents that ship inside the programs (`share/agents/`), embedded like the prompts: a
/// meeting works from any folder after `cargo install` (docs/design/agents-and-config.md#agent-lookup).
pub const BUILTIN_AGENTS: [(&str, &str); 8] = [
    ("arch", include_str!("../../share/agents/arch.yaml")),
    ("biz", include_str!("../../share/agents/biz.yaml")),
    ("data", include_str!("../../share/agents/data.yaml")),
    (
        "devils-advocate",
        include_str!("../../share/agents/devils-advocate.yaml"),
    ),
    ("finance", include_str!("../../share/agents/finance.yaml")),
    ("product", include_str!("../../share/agents/product.yaml")),
    ("security", include_str!("../../share/agents/security.yaml")),
    ("sre", include_str!("../../share/agents/sre.yaml")),
];

/// One place agents are looked up, in the lookup order (docs/design/agents-and-config.md#agent-lookup).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentPlace {
    /// `--agents-dir DIR`.
    Flag(PathBuf),
    /// `./agents` in the working folder.
    Local(PathBuf),
    /// The user's agents folder (`<config dir>/agents`, or the config file's `agents_dir`).
    User(PathBuf),
    /// Shipped inside the programs.
    BuiltIn,
}

impl AgentPlace {
    /// The folder, for the places that are one.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            AgentPlace::Flag(d) | AgentPlace::Local(d) | AgentPlace::User(d) => Some(d),
            AgentPlace::BuiltIn => None,
        }
    }

    /// How `--list-agents` and the errors name the place.
    pub fn label(&self) -> String {
        match self {
            AgentPlace::Flag(d) => format!("{} (--agents-dir)", d.display()),
            AgentPlace::Local(d) => format!("{} (./agents)", d.display()),
            AgentPlace::User(d) => format!("{} (user agents folder)", d.display()),
            AgentPlace::BuiltIn => "built-in".to_string(),
        }
    }
}

/// Where one agent's config was found: a file, or a built-in's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    File(PathBuf),
    BuiltIn(&'static str),
}

/// One agent as `--list-agents` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedAgent {
    pub name: String,
    /// The config's `role`, or why it could not be read.
    pub role: std::result::Result<String, String>,
    pub place: AgentPlace,
    /// Places later in the order that define the same name (hidden by this one).
    pub shadows: usize,
}

/// The lookup order of agent configs: `--agents-dir` → `./agents` → the user's agents folder
/// → built-in; the first place that defines a name wins (docs/design/agents-and-config.md#agent-lookup).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSearch {
    pub places: Vec<AgentPlace>,
}

impl AgentSearch {
    /// The lookup order for a program run from the working folder. Relative folders are made
    /// absolute, so the places name one folder whoever reads them; a folder named twice is
    /// searched once.
    pub fn new(agents_dir: Option<&Path>, user_dir: Option<PathBuf>) -> AgentSearch {
        let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let mut places: Vec<AgentPlace> = Vec::new();
        let mut push = |place: AgentPlace| {
            let same = places
                .iter()
                .any(|p| p.dir().is_some() && p.dir() == place.dir());
            if !same {
                places.push(place);
            }
        };
        if let Some(d) = agents_dir {
            push(AgentPlace::Flag(abs(d)));
        }
        push(AgentPlace::Local(abs(Path::new("agents"))));
        if let Some(d) = user_dir {
            push(AgentPlace::User(abs(&d)));
        }
        push(AgentPlace::BuiltIn);
        AgentSearch { places }
    }

    /// The first definition of `name` in the lookup order.
    pub fn find(&self, name: &str) -> Result<Option<(AgentPlace, AgentSource)>> {
        for place in &self.places {
            match place.dir() {
                Some(dir) => {
                    if let Some(path) = find_agent_file(dir, name)? {
                        return Ok(Some((place.clone(), AgentSource::File(path))));
                    }
                }
                None => {
                    if let Some((_, text)) = BUILTIN_AGENTS.iter().find(|(n, _)| *n == name) {
                        return Ok(Some((place.clone(), AgentSource::BuiltIn(text))));
                    }
                }
            }
        }
        Ok(None)
    }

    /// Load and check `name`'s config from where [`AgentSearch::find`] finds it.
    pub(crate) fn load(&self, name: &str, kind: AgentKind) -> Result<Option<AgentConfig>> {
        match self.find(name)? {
            None => Ok(None),
            Some((_, AgentSource::File(path))) => load_agent_file(&path, kind).map(Some),
            Some((_, AgentSource::BuiltIn(text))) => {
                let label = format!("built-in agent {name}");
                load_agent_text(&label, name, text, Format::Yaml, kind).map(Some)
            }
        }
    }

    /// Every agent name defined somewhere, sorted, with the place that wins for it.
    pub fn list(&self) -> Vec<ListedAgent> {
        let mut names: Vec<String> = Vec::new();
        let per_place: Vec<Vec<String>> = self.places.iter().map(names_at).collect();
        per_place
            .iter()
            .flatten()
            .for_each(|n| names.push(n.clone()));
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter_map(|name| {
                let at: Vec<usize> = (0..per_place.len())
                    .filter(|&i| per_place[i].contains(&name))
                    .collect();
                let place = self.places[*at.first()?].clone();
                let kind = if name == "pm" {
                    AgentKind::Pm
                } else {
                    AgentKind::Specialist
                };
                let role = self
                    .load(&name, kind)
                    .map(|c| c.map(|c| c.role).unwrap_or_default())
                    .map_err(|e| e.to_string());
                Some(ListedAgent {
                    name,
                    role,
                    place,
                    shadows: at.len() - 1,
                })
            })
            .collect()
    }

    /// The specialists one could name instead of an unknown one (not the PM).
    pub(crate) fn available(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .places
            .iter()
            .flat_map(names_at)
            .filter(|n| n != "pm")
            .collect();
        names.sort();
        names.dedup();
        names
    }

    fn places_label(&self) -> String {
        self.places
            .iter()
            .map(AgentPlace::label)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Names of the agent configs a place defines, sorted.
fn names_at(place: &AgentPlace) -> Vec<String> {
    match place.dir() {
        Some(dir) => agent_names_in(dir),
        None => BUILTIN_AGENTS.iter().map(|(n, _)| n.to_string()).collect(),
    }
}

/// What `meeting --list-agents` prints: the lookup order, then one line per agent (name, role,
/// where it is found; the PM too, the built-in PM prompt when no place defines `pm`).
pub fn list_agents(search: &AgentSearch) -> String {
    let mut out = String::from("# lookup order (first wins):");
    for (i, place) in search.places.iter().enumerate() {
        out.push_str(&format!(" {}. {}", i + 1, place.label()));
    }
    out.push('\n');
    let mut rows: Vec<[String; 3]> = vec![["NAME".into(), "ROLE".into(), "FOUND IN".into()]];
    let listed = search.list();
    for a in &listed {
        let role = match &a.role {
            Ok(r) => r.clone(),
            Err(e) => format!("(invalid: {})", one_line(e, 60)),
        };
        let mut place = a.place.label();
        if a.shadows > 0 {
            place.push_str(&format!(" (hides {} more)", a.shadows));
        }
        rows.push([a.name.clone(), role, place]);
    }
    if !listed.iter().any(|a| a.name == "pm") {
        rows.push([
            "pm".into(),
            "Meeting PM".into(),
            "built-in (PM prompt)".into(),
        ]);
    }
    let w0 = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r[1].chars().count()).max().unwrap_or(0);
    for [name, role, place] in rows {
        out.push_str(&format!("{name:w0$}  {role:w1$}  {place}\n"));
    }
    out
}

/// Load the named specialists and the PM along `search` (docs/design/agents-and-config.md#agent-lookup). A missing
/// PM config is fine when `pm` is the default name `pm` (the built-in PM prompt is used); a
/// PM named explicitly must exist.
pub fn load_meeting_agents(
    search: &AgentSearch,
    names: &[String],
    pm: &str,
    pm_explicit: bool,
) -> Result<(Vec<AgentConfig>, Option<AgentConfig>)> {
    // `--agents "arch, biz"` is what people type.
    let names: Vec<String> = names
        .iter()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        return Err(Error::Usage(
            "--agents: at least one agent is required (e.g. --agents arch,biz)".into(),
        ));
    }
    let mut agents = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if !crate::model::is_safe_name(name) {
            return Err(Error::Usage(format!(
                "--agents: {name:?} is not a valid agent name (expected 1-64 characters of A-Z a-z 0-9 _ -)"
            )));
        }
        if names[..i].contains(name) {
            return Err(Error::Usage(format!("--agents: {name:?} is listed twice")));
        }
        if name == pm {
            return Err(Error::Usage(format!(
                "--agents: {name:?} is the PM; the PM routes the meeting and cannot be a participant"
            )));
        }
        let cfg = search
            .load(name, AgentKind::Specialist)?
            .ok_or_else(|| unknown_agent(search, name))?;
        agents.push(cfg);
    }
    if !crate::model::is_safe_name(pm) {
        return Err(Error::Usage(format!(
            "--pm: {pm:?} is not a valid agent name"
        )));
    }
    let pm_cfg = match search.load(pm, AgentKind::Pm)? {
        Some(cfg) => Some(cfg),
        None if pm_explicit => {
            return Err(Error::Usage(format!(
                "--pm: no {pm}.yaml, {pm}.yml or {pm}.json in {}",
                search.places_label()
            )))
        }
        None => None,
    };
    Ok((agents, pm_cfg))
}

/// The error for a name no place defines: the closest existing name when one is near (a typo),
/// else how to write the agent.
fn unknown_agent(search: &AgentSearch, name: &str) -> Error {
    let available = search.available();
    let next = match crate::text::closest(name, available.iter().map(String::as_str)) {
        Some(near) => format!("did you mean --agents {near}?"),
        None => format!(
            "write one with: agent-builder --name {name} --description '...' --output agents/{name}.yaml"
        ),
    };
    Error::Usage(format!(
        "--agents: unknown agent {name:?}: no {name}.yaml, {name}.yml or {name}.json in {} (available: {}); {next}",
        search.places_label(),
        available.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in agent passes the loader's rules, and every file in share/agents/ is
    /// registered (a new file without its line in BUILTIN_AGENTS would never ship).
    #[test]
    fn builtin_agents_load_and_are_all_registered() {
        for (name, text) in BUILTIN_AGENTS {
            load_agent_text(name, name, text, Format::Yaml, AgentKind::Specialist)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("share/agents");
        let shipped = agent_names_in(&dir);
        let registered: Vec<String> = BUILTIN_AGENTS.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(shipped, registered);
    }
}
