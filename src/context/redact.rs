//! Secrets inside the text that is sent to models (DESIGN.md#context-collection): every
//! excerpt, and the meeting's own brief and decision packet, is scanned before it enters the
//! packet, and each secret is replaced by `[REDACTED:<kind>]`, so the model never sees it and
//! a quote is verified against what the model saw.
//!
//! Two ways to know a secret, after the public scanners' rule sets:
//! - **By its shape**, for tokens whose format is documented (gitleaks,
//!   github.com/gitleaks/gitleaks, `config/gitleaks.toml`): `private-key` (PEM, OpenSSH, PGP,
//!   SSH2 `---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----` and PuTTY `.ppk` blocks), `jwt`,
//!   `anthropic-key`, `openai-key` (legacy, `sk-proj-`, `sk-svcacct-`, `sk-admin-`,
//!   `sk-None-`), `github-token`, `aws-access-key-id`, `slack-token` (`xox?-`, `xapp-`,
//!   `xoxe.`), `slack-webhook`, `google-api-key`, `google-oauth-token` (`ya29.`, `1//0`,
//!   `GOCSPX-`), `stripe-key`, `gitlab-token`, `npm-token`, `pypi-token`,
//!   `huggingface-token`, `sendgrid-key`, and `service-token` (Vault `hvs.`, Grafana,
//!   DigitalOcean, Shopify, age, Databricks, Pulumi, Linear, xAI, Groq, Replicate, Postman,
//!   RubyGems, Atlassian, Doppler, Sentry, 1Password, Twilio, Mailgun, Telegram bot tokens,
//!   Azure AD client secrets, Discord and Teams webhooks). The prefixes are kept strict and the lengths loosened, so test and example
//!   tokens count too.
//! - **By the name it is given**, whatever the value looks like (detect-secrets,
//!   github.com/Yelp/detect-secrets: `plugins/keyword.py`'s denylist and its assignment
//!   forms, `basic_auth.py`, `keyword_xml.py`; gitleaks' `generic-api-key`,
//!   `curl-auth-header` and `curl-auth-user`): a key whose last word says secret
//!   (`secret_name`: password, passwd, passphrase, secret, token, credentials, `*_pass`,
//!   `*_pwd`, any `*_key` but the ones that name a row or a public half, `auth` and
//!   `client-key-data` with base64-like values) assigned in shell, dotenv, YAML (also block
//!   scalars and continuation lines), TOML, JSON (also with escaped quotes, as in notebooks),
//!   INI, PHP, Python, JS, Java properties, XML elements and `key=… value=…` attributes,
//!   Dockerfile `ENV`, SQL `WITH PASSWORD '…'`, and CSV columns (`secret-assignment`); command-line credentials (`--password x`,
//!   `mysql -p…`, `curl -u user:…`, `redis-cli -a`, `sshpass -p`, `sqlcmd -P`; `command-line-secret`);
//!   HTTP headers (`X-Api-Key: …`, `Authorization: Token …`; `header-secret`, and
//!   `bearer-token`, `basic-auth`); URL userinfo in every form (`url-password`) and signed URL
//!   signatures (`sig=`).
//!
//! Not secrets (kept as written, so prose and configuration that names secrets stays
//! readable): empty values, placeholders (`${X}`, `$X`, `%X%`, `{{ x }}`, `<x>`, `your-…`,
//! `…`, `xxxx`, `****`, and words such as `null`, `true`, `string`, `required`, `example`,
//! `dummy`), references to where a secret lives (`os.environ[…]`, `get_token()`,
//! `settings.SECRET`, `process.env.TOKEN`, a variable named like a secret, a path), and
//! prose labels (`"forgot_password": "Forgot your password?"`). Well-known defaults such as
//! `changeme` are redacted: wherever they are deployed they are the password.
//!
//! Not covered (DESIGN.md#context-collection says why): secrets with neither a documented
//! shape nor a secret-sounding name (`.pgpass` fields, a Terraform variable's `default`, a
//! secret in a plain sentence), password hashes (`$2b$…`), secrets split across separate
//! assignments, and encodings other than base64 of a value that has a secret name.
//!
//! The meeting's own topic, brief and decision packet pass the same filter (`redact_input`).
//!
//! Cost: one `RegexSet` pass of the rules' triggers over the text, then only the rules whose
//! trigger matched run their own regex; every regex runs in time linear in the text, and the
//! checks on a match look at its line and the few lines after it.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::LazyLock;

use regex::{Captures, Match, Regex, RegexSet};

use super::decode::Text;

/// Finds the secret ranges of one match of a rule's pattern.
type Finder = fn(&str, &Captures, &mut Vec<Range<usize>>);

/// One kind of secret: a pattern, and what in its match is the secret. `trigger` is a cheap
/// pattern that matches wherever `pattern` does (a keyword, a prefix, as gitleaks' `keywords`):
/// the one `RegexSet` pass over the text is made of triggers, and a rule whose trigger did not
/// match is not run.
struct Rule {
    kind: &'static str,
    trigger: &'static str,
    pattern: &'static str,
    find: Finder,
}

/// The trigger of the name-based rules: a word a secret's name ends in.
const KEYWORDS: &str = r"(?i-u:pass|pwd|secret|token|key|cred|auth|sig|contrase)";

/// The broad ending of a key name that may hold a secret; `is_secret_name` decides.
macro_rules! kw {
    () => {
        r"(?:pass(?:word|wd|phrase|code)?|pwd|secret|token|key|credentials?|creds|auth|contrase(?:n|ñ)a|key[_.\-]?data)"
    };
}

