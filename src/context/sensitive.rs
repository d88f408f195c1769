//! Likely secrets by name (docs/design/context.md#context-collection): files skipped `sensitive` before they
//! are opened, unless `--allow-sensitive`. What is inside the files that are read is the
//! business of `redact`.
//!
//! The list is drawn from public secret-scanner rule sets:
//! - gitleaks (github.com/gitleaks/gitleaks, `config/gitleaks.toml`): the `pkcs12-file` path
//!   rule (`*.p12`, `*.pfx`);
//! - gitrob (github.com/michenriksen/gitrob, `core/signatures.go`) and its successors
//!   (shhgit's `config.yaml`): private SSH keys `*_rsa`, `*_dsa`, `*_ecdsa`, `*_ed25519`;
//!   `*.pem`, `*.key`, `*.ppk`, `*.pkcs12`, `*.jks`, `*.keystore`, `*.kdb(x)`, `*.ovpn`;
//!   `.netrc`, `_netrc`, `.git-credentials`, `.pgpass`, `.my.cnf`, `.npmrc`, `.pypirc`,
//!   `.dockercfg`, `.docker/config.json`, `.s3cfg`, `.boto`, `.htpasswd`, `terraform.tfvars`,
//!   `*.tfstate`, `credentials*`, `secrets.*`, shell and database client histories;
//! - the cloud vendors' documented credential files: `.aws/`, `.kube/`, `.azure/`, `.gnupg/`,
//!   `kubeconfig`, `*service-account*.json` and `client_secret*.json` (Google),
//!   `application_default_credentials.json`, `.vault-token`, `.terraformrc`.
//!
//! Names are compared case-insensitively, because `.ENV` on a case-insensitive disk is the
//! same file. Public halves stay readable: `id_rsa.pub` is not a secret.

/// Folders whose whole content is credentials.
const SECRET_DIRS: [&str; 6] = [
    ".ssh",
    ".aws",
    ".gnupg",
    ".kube",
    ".azure",
    ".password-store",
];

/// Exact file names.
const SECRET_NAMES: [&str; 23] = [
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".pgpass",
    ".my.cnf",
    ".npmrc",
    ".pypirc",
    ".dockercfg",
    ".s3cfg",
    ".boto",
    ".vault-token",
    ".terraformrc",
    "terraform.rc",
    "terraform.tfvars",
    "kubeconfig",
    "application_default_credentials.json",
    ".bash_history",
    ".zsh_history",
    ".sh_history",
    ".mysql_history",
    ".psql_history",
    ".python_history",
    ".node_repl_history",
];

/// File name endings (key stores, certificates with keys, Terraform state).
const SECRET_SUFFIXES: [&str; 14] = [
    ".pem",
    ".key",
    ".p12",
    ".pfx",
    ".pkcs12",
    ".p8",
    ".ppk",
    ".jks",
    ".keystore",
    ".kdb",
    ".kdbx",
    ".ovpn",
    ".htpasswd",
    ".env",
];

/// File name beginnings.
const SECRET_PREFIXES: [&str; 4] = [".env", "credentials", "secret.", "secrets."];

/// SSH key algorithms, for `id_<alg>` and `<anything>_<alg>` private keys.
const SSH_KEY_ALGS: [&str; 6] = ["rsa", "dsa", "ecdsa", "ed25519", "ecdsa_sk", "ed25519_sk"];

/// Services whose credential files are named `<service>-credentials…` (`aws-credentials.txt`).
const CREDENTIAL_OWNERS: [&str; 8] = [
    "aws", "gcp", "gcloud", "google", "azure", "docker", "git", "db",
];

