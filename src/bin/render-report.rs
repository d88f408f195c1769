//! `render-report`: Board → the Markdown meeting report (docs/design/report.md#report) and a ReportResult JSON.

use std::path::PathBuf;

use agent_meeting::cli::{self, OutputArgs};
use agent_meeting::model::Status;
use agent_meeting::stage::render_report as report;
use agent_meeting::{io, Error};
use clap::Parser;

/// Render the meeting report from a finished board (reads the Board JSON on stdin)
#[derive(Debug, Parser)]
#[command(
    name = "render-report",
    version,
    after_help = "\
Runs when the board's status is `finishing` with a final report (normal report), or
`forced_stop` (forced report, or the local fallback report when the PM gave none). A
`finished` board (or a `failed` one, to retry saving) is rendered again. Any other board exits 2 and names the stage to run.

With --report-file the report is written atomically and the printed board has status
`finished`. Without it a board that waits for its report is refused (exit 2: it would stay as
it is, and a loop over next-stage would never end) unless --markdown only prints the report;
a finished board is rendered again.

A custom --template replaces the built-in template of whichever kind the board calls for;
the variable `kind` (normal|forced|fallback) lets one template handle all three, and
{% include \"appendix.md.j2\" %} (also report.md.j2, forced.md.j2, fallback.md.j2) reuses
the built-in parts. Variables: share/templates/README.md.

Example:
  # in the repository: a finished meeting's board, rendered again
  meeting --meeting-file meetings/demo.yaml --agents arch,biz --provider replay \\
    --cassette meetings/demo.cassette.jsonl --trace-id demo --quiet > /dev/null
  jq .board runs/demo/*-render-report.out.json | render-report --markdown | head -20
  jq .board runs/demo/*-render-report.out.json \\
    | render-report --report-file reports/demo.md | jq .status"
)]
struct Args {
    /// Write the Markdown report to this file (atomically) and mark the board finished
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    report_file: Option<PathBuf>,
    /// Print the Markdown report on stdout instead of the ReportResult JSON
    #[arg(long, help_heading = "Output")]
    markdown: bool,
    /// Print the board instead of the ReportResult JSON (what next-stage and the other
    /// stages read; the same as `jq .board`)
    #[arg(long, help_heading = "Output", conflicts_with = "markdown")]
    board: bool,
    /// Use this minijinja template instead of the built-in one
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    template: Option<PathBuf>,
    /// Draw the diagram of the whole meeting from this events file (a run folder's
    /// events.jsonl) instead of the board's last 30 loops
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
    #[command(flatten)]
    adr: cli::flags::AdrArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn main() -> std::process::ExitCode {
    let args: Args = cli::parse_args("render-report");
    cli::main_with("render-report", || {
        let template = args
            .template
            .as_deref()
            .map(report::UserTemplate::load)
            .transpose()?;
        let adr = args.adr.settings(cli::config_deciders)?;
        if let Some(a) = &adr {
            if let Some(n) = &a.supersedes {
                report::check_supersedes(&a.dir, n)?;
            }
        }
        let board = io::read_board_stdin()?;
        let report_file = args.report_file.as_deref();
        if report_file.is_none() && !args.markdown {
            report::require_report_file(&board).map_err(|e| e.or_file("<stdin>"))?;
        }
        let result = match &args.events {
            Some(file) => {
                let events = agent_meeting::meeting::events::read_events_file(file)?;
                let flow = agent_meeting::meeting::events::full_flow(&events);
                report::run_with_flow(board, flow, template.as_ref(), report_file)
            }
            None => report::run(board, template.as_ref(), report_file),
        }
        .map_err(|e| e.or_file("<stdin>"))?;
        if args.markdown {
            cli::write_stdout(&result.markdown)?;
        } else if args.board {
            cli::write_stdout(&io::to_json_line(&result.board, args.output.pretty))?;
        } else {
            // Printed even when the save failed: the board records status `failed` and why.
            cli::write_stdout(&io::to_json_line(&result, args.output.pretty))?;
        }
        match (result.status, &result.board.last_error) {
            (Status::Failed, Some(why)) => Err(Error::Runtime(why.clone()).into()),
            _ => match &adr {
                Some(a) => {
                    let req = report::AdrRequest {
                        dir: &a.dir,
                        report_file,
                        supersedes: a.supersedes.as_deref(),
                        deciders: &a.deciders,
                    };
                    let outcome = report::write_adr(&result.board, &req)?;
                    agent_meeting::note!("{}", report::adr_note("render-report", &outcome));
                    Ok(())
                }
                None => Ok(()),
            },
        }
    })
}

/// This program's command as it parses its flags, for `agent-meeting`'s `--help` list, man
/// page and completions.
#[allow(dead_code)]
pub fn command() -> clap::Command {
    agent_meeting::cli::command::<Args>("render-report")
}