/// In order of precedence: where two rules' secrets overlap the earlier rule's wins (so
/// `api_key = "sk-…"` is an `openai-key`, and a token inside a key block is the block).
const RULES: [Rule; 37] = [
    Rule {
        kind: "private-key",
        trigger: r"PRIVATE KEY",
        // A PEM or SSH2 header followed by key material (so a header quoted in prose stays: at
        // most a few header lines, escaped or real line breaks, then 16 base64 characters),
        // to its END line, or to the end of the text when there is none (the excerpt cut it).
        pattern: r"(?s)(?:-----|---- )BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?(?:-----| ----)(?:\\n|[A-Za-z-]{1,30}:[^\n]*\n|[^A-Za-z0-9+/=]){0,12}?[A-Za-z0-9+/=]{16}(?:.*?(?:-----|---- )END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?(?:-----| ----)|.*)",
        find: whole,
    },
    Rule {
        kind: "private-key",
        trigger: r"PuTTY-User-Key-File-",
        // PuTTY's `.ppk`: from its first line to its `Private-MAC` line, when a
        // `Private-Lines` line follows the header.
        pattern: r"PuTTY-User-Key-File-[0-9]+:[^\n]*",
        find: putty_key,
    },
    Rule {
        kind: "jwt",
        trigger: r"eyJ",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.(?:[A-Za-z0-9_-]{8,}={0,2})?",
        find: whole,
    },
    Rule {
        kind: "anthropic-key",
        trigger: r"sk-ant-",
        pattern: r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        find: whole,
    },
    Rule {
        kind: "openai-key",
        trigger: r"sk-",
        // `sk-` and at least 20 letters and digits (legacy), or a project, service-account,
        // admin or `None` key; a hyphenated word after `sk-` is prose.
        pattern: r"(?-u:\b)sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20,}(?-u:\b))",
        find: whole,
    },
    Rule {
        kind: "github-token",
        trigger: r"gh[pousr]_|github_pat_",
        pattern: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
        find: whole,
    },
    Rule {
        kind: "aws-access-key-id",
        trigger: r"AKIA|ASIA|ABIA|ACCA|A3T",
        pattern: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?-u:\b)",
        find: whole,
    },
    Rule {
        kind: "slack-token",
        trigger: r"xox|xapp-",
        pattern: r"(?-u:\b)(?:xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}|xoxe\.xox[bp]-[0-9]-[A-Za-z0-9]{20,})",
        find: whole,
    },
    Rule {
        kind: "slack-webhook",
        trigger: r"hooks\.slack\.com",
        pattern: r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}",
        find: whole,
    },
    Rule {
        kind: "google-api-key",
        trigger: r"AIza",
        pattern: r"(?-u:\b)AIza[0-9A-Za-z_-]{30,}",
        find: whole,
    },
    Rule {
        kind: "google-oauth-token",
        trigger: r"ya29\.|1//0|GOCSPX-",
        // An access token, a refresh token, an OAuth client secret.
        pattern: r"(?-u:\b)(?:ya29\.[0-9A-Za-z_-]{20,}|1//0[0-9A-Za-z_-]{30,}|GOCSPX-[0-9A-Za-z_-]{20,})",
        find: whole,
    },
    Rule {
        kind: "stripe-key",
        trigger: r"sk_|rk_",
        pattern: r"(?-u:\b)(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{10,}",
        find: whole,
    },
    Rule {
        kind: "gitlab-token",
        trigger: r"gl[a-z]+-",
        pattern: r"(?-u:\b)gl(?:pat|dt|rt|ptt|cbt|imt|agent|oas|ft|soat)-[A-Za-z0-9_-]{20,}",
        find: whole,
    },
    Rule {
        kind: "npm-token",
        trigger: r"npm_",
        pattern: r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
        find: whole,
    },
    Rule {
        kind: "pypi-token",
        trigger: r"pypi-AgEIcHlwaS5vcmc",
        pattern: r"(?-u:\b)pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}",
        find: whole,
    },
    Rule {
        kind: "huggingface-token",
        trigger: r"hf_",
        pattern: r"(?-u:\b)hf_[A-Za-z0-9]{30,}(?-u:\b)",
        find: whole,
    },
    Rule {
        kind: "sendgrid-key",
        trigger: r"SG\.",
        pattern: r"(?-u:\b)SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}",
        find: whole,
    },
    Rule {
        kind: "service-token",
        trigger: r"hv[sbr]\.|gl(?:sa|c)_|_v1_|shp|AGE-SECRET-KEY-1|dapi|pul-|lin_api_|xai-|gsk_|r8_|PMAK-|rubygems_|ATATT3|dp\.|sntrys_|ops_eyJ|:AA|Q~|SK|key-|discord|webhook",
        // gitleaks' rules for these services, by prefix.
        pattern: r"(?-u:\b)(?:hv[sbr]\.[A-Za-z0-9_-]{24,}|gl(?:sa|c)_[A-Za-z0-9_=+/-]{32,}|do[opr]_v1_[a-f0-9]{64}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}|dapi[a-f0-9]{32}|pul-[a-f0-9]{40}|lin_api_[A-Za-z0-9]{40}|xai-[A-Za-z0-9]{40,}|gsk_[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}|rubygems_[a-f0-9]{48}|ATATT3[A-Za-z0-9_=-]{100,}|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}|sntrys_eyJ[A-Za-z0-9+/=_-]{50,}|ops_eyJ[A-Za-z0-9+/=]{100,}|[0-9]{8,10}:AA[A-Za-z0-9_-]{33}|[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}|SK[0-9a-f]{32}|key-[0-9a-f]{32}|https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{20,}|https://[A-Za-z0-9.-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9\x40/-]{20,})",
        find: whole,
    },
    Rule {
        kind: "bearer-token",
        trigger: r"(?i-u:bearer)",
        // `Bearer <token>` (an HTTP header, a curl line): the word stays.
        pattern: r"(?i)(?-u:\b)bearer[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)",
        find: letter_and_digit,
    },
    Rule {
        kind: "basic-auth",
        trigger: r"(?i-u:authorization)",
        // `Authorization: Basic <base64 user:password>` (a header, a curl line).
        pattern: r"(?i)authorization[ \t]*[:=][ \t]*[\x22']?basic[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})",
        find: whole,
    },
    Rule {
        kind: "url-password",
        trigger: r"://",
        // `scheme://user:password@host`, the user possibly empty, the password possibly with
        // `/` or `:` in it; the user name stays.
        pattern: r"(?i)(?-u:\b)[a-z][a-z0-9+.-]{1,20}://(?P<user>[^\s/:@'\x22<>]*):(?P<secret>[^\s@'\x22<>]+)@",
        find: url_password,
    },
    Rule {
        kind: "secret-assignment",
        trigger: r"(?i-u:sig)",
        // A signed URL's signature (Azure SAS `sig=`, S3 and GCS presigned URLs).
        pattern: r"(?i)[?&;](?:sig|signature|x-amz-signature|x-goog-signature)=(?P<secret>[^&\s\x22'#<>]+)",
        find: real_value,
    },
    Rule {
        kind: "header-secret",
        trigger: KEYWORDS,
        // An HTTP header that carries a credential, as written in a curl line, an HTTP file
        // or a client's config: the header name and the scheme stay.
        pattern: r"(?i)(?:^|[\s\x22'{,;(\[])(?P<name>(?:proxy-)?authorization|x-[a-z0-9-]*(?:key|token|secret|auth|signature|password)|[a-z0-9-]*api-?key|[a-z0-9-]*-token|api-?token)[\x22']?[ \t]*:[ \t]*[\x22']?(?:(?:bearer|basic|token|digest|apikey|api-key|key|sso-key|splunk|otp|hmac|negotiate|ntlm)[ \t]+)?(?P<secret>[A-Za-z0-9._~+/=:@%-]+)",
        find: tokenish_value,
    },
    Rule {
        kind: "command-line-secret",
        trigger: r"(?i-u:curl)",
        // `curl -u user:password` (and `--user`, `--proxy-user`, `-U`), continuation lines
        // included: the user stays.
        pattern: r#"(?i)(?-u:\b)curl(?-u:\b)(?:[^\n]|\\\r?\n)*?[ \t](?:-u|--user|--proxy-user|-U)(?:=|[ \t]*)(?P<cred>"[^"\n]*"|'[^'\n]*'|[^\s"'`]+)"#,
        find: user_password,
    },
    Rule {
        kind: "command-line-secret",
        trigger: r"mysql|mariadb",
        // `mysql -p…` (a `-p` alone prompts; `-P` is the port, so case matters).
        pattern: r#"(?-u:\b)(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb|mariadb-dump)(?-u:\b)[^\n]*?[ \t]-p(?P<secret>"[^"\n]+"|'[^'\n]+'|[^\s"'`-][^\s"'`]*)"#,
        find: unquoted_real,
    },
    Rule {
        kind: "command-line-secret",
        trigger: r"redis-cli|sshpass|docker|mongo|sqlcmd|-pass",
        // Programs whose short option takes a password: `openssl` with `-passin pass:`,
        // `redis-cli -a`, `sshpass -p`, `docker login -p`, `mongo -p`, `sqlcmd -P`.
        pattern: r#"(?:(?-u:\b)(?:redis-cli[^\n]*?[ \t]-a|sshpass[^\n]*?[ \t]-p|docker[ \t]+login[^\n]*?[ \t]-p|mongo(?:sh|dump|restore|import|export)?[^\n]*?[ \t]-p|sqlcmd[^\n]*?[ \t]-P)|[ \t]-pass(?:in|out)[ \t]+pass:)[ \t]*(?P<secret>"[^"\n]+"|'[^'\n]+'|[^\s"'`-][^\s"'`]*)"#,
        find: unquoted_real,
    },
    Rule {
        kind: "command-line-secret",
        trigger: KEYWORDS,
        // `--password value`, `--token value`, `--client-secret value` (the `=` form is an
        // assignment below).
        pattern: r#"(?i)(?:^|[ \t\x22'])--?(?P<name>[a-z0-9-]*(?:pass(?:word|wd|phrase)?|pwd|token|secret|key|credentials?))[ \t]+(?P<secret>"[^"\n]+"|'[^'\n]+'|[^\s"'`<>|;&\\$-][^\s"'`|;&\\]*)"#,
        find: option_value,
    },
    Rule {
        kind: "secret-assignment",
        trigger: KEYWORDS,
        // YAML block scalars (`password: |` and the more indented lines after it).
        pattern: concat!(
            r#"(?im)^[ \t]*(?:-[ \t]+)?["']?(?P<name>[A-Za-z0-9_.\-]*"#,
            kw!(),
            r#")["']?[ \t]*:[ \t]*(?:![^\s]+[ \t]+)?[|>][-+0-9]*[ \t]*(?:#[^\n]*)?$"#
        ),
        find: yaml_block,
    },
    Rule {
        kind: "secret-assignment",
        trigger: KEYWORDS,
        // A key whose name says secret, a separator, a value in any common syntax; which
        // values count depends on the separator and where the key is (`assignment`).
        pattern: concat!(
            r#"(?im)(?P<pre>^|[^A-Za-z0-9_.\-])(?P<kq>\\?["'])?(?P<name>[A-Za-z0-9_.\-]*"#,
            kw!(),
            r#")(?:\\?["'])?\]?[ \t]*(?P<sep>:=|=>|=|:|,)[ \t]*(?:"#,
            r#"\((?P<py>(?:[ \t\r\n]*(?:"[^"\n]*"|'[^'\n]*'))+)[ \t\r\n]*\)"#,
            r#"|(?P<cat>"[^"\n]*"(?:[ \t]*\+?[ \t]*\\?\r?\n[ \t]*\+?[ \t]*"[^"\n]*")+)"#,
            r#"|"""(?P<tq>[^"]+)""""#,
            r#"|"(?P<dq>[^"\n]+)""#,
            r#"|'(?P<sq>[^'\n]+)'"#,
            r#"|\\"(?P<edq>(?:[^"\\\n]|\\[^"\n])+)\\""#,
            r#"|\\'(?P<esq>[^'\\\n]+)\\'"#,
            r#"|`(?P<bq>[^`$\n]+)`"#,
            r#"|"(?P<mdq>[A-Za-z0-9+/=_.~\-]+(?:\\?\r?\n[ \t]*[A-Za-z0-9+/=_.~\-]+)+)""#,
            r#"|(?P<bare>[^\s"'`;,&<>(){}\[\]|\\=][^\s"'`;,&\\(\[]*))"#
        ),
        find: assignment,
    },
    Rule {
        kind: "secret-assignment",
        trigger: KEYWORDS,
        // XML elements (`<password>…</password>`, Maven's `<db.password>`).
        pattern: concat!(
            r"(?i)<(?P<name>[A-Za-z0-9_.:\-]*",
            kw!(),
            r")(?:[ \t][^>\n]*)?>(?P<secret>[^<\n]+)</"
        ),
        find: named_value,
    },
    Rule {
        kind: "secret-assignment",
        trigger: KEYWORDS,
        // `key="ApiKey" value="…"` and `name="password" value="…"` (.NET appSettings, Spring
        // and Ant properties).
        pattern: concat!(
            r#"(?i)(?-u:\b)(?:key|name)[ \t]*=[ \t]*["'](?P<name>[A-Za-z0-9_.:\-]*"#,
            kw!(),
            r#")["'](?:[ \t]+value[ \t]*=[ \t]*["'](?P<secret>[^"'\n]+)["']|[^>\n]*>(?P<text>[^<\n]+)<)"#
        ),
        find: named_value,
    },
    Rule {
        kind: "secret-assignment",
        trigger: KEYWORDS,
        // A Kubernetes or Compose environment entry: `name: DB_PASSWORD` and, on the next
        // line, `value: …`.
        pattern: concat!(
            r#"(?im)name:[ \t]*["']?(?P<name>[A-Za-z0-9_.\-]*"#,
            kw!(),
            r#")["']?[ \t]*\r?\n[ \t]*value:[ \t]*(?P<secret>"[^"\n]+"|'[^'\n]+'|[^\s"'#|>][^\n]*)"#
        ),
        find: named_unquoted,
    },
    Rule {
        kind: "secret-assignment",
        trigger: KEYWORDS,
        // A (user, password) pair: `auth=("user", "…")` (Python requests, httpx).
        pattern: r#"(?i)(?-u:\b)(?:auth|basic_auth|http_auth|credentials)[ \t]*=[ \t]*\([ \t]*["'][^"'\n]*["'][ \t]*,[ \t]*["'](?P<secret>[^"'\n]+)["']"#,
        find: real_value,
    },
    Rule {
        kind: "secret-assignment",
        trigger: r"(?i-u:password|identified)",
        // SQL: `CREATE USER … WITH PASSWORD '…'`, `IDENTIFIED BY '…'`.
        pattern: r"(?i)(?-u:\b)(?:password|identified[ \t]+(?:with[ \t]+[A-Za-z0-9_]+[ \t]+)?by)[ \t]+'(?P<secret>[^'\n]+)'",
        find: real_value,
    },
    Rule {
        kind: "secret-assignment",
        trigger: KEYWORDS,
        // A Dockerfile's `ENV NAME value` (the `=` form is an assignment above).
        pattern: concat!(
            r"(?m)^[ \t]*ENV[ \t]+(?i:(?P<name>[A-Za-z0-9_.\-]*",
            kw!(),
            r"))[ \t]+(?P<secret>[^\s=][^\n]*)"
        ),
        find: named_unquoted,
    },
    Rule {
        kind: "secret-assignment",
        trigger: r"machine",
        // `.netrc` and `.git-credentials` style: `machine host login user password …`.
        pattern: r"(?-u:\b)machine[ \t\r\n]+\S+(?:[ \t\r\n]+login[ \t\r\n]+\S+)?[ \t\r\n]+password[ \t\r\n]+(?P<secret>[^\s`]+)",
        find: real_value,
    },
    Rule {
        kind: "secret-assignment",
        trigger: KEYWORDS,
        // A CSV header with a secret column (`Access key ID,Secret access key`): that column
        // of the rows below it.
        pattern: r#"(?im)^(?P<header>[^\n]*(?:pass(?:word|wd)?|secret|token|key)[ \t]*"?[ \t]*(?:,[^\n]*)?)$"#,
        find: csv_columns,
    },
];

