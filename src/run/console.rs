//! The live results table rank 0 prints while a run goes on, laid out like nccl-tests': for
//! collectives one row per size with out-of-place and in-place side by side. Used by `run` (each
//! case as it finishes) and by `launch` (a local sweep's cases, as each launch ends).

use crate::params::{LaunchShape, Timing, Workload};
use crate::present::nccl::{self, BlockTitle};
use crate::results::schema::{CaseResult, CaseStatus};
use std::fmt::Write;

/// Formats finished cases into table lines as they arrive.
#[derive(Default)]
pub(crate) struct TablePrinter {
    block: Option<(Workload, Timing, LaunchShape)>,
    /// An out-of-place row waiting for its in-place partner.
    pending: Option<CaseResult>,
}

fn us(t: f64) -> String {
    format!("{:.2}", t * 1e6)
}

fn status_cell(c: &CaseResult) -> String {
    match c.status {
        CaseStatus::Ok | CaseStatus::Wrong => c.wrong.to_string(),
        s => s.name().to_string(),
    }
}

/// time, algbw, busbw, #wrong for one placement ("-" cells when absent).
fn coll_cells(c: Option<&CaseResult>) -> String {
    match c {
        None => format!("{:>9} {:>7} {:>7} {:>6}", "-", "-", "-", "-"),
        Some(c) => match &c.timing {
            Some(t) => format!(
                "{:>9} {:>7.2} {:>7.2} {:>6}",
                us(t.time_s),
                c.algbw_gbps.unwrap_or(0.0),
                c.busbw_gbps.unwrap_or(0.0),
                status_cell(c)
            ),
            None => format!("{:>9} {:>7} {:>7} {:>6}", "-", "-", "-", status_cell(c)),
        },
    }
}

impl TablePrinter {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Lines to print for a finished case (possibly none until its partner arrives).
    pub(crate) fn push(&mut self, c: &CaseResult) -> Vec<String> {
        let mut out = Vec::new();
        let key = (c.params.workload, c.params.timing, c.params.launch_shape());
        if self.block != Some(key) {
            out.extend(self.flush());
            out.extend(header(c));
            self.block = Some(key);
        }
        if !c.params.workload.is_collective() {
            out.push(gemm_row(c));
            if let Some(m) = problem(c) {
                out.push(m);
            }
            return out;
        }
        match c.params.in_place {
            Some(true) => {
                let partner = self.pending.take();
                match partner {
                    Some(p) if same_row(&p, c) => {
                        out.push(coll_row(Some(&p), Some(c)));
                        out.extend(problem(&p));
                    }
                    other => {
                        if let Some(p) = other {
                            out.push(coll_row(Some(&p), None));
                            out.extend(problem(&p));
                        }
                        out.push(coll_row(None, Some(c)));
                    }
                }
                out.extend(problem(c));
            }
            _ => {
                out.extend(self.flush_pending());
                self.pending = Some(c.clone());
            }
        }
        out
    }

    fn flush_pending(&mut self) -> Vec<String> {
        match self.pending.take() {
            Some(p) => {
                let mut v = vec![coll_row(Some(&p), None)];
                v.extend(problem(&p));
                v
            }
            None => Vec::new(),
        }
    }

    /// Lines still held back (call at the end of the run).
    pub(crate) fn flush(&mut self) -> Vec<String> {
        self.flush_pending()
    }
}

fn same_row(a: &CaseResult, b: &CaseResult) -> bool {
    let (p, q) = (&a.params, &b.params);
    p.workload == q.workload
        && p.dtype == q.dtype
        && p.op == q.op
        && p.root == q.root
        && p.requested_bytes == q.requested_bytes
        && p.timing == q.timing
}

fn problem(c: &CaseResult) -> Option<String> {
    match (c.status, &c.message) {
        (CaseStatus::Ok, _) => None,
        (s, Some(m)) => Some(format!("#   ^ {} {}: {m}", c.params.label(), s.name())),
        (s, None) => Some(format!("#   ^ {} {}", c.params.label(), s.name())),
    }
}

