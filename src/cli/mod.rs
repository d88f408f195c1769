//! What every program shares at its edge: the exit-code mapping, stdout writing that treats a
//! broken pipe as success, colour detection, and the flag groups flattened into several programs;
//! the user's config file (`config`). The top of the library beside the driver: nothing below
//! it reads flags or the config file.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use crate::error::Error;

pub mod flags;
pub mod modes;

pub use flags::{BoardArgs, LlmArgs, OpenAiApiArg, OtlpArgs};

/// Set by `meeting` for a `--stage` command, to its own process id: a program of ours started
/// under the command dies with its parent (the command's shell, which dies with the meeting),
/// and does not start when the meeting is already gone, so no stage outlives a killed meeting
/// to make a paid call the resume makes again (docs/design/run-folder.md#run-folder).
pub const STAGE_CHILD_ENV: &str = "AGENT_MEETING_STAGE_CHILD";

fn die_with_parent_when_a_stage() {
    #[cfg(target_os = "linux")]
    if let Some(meeting) = std::env::var(STAGE_CHILD_ENV)
        .ok()
        .and_then(|p| p.parse::<i32>().ok())
    {
        // A meeting that is gone, or dead and not yet reaped, is no meeting to work for.
        let meeting_alive = || {
            std::fs::read_to_string(format!("/proc/{meeting}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
            })
        };
        // SAFETY: prctl with PR_SET_PDEATHSIG takes no pointers; getppid only asks.
        let parent_changed = unsafe {
            let parent = libc::getppid();
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            libc::getppid() != parent
        };
        // The parent or the meeting went before the signal was set: none will come.
        if parent_changed || !meeting_alive() {
            std::process::exit(137);
        }
    }
}

/// `--pretty`, on every program that prints JSON.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Indent the JSON written to stdout
    #[arg(long)]
    pub pretty: bool,
}

/// What `collect-context` collects: flattened into `collect-context` and `meeting` (which
/// passes them on).
#[derive(Debug, Clone, PartialEq, clap::Args)]
#[command(next_help_heading = "Input")]
pub struct ContextArgs {
    /// Only collect below DIR [default: nearest ancestor of the base folder holding .git, else
    /// the base folder]
    #[arg(long, value_name = "DIR")]
    pub context_root: Option<std::path::PathBuf>,
    /// Also collect files whose names say they hold secrets (.env*, id_rsa, *.pem, *.key,
    /// .netrc, .ssh/, credentials*, ...)
    #[arg(long)]
    pub allow_sensitive: bool,
    /// DANGEROUS: send secrets found inside documents (private keys, API tokens, passwords) to
    /// the model as they are, instead of replacing each with [REDACTED:<kind>]
    #[arg(long)]
    pub no_redact: bool,
    /// The context budget: the most characters of the brief and the documents every call
    /// reads, shared by the documents (a file read whole when its share holds it) [default:
    /// meeting sizes it to the smallest input window of the meeting's models (an eighth of it,
    /// between 24,000 and 96,000), else 24,000]
    #[arg(long, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_context_chars: Option<usize>,
    /// A document for the meeting, no meeting file needed: a file, or a folder (its first 20
    /// files); relative to the working directory, read under a meeting file's rules (root,
    /// secrets, redaction, budget); repeatable, and added to a meeting file's own documents.
    /// PATH:agent,agent: only those participants read it (the PM sees who holds it)
    #[arg(long = "doc", value_name = "PATH[:READERS]", value_hint = clap::ValueHint::AnyPath)]
    pub docs: Vec<String>,
}

impl ContextArgs {
    /// collect-context's settings as the library owns them.
    pub fn into_settings(self) -> crate::context::ContextSettings {
        crate::context::ContextSettings {
            context_root: self.context_root,
            allow_sensitive: self.allow_sensitive,
            no_redact: self.no_redact,
            max_context_chars: self.max_context_chars,
            // Absolute: a meeting file's paths start at its folder, a --doc at the working one.
            docs: self
                .docs
                .iter()
                .map(|d| {
                    let doc = crate::context::Doc::parse(d);
                    crate::context::Doc {
                        path: std::path::absolute(&doc.path).unwrap_or(doc.path),
                        ..doc
                    }
                })
                .collect(),
            // `meeting` adds its panel where it collects (`driver::stages`).
            participants: Vec::new(),
        }
    }
}

