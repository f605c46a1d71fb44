//! Issue 31: the collective libraries' environment recorded without secrets (every backend),
//! and the stand-in NCCL's INFO lines read back by the parser, NCCL_ALGO / NCCL_PROTO honoured.

use crate::common::{read_results, report, run_q, s, solo_env, tmpdir};
use std::path::Path;

const SECRETS: [(&str, &str); 4] = [
    ("NCCL_API_KEY", "hunter2-nccl"),
    ("UCX_PASSWORD", "hunter2-ucx"),
    ("FI_EFA_AUTH_TOKEN", "hunter2-fi"),
    // Not named like a secret: only the URL's password goes.
    ("NCCL_COMM_ID", "tcp://me:hunter2-url@10.0.0.1:9"),
];

/// Every file under `dir`, as text (binary files lossily), with its path.
fn all_text(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(all_text(&p));
        } else {
            let bytes = std::fs::read(&p).unwrap();
            out.push((
                p.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    out
}

fn assert_no_secret(where_: &str, text: &str) {
    assert!(!text.contains("hunter2"), "a secret in {where_}");
}

#[test]
fn secrets_in_the_environment_are_redacted_in_results_and_report() {
    let dir = tmpdir("nccl-env-redact");
    let out = dir.join("run");
    let mut env: Vec<(&str, &str)> = SECRETS.to_vec();
    env.push(("NCCL_SOCKET_IFNAME", "lo"));
    env.push(("FI_PROVIDER", "tcp"));
    let args = run_q(&out, &["-w", "allreduce", "--sizes", "1KiB", "-n", "2"]);
    solo_env(&args, &env).assert_code(0);

    // Results: the settings with their values, the secrets redacted.
    let raw = std::fs::read_to_string(out.join("results.json")).unwrap();
    assert_no_secret("results.json", &raw);
    let r = read_results(&out);
    let e = &r.launches[0].provenance.as_ref().unwrap().environment;
    assert_eq!(e["NCCL_SOCKET_IFNAME"], "lo");
    assert_eq!(e["FI_PROVIDER"], "tcp");
    for k in ["NCCL_API_KEY", "UCX_PASSWORD", "FI_EFA_AUTH_TOKEN"] {
        assert_eq!(e[k], "<redacted>", "{k}");
    }
    assert_eq!(e["NCCL_COMM_ID"], "tcp://me:<redacted>@10.0.0.1:9");

    // Report: the library settings shown, no secret in any file it writes.
    let rep = dir.join("report");
    let ran = report(&[s(&out), "--out", s(&rep), "--format", "html,md,csv"]);
    ran.assert_code(0);
    assert_no_secret("the report's output", &ran.stdout);
    let files = all_text(&rep);
    for (p, t) in &files {
        assert_no_secret(p, t);
    }
    let md = &files
        .iter()
        .find(|(p, _)| p.ends_with("report.md"))
        .unwrap()
        .1;
    // Markdown escapes `_`, `<` and `>`.
    assert!(md.contains("IFNAME=lo"), "{md}");
    assert!(md.contains("PASSWORD=&lt;redacted&gt;"), "{md}");

    // A file from a writer that did not redact: the report redacts when it shows.
    let old = dir.join("old");
    std::fs::create_dir_all(&old).unwrap();
    let unredacted = raw.replace(
        "\"NCCL_SOCKET_IFNAME\": \"lo\"",
        "\"NCCL_SOCKET_IFNAME\": \"lo\", \"NCCL_IB_SECRET\": \"hunter2-old\"",
    );
    assert!(unredacted.contains("hunter2-old"), "the edit took");
    std::fs::write(old.join("results.json"), unredacted).unwrap();
    let rep = dir.join("report-old");
    let ran = report(&[s(&old), "--out", s(&rep), "--format", "html,md"]);
    ran.assert_code(0);
    for (p, t) in all_text(&rep) {
        assert_no_secret(&p, &t);
    }
}
