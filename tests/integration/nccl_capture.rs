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

/// Issue 31 item 2: a forced algorithm or protocol NCCL does not know, or one on a backend
/// without NCCL, is refused before anything runs: exit 2, one sentence naming the option or
/// the spec's file:line, nothing written.
#[test]
fn forced_nccl_values_are_refused_at_plan_time() {
    use crate::common::{solo, write_file};
    let dir = tmpdir("nccl-force-refused");
    let out = dir.join("out");
    // The CPU backend runs MPI's collectives: it cannot honour NCCL_ALGO.
    let ran = solo(&run_q(&out, &["--nccl-algo", "ring", "--sizes", "1KiB"]));
    ran.assert_refused(
        &"--nccl-algo on cpu",
        &["--nccl-algo ring: the cpu backend does not use NCCL, so it cannot honour it: run on the cuda backend, or leave --nccl-algo out"],
        &out,
    );
    assert_eq!(ran.stderr.trim().lines().count(), 1, "{}", ran.stderr);
    // Names NCCL does not document, a list, an exclusion: refused by name, with the set.
    for (opt, bad, needle) in [
        ("--nccl-algo", "rign", "unknown NCCL algorithm 'rign': expected one of tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat"),
        ("--nccl-algo", "ring,tree", "unknown NCCL algorithm 'ring,tree'"),
        ("--nccl-proto", "^ll", "unknown NCCL protocol '^ll': expected one of ll, ll128, simple"),
    ] {
        let ran = solo(&run_q(&out, &["--backend", "cuda", opt, bad]));
        ran.assert_refused(&(opt, bad), &[needle], &out);
    }
    // An algorithm NCCL has no kernel for on any case of the run (NCCL's own table): nothing
    // could run, so the plan is refused with the algorithms it does have.
    let ran = solo(&run_q(
        &out,
        &[
            "--backend",
            "cuda",
            "-w",
            "allgather,broadcast",
            "--nccl-algo",
            "tree",
        ],
    ));
    ran.assert_refused(
        &"tree on gathers",
        &["--nccl-algo: NCCL has no tree algorithm for allgather (it has ring, collnet_direct, nvls, pat): force one of those for allgather, or sweep the algorithm per collective"],
        &out,
    );
    let ran = solo(&run_q(
        &out,
        &[
            "--backend",
            "cuda",
            "-w",
            "allreduce",
            "--nccl-algo",
            "nvls",
            "--nccl-proto",
            "ll",
        ],
    ));
    ran.assert_refused(
        &"nvls with ll",
        &["--nccl-proto: NCCL runs nvls only with the simple protocol, not ll"],
        &out,
    );
    // Specs: the value's file:line, for `plan` and `sweep` alike.
    let cases = [
        (
            "[axes]\nbackend = \"cuda\"\nsizes = \"1KiB\"\nnccl_algo = [\"ring\", \"PATT\"]\n",
            4,
            "unknown NCCL algorithm 'PATT'",
        ),
        (
            "[axes]\nbackend = \"cuda\"\nnccl_proto = [\"LL\", \"LL64\"]\n",
            3,
            "unknown NCCL protocol 'LL64'",
        ),
        (
            "[axes]\nsizes = \"1KiB\"\nnccl_proto = \"ll128\"\n",
            3,
            "nccl_proto ll128: the cpu backend does not use NCCL",
        ),
        (
            "[axes]\nbackend = [\"cpu\", \"cuda\"]\nnccl_algo = [\"default\", \"tree\"]\n",
            3,
            "nccl_algo tree: the cpu backend does not use NCCL",
        ),
    ];
    for (i, (text, line, needle)) in cases.iter().enumerate() {
        let spec = write_file(&dir, &format!("s{i}.toml"), text);
        for cmd in ["plan", "sweep"] {
            let o = dir.join(format!("sweep{i}"));
            let args: &[&str] = if cmd == "plan" {
                &["plan", s(&spec)]
            } else {
                &["sweep", s(&spec), "--out", s(&o)]
            };
            let ran = solo(args);
            let at = format!("{}:{line}:", spec.display());
            ran.assert_refused(&(i, cmd), &[&at, needle], &o);
            assert_eq!(ran.stderr.trim().lines().count(), 1, "{}", ran.stderr);
        }
    }
}

#[cfg(feature = "cuda")]
mod on_the_standin {
    use crate::common::{s, tmpdir, write_file};
    use crate::cuda::standin::{cuda_run, env, libs, solo_on, solo_with};