fn header(c: &CaseResult) -> Vec<String> {
    let p = &c.params;
    let (w, t, topo, b, pl) = (
        p.workload.to_string(),
        p.timing.to_string(),
        p.topology.to_string(),
        p.binding.to_string(),
        p.placement.to_string(),
    );
    let title = BlockTitle {
        workload: &w,
        timing: &t,
        devices: c.devices,
        nodes: p.nodes,
        devices_per_node: p.devices_per_node,
        topology: &topo,
        ranks: c.ranks,
        binding: &b,
        placement: &pl,
    };
    let mut v = vec![format!("# {title}")];
    match p.workload {
        Workload::Matmul => {
            v.push(format!(
                "# {:>16} {:>6} {:>11} {:>12} {:>12} {:>6}",
                "m x n x k", "type", "time", "GFLOP/s/dev", "GFLOP/s", "#wrong"
            ));
            v.push(format!(
                "# {:>16} {:>6} {:>11} {:>12} {:>12} {:>6}",
                "", "", "(us)", "", "(total)", ""
            ));
        }
        Workload::DdpStep => v.extend(ddp_header()),
        Workload::BatchMatmul => {
            v.push(format!(
                "# {:>6} {:>6} {:>6} {:>11} {:>11} {:>11} {:>11} {:>10} {:>6}",
                "dim", "batch", "type", "time", "scatter", "compute", "gather", "GFLOP/s", "#wrong"
            ));
            v.push(format!(
                "# {:>6} {:>6} {:>6} {:>11} {:>11} {:>11} {:>11} {:>10} {:>6}",
                "", "", "", "(us)", "(us)", "(us)", "(us)", "(total)", ""
            ));
        }
        _ => {
            v.push(format!(
                "# {:>51}  {:^33}  {:^33}",
                "",
                nccl::PLACES[0],
                nccl::PLACES[1]
            ));
            v.push(coll_header_line(|c| c.0));
            v.push(coll_header_line(|c| c.1));
        }
    }
    v
}

/// One header line of the collective table (names or units), in the nccl-tests layout.
fn coll_header_line(part: fn(&(&'static str, &'static str)) -> &'static str) -> String {
    let k: Vec<&str> = nccl::KEY_COLUMNS.iter().map(part).collect();
    let c: Vec<&str> = nccl::PLACE_COLUMNS.iter().map(part).collect();
    format!(
        "# {:>12} {:>12} {:>6} {:>6} {:>6}  {:>9} {:>7} {:>7} {:>6}  {:>9} {:>7} {:>7} {:>6}",
        k[0], k[1], k[2], k[3], k[4], c[0], c[1], c[2], c[3], c[0], c[1], c[2], c[3]
    )
}

fn coll_row(oop: Option<&CaseResult>, ip: Option<&CaseResult>) -> String {
    let any = oop.or(ip).expect("a row has at least one case");
    let p = &any.params;
    let size = any.bytes.or(p.requested_bytes).unwrap_or(0);
    let count = any.send_count.map_or("-".to_string(), |c| c.to_string());
    let op = p.op.map_or("none".to_string(), |o| o.to_string());
    let root = p.root.map_or("-1".to_string(), |r| r.to_string());
    format!(
        "  {:>12} {:>12} {:>6} {:>6} {:>6}  {}  {}",
        size,
        count,
        p.dtype.to_string(),
        op,
        root,
        coll_cells(oop),
        coll_cells(ip)
    )
}