static SET: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(RULES.iter().map(|r| r.trigger)).expect("redaction set"));
static REGEXES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|r| Regex::new(r.pattern).expect("redaction rule"))
        .collect()
});

// ---------------------------------------------------------------------------------------------
// Finders

/// The `secret` group (or `text`, its other place), else the whole match.
fn secret_of<'t>(c: &Captures<'t>) -> Match<'t> {
    c.name("secret")
        .or_else(|| c.name("text"))
        .or_else(|| c.get(0))
        .expect("a match")
}

fn whole(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    out.push(secret_of(c).range());
}

fn real_value(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = secret_of(c);
    if is_real_value(m.as_str()) {
        out.push(m.range());
    }
}

/// Bearer tokens are random: a word after "bearer" with no digit is prose.
fn letter_and_digit(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = secret_of(c);
    let v = m.as_str();
    if v.chars().any(|c| c.is_ascii_alphabetic()) && v.chars().any(|c| c.is_ascii_digit()) {
        out.push(m.range());
    }
}

/// A header value or an option's value: only something shaped like a credential, since the
/// same words ("X-Api-Key: required", "--token to pass") are common in prose.
fn tokenish_value(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = secret_of(c);
    let v = m.as_str();
    if is_real_value(v) && !is_reference(v) && tokenish(v) {
        out.push(m.range());
    }
}

