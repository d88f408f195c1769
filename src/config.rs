//! Where the user's own settings live (DESIGN.md#config): the platform config folder
//! (`$XDG_CONFIG_HOME/agent-meeting` on Linux), the config file in it and the user's agents
//! folder.

use std::path::PathBuf;

/// The variable naming the config file instead of the platform's place.
pub const CONFIG_ENV: &str = "AGENT_MEETING_CONFIG";

/// `<platform config dir>/agent-meeting`, when the platform has one (no home folder: none).
pub fn config_dir() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("agent-meeting"))
}

/// The user's agents folder: `<config dir>/agents`.
pub fn user_agents_dir() -> Option<PathBuf> {
    config_dir().map(|d| d.join("agents"))
}
