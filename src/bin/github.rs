//! `agent-meeting github`: a decision meeting on a pull request, posted as one comment
//! (docs/design/github.md).

use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli;
use clap::Parser;

/// Hold a decision meeting on a pull request and post what it came to as one comment, updated
/// in place on every later run. Reads the event as GitHub Actions leaves it: a comment
/// `/decide <topic>` (or a pull request labelled `decide`) starts a meeting on the pull
/// request — its description, diff, changed files and newest decision records — and
/// `/answer <text>` answers the person a meeting waits for. Advisory: exits 0 whatever the
/// meeting decided; 2 for a bad event or setting, 1 when the API or the meeting could not run.
/// The token (GITHUB_TOKEN, from the environment only) goes to --api-url and nowhere else.
#[derive(Parser, Debug)]
#[command(
    name = "agent-meeting github",
    version = cli::VERSION,
    after_help = "Example (a workflow step; see action.yml and docs/GUIDE.md):\n  env:\n    GITHUB_TOKEN: ${{ github.token }}\n    OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}\n  run: agent-meeting github --max-cost 0.50\n\nTry it locally with a saved event:\n  GITHUB_TOKEN=... agent-meeting github --event-name issue_comment --event event.json --repo o/r --provider sample"
)]
struct Args {
    /// The event's name
    #[arg(long, env = "GITHUB_EVENT_NAME", value_name = "NAME")]
    event_name: String,
    /// The event's JSON file
    #[arg(long = "event", env = "GITHUB_EVENT_PATH", value_name = "FILE")]
    event_path: PathBuf,
    /// The repository, owner/name
    #[arg(long, env = "GITHUB_REPOSITORY", value_name = "OWNER/NAME")]
    repo: String,
    /// The REST API's base URL: the only host the token is sent to
    #[arg(
        long,
        env = "GITHUB_API_URL",
        value_name = "URL",
        default_value = "https://api.github.com"
    )]
    api_url: String,
    /// A pull request opened (or reopened) by a trusted author in this repository starts a
    /// meeting on its title, without the label (a push or an edit starts none)
    #[arg(long)]
    from_body: bool,
    #[command(flatten)]
    pull: cli::flags::PullArgs,
}

pub fn main() -> ExitCode {
    const ME: &str = "agent-meeting github";
    cli::main_with(ME, || {
        let args: Args = cli::parse_args(ME);
        let exe = std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("cannot find this executable: {e}"))?;
        let event = agent_meeting::github::GithubEvent {
            event_name: args.event_name,
            event_path: args.event_path,
            repo: args.repo,
            api_url: args.api_url,
            token: std::env::var("GITHUB_TOKEN").ok(),
            options: agent_meeting::github::event::Options {
                label: args.pull.label.clone(),
                from_body: args.from_body,
            },
        };
        let summary = std::env::var_os("GITHUB_STEP_SUMMARY").map(PathBuf::from);
        let settings = args.pull.settings(ME, exe, summary);
        agent_meeting::github::run(&event, &settings)?;
        Ok(())
    })
}