/// `--human-answers`: flattened into `agent-turn` and `meeting` (which passes it on).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct HumanArgs {
    /// Answers of the human participants (kind: human), one JSON object (an AgentTurnResult)
    /// per line, used in order across the meeting; wins over the editor and the terminal
    #[arg(
        long,
        env = crate::stage::agent_turn::human::ANSWERS_ENV,
        value_name = "FILE",
        help_heading = "Input"
    )]
    pub human_answers: Option<std::path::PathBuf>,
}

/// Run a program's body and turn its outcome into the documented exit code: 0 success, 2 bad
/// usage or input, 1 runtime failure. The message is one line, prefixed with the program name.
pub fn main_with(program: &str, body: impl FnOnce() -> anyhow::Result<()>) -> ExitCode {
    die_with_parent_when_a_stage();
    match body() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let code = e
                .chain()
                .find_map(|c| c.downcast_ref::<Error>())
                .map(Error::exit_code)
                .unwrap_or(1);
            let msg = format!("{e:#}").replace('\n', " ");
            crate::note!("{program}: {msg}");
            ExitCode::from(code)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Write a whole document to stdout; a closed pipe is reported as `BrokenPipe` for `main_with`.
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Whether stderr should carry colour: a terminal, and `NO_COLOR` unset or empty.
pub fn stderr_color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

/// Parse the flags; a usage error is one line on stderr and exit 2 (`--help` and `--version`
/// print as usual and exit 0, and so does `--generate KIND`: see [`GENERATE_KINDS`]).
pub fn parse_args<T: clap::Parser>(program: &'static str) -> T {
    parse_args_with_matches(program).0
}

/// A value given on the command line (clap's value source: not a default, not from the
/// environment).
pub fn given<T: Clone + Send + Sync + 'static>(matches: &clap::ArgMatches, id: &str) -> Option<T> {
    (matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
        .then(|| matches.get_one::<T>(id).cloned())
        .flatten()
}

/// The environment variables that gave a flag of `cmd` its value (clap's value source).
pub fn env_sources(cmd: &clap::Command, matches: &clap::ArgMatches) -> Vec<String> {
    cmd.get_arguments()
        .filter(|a| {
            matches.value_source(a.get_id().as_str())
                == Some(clap::parser::ValueSource::EnvVariable)
        })
        .filter_map(|a| a.get_env().map(|v| v.to_string_lossy().into_owned()))
        .collect()
}

/// The first flag of `cmd` given on the command line whose clap id is not in `allowed`, as it
/// is spelled (`--model`). Defaults and environment variables are not given flags.
pub fn given_outside(
    cmd: &clap::Command,
    matches: &clap::ArgMatches,
    allowed: &[&str],
) -> Option<String> {
    matches.ids().find_map(|id| {
        // A group of flags is not a flag.
        let arg = cmd.get_arguments().find(|a| a.get_id() == id)?;
        let given =
            matches.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine);
        (given && !allowed.contains(&id.as_str())).then(|| {
            // A positional argument by its value name (`TOPIC`).
            let positional = || {
                arg.get_value_names()
                    .and_then(|v| v.first())
                    .map(|v| v.to_string())
            };
            arg.get_long()
                .map(|l| format!("--{l}"))
                .or_else(positional)
                .unwrap_or_else(|| id.to_string())
        })
    })
}

/// [`parse_args`], also returning clap's matches: they tell a flag given on the command line
/// from a default or an environment variable (`meeting --resume` needs to know).
pub fn parse_args_with_matches<T: clap::Parser>(program: &'static str) -> (T, clap::ArgMatches) {
    parse_args_rewritten(program, |argv| argv, &[])
}