/// The secret without the quotes around it, if it has any.
fn unquoted(m: Match) -> Range<usize> {
    let v = m.as_str();
    let r = m.range();
    if v.len() >= 2
        && (v.starts_with('"') && v.ends_with('"') || v.starts_with('\'') && v.ends_with('\''))
    {
        r.start + 1..r.end - 1
    } else {
        r
    }
}

fn unquoted_real(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let r = unquoted(secret_of(c));
    if is_real_value(&text[r.clone()]) && !is_reference(&text[r.clone()]) {
        out.push(r);
    }
}

/// `--password value`: the option names a secret and the value looks like one.
fn option_value(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    if secret_name(&c["name"]).is_none() {
        return;
    }
    let r = unquoted(secret_of(c));
    let v = &text[r.clone()];
    if is_real_value(v) && !is_reference(v) && tokenish(v) {
        out.push(r);
    }
}

/// `user:password` after `curl -u`: the part after the first colon.
fn user_password(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let r = unquoted(c.name("cred").expect("cred"));
    let Some(colon) = text[r.clone()].find(':') else {
        return;
    };
    let secret = r.start + colon + 1..r.end;
    if is_real_value(&text[secret.clone()]) && !is_reference(&text[secret.clone()]) {
        out.push(secret);
    }
}

/// `scheme://user:password@`: not a host and its port (`https://host:8080/a@b`).
fn url_password(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = secret_of(c);
    let v = m.as_str();
    let digits = v.bytes().take_while(u8::is_ascii_digit).count();
    let port = digits > 0 && (digits == v.len() || v.as_bytes()[digits] == b'/');
    if !port && is_real_value(v) {
        out.push(m.range());
    }
}

/// A value whose name (the `name` group) says secret.
fn named_value(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = secret_of(c);
    let v = m.as_str();
    if let Some(strength) = secret_name(&c["name"]) {
        if is_real_value(v) && !is_prose_label(v) && strength.accepts(v) {
            out.push(m.range());
        }
    }
}

/// A value, quoted or not, whose name (the `name` group) says secret.
fn named_unquoted(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let r = unquoted(secret_of(c));
    let v = trim_value(&text[r.clone()]);
    if let Some(strength) = secret_name(&c["name"]) {
        if is_real_value(v) && !is_reference(v) && strength.accepts(v) {
            out.push(r.start..r.start + v.len());
        }
    }
}

/// PuTTY's key file: from the header to the end of its `Private-MAC` line (or the text's end,
/// when the excerpt cut it), if a `Private-Lines` line comes within the next 40 lines.
fn putty_key(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = c.get(0).expect("a match");
    let mut pos = m.end();
    let mut private = false;
    for _ in 0..40 {
        let Some(next) = next_line(text, pos) else {
            break;
        };
        if text[next.clone()].starts_with("Private-Lines:") {
            private = true;
        }
        pos = next.end;
        if private && text[next.clone()].starts_with("Private-MAC:") {
            break;
        }
    }
    if private {
        out.push(m.start()..if pos >= text.len() { text.len() } else { pos });
    }
}

/// `password: |` and the lines after it that are indented more than the key, blank lines
/// included.
fn yaml_block(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let name = c.name("name").expect("name");
    if secret_name(name.as_str()).is_none() {
        return;
    }
    let key_col = name.start() - line_start(text, name.start());
    let mut pos = c.get(0).expect("a match").end();
    let mut block: Option<Range<usize>> = None;
    while let Some(next) = next_line(text, pos) {
        let line = text[next.clone()].trim_end();
        let content = line.trim_start_matches([' ', '\t']);
        pos = next.end;
        if content.is_empty() {
            continue;
        }
        let indent = line.len() - content.len();
        if indent <= key_col {
            break;
        }
        let end = next.start + line.len();
        block = Some(block.map_or(next.start + indent..end, |b| b.start..end));
    }
    if let Some(b) = block {
        if is_real_value(&text[b.clone()]) {
            out.push(b);
        }
    }
}

/// A key whose name says secret and its value (the assignment rule's groups). Quoted values
/// count anywhere, with any separator (`,` only between quoted key and value, as in
/// `define('DB_PASSWORD', '…')`). A bare value counts after `=`, `:=` or `=>` anywhere (to
/// the next space, `;`, `,` or `&`: `PGPASSWORD=… psql`, connection strings, query strings),
/// and to the end of the line on a config line (`password = …` with spaces, `db.password=…`);
/// after `:` only where a YAML key can be (the line's start, or in `{…}` after `{` or `,`), and
/// then alone on its line or, for an identifier key (`db_password:`), to the end of it, so
/// "Password: ask the on-call engineer" is prose. A bare value at the end of its line takes
/// the continuation lines after it (`\` at the end, or more indented token lines).
fn assignment(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let name = c.name("name").expect("name");
    let Some(strength) = secret_name(name.as_str()) else {
        return;
    };
    let sep = &c["sep"];
    let key_start = c.name("kq").map_or(name.start(), |m| m.start());
    let ls = line_start(text, key_start);
    let key_col = name.start() - ls;
    let before = text[ls..key_start].trim_start_matches([' ', '\t', '-']);
    let before = before.strip_prefix("export ").unwrap_or(before).trim();
    let at_line_start = before.is_empty() || before == "$";
    let flow = text[..key_start].trim_end().ends_with(['{', ',']);
    let quoted = ["py", "cat", "tq", "dq", "sq", "edq", "esq", "mdq", "bq"]
        .iter()
        .find_map(|g| c.name(g));
    // Code declares with a keyword (`let secret = …`): only a literal is a value there.
    let code = before
        .split_whitespace()
        .last()
        .is_some_and(|w| DECLARATIONS.contains(&w));
    if let Some(q) = quoted {
        // Backticks quote a value only in an assignment (a JS template string); after `:` they
        // are Markdown's inline code.
        if c.name("bq").is_some() && sep != "=" {
            return;
        }
        // `,` separates a name and its value only as a call's first two arguments.
        if sep == "," && !(c.name("kq").is_some() && text[..key_start].trim_end().ends_with('(')) {
            return;
        }
        let v = q.as_str();
        if is_real_value(v) && !is_prose_label(v) && strength.accepts(v) {
            out.push(q.range());
        }
        return;
    }
    let Some(bare) = c.name("bare") else {
        return;
    };
    // A call or an index (`getpass()`, `os.environ["X"]`) says where the secret comes from,
    // and an operator after the value makes it an expression.
    let next = text[bare.end()..line_end(text, bare.end())].trim_start();
    if sep == ","
        || code
        || text[bare.end()..].starts_with(['(', '['])
        || next.starts_with(['+', '*', '/', '%', '|', '?', '.', '<', '>', '=', '!'])
    {
        return;
    }
    let le = line_end(text, bare.end());
    let after = &text[bare.end()..le];
    let rest = after.trim_start();
    let alone = rest.is_empty() || rest.starts_with('#') && rest.len() < after.len();
    let mut end = bare.end();
    if sep == ":" {
        if !(at_line_start || flow) {
            // In a sentence ("log in with password: …"), only a credential-shaped value alone
            // at the end of its line.
            let v = trim_value(bare.as_str());
            if !(alone && v.len() >= 6 && has_digit_or_symbol(v)) {
                return;
            }
        } else if alone {
        } else if flow && rest.starts_with([',', '}']) {
            // `{password: String, …}` is a type, not a value.
            if !has_digit_or_symbol(bare.as_str()) || bare.as_str().contains(['<', '>']) {
                return;
            }
        } else if at_line_start && words(name.as_str()).len() > 1 {
            end = value_line_end(text, bare.end(), le);
        } else {
            return;
        }
    } else if at_line_start && !alone {
        let spaced = text[name.end()..bare.start()].contains([' ', '\t']);
        if spaced || name.as_str().contains('.') {
            end = value_line_end(text, bare.end(), le);
        }
    }
    let v = trim_value(&text[bare.start()..end]);
    if !is_real_value(v) || is_reference(v) || !strength.accepts(v) {
        return;
    }
    let mut range = bare.start()..bare.start() + v.len();
    if range.end == le || text[range.end..le].trim() == "\\" {
        range.end = continuation(text, key_col, range.end);
    }
    out.push(range);
}

