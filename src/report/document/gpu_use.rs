//! GPU utilisation during cases, where NVML (CUDA) or AMD SMI (ROCm) sampled it: were all
//! GPUs busy?

use super::{case_text, setup_text, TOP};
use crate::params::BackendKind;
use crate::present::doc::{text, Doc};
use crate::present::table::{Cell, NumFmt, Table};
use crate::report::analyze::{Analysis, Entry};
use crate::results::schema::DeviceTelemetry;

/// Mean GPU utilisation below which a GPU counts as under-used during a case.
pub(crate) const BUSY_UTIL_PERCENT: f64 = 50.0;

/// Whether the GPU's management library saw it mostly idle during a case (too few kernels to keep it busy, or a
/// GPU the launch did not use at all).
pub(crate) fn under_used(t: &DeviceTelemetry) -> bool {
    t.gpu_util_percent_mean
        .is_some_and(|u| u < BUSY_UTIL_PERCENT)
}

/// The library that sampled a backend's GPUs.
fn sampled_by(backend: BackendKind) -> &'static str {
    match backend {
        BackendKind::Rocm => "AMD SMI",
        _ => "NVML",
    }
}

/// GPU telemetry, where the results carry any: were all GPUs busy?
pub(super) fn gpu_use(doc: &mut Doc, a: &Analysis<'_>) {
    let rows: Vec<(&Entry<'_>, &DeviceTelemetry)> = a
        .entries
        .iter()
        .flat_map(|e| e.case.telemetry.iter().map(move |t| (e, t)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let mut libraries: Vec<&str> = rows
        .iter()
        .map(|(e, _)| sampled_by(e.case.params.backend))
        .collect();
    libraries.sort_unstable();
    libraries.dedup();
    let libraries = libraries.join(", ");
    doc.heading(2, format!("GPU utilisation during cases ({libraries})"));
    let low = rows.iter().filter(|(_, t)| under_used(t)).count();
    let failed = rows.iter().filter(|(_, t)| t.error.is_some()).count();
    let socket = rows
        .iter()
        .any(|(_, t)| t.power_scope.as_deref() == Some("socket"));
    let socket_note = if socket {
        " Power marked \"socket\" is AMD SMI's socket power: on an MI250X the package of two GCDs, shown on one of them (the other shows none)."
    } else {
        ""
    };
    doc.para(vec![text(format!(
        "{} sampled; {low} averaged under {BUSY_UTIL_PERCENT} % utilisation ({libraries}: share of time a kernel ran), {failed} could not be sampled. Utilisation is coarse for cases shorter than a second; a minimum SM clock far below the maximum means idling or throttling.{socket_note} Least busy first:",
        crate::present::count(rows.len(), "GPU case", "GPU cases")
    ))]);
    let mut order = rows;
    order.sort_by(|x, y| {
        let u = |t: &DeviceTelemetry| t.gpu_util_percent_mean.unwrap_or(f64::INFINITY);
        u(x.1).total_cmp(&u(y.1))
    });
    let mut t = Table::new(&[
        "case",
        "set-up",
        "GPU",
        "samples",
        "util mean %",
        "util min %",
        "SM clock min (MHz)",
        "SM clock max (MHz)",
        "power max (W)",
        "temp max (°C)",
        "note",
    ]);
    for (e, g) in order.iter().take(TOP * 2) {
        let mut note = match (&g.error, under_used(g)) {
            (Some(err), _) => err.clone(),
            (None, true) => "under-used".to_string(),
            (None, false) => String::new(),
        };
        if let Some(scope) = &g.power_scope {
            let sep = if note.is_empty() { "" } else { "; " };
            note = format!("{note}{sep}power: {scope}");
        }
        t.push(vec![
            Cell::text(case_text(e)),
            Cell::text(setup_text(a, &e.shape())),
            Cell::UInt(u64::from(g.device)),
            Cell::UInt(u64::from(g.samples)),
            Cell::opt(g.gpu_util_percent_mean, NumFmt::Fixed(1)),
            Cell::opt(g.gpu_util_percent_min, NumFmt::Fixed(0)),
            Cell::opt(g.sm_clock_mhz_min, NumFmt::Fixed(0)),
            Cell::opt(g.sm_clock_mhz_max, NumFmt::Fixed(0)),
            Cell::opt(g.power_w_max, NumFmt::Fixed(0)),
            Cell::opt(g.temperature_c_max, NumFmt::Fixed(0)),
            Cell::text(note),
        ]);
    }
    doc.table(t, "gpu_use", None);
}