/// Whether a root-relative path (its components) names a likely secret.
pub(crate) fn is_sensitive(rel: &[String]) -> bool {
    let lower: Vec<String> = rel.iter().map(|c| c.to_lowercase()).collect();
    let Some((name, dirs)) = lower.split_last() else {
        return false;
    };
    if dirs.iter().any(|d| SECRET_DIRS.contains(&d.as_str())) {
        return true;
    }
    if name == "config.json" && dirs.last().is_some_and(|d| d == ".docker") {
        return true;
    }
    SECRET_NAMES.contains(&name.as_str())
        || SECRET_SUFFIXES.iter().any(|s| name.ends_with(s))
        || SECRET_PREFIXES.iter().any(|p| name.starts_with(p))
        || name.contains(".tfstate")
        || is_ssh_private_key(name)
        || is_named_credentials(name)
        || (name.ends_with(".json")
            && (["service-account", "service_account", "serviceaccount"]
                .iter()
                .any(|s| name.contains(s))
                || name.starts_with("client_secret")))
}

/// `id_rsa`, `id_ed25519_sk`, `deploy_ecdsa`, `id_rsa.old`, `id_ed25519-work`: a private SSH
/// key; `*.pub` is its public half.
fn is_ssh_private_key(name: &str) -> bool {
    if name.ends_with(".pub") {
        return false;
    }
    if let Some(rest) = name.strip_prefix("id_") {
        // `id_rsa` and spellings with a suffix (`id_rsa.bak`, `id_rsa_work`, `id_rsa-2`).
        return SSH_KEY_ALGS.iter().any(|alg| {
            rest.strip_prefix(alg)
                .is_some_and(|tail| tail.is_empty() || tail.starts_with(['.', '_', '-']))
        });
    }
    // `github_ed25519`: a key name without an extension.
    !name.contains('.')
        && SSH_KEY_ALGS
            .iter()
            .any(|alg| name.ends_with(&format!("_{alg}")))
}

/// `aws-credentials.txt`, `gcp_credentials.json`, `git.credentials`: a service's credentials.
fn is_named_credentials(name: &str) -> bool {
    CREDENTIAL_OWNERS.iter().any(|owner| {
        name.strip_prefix(owner)
            .and_then(|rest| rest.strip_prefix(['-', '_', '.']))
            .is_some_and(|rest| rest.starts_with("credentials"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(p: &str) -> bool {
        is_sensitive(&p.split('/').map(str::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn sensitive_names() {
        for p in [
            ".env",
            ".env.local",
            "prod.env",
            "a/server.pem",
            "k.KEY",
            "config/master.key",
            "id_rsa",
            "id_rsa.old",
            "id_dsa",
            "id_ecdsa",
            "id_ed25519",
            "id_ed25519_sk",
            "keys/deploy_rsa",
            "x/.ssh/config",
            ".aws/config",
            "home/.kube/config",
            ".gnupg/pubring.kbx",
            ".docker/config.json",
            "c.p12",
            "server.pfx",
            "store.jks",
            "release.keystore",
            "putty.ppk",
            "AuthKey_ABC.p8",
            "credentials.json",
            "credentials",
            "sub/aws-credentials.txt",
            "gcp_credentials.json",
            ".netrc",
            "_netrc",
            ".git-credentials",
            ".pgpass",
            ".my.cnf",
            ".npmrc",
            ".pypirc",
            ".htpasswd",
            "terraform.tfstate",
            "terraform.tfstate.backup",
            "env/prod.tfstate",
            "terraform.tfvars",
            "service-account.json",
            "my-project-service-account-key.json",
            "client_secret_123.apps.googleusercontent.com.json",
            "secrets.yaml",
            "config/secrets.yml",
            "secret.json",
            ".bash_history",
            "kubeconfig",
        ] {
            assert!(s(p), "{p}");
        }
    }

    #[test]
    fn ordinary_names_are_collected() {
        for p in [
            "README.md",
            "env.md",
            "environment.md",
            "docs/keys.md",
            "keyboard.md",
            "notes/aws.md",
            "my_credentials.md",
            "id_rsa.pub",
            "id_ed25519.pub",
            "keys/deploy_rsa.pub",
            "identity.md",
            "id_mapping.csv",
            "secrets-management.md",
            "docs/secret-rotation.md",
            "service-account.md",
            "docker/config.json",
            "config.json",
            "tfstate-notes.md",
            "monkey.py",
            "kube/deployment.yaml",
            "password-policy.md",
            "tokens.md",
        ] {
            assert!(!s(p), "{p}");
        }
    }
}