/// [`parse_args_with_matches`] of the command line as `rewrite` gives it (`meeting` turns its
/// mode flags into its subcommands: [`mode_flags_to_subcommands`]). `why_not` says, per
/// subcommand (`meeting resume`), why an argument it does not take is refused.
pub fn parse_args_rewritten<T: clap::Parser>(
    program: &'static str,
    rewrite: impl FnOnce(Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString>,
    why_not: &[(&str, &str)],
) -> (T, clap::ArgMatches) {
    // The stdin readers name the program in their terminal hint.
    crate::io::set_program(program);
    let mut cmd = command::<T>(program);
    let argv = rewrite(args_os());
    if let Some(kind) = generate_request(&argv) {
        print_generated(&mut cmd, program, kind);
    }
    let parsed = cmd
        .try_get_matches_from(argv)
        .and_then(|m| T::from_arg_matches(&m).map(|args| (args, m)));
    match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            // A list clap puts on the lines after (`the following required arguments were
            // not provided:` and each argument indented), kept on the one line.
            let listed: Vec<&str> = text
                .lines()
                .skip(1)
                .take_while(|l| l.starts_with("  "))
                .map(str::trim)
                .collect();
            let first = match (first.strip_suffix(':'), listed.is_empty()) {
                (Some(head), false) => format!("{head}: {}", listed.join(", ")),
                _ => first.to_string(),
            };
            let first = first.as_str();
            // The help to see is the subcommand's when the error is one of its flags
            // (`Usage: meeting resume [OPTIONS] <DIR>`).
            let usage = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("Usage: "))
                .map(|u| {
                    u.split_whitespace()
                        .take_while(|w| !w.starts_with(['[', '<', '-']))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .filter(|u| u.starts_with(program))
                .unwrap_or_else(|| program.to_string());
            // An argument a subcommand does not take: named, with why.
            let unexpected = match (e.kind(), e.get(clap::error::ContextKind::InvalidArg)) {
                (ErrorKind::UnknownArgument, Some(clap::error::ContextValue::String(arg)))
                    if usage != program =>
                {
                    let arg = if arg.starts_with('-') {
                        arg.split('=').next().unwrap_or(arg).to_string()
                    } else {
                        format!("{arg:?}")
                    };
                    let why = why_not
                        .iter()
                        .find(|(sub, _)| *sub == usage)
                        .map(|(_, why)| format!(": {why}"))
                        .unwrap_or_default();
                    Some(format!("{arg} cannot be used with {usage}{why}"))
                }
                _ => None,
            };
            // clap's "did you mean" (a similar flag or value) is on a line of its own.
            let tip = text
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("tip: ") && l.contains("similar"));
            let msg = match (unexpected, tip) {
                // A flag the mode does not take: a similar one of the mode is no help.
                (Some(why), _) => why,
                (None, Some(tip)) => format!("{first}; {tip}"),
                (None, None) => first.to_string(),
            };
            crate::note!("{program}: {msg} (see {usage} --help)");
            std::process::exit(2);
        }
    }
}

/// The command line with each mode flag of `modes` (`--resume DIR` as `("--resume", "resume",
/// 1)`: the flag, its subcommand, how many values it takes) turned into its subcommand, put
/// first with its values: `meeting --quiet --resume runs/x` reads as `meeting resume runs/x
/// --quiet`, so the old spellings keep working and clap refuses a flag the mode does not take.
/// The first mode flag found is the one; nothing after `--` is looked at.
pub fn mode_flags_to_subcommands(
    argv: Vec<std::ffi::OsString>,
    modes: &[(&str, &str, usize)],
) -> Vec<std::ffi::OsString> {
    let end = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
    for (i, arg) in argv.iter().enumerate().take(end).skip(1) {
        let text = arg.to_string_lossy();
        for &(flag, sub, n) in modes {
            let (given, inline) = match text.split_once('=') {
                Some((f, v)) if n == 1 => (f == flag, Some(std::ffi::OsString::from(v))),
                _ => (text == flag, None),
            };
            if !given {
                continue;
            }
            let mut rest = argv.clone();
            let mut values: Vec<std::ffi::OsString> = match inline {
                Some(v) => vec![v],
                None => rest.drain(i + 1..(i + 1 + n).min(rest.len())).collect(),
            };
            rest.remove(i);
            let mut out = vec![rest.remove(0), sub.into()];
            out.append(&mut values);
            out.extend(rest);
            return out;
        }
    }
    argv
}

/// The command line [`parse_args`] reads, when it is not the process's own: set once by the
/// multicall `agent-meeting` for `agent-meeting PROGRAM ARGS...` (the program's name first).
static ARGS: std::sync::OnceLock<Vec<std::ffi::OsString>> = std::sync::OnceLock::new();

/// Run the program as if started with `argv` (its name first) instead of the process's own
/// command line; only the first call counts.
pub fn set_args(argv: Vec<std::ffi::OsString>) {
    let _ = ARGS.set(argv);
}

