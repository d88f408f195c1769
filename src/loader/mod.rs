//! Agent configs (docs/design/agents-and-config.md#agent-configs): `rules` checks one config (file format, name and
//! stem, the schema contracts of a specialist and the PM), `search` finds configs along the
//! lookup order (the built-in agents, `--list-agents`), `files` names config files.

mod files;
mod rules;
mod search;

pub use files::{agent_config_text, check_agent_output};
pub(crate) use rules::{validate_agent, AgentKind};
pub use search::{
    list_agents, load_meeting_agents, AgentPlace, AgentSearch, AgentSource, ListedAgent,
    BUILTIN_AGENTS,
};