/// The end of a value that runs to the end of its line: before a ` #` comment and trailing
/// blanks.
fn value_line_end(text: &str, from: usize, le: usize) -> usize {
    let line = &text[from..le];
    let cut = line
        .find(" #")
        .or_else(|| line.find("\t#"))
        .unwrap_or(line.len());
    from + line[..cut].trim_end().len()
}

/// A bare value without the `;`, `,` or closing brackets that end a statement.
fn trim_value(v: &str) -> &str {
    let mut v = v.trim_end().trim_end_matches([';', ',']);
    for (open, close) in [('(', ')'), ('[', ']'), ('{', '}')] {
        while v.ends_with(close) && !v.contains(open) {
            v = &v[..v.len() - 1];
        }
    }
    v
}

/// Line-split values: after a value that ends its line, the lines that continue it, either
/// because the line ends in `\` or because they are indented more than the key (a YAML plain
/// scalar) and hold one token of base64-like characters.
fn continuation(text: &str, key_col: usize, mut end: usize) -> usize {
    loop {
        let le = line_end(text, end);
        let backslash = text[end..le].trim() == "\\";
        let Some(next) = next_line(text, le) else {
            return end;
        };
        let line = text[next.clone()].trim_end();
        let content = line.trim_start_matches([' ', '\t']);
        let indent = line.len() - content.len();
        let token = content.trim_end_matches('\\').trim_end();
        if !(backslash || indent > key_col)
            || token.is_empty()
            || !token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+/=_.~-".contains(&b))
        {
            return end;
        }
        end = next.start + indent + token.len();
    }
}

/// Rows looked at under one CSV header.
const CSV_ROWS: usize = 1000;

