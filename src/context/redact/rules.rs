//! The redaction rules, in order of precedence (docs: the `redact` module), and the one
//! `RegexSet` of their triggers.

use std::ops::Range;
use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};

use super::finders::*;

/// Finds the secret ranges of one match of a rule's pattern.
pub(super) type Finder = fn(&str, &Captures, &mut Vec<Range<usize>>);

/// One kind of secret: a pattern, and what in its match is the secret. `trigger` is a cheap
/// pattern that matches wherever `pattern` does (a keyword, a prefix, as gitleaks' `keywords`):
/// the one `RegexSet` pass over the text is made of triggers, and a rule whose trigger did not
/// match is not run.
pub(super) struct Rule {
    pub(super) kind: &'static str,
    pub(super) trigger: &'static str,
    pub(super) pattern: &'static str,
    pub(super) find: Finder,
}

/// The trigger of the name-based rules: a word a secret's name ends in.
pub(super) const KEYWORDS: &str = r"(?i-u:pass|pwd|secret|token|key|cred|auth|sig|contrase)";

/// The broad ending of a key name that may hold a secret; `is_secret_name` decides.
macro_rules! kw {
    () => {
        r"(?:pass(?:word|wd|phrase|code)?|pwd|secret|token|key|credentials?|creds|auth|contrase(?:n|ñ)a|key[_.\-]?data)"
    };
}

/// In order of precedence: where two rules' secrets overlap the earlier rule's wins (so
/// `api_key = "sk-…"` is an `openai-key`, and a token inside a key block is the block).
pub(super) const RULES: [Rule; 37] = [
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

pub(super) static SET: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(RULES.iter().map(|r| r.trigger)).expect("redaction set"));
pub(super) static REGEXES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|r| Regex::new(r.pattern).expect("redaction rule"))
        .collect()
});