/// The command line: the one given to [`set_args`], else the process's.
fn args_os() -> Vec<std::ffi::OsString> {
    match ARGS.get() {
        Some(argv) => argv.clone(),
        None => std::env::args_os().collect(),
    }
}

fn usage_exit(program: &str, msg: &str) -> ! {
    crate::note!("{program}: {msg} (see {program} --help)");
    std::process::exit(2);
}

/// What `--generate` prints: a man page (roff) or a completion script for one shell.
pub const GENERATE_KINDS: [&str; 5] = [
    "man",
    "complete-bash",
    "complete-zsh",
    "complete-fish",
    "complete-powershell",
];

/// The variables every program that calls a model reads, for `--help` (docs/design/llm.md#llm-layer).
const ENVIRONMENT: &str = "Environment:
  OPENAI_API_KEY, ANTHROPIC_API_KEY    API keys (read from the environment only, never written)
  OPENAI_BASE_URL, ANTHROPIC_BASE_URL  API base URLs (any OpenAI-compatible server)
  OPENAI_MODEL, ANTHROPIC_MODEL        the model when neither --model nor the board names one
  AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT, OPENAI_API_VERSION
                                       --provider azure: key, resource endpoint, api-version
  OLLAMA_HOST                          --provider ollama: the server [default: 127.0.0.1:11434]
  OLLAMA_MODEL                         --provider ollama: the model (no default)
  OLLAMA_API_KEY                       --provider ollama: a key, for a hosted or proxied server
  OLLAMA_CONTEXT_LENGTH                --provider ollama: the smallest context sent
  AGENT_MEETING_HEADERS                extra request headers, one 'Name: value' per line
  AGENT_MEETING_CONFIG                 config file [default: ~/.config/agent-meeting/config.yaml]
  AGENT_MEETING_PROMPTS                a folder of prompt templates replacing the built-in ones
  NO_COLOR                             no colour on stderr

";

/// Exit codes of every program but `meeting` (docs/design/flow.md#exit-codes-and-errors).
const EXIT_CODES: &str = "Exit codes:
  0  success          1  runtime failure (provider, disk, ...)
  2  bad usage or invalid input (one line on stderr: program, file, field, what was expected)";

/// `meeting`'s exit codes: the stages' and the signals that stop it (the table:
/// docs/design/flow.md#exit-codes-and-errors; `tests::help_exit_codes_are_the_codes_the_programs_exit_with`).
const MEETING_EXIT_CODES: &str = "Exit codes:
  0  success          1  runtime failure, or no model call returned a usable answer
  2  bad usage or invalid input, or a stage that exited 2
  3  no decision: the report is saved, but it is the fallback or makes no choice
     (\"none of these\" with its reason is a decision: 0)
  4  waiting for a person's answer (kind: human, no one there): meeting resume DIR --answer FILE
  5  not started: the day's spending cap (--max-cost-per-day) is spent
  130, 143  stopped by SIGINT / SIGTERM, or 130 by q at a --step prompt (meeting resume DIR goes on)";

/// agent-turn's: the stages', and a person with no one there to answer (the same table).
const AGENT_TURN_EXIT_CODES: &str = "Exit codes:
  0  success          1  runtime failure (provider, disk, ...)
  2  bad usage or invalid input (one line on stderr: program, file, field, what was expected)
  4  a person (kind: human) is asked and no one is there: stdout holds what they are asked";

/// `--version`: the crate version, and the git commit when built from a checkout (build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    env!("AGENT_MEETING_COMMIT_SUFFIX")
);

/// A program's command as every program shows it: its own flags, plus `--generate` (so that
/// `--help`, the man page and the completions list it) and the version with the commit.
pub fn command<T: clap::CommandFactory>(program: &'static str) -> clap::Command {
    program_command(T::command(), program)
}

