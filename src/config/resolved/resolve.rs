//! A spec resolved: its axes (single or zipped) into factors, its exclusions, measurement and
//! launch settings, labels and name, every error located in the file.

use super::values::{axis_of, buffer_offset, env_name_ok, positive_int, values, Ctx};
use super::{Axis, AxisValue, Dim, Exclude, LocalLaunch, SweepSpec};
use crate::config::limits;
use crate::config::raw::{RawSpec, SpannedTable};
use crate::config::{line_col, SpecError};
use crate::params::GemmChoice;
use crate::params::{IterPolicy, RunSettings};
use std::collections::BTreeMap;
use std::path::Path;
use toml::{Spanned, Value};

pub(in crate::config) fn resolve(
    path: &Path,
    text: &str,
    raw: RawSpec,
) -> Result<SweepSpec, SpecError> {
    let ctx = Ctx {
        path,
        text,
        warnings: Default::default(),
    };
    let mut axes = Axes::default();
    for (k, v) in &raw.axes {
        axes.single(&ctx, k, v)?;
    }
    for (i, group) in raw.zip.iter().enumerate() {
        axes.zip_group(&ctx, i, group)?;
    }
    let excludes = excludes(&ctx, &raw.exclude)?;
    let settings = run_settings(&ctx, &raw.run, &axes.dims)?;
    let launch = local_launch(&ctx, &raw.launch)?;
    let labels = labels(&ctx, &raw.labels)?;
    let name = study_name(&ctx, &raw.name)?;
    let links = super::links::links_step(&ctx, &raw.links)?;
    Ok(SweepSpec {
        path: path.to_path_buf(),
        name,
        description: raw.description,
        labels,
        dims: axes.dims,
        excludes,
        settings,
        launch,
        submit: raw.submit,
        links,
        axis_at: axes.axis_at,
        text: text.to_string(),
        warnings: ctx.warnings.into_inner(),
    })
}

/// The spec's axes as they are read: the factors so far, where each axis was given, and
/// under which key (an axis may be given once, in [axes] or in one [[zip]] group).
#[derive(Default)]
struct Axes {
    dims: Vec<Dim>,
    axis_at: BTreeMap<Axis, (usize, usize)>,
    seen: BTreeMap<Axis, String>,
}

impl Axes {
    /// One key of [axes]: a factor of its own.
    fn single(
        &mut self,
        ctx: &Ctx<'_>,
        k: &Spanned<String>,
        v: &Spanned<Value>,
    ) -> Result<(), SpecError> {
        let axis = axis_of(ctx, k, "axes")?;
        let key = format!("axes.{}", k.get_ref());
        if let Some(prev) = self.seen.insert(axis, key.clone()) {
            return Err(ctx.err(
                k.span(),
                &key,
                format!(
                    "axis `{}` is given twice (also as `{prev}`): keep one",
                    axis.name()
                ),
            ));
        }
        self.axis_at
            .insert(axis, line_col(ctx.text, k.span().start));
        let vals = values(ctx, axis, &key, v, false)?;
        self.dims.push(Dim {
            axes: vec![axis],
            tuples: vals.into_iter().map(|x| vec![x]).collect(),
        });
        Ok(())
    }

