//! `agent-meeting github`: a decision meeting on a pull request, posted as one comment
//! (docs/design/github.md).

use std::path::PathBuf;
use std::process::ExitCode;

use agent_meeting::cli;
use clap::Parser;

/// Hold a decision meeting on a pull request and post what it came to as one comment.
///
/// The comment is updated in place on every later run. Reads the event as GitHub Actions
/// leaves it: a comment `/decide <topic>` (or a pull request labelled `decide`) starts a
/// meeting on the pull request — its description, diff, changed files and newest decision
/// records — and `/answer <text>` answers the person a meeting waits for. Advisory: exits 0
/// whatever the meeting decided; 2 for a bad event or setting, 1 when the API or the meeting
/// could not run. The token (GITHUB_TOKEN, from the environment only) goes to --api-url and
/// nowhere else. --dry-run holds the same meeting offline and prints the comment.
#[derive(Parser, Debug)]
#[command(
    name = "agent-meeting github",
    version = cli::VERSION,
    after_help = "Example (a workflow step; see action.yml and docs/GUIDE.md):\n  env:\n    GITHUB_TOKEN: ${{ github.token }}\n    OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}\n  run: agent-meeting github --max-cost 0.50\n\nTry it locally with a saved event:\n  GITHUB_TOKEN=... agent-meeting github --event-name issue_comment --event event.json --repo o/r --provider sample\n\nTry a pull request offline, in its checkout (no token, no API; the comment is printed):\n  agent-meeting github --dry-run --event share/examples/github-event.json --provider sample"
)]
struct Args {
    /// The event's name [with --dry-run, default: guessed from the event, issue_comment or
    /// pull_request]
    #[arg(
        long,
        env = "GITHUB_EVENT_NAME",
        value_name = "NAME",
        required_unless_present = "dry_run"
    )]
    event_name: Option<String>,
    /// The event's JSON file
    #[arg(long = "event", env = "GITHUB_EVENT_PATH", value_name = "FILE")]
    event_path: PathBuf,
    /// The repository, owner/name (not used by --dry-run)
    #[arg(
        long,
        env = "GITHUB_REPOSITORY",
        value_name = "OWNER/NAME",
        required_unless_present = "dry_run"
    )]
    repo: Option<String>,
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
    /// Hold the meeting offline and print the comment instead of posting it: the pull
    /// request's title and description from the event, its diff and changed files from the
    /// git checkout of the current folder; no API call, no token
    #[arg(long)]
    dry_run: bool,
    /// With --dry-run: where the diff starts (git diff REV...HEAD) [default: the event's base
    /// commit, else origin/<its base branch>, else origin/HEAD, else HEAD~1]
    #[arg(long, value_name = "REV", requires = "dry_run")]
    base: Option<String>,
    #[command(flatten)]
    pull: cli::flags::PullArgs,
}

pub fn main() -> ExitCode {
    const ME: &str = "agent-meeting github";
    cli::main_with(ME, || {
        let args: Args = cli::parse_args(ME);
        let exe = std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("cannot find this executable: {e}"))?;
        let options = agent_meeting::github::event::Options {
            label: args.pull.label.clone(),
            from_body: args.from_body,
        };
        if args.dry_run {
            // Nothing of the job's: no token, no summary page.
            let settings = args.pull.settings(ME, exe, None);
            let dry = agent_meeting::github::DryRun {
                event_name: args.event_name,
                event_path: args.event_path,
                base: args.base,
                options,
            };
            agent_meeting::github::dry_run(&dry, &settings)?;
            return Ok(());
        }
        let event = agent_meeting::github::GithubEvent {
            event_name: args.event_name.unwrap_or_default(),
            event_path: args.event_path,
            repo: args.repo.unwrap_or_default(),
            api_url: args.api_url,
            token: std::env::var("GITHUB_TOKEN").ok(),
            options,
        };
        let summary = std::env::var_os("GITHUB_STEP_SUMMARY").map(PathBuf::from);
        let settings = args.pull.settings(ME, exe, summary);
        agent_meeting::github::run(&event, &settings)?;
        Ok(())
    })
}

/// This mode's command as it parses its flags, for `agent-meeting`'s man page and completions.
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("agent-meeting github")
}