/// [`command`] of a command not derived (`agent-meeting`'s own, its programs and modes as
/// subcommands).
pub fn program_command(cmd: clap::Command, program: &'static str) -> clap::Command {
    let llm = cmd.get_arguments().any(|a| a.get_id() == "provider");
    let mut tail = String::new();
    if llm {
        tail.push_str(ENVIRONMENT);
    }
    tail.push_str(match program {
        "meeting" => MEETING_EXIT_CODES,
        "agent-turn" => AGENT_TURN_EXIT_CODES,
        _ => EXIT_CODES,
    });
    let after = match cmd.get_after_help() {
        Some(text) => format!("{text}\n\n{tail}"),
        None => tail,
    };
    let cmd = if llm {
        cmd.mut_arg("model", |a| {
            let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            a.help(format!(
                "{help} [default: {} for openai, {} for anthropic]",
                crate::llm::ProviderName::OpenAi
                    .default_model()
                    .unwrap_or("-"),
                crate::llm::ProviderName::Anthropic
                    .default_model()
                    .unwrap_or("-"),
            ))
        })
    } else {
        cmd
    };
    cmd.name(program).version(VERSION).after_help(after).arg(
        clap::Arg::new("generate")
            .long("generate")
            .value_name("KIND")
            .value_parser(GENERATE_KINDS)
            .action(clap::ArgAction::Set)
            .help_heading("Output")
            .help("Print a man page or a shell completion script to stdout and exit"),
    )
}

/// `--generate KIND` or `--generate=KIND` anywhere before a `--`: it wins over every other
/// flag, the way ripgrep's does (no other flag is checked, a required one may be missing).
/// `Some(Err)` when `--generate` has no value. `argv` starts with the program's name.
pub fn generate_request(argv: &[std::ffi::OsString]) -> Option<Result<String, &'static str>> {
    let mut args = argv.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(arg) = args.next() {
        if arg == "--" {
            return None;
        }
        if let Some(kind) = arg.strip_prefix("--generate=") {
            return Some(Ok(kind.to_string()));
        }
        if arg == "--generate" {
            return Some(
                args.next()
                    .map(|k| k.into_owned())
                    .ok_or("a value is required for '--generate <KIND>' but none was supplied"),
            );
        }
    }
    None
}

/// Print what [`generate_request`] asked for `cmd` and exit: 0, or 2 with the one-line usage
/// error (1 when stdout cannot be written).
pub fn print_generated(cmd: &mut clap::Command, program: &str, request: Result<String, &str>) -> ! {
    let result = request
        .map_err(|e| e.to_string())
        .and_then(|kind| generate(cmd, program, &kind));
    match result {
        Ok(text) => match write_stdout(&text) {
            Ok(()) => std::process::exit(0),
            Err(e) if is_broken_pipe(&e) => std::process::exit(0),
            Err(e) => {
                crate::note!("{program}: {e:#}");
                std::process::exit(1);
            }
        },
        Err(msg) => usage_exit(program, &msg),
    }
}

/// Render what `--generate KIND` prints for `cmd`, or the one-line usage error. A mode's man
/// page (`program` `agent-meeting github`) is named as git names its commands' pages:
/// agent-meeting-github(1), its synopsis the command as typed.
pub fn generate(cmd: &mut clap::Command, program: &str, kind: &str) -> Result<String, String> {
    use clap_complete::Shell;
    let shell = match kind {
        "man" => {
            let mut page = cmd.clone();
            if program.contains(' ') {
                page = page
                    .display_name(program.replace(' ', "-"))
                    .bin_name(program);
            }
            let mut out = Vec::new();
            clap_mangen::Man::new(page.clone())
                .render(&mut out)
                .map_err(|e| e.to_string())?;
            return String::from_utf8(out)
                .map(|text| man_verbatim(man_pages_named(text, &page)))
                .map_err(|e| e.to_string());
        }
        "complete-bash" => Shell::Bash,
        "complete-zsh" => Shell::Zsh,
        "complete-fish" => Shell::Fish,
        "complete-powershell" => Shell::PowerShell,
        other => {
            return Err(format!(
                "invalid value '{other}' for '--generate <KIND>' [possible values: {}]",
                GENERATE_KINDS.join(", ")
            ))
        }
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, cmd, program, &mut out);
    let script = String::from_utf8(out).map_err(|e| e.to_string())?;
    Ok(match shell {
        Shell::Bash => bash_cases_named(script, program),
        _ => script,
    })
}