    /// Issue 31 item 2: a sweep over nccl_algo × nccl_proto on the stand-in NCCL: one launch
    /// per pair, each case records what was forced, NCCL's own log of the case (captured)
    /// shows it ran with it, and the launch's environment records NCCL_ALGO / NCCL_PROTO.
    #[test]
    fn a_sweep_forcing_each_value_records_it() {
        let dir = tmpdir("nccl-force-sweep");
        let out = dir.join("out");
        let spec = write_file(
            &dir,
            "force.toml",
            "[axes]\nbackend = \"cuda\"\ntopology = \"hybrid\"\ndevices_per_node = 2\nworkloads = \"allreduce\"\nsizes = \"1KiB,64KiB\"\nin_place = false\nnccl_algo = [\"default\", \"ring\", \"Tree\"]\nnccl_proto = [\"LL\", \"ll128\", \"simple\"]\n[run]\niters = 2\nwarmup = 1\n",
        );
        let e = env(libs().to_str().unwrap(), &["SCALEBENCH_NCCL_CAPTURE=1"]);
        let args = ["sweep", "-q", s(&spec), "--out", s(&out)].map(String::from);
        solo_with(&e, &args).assert_code(0);
        let r = crate::common::read_results(&out);
        assert_eq!(r.launches.len(), 9);
        assert_eq!(r.cases.len(), 18);
        let mut seen = std::collections::BTreeSet::new();
        for c in &r.cases {
            assert_eq!(c.status, "ok", "{}: {:?}", c.id, c.message);
            let proto = c.params.nccl_proto.as_deref().expect("forced protocol");
            let captured = &c.nccl.as_ref().expect("captured").choices;
            assert_eq!(captured.len(), 1, "{}: {captured:?}", c.id);
            assert_eq!(captured[0].protocol.to_lowercase(), proto, "{}", c.id);
            match c.params.nccl_algo.as_deref() {
                Some(a) => assert_eq!(captured[0].algorithm.to_lowercase(), a, "{}", c.id),
                // NCCL's choice among the forced protocol's algorithms.
                None => assert!(["Ring", "Tree"].contains(&captured[0].algorithm.as_str())),
            }
            seen.insert((c.params.nccl_algo.clone(), proto.to_string()));
            // The launch's environment as it ran.
            let l = r
                .launches
                .iter()
                .find(|l| l.launch_id == c.launch_id)
                .unwrap();
            let env = &l.provenance.as_ref().unwrap().environment;
            let want_algo = c.params.nccl_algo.as_ref().map(|a| match a.as_str() {
                "ring" => "Ring",
                _ => "Tree",
            });
            assert_eq!(
                env.get("NCCL_ALGO").map(String::as_str),
                want_algo,
                "{}",
                c.id
            );
            assert_eq!(
                env.get("NCCL_PROTO").map(|p| p.to_lowercase()).as_deref(),
                Some(proto)
            );
        }
        assert_eq!(seen.len(), 9);
    }

    /// Issue 31 item 2: an NCCL older than the forced algorithm is refused before anything is
    /// measured (exit 2, one sentence); the same run on a new enough NCCL starts.
    /// Tree forced on a run of allreduce and allgather: NCCL has a tree all-reduce only, so
    /// the all-reduce cases run with it and the all-gather cases are skipped with NCCL's
    /// table in the sentence, on every rank alike (exit 0: a skip is not a failure).
    #[test]
    fn cases_without_a_kernel_for_the_forced_algorithm_are_skipped() {
        let dir = tmpdir("nccl-force-skip");
        let out = dir.join("out");
        let a = cuda_run(
            &[
                "-w",
                "allreduce,allgather",
                "--sizes",
                "1KiB",
                "--in-place",
                "no",
                "--nccl-algo",
                "tree",
            ],
            "2",
            &out,
        );
        solo_on(&[], &a).assert_code(0);
        let r = crate::common::read_results(&out);
        assert_eq!(
            r.cases.len(),
            2,
            "{:?}",
            r.cases.iter().map(|c| &c.id).collect::<Vec<_>>()
        );
        for c in &r.cases {
            match c.params.workload.as_str() {
                "allreduce" => assert_eq!(c.status, "ok", "{:?}", c.message),
                "allgather" => {
                    assert_eq!(c.status, "skipped");
                    let m = c.message.as_deref().unwrap_or_default();
                    assert!(m.contains("NCCL has no tree algorithm for allgather (it has ring, collnet_direct, nvls, pat)"), "{m}");
                }
                w => panic!("{w}"),
            }
        }
    }

    #[test]
    fn an_nccl_too_old_for_the_forced_algorithm_is_refused() {
        let dir = tmpdir("nccl-force-version");
        let out = dir.join("out");
        let a = cuda_run(
            &["-w", "allgather", "--sizes", "1KiB", "--nccl-algo", "pat"],
            "2",
            &out,
        );
        let ran = solo_on(&["SCALEBENCH_STANDIN_NCCL_VERSION=22203"], &a);
        ran.assert_refused(
            &"pat on 2.22.3",
            &["NCCL 2.22.3 does not know the algorithm PAT (NCCL 2.23 or newer): load a newer NCCL or force another algorithm"],
            &out,
        );
        assert_eq!(ran.stderr.trim().lines().count(), 1, "{}", ran.stderr);
        let a = cuda_run(
            &[
                "-w",
                "allreduce",
                "--sizes",
                "1KiB",
                "--nccl-algo",
                "NVLSTree",
            ],
            "2",
            &out,
        );
        let ran = solo_on(&["SCALEBENCH_STANDIN_NCCL_VERSION=21703"], &a);
        ran.assert_refused(
            &"nvls_tree on 2.17.3",
            &["NCCL 2.17.3 does not know the algorithm NVLSTree (NCCL 2.18 or newer)"],
            &out,
        );
        // New enough: set-up passes the check (the stand-in then runs Tree as forced).
        let a = cuda_run(
            &["-w", "allreduce", "--sizes", "1KiB", "--nccl-algo", "tree"],
            "2",
            &out,
        );
        let ran = solo_on(&["SCALEBENCH_STANDIN_NCCL_VERSION=22203"], &a);
        ran.assert_code(0);
        let r = crate::common::read_results(&out);
        assert!(r
            .cases
            .iter()
            .all(|c| c.params.nccl_algo.as_deref() == Some("tree")));
    }
}
