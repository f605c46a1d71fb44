//! Bad input: exit code 2, one clear message that names the option and the fix, no panic, and
//! no results file (or half of one) left behind.

mod common;

use common::{mpirun, solo, tmpdir};

fn rejected(args: &[&str], needles: &[&str]) {
    let dir = tmpdir(&format!("bad-{}", args.join("_").replace(['/', ' '], "")));
    let out = dir.join("out");
    let mut full = vec!["run", "--out", out.to_str().unwrap()];
    full.extend_from_slice(args);
    let ran = solo(&full);
    ran.assert_code(2);
    for n in needles {
        assert!(
            ran.stderr.contains(n),
            "{args:?}: expected {n:?} in:\n{}",
            ran.stderr
        );
    }
    assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
    assert!(!out.exists(), "{args:?} left {} behind", out.display());
}

#[test]
fn a_ddp_layer_count_that_would_wrap_is_exit_2_not_a_panic() {
    rejected(
        &["-w", "ddp_step", "--model", "1x1+1x1x18446744073709551615"],
        &["more than 10000 layers"],
    );
    // a spec's model: plan refuses it naming the file and line, no panic
    let spec = tmpdir("bad-wrap-spec").join("s.toml");
    std::fs::write(
        &spec,
        "name = \"s\"\n[axes]\nworkloads = \"ddp_step\"\nmodels = [\"1x1+1x1x18446744073709551615\"]\n",
    )
    .unwrap();
    let ran = solo(&["plan", spec.to_str().unwrap()]);
    ran.assert_code(2);
    assert!(
        ran.stderr.contains("s.toml:4") && ran.stderr.contains("more than 10000 layers"),
        "{}",
        ran.stderr
    );
}

#[test]
fn malformed_sizes() {
    rejected(&["--sizes", "12Q"], &["'12Q' is not a size", "KiB"]);
    rejected(&["--sizes", "-4"], &["negative"]);
    rejected(&["--sizes", "1MB"], &["MiB"]);
    rejected(&["--sizes", "8:4:x2"], &["empty"]);
    rejected(&["--sizes", "8:64:x1"], &["START:END:STEP"]);
}

#[test]
fn size_not_divisible_by_the_dtype() {
    rejected(
        &["--sizes", "6", "--dtype", "f32"],
        &["--sizes 6B", "multiple of 4 bytes"],
    );
    rejected(
        &["--sizes", "12", "--dtype", "f64"],
        &["multiple of 8 bytes"],
    );
}

#[test]
fn unknown_names() {
    rejected(
        &["-w", "allreduc"],
        &["unknown workload 'allreduc'", "reduce_scatter"],
    );
    rejected(&["--dtype", "f8"], &["unknown dtype"]);
    rejected(&["--op", "mean"], &["unknown op", "avg"]);
    rejected(&["--timing", "fast"], &["pipelined", "isolated"]);
    rejected(&["--dims", "12x"], &["matrix shape"]);
}

#[test]
fn impossible_settings() {
    rejected(&["--iters", "0"], &["--iters 0"]);
    rejected(&["--time-budget", "-1"], &["--time-budget"]);
    rejected(&["-w", "reduce", "--root", "5"], &["--root 5", "1 device"]);
    rejected(&["--nodes", "3"], &["--nodes 3"]);
}

#[test]
fn under_mpirun_the_message_is_printed_once() {
    let out = tmpdir("bad-mpi").join("out");
    let ran = mpirun(
        2,
        &["run", "--out", out.to_str().unwrap(), "--sizes", "12Q"],
    );
    ran.assert_code(2);
    assert_eq!(
        ran.stderr.matches("is not a size").count(),
        1,
        "{}",
        ran.stderr
    );
    assert!(!out.exists());
}
