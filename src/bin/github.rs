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
    /// Folder that holds the run folders (in the checkout; keep it between runs, so a re-run
    /// resumes instead of paying twice)
    #[arg(long, value_name = "DIR", default_value = "runs")]
    run_dir: PathBuf,
    /// The repository's settings [default: .github/agent-meeting.yaml when there]
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A pull request labelled so starts a meeting on its title
    #[arg(long, value_name = "NAME", default_value = "decide")]
    label: String,
    /// Any opened, edited or synchronized pull request starts a meeting on its title
    #[arg(long)]
    from_body: bool,
    /// The specialists, in speaking order [default: the settings file's, else arch,biz]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    agents: Vec<String>,
    /// The meeting's budget in US dollars (over the settings file's)
    #[arg(long, value_name = "USD")]
    max_cost: Option<f64>,
    /// Given to meeting as --provider
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Given to meeting as --model
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
}

pub fn main() -> ExitCode {
    cli::main_with("agent-meeting github", || {
        let args: Args = cli::parse_args("agent-meeting github");
        let mut meeting_args = Vec::new();
        if let Some(p) = args.provider {
            meeting_args.extend(["--provider".to_string(), p]);
        }
        if let Some(m) = args.model {
            meeting_args.extend(["--model".to_string(), m]);
        }
        let exe = std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("cannot find this executable: {e}"))?;
        let settings = agent_meeting::github::Settings {
            event_name: args.event_name,
            event_path: args.event_path,
            repo: args.repo,
            api_url: args.api_url,
            token: std::env::var("GITHUB_TOKEN").ok(),
            run_dir: args.run_dir,
            config: args.config,
            options: agent_meeting::github::event::Options {
                label: args.label,
                from_body: args.from_body,
            },
            agents: args.agents,
            max_cost: args.max_cost,
            meeting_args,
            exe,
            summary: std::env::var_os("GITHUB_STEP_SUMMARY").map(PathBuf::from),
        };
        agent_meeting::github::run(&settings)?;
        Ok(())
    })
}