    /// The `i`th [[zip]] group: one factor whose axes advance together.
    fn zip_group(
        &mut self,
        ctx: &Ctx<'_>,
        i: usize,
        group: &Spanned<SpannedTable>,
    ) -> Result<(), SpecError> {
        let table = format!("zip[{}]", i + 1);
        if group.get_ref().len() < 2 {
            return Err(ctx.err(
                group.span(),
                &table,
                "a [[zip]] group needs at least two axes (a single axis belongs in [axes])",
            ));
        }
        let mut axes = Vec::new();
        let mut columns: Vec<Vec<AxisValue>> = Vec::new();
        let mut first: Option<(String, usize)> = None;
        for (k, v) in group.get_ref() {
            let axis = axis_of(ctx, k, &table)?;
            let key = format!("{table}.{}", k.get_ref());
            if let Some(prev) = self.seen.insert(axis, key.clone()) {
                return Err(ctx.err(k.span(), &key, format!("axis `{}` is already given as `{prev}`: an axis belongs to [axes] or to one [[zip]] group", axis.name())));
            }
            self.axis_at
                .insert(axis, line_col(ctx.text, k.span().start));
            let vals = values(ctx, axis, &key, v, true)?;
            match &first {
                None => first = Some((k.get_ref().clone(), vals.len())),
                Some((name, n)) if *n != vals.len() => {
                    return Err(ctx.err(
                        v.span(),
                        &key,
                        format!("{} here but {n} in `{name}`: every axis of a [[zip]] group needs the same number of values", crate::units::count(vals.len(), "value", "values")),
                    ))
                }
                _ => {}
            }
            axes.push(axis);
            columns.push(vals);
        }
        let n = columns[0].len();
        let tuples = (0..n)
            .map(|j| columns.iter().map(|c| c[j].clone()).collect())
            .collect();
        self.dims.push(Dim { axes, tuples });
        Ok(())
    }
}

/// The [[exclude]] tables: combinations to drop.
fn excludes(ctx: &Ctx<'_>, raw: &[Spanned<SpannedTable>]) -> Result<Vec<Exclude>, SpecError> {
    let mut excludes = Vec::new();
    for (i, ex) in raw.iter().enumerate() {
        let table = format!("exclude[{}]", i + 1);
        if ex.get_ref().is_empty() {
            return Err(ctx.err(
                ex.span(),
                &table,
                "an empty [[exclude]] would drop everything: list the axis values to drop",
            ));
        }
        let mut rules = Vec::new();
        for (k, v) in ex.get_ref() {
            let axis = axis_of(ctx, k, &table)?;
            rules.push((
                axis,
                values(ctx, axis, &format!("{table}.{}", k.get_ref()), v, false)?,
            ));
        }
        excludes.push(Exclude { rules });
    }
    Ok(excludes)
}

/// [run]: the measurement settings (`buffer_offset` is checked against the axes' dtypes).
fn run_settings(
    ctx: &Ctx<'_>,
    r: &crate::config::raw::RawRun,
    dims: &[Dim],
) -> Result<RunSettings, SpecError> {
    let iters = positive_int(ctx, &r.iters, "run.iters", 1)?;
    let warmup = positive_int(ctx, &r.warmup, "run.warmup", 0)?;
    let batches = positive_int(ctx, &r.batches, "run.batches", 1)?;
    let check = positive_int(ctx, &r.check, "run.check", 0)?.unwrap_or(1);
    let gemm = match &r.gemm {
        Some(g) => g
            .get_ref()
            .parse::<GemmChoice>()
            .map_err(|e| ctx.err(g.span(), "run.gemm", e.to_string()))?,
        None => GemmChoice::default(),
    };
    let buffer_offset = buffer_offset(ctx, &r.buffer_offset, dims)?;
    let thread_level = match &r.thread_level {
        Some(t) => Some(
            t.get_ref()
                .parse::<crate::params::ThreadLevel>()
                .map_err(|e| ctx.err(t.span(), "run.thread_level", e.to_string()))?,
        ),
        None => None,
    };
    let time_budget_s = match &r.time_budget_s {
        Some(t) => {
            limits::check_seconds("", *t.get_ref(), "0.5")
                .map_err(|m| ctx.err(t.span(), "run.time_budget_s", m.to_string().trim_start()))?;
            *t.get_ref()
        }
        None => IterPolicy::default().time_budget_s,
    };
    Ok(RunSettings {
        policy: IterPolicy {
            iters,
            warmup,
            time_budget_s,
            batches,
        },
        check_iters: check,
        gemm,
        buffer_offset,
        thread_level,
        ceilings: r.ceilings.unwrap_or(true),
    })
}