/// clap_complete's bash script of a command whose name has a `-` (`agent-meeting`) names each
/// subcommand's `case` with that `-` as `__subcmd__` (`agent__subcmd__meeting__subcmd__github)`),
/// while the loop that finds the subcommand writes it `__` (`agent__meeting__subcmd__github`):
/// no subcommand's flags would complete. The cases named as the loop names them.
fn bash_cases_named(script: String, program: &str) -> String {
    if !program.contains('-') {
        return script;
    }
    let as_case = format!("\n        {}__subcmd__", program.replace('-', "__subcmd__"));
    let as_loop = format!("\n        {}__subcmd__", program.replace('-', "__"));
    script.replace(&as_case, &as_loop)
}

/// The man page with each subcommand that names its own page (`display_name`: `pm-step` under
/// `agent-meeting`) listed by that page, not clap_mangen's `<command>-<subcommand>(1)`.
fn man_pages_named(page: String, cmd: &clap::Command) -> String {
    let parent = cmd.get_display_name().unwrap_or_else(|| cmd.get_name());
    // As roff has them: clap_mangen escapes each `-`.
    let roff = |s: &str| s.replace('-', "\\-");
    cmd.get_subcommands()
        .filter_map(|sub| Some((sub.get_name(), sub.get_display_name()?)))
        .fold(page, |page, (name, own)| {
            page.replace(
                &format!("\n{}(1)\n", roff(&format!("{parent}-{name}"))),
                &format!("\n{}(1)\n", roff(own)),
            )
        })
}

/// The man page with its EXTRA section (the examples, the environment, the exit codes: the
/// `after_help` text) unfilled: clap_mangen writes each line as a text line, which man fills,
/// wrapping a long example mid-command and justifying it with extra spaces; between `.nf` and
/// `.fi` every line stays as `--help` shows it and as it is copied.
fn man_verbatim(page: String) -> String {
    const EXTRA: &str = "\n.SH EXTRA\n";
    let Some(start) = page.find(EXTRA).map(|i| i + EXTRA.len()) else {
        return page;
    };
    let end = page[start..]
        .find("\n.SH ")
        .map_or(page.len(), |i| start + i + 1);
    format!(
        "{}.nf\n{}.fi\n{}",
        &page[..start],
        &page[start..end],
        &page[end..]
    )
}

/// Print the board a stage made from stdin's (its error names `<stdin>`).
pub fn write_stage_board(
    board: crate::Result<crate::model::Board>,
    output: &OutputArgs,
) -> anyhow::Result<()> {
    let board = board.map_err(|e| e.or_file("<stdin>"))?;
    write_stdout(&crate::io::to_json_line(&board, output.pretty))
}

/// The config file's `deciders` (a decision record's default decision-makers).
pub fn config_deciders() -> crate::Result<Vec<String>> {
    Ok(crate::settings::config::load()?.config.deciders.clone())
}

#[cfg(test)]
mod tests {
    use super::mode_flags_to_subcommands;

