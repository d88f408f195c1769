//! `agent-meeting gitlab`: a decision meeting on a merge request, posted as one note
//! (docs/design/github.md#gitlab).

use std::process::ExitCode;

use agent_meeting::cli;
use clap::Parser;

/// Hold a decision meeting on a GitLab merge request and post what it came to as one note.
///
/// The note is updated in place on every later run. Reads the merge-request pipeline's
/// variables: the label `decide` (or AGENT_MEETING_TOPIC) starts a meeting on the merge
/// request — its description, diff, changed files and newest decision records — and
/// AGENT_MEETING_ANSWER answers the person a meeting waits for. Advisory: exits 0 whatever the
/// meeting decided; 2 for a bad setting, 1 when the API or the meeting could not run. The token
/// (GITLAB_TOKEN: a project access token with the api scope, from the environment only) goes to
/// --api-url and nowhere else. --dry-run holds the same meeting offline and prints the note.
#[derive(Parser, Debug)]
#[command(
    name = "agent-meeting gitlab",
    version = cli::VERSION,
    after_help = "Example: include share/ci/gitlab-ci.yml in .gitlab-ci.yml (docs/GUIDE.md).\n\nTry a merge request offline, in its checkout (no token, no API; the note is printed):\n  (set -a; . share/examples/gitlab-pipeline.env\n   agent-meeting gitlab --dry-run --provider sample)"
)]
struct Args {
    /// The REST API's base URL: the only host the token is sent to (not used by --dry-run)
    #[arg(
        long,
        env = "CI_API_V4_URL",
        value_name = "URL",
        required_unless_present = "dry_run"
    )]
    api_url: Option<String>,
    /// The project's id or path (not used by --dry-run)
    #[arg(
        long,
        env = "CI_PROJECT_ID",
        value_name = "ID",
        required_unless_present = "dry_run"
    )]
    project: Option<String>,
    /// The merge request's iid
    #[arg(long, env = "CI_MERGE_REQUEST_IID", value_name = "IID")]
    merge_request: Option<u64>,
    /// The merge request's title
    #[arg(
        long,
        env = "CI_MERGE_REQUEST_TITLE",
        value_name = "TEXT",
        default_value = ""
    )]
    title: String,
    /// The merge request's labels, comma-separated
    #[arg(
        long,
        env = "CI_MERGE_REQUEST_LABELS",
        value_name = "LIST",
        default_value = ""
    )]
    labels: String,
    /// The project the merge request comes from (a fork when not the target)
    #[arg(
        long,
        env = "CI_MERGE_REQUEST_SOURCE_PROJECT_ID",
        value_name = "ID",
        default_value = ""
    )]
    source_project: String,
    /// The project the merge request goes to
    #[arg(
        long,
        env = "CI_MERGE_REQUEST_PROJECT_ID",
        value_name = "ID",
        default_value = ""
    )]
    target_project: String,
    /// Start a meeting on this topic
    #[arg(long, env = "AGENT_MEETING_TOPIC", value_name = "TEXT")]
    topic: Option<String>,
    /// Answer the person the merge request's meeting waits for
    #[arg(long, env = "AGENT_MEETING_ANSWER", value_name = "TEXT")]
    answer: Option<String>,
    /// Hold the meeting offline and print the note instead of posting it: the merge request's
    /// title and description from these flags, its diff and changed files from the git
    /// checkout of the current folder; no API call, no token
    #[arg(long)]
    dry_run: bool,
    /// With --dry-run: the merge request's description
    #[arg(
        long,
        env = "CI_MERGE_REQUEST_DESCRIPTION",
        value_name = "TEXT",
        default_value = ""
    )]
    description: String,
    /// With --dry-run: the branch the merge request goes to; the diff starts where HEAD left
    /// origin/BRANCH
    #[arg(
        long,
        env = "CI_MERGE_REQUEST_TARGET_BRANCH_NAME",
        value_name = "BRANCH"
    )]
    target_branch: Option<String>,
    /// With --dry-run: where the diff starts (git diff REV...HEAD) [default: origin/<the
    /// target branch>, else origin/HEAD, else HEAD~1]
    #[arg(long, value_name = "REV", requires = "dry_run")]
    base: Option<String>,
    #[command(flatten)]
    pull: cli::flags::PullArgs,
}

pub fn main() -> ExitCode {
    const ME: &str = "agent-meeting gitlab";
    cli::main_with(ME, || {
        let args: Args = cli::parse_args(ME);
        let exe = std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("cannot find this executable: {e}"))?;
        let pipeline = agent_meeting::github::gitlab::Pipeline {
            iid: args.merge_request,
            project: args.project.clone().unwrap_or_default(),
            title: args.title,
            labels: args.labels,
            source_project: args.source_project,
            target_project: args.target_project,
            topic: args.topic,
            answer: args.answer,
            label: args.pull.label.clone(),
        };
        let settings = args.pull.settings(ME, exe, None);
        if args.dry_run {
            let Some(iid) = args.merge_request else {
                return Err(agent_meeting::Error::Usage(
                    "--dry-run needs the merge request's iid: --merge-request IID (CI_MERGE_REQUEST_IID)".into(),
                )
                .into());
            };
            let ask = agent_meeting::github::gitlab::read(&pipeline);
            let pull = agent_meeting::github::Pull {
                number: iid,
                title: pipeline.title.clone(),
                body: args.description,
            };
            let candidates: Vec<String> = args
                .target_branch
                .iter()
                .map(|b| format!("origin/{b}"))
                .collect();
            let forge = agent_meeting::github::offline::Offline::new(
                pull,
                args.base.as_deref(),
                &candidates,
                agent_meeting::github::gitlab::ANSWER_HINT,
            )?;
            agent_meeting::github::hold(
                &settings,
                Some(&forge),
                ask,
                agent_meeting::github::Checkout::Head,
            )?;
            return Ok(());
        }
        let ask = agent_meeting::github::gitlab::read(&pipeline);
        let token = std::env::var("GITLAB_TOKEN")
            .ok()
            .filter(|t| !t.trim().is_empty());
        let api = match (&ask, token) {
            (agent_meeting::github::event::Ask::Nothing(_), _)
            | (agent_meeting::github::event::Ask::ForkWithoutSecrets { .. }, _) => None,
            (_, Some(t)) => Some(agent_meeting::github::gitlab::Api::new(
                args.api_url.as_deref().unwrap_or_default(),
                args.project.as_deref().unwrap_or_default(),
                &t,
            )),
            (_, None) => {
                return Err(agent_meeting::Error::Usage(
                    "GITLAB_TOKEN is not set: a project access token with the api scope, as a masked CI/CD variable (the job token cannot write notes)".into(),
                )
                .into())
            }
        };
        let forge = api.as_ref().map(|a| a as &dyn agent_meeting::github::Forge);
        // A merge request pipeline runs on the request's source branch.
        agent_meeting::github::hold(&settings, forge, ask, agent_meeting::github::Checkout::Head)?;
        Ok(())
    })
}

/// This mode's command as it parses its flags, for `agent-meeting`'s man page and completions.
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("agent-meeting gitlab")
}
