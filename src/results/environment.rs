//! What of the environment a results file may hold: values, never secrets. The run stage
//! redacts when it records (`topology::captured_environment`), and the report redacts again
//! when it shows (a file written by an older scalebench, or by hand, may hold one).

/// What a redacted value reads as.
pub const REDACTED: &str = "<redacted>";

/// Words of a variable's name (split at `_`) that mark a secret.
const SECRET_WORDS: &[&str] = &[
    "KEY",
    "KEYS",
    "TOKEN",
    "TOKENS",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWORDS",
    "PASSWD",
    "PASS",
    "PASSPHRASE",
    "CREDENTIAL",
    "CREDENTIALS",
    "CREDS",
    "AUTH",
    "COOKIE",
    "SIGNATURE",
];
/// Endings of a word that mark one too (`APIKEY`, `ACCESSTOKEN`, `DBPASSWORD`).
const SECRET_ENDINGS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"];

/// Whether a variable's name says it holds a secret (a key, token, password, credential…).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.split(['_', '-', '.']).any(|w| {
        SECRET_WORDS.contains(&w)
            || SECRET_ENDINGS
                .iter()
                .any(|e| w.len() > e.len() && w.ends_with(e))
    })
}

/// The value as recorded: [`REDACTED`] for a secret's name, and a URL's password
/// (`scheme://user:password@host`) replaced wherever the name.
pub fn redact(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        return REDACTED.to_string();
    }
    redact_url_passwords(value)
}

/// `scheme://user:password@host…` → `scheme://user:<redacted>@host…`, for every URL in `v`.
fn redact_url_passwords(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority ends at the first '/', whitespace, ',' or ';' (lists of URLs).
        let end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == ',' || c == ';')
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) if authority[..at].contains(':') => {
                let user = &authority[..authority[..at].find(':').unwrap_or(at)];
                out.push_str(user);
                out.push(':');
                out.push_str(REDACTED);
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_redacted_and_settings_kept() {
        for secret in [
            "NCCL_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SESSION_TOKEN",
            "FI_EFA_APIKEY",
            "UCX_PASSWORD",
            "HF_TOKEN",
            "SLURM_AUTH_INFO",
            "SCALEBENCH_DB_PASSWD",
            "MY_PASS",
            "GITHUB_ACCESSTOKEN",
            "nccl_private_key",
            "X-KEY",
        ] {
            assert!(is_secret_name(secret), "{secret}");
            assert_eq!(redact(secret, "hunter2"), REDACTED, "{secret}");
        }
        for setting in [
            "NCCL_ALGO",
            "NCCL_PROTO",
            "NCCL_IB_HCA",
            "FI_PROVIDER",
            "UCX_TLS",
            "NCCL_NET_GDR_LEVEL",
            "OMPI_MCA_btl",
            "NCCL_SOCKET_IFNAME",
            "NCCL_BYPASS_X",
            "SLURM_AUTHORITY",
        ] {
            assert!(!is_secret_name(setting), "{setting}");
            assert_eq!(redact(setting, "a,b"), "a,b");
        }
        // A word that merely ends in KEY is taken for a key: the safe side.
        assert!(is_secret_name("NCCL_IB_PKEY"));
    }

    #[test]
    fn passwords_in_urls_are_redacted_whatever_the_name() {
        assert_eq!(
            redact("MASTER_ADDR", "tcp://admin:hunter2@10.0.0.1:29500/x"),
            "tcp://admin:<redacted>@10.0.0.1:29500/x"
        );
        assert_eq!(
            redact("X", "http://a:b@h1,https://c:d@h2 and ftp://h3"),
            "http://a:<redacted>@h1,https://c:<redacted>@h2 and ftp://h3"
        );
        // A user without a password, and an address with a port, stay as they are.
        assert_eq!(redact("X", "ssh://git@host:22/p"), "ssh://git@host:22/p");
        assert_eq!(redact("X", "tcp://10.0.0.1:29500"), "tcp://10.0.0.1:29500");
        assert_eq!(redact("X", "no url here"), "no url here");
    }
}