fn gemm_row(c: &CaseResult) -> String {
    let p = &c.params;
    let shape = p
        .shape
        .map_or("-".into(), |s| format!("{}x{}x{}", s.m, s.n, s.k));
    let time = c.timing.as_ref().map_or("-".into(), |t| us(t.time_s));
    match p.workload {
        Workload::DdpStep => ddp_row(c, &status_cell(c)),
        Workload::BatchMatmul => {
            let phase = |name: &str| {
                c.phases
                    .iter()
                    .find(|x| x.name == name)
                    .map_or("-".to_string(), |x| us(x.time_s))
            };
            let gather = if c.phases.iter().any(|x| x.name == "reduce") {
                phase("reduce")
            } else {
                phase("gather")
            };
            let total_batch = p.batch.map(|b| match p.scaling {
                Some(crate::params::Scaling::Weak) => u64::from(b) * u64::from(c.devices),
                _ => u64::from(b),
            });
            let mut s = String::new();
            let _ = write!(
                s,
                "  {:>6} {:>6} {:>6} {:>11} {:>11} {:>11} {:>11} {:>10} {:>6}",
                p.shape.map_or(0, |s| s.m),
                total_batch.unwrap_or(0),
                p.dtype.to_string(),
                time,
                phase("scatter"),
                phase("compute"),
                gather,
                c.gflops_total.map_or("-".into(), |g| format!("{g:.2}")),
                status_cell(c)
            );
            s
        }
        _ => format!(
            "  {:>16} {:>6} {:>11} {:>12} {:>12} {:>6}",
            shape,
            p.dtype.to_string(),
            time,
            c.gflops.map_or("-".into(), |g| format!("{g:.2}")),
            c.gflops_total.map_or("-".into(), |g| format!("{g:.2}")),
            status_cell(c)
        ),
    }
}

/// One closing line: counts per status.
pub(crate) fn summary_line(cases: &[CaseResult]) -> String {
    let count = |s: CaseStatus| cases.iter().filter(|c| c.status == s).count();
    format!(
        "# {}: {} ok, {} wrong, {} failed, {} skipped, {} timed out; wrong elements in total: {}",
        crate::units::count(cases.len(), "case", "cases"),
        count(CaseStatus::Ok),
        count(CaseStatus::Wrong),
        count(CaseStatus::Failed),
        count(CaseStatus::Skipped),
        count(CaseStatus::Timeout),
        cases.iter().map(|c| c.wrong).sum::<u64>()
    )
}

/// The live table's header lines for ddp_step.
fn ddp_header() -> Vec<String> {
    vec![
        format!(
            "# {:>14} {:>8} {:>6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>7} {:>10} {:>6}",
            "model",
            "bucket",
            "type",
            "progress",
            "step",
            "compute",
            "exposed",
            "comm",
            "overlap",
            "samples/s",
            "#wrong"
        ),
        format!(
            "# {:>14} {:>8} {:>6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>7} {:>10} {:>6}",
            "", "", "", "", "(us)", "(us)", "(us)", "(us)", "(%)", "", ""
        ),
    ]
}

/// The live table's row for one ddp_step case (`status` is the wrong-count or status cell).
fn ddp_row(c: &CaseResult, status: &str) -> String {
    let p = &c.params;
    let us = |t: f64| format!("{:.2}", t * 1e6);
    let m = c.ddp.as_ref();
    format!(
        "  {:>14} {:>8} {:>6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>7} {:>10} {:>6}",
        p.model.as_deref().unwrap_or("-"),
        p.bucket_bytes
            .map_or("-".into(), crate::units::format_bytes),
        p.dtype.to_string(),
        p.progress.map_or("-".into(), |x| x.to_string()),
        m.map_or("-".into(), |m| us(m.step_s)),
        m.map_or("-".into(), |m| us(m.compute_s)),
        m.map_or("-".into(), |m| us(m.exposed_comm_s)),
        m.map_or("-".into(), |m| us(m.comm_s)),
        m.and_then(|m| m.overlap_efficiency)
            .map_or("-".into(), |e| format!("{:.1}", e * 100.0)),
        m.map_or("-".into(), |m| format!("{:.1}", m.samples_per_s)),
        status
    )
}