/// A CSV header line (two or more short column names, one of them a secret's name) and the
/// rows under it: the fields of the secret columns, up to a blank line or a row with another
/// number of fields.
fn csv_columns(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let header = c.name("header").expect("header");
    let columns: Vec<&str> = header
        .as_str()
        .split(',')
        .map(|h| h.trim().trim_matches('"').trim())
        .collect();
    if columns.len() < 2
        || !columns.iter().all(|h| {
            !h.is_empty()
                && h.len() <= 40
                && h.split_whitespace().count() <= 4
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b" _-.".contains(&b))
        })
    {
        return;
    }
    let secret: Vec<usize> = (0..columns.len())
        .filter(|&i| secret_name(columns[i]).is_some())
        .collect();
    if secret.is_empty() {
        return;
    }
    let mut pos = header.end();
    // At most `CSV_ROWS` rows per header, so a file whose rows look like headers costs a
    // bounded amount per row.
    for _ in 0..CSV_ROWS {
        let Some(row) = next_line(text, pos) else {
            break;
        };
        pos = row.end;
        let line = text[row.clone()].trim_end_matches('\r');
        if line.trim().is_empty() || line.split(',').count() != columns.len() {
            break;
        }
        let mut at = row.start;
        for (i, field) in line.split(',').enumerate() {
            let value = field.trim().trim_matches('"');
            if secret.contains(&i)
                && !value.is_empty()
                && !value.contains(char::is_whitespace)
                && is_real_value(value)
                && !is_reference(value)
            {
                let start = at + field.find(value).unwrap_or(0);
                out.push(start..start + value.len());
            }
            at += field.len() + 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Lines

fn line_start(text: &str, i: usize) -> usize {
    let from = i.saturating_sub(LINE_WINDOW);
    match text.as_bytes()[from..i].iter().rposition(|&b| b == b'\n') {
        Some(p) => from + p + 1,
        None if from == 0 => 0,
        None => ceil_char_boundary(text, from),
    }
}

/// The end of the line holding `i`, before its `\n` (and a `\r` before that).
fn line_end(text: &str, i: usize) -> usize {
    let e = newline_after(text, i).unwrap_or_else(|| {
        let to = i.saturating_add(LINE_WINDOW);
        if to >= text.len() {
            text.len()
        } else {
            ceil_char_boundary(text, to)
        }
    });
    if e > i && text.as_bytes()[e - 1] == b'\r' {
        e - 1
    } else {
        e
    }
}

/// The line after the one that ends at or holds `pos`, without its line break.
fn next_line(text: &str, pos: usize) -> Option<Range<usize>> {
    let start = newline_after(text, pos)? + 1;
    if start >= text.len() {
        return None;
    }
    Some(start..line_end(text, start))
}

/// Lines are looked at up to this many bytes around a match, so that the checks on a match
/// cost a bounded amount even in a text of one huge line (minified JSON, a log without line
/// breaks), and redaction stays linear in the text.
const LINE_WINDOW: usize = 4096;

/// The first `\n` at or after `i`, within the window.
fn newline_after(text: &str, i: usize) -> Option<usize> {
    let to = i.saturating_add(LINE_WINDOW).min(text.len());
    text.as_bytes()[i..to]
        .iter()
        .position(|&b| b == b'\n')
        .map(|p| i + p)
}

fn ceil_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

// ---------------------------------------------------------------------------------------------
// Names

/// What a secret name asks of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strength {
    /// Any value that is not a placeholder.
    Any,
    /// A name that is often a setting too (`auth: none`, `client-key-data`): only a value
    /// shaped like a credential.
    Tokenish,
}

impl Strength {
    fn accepts(self, v: &str) -> bool {
        self == Strength::Any || tokenish(v)
    }
}

/// The words of a key name, lowercase: split at `_`, `.`, `-`, spaces and camelCase humps
/// (`dbPassword` is `db password`, `PGPASSWORD` one word).
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if !ch.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if ch.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
        cur.extend(ch.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `*_key` names that hold no secret: a row's, a cache's or a public key's.
const NOT_SECRET_KEYS: [&str; 47] = [
    "public",
    "pub",
    "primary",
    "foreign",
    "sort",
    "partition",
    "hash",
    "range",
    "cache",
    "idempotency",
    "dedup",
    "dedupe",
    "deduplication",
    "lookup",
    "group",
    "routing",
    "object",
    "s3",
    "map",
    "row",
    "shard",
    "sharding",
    "join",
    "unique",
    "natural",
    "composite",
    "surrogate",
    "site",
    "publishable",
    "anon",
    "host",
    "index",
    "i18n",
    "translation",
    "message",
    "order",
    "field",
    "column",
    "attribute",
    "registry",
    "kms",
    "metric",
    "label",
    "tag",
    "config",
    "redis",
    "lock",
];

/// Whether a key name says its value is a secret, and what it asks of the value. The last
/// word decides, after detect-secrets' keyword list: password, passwd, passphrase, passcode,
/// secret, token (and words ending in them: `PGPASSWORD`, `authToken`), credentials, `pass`
/// and `pwd` after another word (not `PWD`, the working folder), `*_key` unless the word
/// before names a row or a public half, detect-secrets' `apikey`, `accesskey`, …; `auth` and
/// `key data` only with a credential-shaped value.
fn secret_name(name: &str) -> Option<Strength> {
    let w = words(name);
    let last = w.last()?.as_str();
    let prev = w.len().checked_sub(2).map(|i| w[i].as_str());
    const ENDINGS: [&str; 8] = [
        "password",
        "passwd",
        "passphrase",
        "passcode",
        "secret",
        "token",
        "contrasena",
        "contraseña",
    ];
    const KEYS: [&str; 18] = [
        "apikey",
        "secretkey",
        "privatekey",
        "privkey",
        "accesskey",
        "authkey",
        "appkey",
        "servicekey",
        "accountkey",
        "clientkey",
        "masterkey",
        "encryptionkey",
        "signingkey",
        "sharedaccesskey",
        "licensekey",
        "dbkey",
        "databasekey",
        "applicationkey",
    ];
    if ENDINGS.iter().any(|e| last.ends_with(e))
        || KEYS.contains(&last)
        || matches!(last, "credential" | "credentials" | "creds")
        || (matches!(last, "pass" | "pwd") && prev.is_some())
        || last == "pass" && w.len() == 1
        || (last == "key" && prev.is_some_and(|p| !NOT_SECRET_KEYS.contains(&p)))
    {
        return Some(Strength::Any);
    }
    if last == "auth" || (last == "data" && prev == Some("key")) {
        return Some(Strength::Tokenish);
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Values

/// Words that stand for a type, a state or the secret's own name, not for a value.
const WORDS: [&str; 60] = [
    "null",
    "none",
    "nil",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "undefined",
    "undef",
    "empty",
    "required",
    "optional",
    "string",
    "str",
    "text",
    "bool",
    "boolean",
    "int",
    "integer",
    "number",
    "secret",
    "password",
    "pass",
    "token",
    "redacted",
    "hidden",
    "example",
    "sample",
    "dummy",
    "placeholder",
    "test",
    "todo",
    "tbd",
    "fixme",
    "value",
    "default",
    "unset",
    "prompt",
    "ask",
    "env",
    "environment",
    "vault",
    "keychain",
    "keyring",
    "inherit",
    "auto",
    "disabled",
    "enabled",
    "masked",
    "sensitive",
    "encrypted",
    "plain",
    "bearer",
    "basic",
    "oauth",
    "oauth2",
    "jwt",
    "~",
];

/// Values the name-based rules leave alone: empty, placeholders (`${X}`, `<token>`,
/// `{{ x }}`, `%(x)s`, `your-key-here`, `xxxx`, `****`, `…`), markers already in place, and
/// words that name a type or a state.
fn is_real_value(v: &str) -> bool {
    let v = v.trim();
    let lower = v.to_lowercase();
    let lower = lower.trim_end_matches(['.', ',', ';', ':']);
    if lower.chars().count() < 2
        || WORDS.contains(&lower)
        || v.starts_with(['{', '<', '%', '['])
        || is_variable(v)
        || v.contains("[REDACTED:")
        || lower.starts_with("your")
        || lower.starts_with("replace")
        || lower.starts_with("insert")
        || lower.starts_with("enter ")
        || v.contains("...")
        || v.contains('…')
    {
        return false;
    }
    // `xxxx`, `****`, `xxxx-xxxx-xxxx`.
    let mut chars = lower.chars().filter(|c| !matches!(c, '-' | '_' | '.'));
    let first = chars.next().unwrap_or(' ');
    !chars.all(|c| c == first)
}

/// `$X`, `${X}`, `$(cmd)`, `${{ secrets.X }}`: a variable, not its value.
fn is_variable(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('$') else {
        return false;
    };
    rest.starts_with(['{', '(']) || rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Objects a dotted reference starts from (`settings.SECRET_KEY`, `process.env.TOKEN`).
const OBJECTS: [&str; 30] = [
    "self", "this", "process", "os", "env", "config", "settings", "cfg", "conf", "app", "ctx",
    "context", "secrets", "vars", "params", "args", "options", "opts", "props", "values",
    "request", "req", "window", "module", "data", "input", "inputs", "steps", "needs", "auth",
];

/// Keywords that declare a variable in code.
const DECLARATIONS: [&str; 12] = [
    "let", "mut", "const", "var", "val", "my", "local", "final", "static", "auto", "private",
    "public",
];

/// Words that start an expression, not a value (`token = await fetchToken()`).
const CODE_WORDS: [&str; 12] = [
    "await", "new", "yield", "lambda", "function", "async", "typeof", "require", "import",
    "static", "self", "this",
];

/// A bare value that says where the secret lives instead of holding it: a call, an index, a
/// variable named like a secret (`DB_PASSWORD`, `hashedPassword`), a dotted reference, a path.
fn is_reference(v: &str) -> bool {
    if v.starts_with(['$', '%', '{', '<', '[', '*', '!', '&', '@', '/', '~'])
        || v.starts_with("./")
        || v.contains(['(', '[', '{'])
    {
        return true;
    }
    let ident = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    let named = |s: &str| {
        let l = s.to_lowercase();
        ["pass", "pwd", "secret", "token", "key", "cred", "auth"]
            .iter()
            .any(|k| l.contains(k))
    };
    if ident(v) {
        return named(v) || CODE_WORDS.contains(&v);
    }
    let parts: Vec<&str> = v.split('.').collect();
    if parts.len() >= 2 && parts.iter().all(|p| ident(p)) {
        let last = parts[parts.len() - 1];
        let caps = last.len() >= 2 && !last.bytes().any(|b| b.is_ascii_lowercase());
        return named(last) || caps || OBJECTS.contains(&parts[0].to_lowercase().as_str());
    }
    false
}

/// A quoted value that is a label about the secret, not the secret: prose that names it
/// ("Forgot your password?", "API token").
fn is_prose_label(v: &str) -> bool {
    let l = v.to_lowercase();
    l.contains(char::is_whitespace)
        && [
            "password",
            "passphrase",
            "token",
            "secret",
            "key",
            "credential",
        ]
        .iter()
        .any(|k| l.contains(k))
}

fn has_digit_or_symbol(v: &str) -> bool {
    v.bytes().any(|b| !b.is_ascii_alphabetic())
}

/// Shaped like a credential: 8 or more characters without spaces, with a digit or a symbol in
/// them, or 12 or more in mixed case (base64), or 16 or more; and not a variable name.
fn tokenish(v: &str) -> bool {
    let n = v.chars().count();
    n >= 8
        && !v.contains(char::is_whitespace)
        && (has_digit_or_symbol(v)
            || n >= 16
            || n >= 12
                && v.bytes().any(|b| b.is_ascii_uppercase())
                && v.bytes().any(|b| b.is_ascii_lowercase()))
        && !(v
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit())
            && v.contains('_'))
}

// ---------------------------------------------------------------------------------------------
// Redaction

/// The redacted text and where its markers are.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Redacted {
    pub text: String,
    /// Each marker's kind and byte range in `text`, in text order.
    pub markers: Vec<(&'static str, Range<usize>)>,
}

/// Redact `text`. Cheap when there is nothing to redact: one `RegexSet` pass; then each kind
/// that matched finds its secrets in the original text, an earlier rule's secret wins over an
/// overlapping later one, and the text is rebuilt once.
pub fn redact(text: &str) -> Redacted {
    let matched = SET.matches(text);
    // Secrets by start: (end, kind), never overlapping.
    let mut spans: BTreeMap<usize, (usize, &'static str)> = BTreeMap::new();
    let mut found = Vec::new();
    for i in matched.iter() {
        let rule = &RULES[i];
        for c in REGEXES[i].captures_iter(text) {
            found.clear();
            (rule.find)(text, &c, &mut found);
            for range in found.drain(..) {
                if range.is_empty() {
                    continue;
                }
                let before = spans.range(..=range.start).next_back();
                let after = spans.range(range.start..).next();
                let overlaps = before.is_some_and(|(_, (end, _))| *end > range.start)
                    || after.is_some_and(|(start, _)| *start < range.end);
                if !overlaps {
                    spans.insert(range.start, (range.end, rule.kind));
                }
            }
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut markers = Vec::with_capacity(spans.len());
    let mut from = 0;
    for (start, (end, kind)) in spans {
        out.push_str(&text[from..start]);
        let at = out.len();
        out.push_str("[REDACTED:");
        out.push_str(kind);
        out.push(']');
        markers.push((kind, at..out.len()));
        from = end;
    }
    out.push_str(&text[from..]);
    Redacted { text: out, markers }
}

/// Redact the meeting's own text in place: its topic, brief and decision packet, each field
/// on its own. Returns the kinds of the markers, in field order.
pub(crate) fn redact_input(input: &mut crate::model::MeetingInput) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    let mut field = |s: &mut String| {
        let r = redact(s);
        if !r.markers.is_empty() {
            kinds.extend(r.markers.iter().map(|(k, _)| *k));
            *s = r.text;
        }
    };
    let b = &mut input.brief;
    let d = &mut input.decision_packet;
    field(&mut input.topic);
    field(&mut b.project_background);
    field(&mut b.current_state);
    for list in [
        &mut b.constraints,
        &mut b.success_criteria,
        &mut b.non_goals,
    ] {
        list.iter_mut().for_each(&mut field);
    }
    field(&mut d.decision_to_make);
    for list in [
        &mut d.options,
        &mut d.evaluation_dimensions,
        &mut d.required_questions,
    ] {
        list.iter_mut().for_each(&mut field);
    }
    field(&mut d.risk_tolerance);
    field(&mut d.time_horizon);
    kinds
}

/// Characters read past the excerpt when redacting, so a token the excerpt's end would cut is
/// still seen whole (and a key block without its END line is redacted to the end).
pub(crate) const LOOKAHEAD_CHARS: usize = 4096;

/// The excerpt of a file read to `max_chars + LOOKAHEAD_CHARS` characters: redacted first,
/// then cut to `max_chars` characters, never inside a marker (a marker the cut would split is
/// kept whole). `char_count` counts each marker as its own characters instead of the secret's.
/// Returns the kinds of the markers in the excerpt, in text order.
pub(crate) fn redact_excerpt(text: Text, max_chars: usize) -> (Text, Vec<&'static str>) {
    let r = redact(&text.excerpt);
    if r.markers.is_empty() {
        let end = char_end(&text.excerpt, max_chars);
        let mut excerpt = text.excerpt;
        excerpt.truncate(end);
        return (
            Text {
                excerpt,
                char_count: text.char_count,
            },
            Vec::new(),
        );
    }
    let char_count = text.char_count - text.excerpt.chars().count() + r.text.chars().count();
    let mut end = char_end(&r.text, max_chars);
    if let Some((_, m)) = r.markers.iter().find(|(_, m)| m.start < end && end < m.end) {
        end = m.end;
    }
    let kinds = r
        .markers
        .iter()
        .filter(|(_, m)| m.end <= end)
        .map(|(k, _)| *k)
        .collect();
    let mut excerpt = r.text;
    excerpt.truncate(end);
    (
        Text {
            excerpt,
            char_count,
        },
        kinds,
    )
}

/// The byte index after the first `n` characters of `s`.
fn char_end(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test tokens are built from pieces, so this file does not look like a leak to a scanner.
    fn tok(prefix: &str, unit: &str, n: usize) -> String {
        format!("{prefix}{}", unit.repeat(n))
    }

    fn kinds(text: &str) -> Vec<&'static str> {
        redact(text).markers.iter().map(|(k, _)| *k).collect()
    }

    #[test]
    fn each_kind_is_redacted_and_the_rest_kept() {
        let key_block = format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n{}\n-----END OPENSSH PRIVATE KEY-----",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ".repeat(2),
            "QyNTUxOQAAACBhbGljZQ=="
        );
        let jwt = format!(
            "{}.{}.{}",
            tok("eyJ", "hbGciOiJIUzI1NiJ9", 1),
            tok("eyJ", "zdWIiOiIxMjM0NTY3ODkwIn0", 1),
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
        );
        let cases: Vec<(String, &str)> = vec![
            (key_block, "private-key"),
            (jwt, "jwt"),
            (tok("sk-ant-api03-", "Ab1_", 20), "anthropic-key"),
            (tok("sk-proj-", "Ab1-", 12), "openai-key"),
            (tok("sk-", "Ab12", 12), "openai-key"),
            (tok("ghp_", "Ab12", 9), "github-token"),
            (tok("gho_", "Ab12", 9), "github-token"),
            (tok("ghs_", "Ab12", 9), "github-token"),
            (tok("github_pat_", "11AB_cd", 12), "github-token"),
            (tok("AKIA", "IOSFODNN7EXAMPL", 1) + "E", "aws-access-key-id"),
            (tok("ASIA", "Z2X3C4V5", 2), "aws-access-key-id"),
            (tok("xoxb-", "1234567890-", 3) + "abcdef", "slack-token"),
            (
                tok("https://hooks.slack.com/services/", "T000/B000/XXXX", 2),
                "slack-webhook",
            ),
            (tok("AIza", "SyA1b2C3d4", 4) + "xyz", "google-api-key"),
            (tok("sk_live_", "4eC39HqL", 3), "stripe-key"),
            (tok("rk_live_", "4eC39HqL", 3), "stripe-key"),
            (tok("glpat-", "Ab1_x", 5), "gitlab-token"),
            (tok("npm_", "Ab12Cd34Ef", 3) + "Gh56Ij", "npm-token"),
            (tok("pypi-AgEIcHlwaS5vcmc", "CJDk3ZTQ4", 6), "pypi-token"),
            (tok("hf_", "AbCd12EfGh", 3) + "Ij34", "huggingface-token"),
            (
                tok("SG.", "ngeVfQFYQlKU0ufo8x5d1A", 1)
                    + "."
                    + &tok("", "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc", 1),
                "sendgrid-key",
            ),
        ];
        for (secret, kind) in cases {
            let text = format!("before {secret} after\n");
            let r = redact(&text);
            assert_eq!(
                r.text,
                format!("before [REDACTED:{kind}] after\n"),
                "{secret}"
            );
            assert_eq!(kinds(&text), [kind]);
            let (k, range) = &r.markers[0];
            assert_eq!(
                (*k, &r.text[range.clone()]),
                (kind, &*format!("[REDACTED:{kind}]"))
            );
        }
        // Basic auth keeps the header and the scheme.
        let header = format!("Authorization: Basic {}", tok("dXNlcj", "pwYXNz", 2));
        assert_eq!(
            redact(&header).text,
            "Authorization: Basic [REDACTED:basic-auth]"
        );
    }

    #[test]
    fn assignments_keep_the_key_and_lose_the_value() {
        let k = "secret-assignment";
        for (text, want) in [
            ("password = \"hunter2\"", "password = \"[REDACTED:@]\""),
            (
                "  db_password: 'c0rrect horse'",
                "  db_password: '[REDACTED:@]'",
            ),
            ("DB_PASSWORD=s3cr3t-value", "DB_PASSWORD=[REDACTED:@]"),
            ("export API_KEY=abc123def", "export API_KEY=[REDACTED:@]"),
            (
                "secret: q9w8e7r6  # rotate",
                "secret: [REDACTED:@]  # rotate",
            ),
            (
                "{\"user\": \"a\", \"password\": \"pw1\"}",
                "{\"user\": \"a\", \"password\": \"[REDACTED:@]\"}",
            ),
            (
                "client_secret => 'zz-top'",
                "client_secret => '[REDACTED:@]'",
            ),
            ("authToken := \"t0k3n\"", "authToken := \"[REDACTED:@]\""),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [REDACTED:@]",
            ),
            ("DB_PASS=pa55w0rd", "DB_PASS=[REDACTED:@]"),
            // Review findings: a `#` inside a value, a value with spaces on a config line,
            // XML elements.
            ("password=abc#123xyz", "password=[REDACTED:@]"),
            (
                "db_password: correct horse battery staple",
                "db_password: [REDACTED:@]",
            ),
            (
                "<server><password>Hunter2Secret99</password></server>",
                "<server><password>[REDACTED:@]</password></server>",
            ),
            (
                "Server=db;User Id=app;Password=p4ss;Encrypt=true",
                "Server=db;User Id=app;Password=[REDACTED:@];Encrypt=true",
            ),
            (
                "AccountName=acme;AccountKey=bG9uZ2tleQ==;EndpointSuffix=core",
                "AccountName=acme;AccountKey=[REDACTED:@];EndpointSuffix=core",
            ),
            (
                "GET /x?user=a&token=abc123&page=2",
                "GET /x?user=a&token=[REDACTED:@]&page=2",
            ),
        ] {
            assert_eq!(redact(text).text, want.replace('@', k), "{text}");
        }
        // The token rule wins where both match; the key stays.
        let t = format!("api_key = \"{}\"", tok("sk-", "Ab12", 12));
        assert_eq!(redact(&t).text, "api_key = \"[REDACTED:openai-key]\"");
        let h = format!(
            "curl -H 'Authorization: Bearer {}'",
            tok("", "a1B2c3D4e5", 3)
        );
        assert_eq!(
            redact(&h).text,
            "curl -H 'Authorization: Bearer [REDACTED:bearer-token]'"
        );
        let url = "db: postgres://app:Xy7-pq2@db.internal:5432/app";
        assert_eq!(
            redact(url).text,
            "db: postgres://app:[REDACTED:url-password]@db.internal:5432/app"
        );
    }

    #[test]
    fn prose_and_placeholders_are_not_secrets() {
        for text in [
            "Use sk-learn or the sk-1234 key from the demo; a key looks like sk-....",
            "export OPENAI_API_KEY=sk-...\nexport ANTHROPIC_API_KEY=\"sk-ant-…\"",
            "sk-ant is the prefix of Anthropic keys; sk-proj-short too.",
            "A password is required. The password: see the vault below.",
            "Password: ask the on-call engineer for it",
            "Rotate every secret yearly; token budgets are set per team.",
            "max_tokens: 4000\ntoken_count = 12\npasswordless: true\nsecret_santa_list.md",
            "password: ${DB_PASSWORD}\ntoken: \"{{ secrets.TOKEN }}\"\napi_key: <your-api-key>",
            "password = os.environ[\"DB_PASSWORD\"]\ntoken = get_token()\nsecret: settings.SECRET",
            "password: null\nsecret: true\napi_key: \"\"\npassword: \"********\"\ntoken: xxxxxxxx",
            "GitHub tokens start with ghp_ and AWS key ids with AKIA.",
            "The file starts with `-----BEGIN RSA PRIVATE KEY-----` and ends with an END line.",
            "Between -----BEGIN EC PRIVATE KEY----- and -----END EC PRIVATE KEY----- is base64.",
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
            "The JWT header eyJhbGciOi is base64 of {\"alg\":.",
            "Connect with postgres://user:password@localhost/db or https://example.com:8080/x.",
            "AKIA keys are 20 characters: AKIA followed by 16.",
            "xoxb- tokens are Slack bot tokens; AIza keys belong to Google.",
            "Task-oriented risk-adjusted mask-wearing desk-bound tasks.",
            "The bearer token travels in a header; bearer responsibilities-and-obligations apply.",
            "We bypass: the cache; compass: north; the PWD=/home/me variable.",
            "hf_ and glpat- and npm_ prefixes; SG.x.y is not a key.",
            "app.secret_key: ${SECRET_KEY}\ndb_password: <set in the vault>",
            "Use <password>...</password> in settings.xml; Authorization: Basic auth is off.",
        ] {
            let r = redact(text);
            assert_eq!(r.text, text, "redacted: {:?}", r.markers);
        }
    }

    #[test]
    fn one_huge_line_is_redacted_like_short_ones() {
        // The checks on a match look at a bounded window of its line (minified JSON).
        let item = "{\"db_password\": \"Hunter2-x\", \"note\": \"caf\u{e9} \u{2014} ok\"}, ";
        let text = format!("[{}]", item.repeat(2000));
        let r = redact(&text);
        assert_eq!(r.markers.len(), 2000);
        assert!(!r.text.contains("Hunter2-x"));
        assert!(r.text.contains("caf\u{e9} \u{2014} ok"));
    }

    #[test]
    fn a_key_block_cut_before_its_end_is_redacted_to_the_end() {
        let text = format!(
            "intro\n-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\n{}",
            "MIIEowIBAAKCAQEA".repeat(5)
        );
        assert_eq!(redact(&text).text, "intro\n[REDACTED:private-key]");
        // Escaped newlines, as in a service-account JSON.
        let json = format!(
            "{{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{}\\n-----END PRIVATE KEY-----\\n\", \"x\": 1}}",
            "MIIEvQIBADANBgkq".repeat(3)
        );
        assert_eq!(
            redact(&json).text,
            "{\"private_key\": \"[REDACTED:private-key]\\n\", \"x\": 1}"
        );
    }

    #[test]
    fn the_excerpt_is_cut_after_redaction_and_never_splits_a_marker() {
        let secret = tok("ghp_", "Ab12", 9);
        let text = format!("012345678 {secret} tail");
        let full = |t: &str| Text {
            excerpt: t.to_string(),
            char_count: t.chars().count(),
        };
        // The token straddles the cut at 20 characters: it is still redacted, kept whole.
        let (t, k) = redact_excerpt(full(&text), 20);
        assert_eq!(t.excerpt, "012345678 [REDACTED:github-token]");
        assert_eq!(k, ["github-token"]);
        assert_eq!(
            t.char_count,
            "012345678 [REDACTED:github-token] tail".chars().count()
        );
        // Cut before the token: nothing redacted in the excerpt.
        let (t, k) = redact_excerpt(full(&text), 5);
        assert_eq!((t.excerpt.as_str(), k.len()), ("01234", 0));
        // Nothing to redact: the plain cut.
        let (t, k) = redact_excerpt(full("héllo wörld"), 4);
        assert_eq!((t.excerpt.as_str(), t.char_count, k.len()), ("héll", 11, 0));
    }
}