/// [launch]: the local launcher's settings.
fn local_launch(
    ctx: &Ctx<'_>,
    l: &crate::config::raw::RawLaunch,
) -> Result<LocalLaunch, SpecError> {
    let timeout_s = match &l.timeout_s {
        Some(t) => {
            limits::check_seconds("", *t.get_ref(), "600")
                .map_err(|m| ctx.err(t.span(), "launch.timeout_s", m.to_string().trim_start()))?;
            *t.get_ref()
        }
        None => 3600.0,
    };
    let op_timeout_s = match &l.op_timeout_s {
        Some(t) => {
            limits::check_seconds("", *t.get_ref(), "600").map_err(|m| {
                ctx.err(t.span(), "launch.op_timeout_s", m.to_string().trim_start())
            })?;
            Some(*t.get_ref())
        }
        None => None,
    };
    let mut env = BTreeMap::new();
    for (k, v) in &l.env {
        if !env_name_ok(k.get_ref()) {
            return Err(ctx.err(k.span(), &format!("launch.env.{}", k.get_ref()), "not a valid environment variable name: use letters, digits and _ (not starting with a digit)"));
        }
        if let Some(c) = v.get_ref().chars().find(|c| c.is_control()) {
            return Err(ctx.err(
                v.span(),
                &format!("launch.env.{}", k.get_ref()),
                control_message(c),
            ));
        }
        env.insert(k.get_ref().clone(), v.get_ref().clone());
    }
    for (i, a) in l.mpirun_args.iter().enumerate() {
        if let Some(c) = a.get_ref().chars().find(|c| c.is_control()) {
            return Err(ctx.err(
                a.span(),
                &format!("launch.mpirun_args[{i}]"),
                control_message(c),
            ));
        }
    }
    let reserved_cores = match &l.reserved_cores {
        Some(s) => crate::topology::binding::Reserved::parse(s.get_ref())
            .map_err(|e| ctx.err(s.span(), "launch.reserved_cores", e.to_string()))?,
        None => Default::default(),
    };
    Ok(LocalLaunch {
        oversubscribe: l.oversubscribe.unwrap_or(false),
        timeout_s,
        op_timeout_s,
        mpirun_args: l.mpirun_args.iter().map(|s| s.get_ref().clone()).collect(),
        env,
        reserved_cores,
    })
}

/// [labels]: printable text only.
fn labels(
    ctx: &Ctx<'_>,
    raw: &BTreeMap<Spanned<String>, Spanned<String>>,
) -> Result<BTreeMap<String, String>, SpecError> {
    let mut labels = BTreeMap::new();
    for (k, v) in raw {
        if let Some(bad) = [k.get_ref(), v.get_ref()]
            .into_iter()
            .find(|t| t.chars().any(char::is_control))
        {
            return Err(ctx.err(
                k.span(),
                &format!("labels.{}", k.get_ref().escape_debug()),
                format!(
                    "{:?} holds control characters (a terminal would run them): use printable text",
                    bad
                ),
            ));
        }
        labels.insert(k.get_ref().clone(), v.get_ref().clone());
    }
    Ok(labels)
}

/// The study's name: as given (printable, not empty), or the file's stem.
fn study_name(ctx: &Ctx<'_>, raw: &Option<Spanned<String>>) -> Result<String, SpecError> {
    let Some(n) = raw else {
        return Ok(ctx
            .path
            .file_stem()
            .map_or("sweep".to_string(), |s| s.to_string_lossy().into_owned()));
    };
    if n.get_ref().chars().any(char::is_control) {
        return Err(ctx.err(
            n.span(),
            "name",
            format!("the name {:?} holds control characters (a terminal would run them): use printable text", n.get_ref()),
        ));
    }
    if n.get_ref().trim().is_empty() {
        return Err(ctx.err(
            n.span(),
            "name",
            "the name is empty: give the study a name, or remove the key to use the file name",
        ));
    }
    Ok(n.get_ref().clone())
}

/// Why a value with a control character is refused: it would start a new line in a job script
/// (where `#$ -P other_project` is a directive for Grid Engine) or a launcher's command.
fn control_message(c: char) -> String {
    format!(
        "has a control character ({}), which would start a new line in a job script or command (a line such as `#$ -P other_project` is a scheduler directive): give the value on one line",
        c.escape_debug()
    )
}
