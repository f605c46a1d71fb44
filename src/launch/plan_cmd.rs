//! `scalebench plan`: what a sweep spec expands to, printed (nothing runs). Here rather than
//! in `main`, which only wires the command line to the library.

use super::error::{LaunchError, Result};
use std::path::Path;

/// Prints the launches of the spec at `spec_path` (with every case when `cases`), or the
/// launches as JSON; a note on stderr when the plan could not run as a local sweep here.
pub fn plan(spec_path: &Path, json: bool, cases: bool) -> Result<u8> {
    let (spec, plan, local) = super::local::plan_spec(spec_path)?;
    if let Some(why) = local {
        eprintln!("note: this plan cannot run as a local sweep here (submit it to a cluster instead): {why}");
    }
    // The ETA and the cases that will be skipped (issue 45): in the text, or on stderr
    // beside the JSON, which stays the plan alone.
    let forecast = crate::plan::forecast::lines(&plan);
    if json {
        for l in &forecast {
            eprintln!("{}", l.trim_start_matches("# "));
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&plan.launches).map_err(LaunchError::Json)?
        );
    } else {
        let text = super::describe(&spec.name, spec_path, &plan, cases);
        // after the header line, before the launches
        let (head, rest) = text.split_once('\n').unwrap_or((&text, ""));
        println!("{head}");
        for l in &forecast {
            println!("{l}");
        }
        print!("{rest}");
    }
    Ok(0)
}