    fn rewrite(argv: &[&str]) -> Vec<String> {
        let modes = [
            ("--resume", "resume", 1),
            ("--compare", "compare", 2),
            ("--show-config", "show-config", 0),
        ];
        mode_flags_to_subcommands(argv.iter().map(Into::into).collect(), &modes)
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// A mode flag anywhere becomes its subcommand, first, with its values; `--flag=value`
    /// too; nothing after `--`, and a command line without one is left as it is.
    #[test]
    fn mode_flags_become_subcommands() {
        assert_eq!(
            rewrite(&["meeting", "--quiet", "--resume", "runs/x", "--stage", "a="]),
            ["meeting", "resume", "runs/x", "--quiet", "--stage", "a="]
        );
        assert_eq!(
            rewrite(&["meeting", "--resume=runs/x"]),
            ["meeting", "resume", "runs/x"]
        );
        assert_eq!(
            rewrite(&["meeting", "-a", "arch", "--compare", "A", "B"]),
            ["meeting", "compare", "A", "B", "-a", "arch"]
        );
        assert_eq!(
            rewrite(&["meeting", "--topic", "t", "--show-config"]),
            ["meeting", "show-config", "--topic", "t"]
        );
        assert_eq!(
            rewrite(&["meeting", "--", "--resume"]),
            ["meeting", "--", "--resume"]
        );
        assert_eq!(rewrite(&["meeting", "Adopt?"]), ["meeting", "Adopt?"]);
    }

    /// The codes a help text lists, row by row: `(codes, what they mean)`. A row is
    /// `  <code>[, <code>]  <meaning>`; a line may hold two rows, set apart by spaces.
    fn exit_code_rows(help: &str) -> Vec<(Vec<u8>, String)> {
        let head = regex::Regex::new(r"(?:^  |\s{2,})(\d{1,3}(?:, \d{1,3})*)  ").unwrap();
        let mut rows = Vec::new();
        for line in help.lines().skip_while(|l| *l != "Exit codes:").skip(1) {
            let heads: Vec<_> = head.captures_iter(line).collect();
            for (i, c) in heads.iter().enumerate() {
                let whole = c.get(0).unwrap();
                let next = heads.get(i + 1).map(|n| n.get(0).unwrap().start());
                let end = next.unwrap_or(line.len());
                let codes = c[1].split(", ").map(|n| n.parse().unwrap()).collect();
                rows.push((codes, line[whole.end()..end].trim().to_string()));
            }
        }
        rows
    }

    /// Every code a program's `--help` lists is one its code exits with, said in the words
    /// of that code, and every code it exits with is listed: the codes come from
    /// `Error::exit_code` (what `main_with` exits with), `WAITING_EXIT` and the signals that
    /// stop a meeting (`driver::stop`: it dies of the signal, 128 + its number). The one
    /// table with the details is docs/design/flow.md#exit-codes-and-errors.
    #[test]
    fn help_exit_codes_are_the_codes_the_programs_exit_with() {
        use crate::error::{Error, WAITING_EXIT};
        use signal_hook::consts::{SIGINT, SIGTERM};
        let text = String::new;
        let waiting = Error::Waiting {
            message: text(),
            document: text(),
        };
        assert_eq!(waiting.exit_code(), WAITING_EXIT);
        let signal = |s: i32| u8::try_from(128 + s).unwrap();
        // (code, words its row says, the programs that exit with it)
        let every = &["meeting", "agent-turn", "pm-step"][..];
        let (meeting, human) = (&["meeting"][..], &["meeting", "agent-turn"][..]);
        let (input, none) = (Error::input("f", "", "m"), Error::NoDecision(text()));
        let facts: Vec<(u8, &str, &[&str])> = vec![
            (0, "success", every),
            (Error::Runtime(text()).exit_code(), "runtime failure", every),
            (Error::NotResumable(text()).exit_code(), "runtime", every),
            (Error::Usage(text()).exit_code(), "bad usage", every),
            (input.exit_code(), "invalid input", every),
            (none.exit_code(), "no decision", meeting),
            (waiting.exit_code(), "kind: human", human),
            (Error::Stopped(text()).exit_code(), "q at a --step", meeting),
            (Error::DaySpent(text()).exit_code(), "spending cap", meeting),
            (signal(SIGINT), "SIGINT", meeting),
            (signal(SIGTERM), "SIGTERM", meeting),
        ];
        // pm-step stands for every program `command` gives EXIT_CODES.
        for (program, help) in [
            ("meeting", super::MEETING_EXIT_CODES),
            ("agent-turn", super::AGENT_TURN_EXIT_CODES),
            ("pm-step", super::EXIT_CODES),
        ] {
            let rows = exit_code_rows(help);
            let listed: std::collections::BTreeSet<u8> =
                rows.iter().flat_map(|(codes, _)| codes.clone()).collect();
            let real: std::collections::BTreeSet<u8> = facts
                .iter()
                .filter(|(_, _, who)| who.contains(&program))
                .map(|(code, _, _)| *code)
                .collect();
            assert_eq!(listed, real, "{program}: the codes listed, the real ones");
            for (code, words, who) in &facts {
                if !who.contains(&program) {
                    continue;
                }
                let (_, meaning) = rows.iter().find(|(codes, _)| codes.contains(code)).unwrap();
                assert!(
                    meaning.contains(words),
                    "{program}: exit {code} should say {words:?}, it says {meaning:?}"
                );
            }
        }
        // The two signals in one row, in the order its words name them.
        let rows = exit_code_rows(super::MEETING_EXIT_CODES);
        let (codes, meaning) = rows.iter().find(|(c, _)| c.len() == 2).unwrap();
        assert_eq!(codes, &[signal(SIGINT), signal(SIGTERM)]);
        assert!(meaning.contains("SIGINT / SIGTERM"), "{meaning}");
    }
}
