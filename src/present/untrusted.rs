//! Text from results files (device names, timer sources, host names, messages) is untrusted:
//! a control character (an ANSI escape, a carriage return, a C1 control) can rewrite a
//! terminal, and a bidirectional override can make `+12 %` read as `% 21+` or reorder a
//! table row. Every renderer and terminal printer passes what it writes through [`visible`],
//! which shows such characters as `\u{..}` escapes instead of emitting them.

use std::borrow::Cow;

/// Whether `c` must not reach an output raw: C0 controls other than tab and newline, DEL, C1
/// controls, and Unicode's Bidi_Control characters (U+061C, U+200E–200F, U+202A–202E,
/// U+2066–2069).
pub fn is_hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}')
        || ('\u{202A}'..='\u{202E}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// `s` with every [`is_hidden`] character written as `\u{XX}` (Rust's escape notation, hex);
/// borrowed when there is none.
pub fn visible(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// JSON text with the hidden characters serde leaves raw (C1 controls, DEL, bidi controls)
/// written as `\uXXXX` escapes: the same JSON value, nothing invisible on a terminal. Only
/// valid for JSON whose strings hold these characters (serde already escapes C0 controls,
/// and outside strings JSON has none).
pub fn visible_json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(is_hidden) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_hidden(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_overrides_are_shown_not_emitted() {
        assert!(matches!(visible("node01 (cpu)"), Cow::Borrowed(_)));
        assert_eq!(visible("a\nb\tc"), "a\nb\tc");
        assert_eq!(visible("x\u{1b}[31my"), "x\\u{1b}[31my");
        assert_eq!(visible("r\rw\u{7f}"), "r\\u{d}w\\u{7f}");
        assert_eq!(visible("c1\u{9b}2J"), "c1\\u{9b}2J");
        assert_eq!(
            visible("\u{202e}lmth.exe\u{2066}\u{2069}\u{200f}"),
            "\\u{202e}lmth.exe\\u{2066}\\u{2069}\\u{200f}"
        );
        for c in [
            '\u{202a}', '\u{202d}', '\u{2067}', '\u{61c}', '\u{0}', '\u{85}',
        ] {
            assert!(is_hidden(c), "{c:?}");
        }
        // neighbours of the ranges stay
        for c in ['\u{2029}', '\u{202f}', '\u{2065}', '\u{206a}', 'é', ' '] {
            assert!(!is_hidden(c), "{c:?}");
        }
    }

    #[test]
    fn json_keeps_its_value() {
        let v = serde_json::json!({"name": "gpu\u{202e}\u{9b}\u{1b}x"});
        let text = serde_json::to_string(&v).unwrap();
        let shown = visible_json(&text);
        assert!(!shown.chars().any(is_hidden), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, v);
    }
}
