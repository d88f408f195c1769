//! `meeting`'s modes (docs/design/run-folder.md#resume): the flags each takes, as clap structs
//! the `meeting` program's subcommands flatten, their old flag spellings, why a mode refuses a
//! flag. The `meeting` program turns each into the driver's request.

use std::path::PathBuf;

use super::flags::HeaderArgs;
use super::{OtlpArgs, OutputArgs};
use crate::Error;

/// The old spellings of the modes: the flag, its subcommand, how many values it takes.
pub const MODE_FLAGS: [(&str, &str, usize); 5] = [
    ("--resume", "resume", 1),
    ("--fork", "fork", 1),
    ("--compare", "compare", 2),
    ("--show-config", "show-config", 0),
    ("--list-agents", "list-agents", 0),
];

/// Why a mode refuses a flag it does not take, in its error.
pub const WHY_NOT: [(&str, &str); 2] = [
    (
        "meeting resume",
        "the run folder's meeting.json holds the meeting (resume takes what does not change it)",
    ),
    (
        "meeting fork",
        "the parent's meeting.json holds the meeting (fork takes what it changes: --model, --agents, --max-loops, --trace-id, --report-file, --run-dir)",
    ),
];

/// Progress and `--step`, taken by every mode that drives a meeting.
#[derive(clap::Args, Debug)]
pub struct UiArgs {
    /// No progress on stderr
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,
    /// Pause before each stage until Enter (q stops, leaving a resumable run folder)
    #[arg(long, help_heading = "Meeting")]
    pub step: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `meeting resume DIR`: the settings a resume may change; `None` keeps the saved value.
#[derive(clap::Args, Debug)]
pub struct ResumeArgs {
    /// The run folder (runs/<trace id>)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Use what the run folder asks for without it being given again, and resume a folder
    /// another user owns or others may write (only for a folder you trust)
    #[arg(long)]
    pub trust_run_dir: bool,
    /// The answer of the person the meeting waits for (status waiting, exit 4): one JSON object
    /// (an AgentTurnResult) or the run folder's answer.txt filled in; checked like any answer
    /// (an unusable one is sent back once, and the meeting waits again)
    #[arg(long, value_name = "FILE")]
    pub answer: Option<PathBuf>,
    /// With --answer: the call the answer is for (waiting.json's `call`); refused when the
    /// meeting now waits for another (someone answered first, and it asks a new question)
    #[arg(long, value_name = "CALL", requires = "answer")]
    pub answer_for: Option<u64>,
    /// Where to write the report (default: where the meeting was to write it); an ended
    /// meeting's report is saved there too
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub report_file: Option<PathBuf>,
    #[command(flatten)]
    pub adr: super::flags::AdrArgs,
    /// Render the report with this template (a template the meeting started with is given
    /// again: the run folder's is not read without --trust-run-dir)
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub template: Option<PathBuf>,
    #[command(flatten)]
    pub human: super::HumanArgs,
    /// Replace a stage with your own command (NAME=COMMAND, repeatable); NAME= restores the
    /// built-in program
    #[arg(long = "stage", value_name = "NAME=COMMAND", help_heading = "Meeting")]
    pub stages: Vec<String>,
    #[command(flatten)]
    pub header: HeaderArgs,
    /// Seconds to wait for a connection
    #[arg(long, value_name = "SECS", help_heading = "Transport")]
    pub connect_timeout: Option<f64>,
    /// Seconds to wait for the response (head, then body)
    #[arg(long, value_name = "SECS", help_heading = "Transport")]
    pub read_timeout: Option<f64>,
    /// Attempts per call on 429, 5xx, timeouts and network errors
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=20), help_heading = "Transport")]
    pub max_attempts: Option<u32>,
    #[command(flatten)]
    pub otlp: OtlpArgs,
    #[command(flatten)]
    pub prices: PricesArg,
    #[command(flatten)]
    pub ui: UiArgs,
    #[command(flatten)]
    pub on_waiting: super::flags::OnWaitingArg,
}

