//! Checks of the command-line definition as a whole (one file: they span every command).

use super::*;
use crate::params::{Dtype, ReduceOp, Timing, Workload};
use clap::CommandFactory;
use std::path::PathBuf;

#[test]
fn cli_definition_is_consistent() {
    Cli::command().debug_assert();
}

/// `debug_assert` checks nothing in a release build (clap compiles its asserts out), and
/// the tests run in release: the clash it exists for (`run -o` was both --op and --out)
/// is checked here by hand.
#[test]
fn no_two_options_share_a_name() {
    let cmd = Cli::command();
    for sub in cmd.get_subcommands() {
        let mut shorts = std::collections::HashMap::new();
        let mut longs = std::collections::HashMap::new();
        for a in sub.get_arguments() {
            if let Some(s) = a.get_short() {
                if let Some(prev) = shorts.insert(s, a.get_id().clone()) {
                    panic!(
                        "{}: -{s} is both --{prev} and --{}",
                        sub.get_name(),
                        a.get_id()
                    );
                }
            }
            if let Some(l) = a.get_long() {
                assert!(
                    longs.insert(l.to_string(), ()).is_none(),
                    "{}: --{l} twice",
                    sub.get_name()
                );
            }
        }
    }
    let cli = Cli::try_parse_from(["scalebench", "run", "-o", "max", "--out", "d"]).unwrap();
    let Command::Run(a) = cli.command else {
        panic!("parsed as another command")
    };
    assert_eq!(
        (a.ops, a.out),
        (vec![ReduceOp::Max], Some(PathBuf::from("d")))
    );
}

/// The library's defaults for `run` (used by callers without a command line) are the
/// command line's.
#[test]
fn run_defaults_are_the_librarys() {
    let cli = Cli::try_parse_from(["scalebench", "run"]).unwrap();
    let Command::Run(a) = cli.command else {
        panic!("parsed as another command")
    };
    assert_eq!(
        crate::plan::Request::from(a.as_ref()),
        crate::plan::Request::default()
    );
    let r = crate::run::Request::from(a.as_ref());
    assert!(matches!(r.cases, crate::run::Cases::Options(_)));
    assert_eq!((r.out, r.op_timeout_s, r.quiet), (None, None, false));
}

#[test]
fn compare_and_report_defaults_are_the_librarys() {
    let cli = Cli::try_parse_from(["scalebench", "compare", "a", "b"]).unwrap();
    let Command::Compare(a) = cli.command else {
        panic!("parsed as another command")
    };
    let r = crate::compare::Request::from(&a);
    assert_eq!(r.options, crate::compare::Options::default());
    assert_eq!(r.format, crate::compare::Format::Text);
    let cli = Cli::try_parse_from(["scalebench", "report", "r", "--out", "o"]).unwrap();
    let Command::Report(a) = cli.command else {
        panic!("parsed as another command")
    };
    let r = a.request().unwrap();
    assert_eq!(r.options, crate::report::analyze::Options::default());
    assert_eq!(r.outputs, crate::report::Outputs::all());
}

#[test]
fn parses_lists_and_ranges() {
    let cli = Cli::try_parse_from([
        "scalebench",
        "run",
        "-w",
        "allreduce,matmul",
        "--sizes",
        "4KiB,8B:32B:x2",
        "--dtype",
        "f32,f64",
        "--timing",
        "isolated",
    ])
    .unwrap();
    let Command::Run(a) = cli.command else {
        panic!("parsed as another command")
    };
    assert_eq!(a.workloads, vec![Workload::Allreduce, Workload::Matmul]);
    assert_eq!(a.sizes.0, vec![Bytes(4096), Bytes(8), Bytes(16), Bytes(32)]);
    assert_eq!(a.dtypes, vec![Dtype::F32, Dtype::F64]);
    assert_eq!(a.timings, vec![Timing::Isolated]);
}

#[test]
fn bad_values_are_rejected_with_reasons() {
    for (args, needle) in [
        (vec!["--sizes", "12Q"], "not a size"),
        (vec!["--sizes", "-4"], "negative"),
        (vec!["-w", "allreduc"], "unknown workload"),
        (vec!["--dtype", "f8"], "unknown dtype"),
        (vec!["--dims", "0"], "matrix shape"),
        // Parsed where it comes in, so a plan or launch never holds unparsed text.
        (vec!["--reserved-cores", "not-a-cpulist"], "not a CPU list"),
    ] {
        let mut full = vec!["scalebench", "run"];
        full.extend(args.iter());
        let e = Cli::try_parse_from(full).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains(needle), "{args:?}: {e}");
    }
}

#[test]
fn refusals_shorten_long_quoted_values_once_and_name_a_non_utf8_argument() {
    let long = "z".repeat(5000);
    let text = shorten_quoted(&format!(
        "error: invalid value '{long}' for '--sizes': `{long}`"
    ));
    assert_eq!(text.matches("…(5000 chars)").count(), 2, "{text}");
    assert!(text.len() < 300, "{text}");
    // A value its parser shortened already keeps its own length.
    let done = crate::units::shorten(&long);
    assert_eq!(shorten_quoted(&format!("'{done}'")), format!("'{done}'"));
    // A stray quote does not swallow the rest.
    assert_eq!(shorten_quoted("it's fine"), "it's fine");

    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"8B\xff").to_os_string();
    let path = std::ffi::OsStr::from_bytes(b"/tmp/\xfe").to_os_string();
    let argv: Vec<std::ffi::OsString> = vec![
        "scalebench".into(),
        "run".into(),
        "--out".into(),
        path,
        "--sizes".into(),
        bad,
    ];
    let e = Cli::try_parse_from(&argv).unwrap_err();
    let text = refusal_text(&e, &argv);
    assert!(
        text.starts_with("error: the value of --sizes (8B\u{fffd}) is not UTF-8 text"),
        "{text}"
    );
}
