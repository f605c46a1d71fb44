//! Putting values from specs and profiles into job scripts without letting them run anything.
//!
//! Two rules: every value the shell evaluates is single-quoted ([`quote`]); every value that
//! goes into a scheduler directive (`#SBATCH`, `#$`, `#PBS`, which the scheduler parses and
//! the shell never sees) must match a conservative character set ([`directive_value`]),
//! because those lines have no quoting at all.

/// Quotes `s` for bash: `'...'`, with each `'` written as `'\''`. Nothing inside is
/// expanded (no `$`, backticks, globs, or word splitting). A control character is written as
/// `$'\NNN'` (its bytes in octal), so the quoted word stays on one line: a newline inside
/// `'...'` would start a script line that a scheduler reads as a directive (Grid Engine parses
/// `#$` lines anywhere in a script). Inputs are refused with their key before they get here
/// ([`control_free`]); this keeps the script sound whatever reaches it.
pub(crate) fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:@%+,".contains(c))
    {
        return s.to_string();
    }
    if !s.chars().any(char::is_control) {
        return format!("'{}'", s.replace('\'', r"'\''"));
    }
    let mut out = String::new();
    for part in s.split_inclusive(|c: char| c.is_control()) {
        let (text, ctl) = match part.chars().last() {
            Some(c) if c.is_control() => (&part[..part.len() - c.len_utf8()], Some(c)),
            _ => (part, None),
        };
        if !text.is_empty() {
            out.push_str(&format!("'{}'", text.replace('\'', r"'\''")));
        }
        if let Some(c) = ctl {
            let mut buf = [0u8; 4];
            let octal: String = c
                .encode_utf8(&mut buf)
                .bytes()
                .map(|b| format!("\\{b:03o}"))
                .collect();
            out.push_str(&format!("$'{octal}'"));
        }
    }
    out
}

/// Refuses a value that holds a control character (a newline, CR, tab, ESC…), naming its key
/// (`env.NCCL_DEBUG`, `container[2]`): every value that reaches a job script is checked here
/// when its spec or profile is read.
pub(crate) fn control_free(key: &str, s: &str) -> Result<(), ShellError> {
    match s.chars().find(|c| c.is_control()) {
        None => Ok(()),
        Some(c) => Err(ShellError::ControlCharacter {
            key: key.to_string(),
            value: crate::units::shorten(&s.escape_debug().to_string()),
            found: c.escape_debug().to_string(),
        }),
    }
}

/// Quotes each word and joins them with spaces.
pub(crate) fn quote_all<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| quote(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A value that cannot go into a job script safely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ShellError {
    /// `what` (e.g. `account`) has characters a scheduler directive cannot carry.
    #[error("{what} '{}' has characters a job script directive cannot carry safely: use letters, digits and _ . : + / @ % = , - only", value.escape_debug())]
    Directive { what: String, value: String },
    /// A value with a control character: in a job script it would start a new line.
    #[error("{key} = \"{value}\": has a control character ({found}), which would start a new line in the job script (a line such as `#$ -P other_project` is a scheduler directive): give the value on one line")]
    ControlCharacter {
        key: String,
        value: String,
        found: String,
    },
    /// Not a POSIX environment variable name.
    #[error("'{}' is not an environment variable name: use letters, digits and _ (not first a digit)", name.escape_debug())]
    EnvName { name: String },
}

/// Checks a value for a scheduler directive: letters, digits and `_ . : + / @ % = , -` only.
pub(crate) fn directive_value(what: &str, s: &str) -> Result<(), ShellError> {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "_.:+/@%=,-".contains(c))
    {
        Ok(())
    } else {
        Err(ShellError::Directive {
            what: what.to_string(),
            value: s.to_string(),
        })
    }
}

/// Checks an environment variable name.
pub(crate) fn env_name(s: &str) -> Result<(), ShellError> {
    let mut c = s.chars();
    let ok = matches!(c.next(), Some(ch) if ch == '_' || ch.is_ascii_alphabetic())
        && c.all(|ch| ch == '_' || ch.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(ShellError::EnvName {
            name: s.to_string(),
        })
    }
}

/// A job name from free text: unsafe characters become `_`, at most 64 characters.
pub(crate) fn job_name(s: &str) -> String {
    let n: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if n.is_empty() {
        "scalebench".into()
    } else {
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// What bash makes of a quoted word: it must be the original, byte for byte.
    fn through_bash(word: &str) -> String {
        let out = Command::new("bash")
            .args(["-c", &format!("printf %s {}", quote(word))])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn hostile_values_stay_inert() {
        for w in [
            "$(touch /tmp/pwned)",
            "`id`",
            "a; rm -rf /",
            "it's",
            "new\nline",
            "x\n#$ -P stolen_project\n",
            "cr\rtab\tesc\u{1b}[0m c1\u{9b} it's",
            "\n",
            "\"$HOME\"",
            "*",
            "",
            "a b",
            "\\",
            "'",
            "--flag",
        ] {
            assert_eq!(through_bash(w), w, "{w:?}");
        }
        assert_eq!(quote("plain-word_1.2"), "plain-word_1.2");
        // One line whatever the value holds.
        assert_eq!(quote("a\n#$ -P x"), "'a'$'\\012''#$ -P x'");
        assert!(!quote("\n\r\u{85}\u{2028}").contains(['\n', '\r']));
        assert!(control_free("env.X", "ok value").is_ok());
        let e = control_free("env.X", "a\n#$ -P x").unwrap_err().to_string();
        assert!(
            e.starts_with("env.X = \"a\\n#$ -P x\": has a control character (\\n)"),
            "{e}"
        );
        assert_eq!(quote_all(&["a b", "c"]), "'a b' c");
    }

    #[test]
    fn directive_values_are_checked() {
        assert!(directive_value("account", "project_465000123").is_ok());
        assert!(directive_value("gres", "gpu:v100:4").is_ok());
        for bad in ["x; rm -rf /", "$(id)", "a b", "`id`", "a\nb", "'q'", "a#b"] {
            assert!(directive_value("account", bad).is_err(), "{bad:?}");
        }
        assert!(env_name("NCCL_DEBUG").is_ok());
        assert!(env_name("1X").is_err() && env_name("A-B").is_err() && env_name("A=B").is_err());
        assert_eq!(job_name("my study; $(x)"), "my_study____x_");
    }
}