/// `meeting fork DIR --at-loop N`: what the fork changes of its parent, and the output.
#[derive(clap::Args, Debug)]
pub struct ForkArgs {
    /// The parent's run folder
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The first loop asked live (1 asks every call again)
    #[arg(long, value_name = "N", required = true)]
    pub at_loop: u32,
    /// Take what the parent's folder asks for that runs a command, writes a file elsewhere or
    /// sends your key elsewhere (its --stage, --llm-log, --record, traces, --adr, a config
    /// copy's base URL), refused without it, and fork a folder another user owns or others may
    /// write (only for a folder you trust)
    #[arg(long)]
    pub trust_run_dir: bool,
    /// The fork's model (default: the parent's)
    #[arg(long, short, value_name = "MODEL", help_heading = "Model")]
    pub model: Option<String>,
    /// The fork's participants (default: the parent's)
    #[arg(
        long,
        short,
        value_delimiter = ',',
        value_name = "NAMES",
        help_heading = "Meeting"
    )]
    pub agents: Option<Vec<String>>,
    /// The fork's loop limit (default: the parent's)
    #[arg(long, value_name = "N", help_heading = "Meeting")]
    pub max_loops: Option<u32>,
    /// The fork's trace id (names its run folder)
    #[arg(long, value_name = "ID", value_parser = crate::model::check_trace_id, help_heading = "Meeting")]
    pub trace_id: Option<String>,
    /// Where to write the report (default: the parent's with -fork, the next free number when
    /// taken)
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub report_file: Option<PathBuf>,
    /// The folder holding the fork's run folder (default: the parent's)
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    pub run_dir: Option<PathBuf>,
    #[command(flatten)]
    pub prices: PricesArg,
    #[command(flatten)]
    pub ui: UiArgs,
}

/// `meeting compare A B`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The first run folder (the parent)
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The second run folder (the fork)
    #[arg(value_name = "B")]
    pub b: PathBuf,
}

/// `meeting list-agents`.
#[derive(clap::Args, Debug)]
pub struct ListAgentsArgs {
    /// Folder searched first for <name>.yaml|.yml|.json agent configs; then ./agents, the
    /// user's agents folder, the built-in agents
    #[arg(long, value_name = "DIR")]
    pub agents_dir: Option<PathBuf>,
}

/// `meeting list`: the history of the run folder.
#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// One JSON object per meeting (one per line) instead of the table
    #[arg(long)]
    pub json: bool,
    /// The most meetings shown, newest first
    #[arg(long, short = 'n', value_name = "N", default_value_t = 20,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub limit: usize,
    /// Only meetings in these states (comma-separated: finished, no_decision, failed, waiting,
    /// running, stopped, ...)
    #[arg(long, value_name = "STATUS", value_delimiter = ',')]
    pub status: Vec<String>,
    /// Folder that holds the run folders [default: the config file's run_dir, else runs]
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

/// `meeting show ID`: one meeting of the history.
#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// A run id (as `meeting list` shows it) or a run folder
    #[arg(value_name = "ID")]
    pub id: String,
    /// Its MeetingResult (JSON) instead of its report
    #[arg(long)]
    pub json: bool,
    /// Folder that holds the run folders [default: the config file's run_dir, else runs]
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `--prices`, for the modes that price a meeting's calls.
#[derive(clap::Args, Debug)]
pub struct PricesArg {
    /// Price the meeting's calls with this table (the shape of share/prices/prices.json)
    /// instead of the built-in subset of LiteLLM's
    #[arg(
        long,
        value_name = "FILE",
        env = "AGENT_MEETING_PRICES",
        help_heading = "Output"
    )]
    pub prices: Option<PathBuf>,
}

impl PricesArg {
    /// One table for the whole run, before any stage prices a call.
    pub fn use_it(&self) -> Result<(), Error> {
        match &self.prices {
            Some(file) => crate::llm::prices::use_table(file),
            None => Ok(()),
        }
    }
}
